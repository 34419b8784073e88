// libFuzzer target for the results readers (a resumed run reads whatever a killed one left, and a
// user may hand-edit files): any bytes must give a result or an error, never a crash, a hang or
// an escaped exception. And what loads must survive its own round trip: writing it and reading it
// back gives the same text (the first byte picks the reader). Build with clang:
// -DSPECBENCH_BUILD_FUZZERS=ON.
#include "specbench/results.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    auto m = specbench::manifest_from_json(text);
    if (!m) {
      if (m.status().message().empty())
        __builtin_trap(); // an error must say what is wrong
      return 0;
    }
    const std::string once = specbench::to_json(*m);
    auto again = specbench::manifest_from_json(once);
    if (!again || specbench::to_json(*again) != once)
      __builtin_trap();
  } else {
    auto r = specbench::cell_result_from_json(text);
    if (!r) {
      if (r.status().message().empty())
        __builtin_trap();
      return 0;
    }
    const std::string once = specbench::to_json(*r);
    auto again = specbench::cell_result_from_json(once);
    if (!again || specbench::to_json(*again) != once)
      __builtin_trap();
  }
  return 0;
}
