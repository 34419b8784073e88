#pragma once
// A fake machine for preflight tests: a root directory with /dev, /proc, /sys and /run entries
// (device nodes are symlinks to /dev/null, a real character device, with /proc/devices naming
// its major for the NVIDIA drivers), plus the FAKE_* variables that steer the fake driver
// libraries. The destructor unsets every variable it set and removes the root.
#include "specbench/preflight.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace specbench::testing {

enum class Uvm { ok, missing_node, stale_major, no_module };

class FakeMachine {
public:
  explicit FakeMachine(const std::string& name);
  ~FakeMachine();
  FakeMachine(const FakeMachine&) = delete;
  FakeMachine& operator=(const FakeMachine&) = delete;

  /// Sets an environment variable for this test (the fakes read them at call time).
  void set(const std::string& key, const std::string& value);
  /// Kernel module loaded with this version, /proc/devices with the NVIDIA majors.
  void driver_loaded(const std::string& version = "595.71.05", Uvm uvm = Uvm::ok);
  /// /dev/nvidiactl and /dev/nvidia0..n-1 (skip one minor with `missing`).
  void gpu_nodes(int n, int missing = -1);
  /// /run/systemd/container with this kind.
  void container(const std::string& kind);
  /// A healthy machine with `gpus` GPUs (host files, FAKE_GPU_COUNT).
  void healthy(int gpus);
  /// A plan for this machine: fake root, fake libraries, the built probe, short timeouts.
  PreflightPlan plan(int tp = 1) const;

  std::filesystem::path root;

private:
  void write(const std::string& rel, const std::string& text);
  void link(const std::string& rel, const std::string& target);
  std::vector<std::string> vars_;
  std::map<std::string, std::string> saved_;
};

/// The check `id` of `r`; a test failure (and an empty result) when the report has none.
const CheckResult& check(const PreflightReport& r, const std::string& id);

/// Directory of the fake driver libraries.
std::string fake_driver_dir();

/// Runs `argv` (no shell) with extra environment variables; returns exit code (128+signal if
/// killed, -1 if it could not start) and stdout.
struct CliResult {
  int exit_code = -1;
  std::string out;
  double wall_ms = 0;
};
CliResult run_cli(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, int timeout_s = 60);

} // namespace specbench::testing
