#pragma once
// Helpers of the end-to-end tests: sweep files for the simulated server (faults routed to chosen
// cells), running the CLI as a child we can signal, and finding leftover server processes.
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace specbench::e2e {

struct SweepSpec {
  std::string name = "e2e";
  std::string marker; ///< unique model path: finds this test's servers in /proc
  std::string faults; ///< "cell=fault;cell=fault"
  std::vector<int> tps = {1};
  std::vector<int> budgets = {4, 8};
  bool linear = true;
  bool skip_rule = false;
  bool preflight = false;
  int requests = 4, runs = 2, warmup = 1, max_new_tokens = 32, concurrency = 2;
  double readiness_timeout_s = 4, request_timeout_s = 3;
  int cost_fixed_us = 300;
  /// Start each server through `/bin/sh -c` that waits for it: the server is then a child of
  /// the process specbench started, as under a launcher script.
  bool launch_through_shell = false;
};

/// Writes the sweep YAML into `dir` and returns its path.
std::filesystem::path write_sweep(const std::filesystem::path& dir, const SweepSpec& spec);
/// A marker unique to this process and call.
std::string unique_marker(const std::string& prefix);
/// Live (non-zombie) processes whose command line contains every one of `needles`.
std::vector<pid_t> find_processes(const std::vector<std::string>& needles);
/// Waits up to `timeout` for find_processes(needles) to become empty; returns what is left.
std::vector<pid_t> wait_no_processes(const std::vector<std::string>& needles,
                                     std::chrono::milliseconds timeout);

/// A child process running the CLI, its output going to files.
struct Child {
  pid_t pid = -1;
  std::filesystem::path out, err;
};
Child spawn_cli(const std::vector<std::string>& args, const std::filesystem::path& log_prefix);
/// The same with stdout and stderr both on `fd` (e.g. a pipe); `out` and `err` stay empty.
Child spawn_cli_to_fd(const std::vector<std::string>& args, int fd);
/// Waits for the child; returns exit code or 128 + signal; -1 on timeout (then kills it).
int wait_child(Child& c, std::chrono::milliseconds timeout);
std::string read_file(const std::filesystem::path& p);

} // namespace specbench::e2e
