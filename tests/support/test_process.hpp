#pragma once
// Runs a program (argv, never a shell) and captures its exit code, stdout and stderr.
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace specbench::testing {
struct ProcessResult {
  int exit_code = -1; ///< exit status, or 128 + signal, or -1 when it could not start / timed out
  bool timed_out = false;
  std::string out, err;
};
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60),
                          const std::map<std::string, std::string>& extra_env = {});
} // namespace specbench::testing
