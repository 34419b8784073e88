#include "support/test_paths.hpp"

#include <atomic>
#include <unistd.h>

namespace specbench::testing {
std::filesystem::path source_dir() { return SPECBENCH_SOURCE_DIR; }
std::filesystem::path binary_dir() { return SPECBENCH_BINARY_DIR; }
std::filesystem::path cli_path() { return SPECBENCH_CLI_PATH; }
std::filesystem::path make_temp_dir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  auto dir = binary_dir() / "test-tmp" /
             (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}
} // namespace specbench::testing
