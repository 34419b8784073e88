#pragma once
// Shared helpers of the fake driver libraries: every behaviour is read from environment variables
// at call time, so one test process can switch scenarios between tests.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>

namespace fake {
inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
inline std::string env_str(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string(fallback);
}
inline int gpu_count_default() {
  return env_int("FAKE_GPU_COUNT", 1);
}
/// PCI bus id of fake GPU i, as CUDA prints it: "0000:01:00.0" for i = 0.
inline std::string bus_id(int i) {
  char b[32];
  std::snprintf(b, sizeof b, "0000:%02x:00.0", i + 1);
  return b;
}
/// The fake "hardware" state shared by the fake NVML and the fake CUDA: a GPU marked lost.
inline std::string lost_marker(const std::string& bus) {
  return env_str("FAKE_STATE_DIR", "/tmp") + "/lost_" + bus;
}
inline bool is_lost(const std::string& bus) {
  struct stat st {};
  return ::stat(lost_marker(bus).c_str(), &st) == 0;
}
inline void mark_lost(const std::string& bus) {
  if (FILE* f = std::fopen(lost_marker(bus).c_str(), "w"))
    std::fclose(f);
}
} // namespace fake
