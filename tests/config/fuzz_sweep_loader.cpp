// libFuzzer target for the sweep loader: any bytes must give a sweep or diagnostics, never a
// crash, a hang or an exception. Build with clang: -DSPECBENCH_BUILD_FUZZERS=ON.
#include "specbench/config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const specbench::LoadResult r = specbench::load_sweep_text(text, "fuzz.yaml");
  if (!r.ok() && r.error_count() == 0) __builtin_trap(); // no sweep must mean an error
  return 0;
}
