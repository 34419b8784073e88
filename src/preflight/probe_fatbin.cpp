// Embeds the probe fatbinary built by src/preflight/CMakeLists.txt (path in
// SPECBENCH_PREFLIGHT_FATBIN) into the library with the assembler's .incbin.
#include "preflight/probe_fatbin.hpp"

#ifdef SPECBENCH_PREFLIGHT_FATBIN
asm(".section .rodata.specbench_preflight_fatbin,\"a\",@progbits\n"
    ".balign 64\n"
    ".globl specbench_preflight_fatbin_begin\n"
    ".hidden specbench_preflight_fatbin_begin\n"
    "specbench_preflight_fatbin_begin:\n"
    ".incbin \"" SPECBENCH_PREFLIGHT_FATBIN "\"\n"
    ".globl specbench_preflight_fatbin_end\n"
    ".hidden specbench_preflight_fatbin_end\n"
    "specbench_preflight_fatbin_end:\n"
    ".byte 0\n"
    ".previous\n");
extern "C" const unsigned char specbench_preflight_fatbin_begin[];
extern "C" const unsigned char specbench_preflight_fatbin_end[];
#endif

namespace specbench::preflight {
const void* probe_fatbin() noexcept {
#ifdef SPECBENCH_PREFLIGHT_FATBIN
  return specbench_preflight_fatbin_begin;
#else
  return nullptr;
#endif
}
std::size_t probe_fatbin_size() noexcept {
#ifdef SPECBENCH_PREFLIGHT_FATBIN
  return static_cast<std::size_t>(specbench_preflight_fatbin_end -
                                  specbench_preflight_fatbin_begin);
#else
  return 0;
#endif
}
} // namespace specbench::preflight
