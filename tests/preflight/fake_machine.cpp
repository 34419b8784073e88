#include "fake_machine.hpp"

#include "support/test_paths.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace specbench::testing {
namespace fs = std::filesystem;

const CheckResult& check(const PreflightReport& r, const std::string& id) {
  const CheckResult* c = r.find(id);
  if (c == nullptr) {
    ADD_FAILURE() << "no check " << id << " in report:\n" << r.to_table();
    static const CheckResult none;
    return none;
  }
  return *c;
}

std::string fake_driver_dir() {
  return SPECBENCH_FAKE_DRIVER_DIR;
}

FakeMachine::FakeMachine(const std::string& name) {
  root = make_temp_dir("preflight-" + name);
  fs::create_directories(root / "dev");
  fs::create_directories(root / "proc");
  fs::create_directories(root / "state");
  set("FAKE_STATE_DIR", (root / "state").string());
  // The test process's own visibility variables must not leak into the fake machine.
  for (const char* v : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"})
    if (const char* old = std::getenv(v)) {
      saved_[v] = old;
      ::unsetenv(v);
    }
}

FakeMachine::~FakeMachine() {
  for (const auto& v : vars_)
    ::unsetenv(v.c_str());
  for (const auto& [k, v] : saved_)
    ::setenv(k.c_str(), v.c_str(), 1);
  std::error_code ec;
  fs::remove_all(root, ec);
}

void FakeMachine::set(const std::string& key, const std::string& value) {
  ::setenv(key.c_str(), value.c_str(), 1);
  vars_.push_back(key);
}

void FakeMachine::write(const std::string& rel, const std::string& text) {
  const fs::path p = root / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

void FakeMachine::link(const std::string& rel, const std::string& target) {
  const fs::path p = root / rel;
  fs::create_directories(p.parent_path());
  std::error_code ec;
  fs::remove(p, ec);
  fs::create_symlink(target, p);
}

void FakeMachine::driver_loaded(const std::string& version, Uvm uvm) {
  write("proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " + version +
            "  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Sun Apr 12 00:00:00 UTC 2026\n"
            "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  // /dev/null is character device 1:3: the fake NVIDIA nodes point at it, and /proc/devices says
  // major 1 belongs to the NVIDIA drivers.
  std::string devices = "Character devices:\n  1 mem\n  1 nvidia-frontend\n";
  if (uvm == Uvm::ok || uvm == Uvm::missing_node)
    devices += "  1 nvidia-uvm\n";
  if (uvm == Uvm::stale_major)
    devices += "510 nvidia-uvm\n";
  devices += "\nBlock devices:\n  8 sd\n";
  write("proc/devices", devices);
  if (uvm != Uvm::no_module)
    fs::create_directories(root / "sys/module/nvidia_uvm");
  if (uvm == Uvm::ok || uvm == Uvm::stale_major)
    link("dev/nvidia-uvm", "/dev/null");
}

void FakeMachine::gpu_nodes(int n, int missing) {
  link("dev/nvidiactl", "/dev/null");
  for (int i = 0; i < n; ++i)
    if (i != missing)
      link("dev/nvidia" + std::to_string(i), "/dev/null");
}

void FakeMachine::container(const std::string& kind) {
  write("run/systemd/container", kind + "\n");
}

void FakeMachine::healthy(int gpus) {
  driver_loaded();
  gpu_nodes(gpus);
  set("FAKE_GPU_COUNT", std::to_string(gpus));
}

PreflightPlan FakeMachine::plan(int tp) const {
  PreflightPlan p;
  p.tp = tp;
  p.root = root.string();
  p.library_path = {fake_driver_dir()};
  p.probe_path = SPECBENCH_GPU_PROBE_PATH;
  p.allocation_bytes = 2u << 20;
  p.timeouts.cuda_init = std::chrono::milliseconds(5000);
  p.timeouts.compute = std::chrono::milliseconds(10000);
  p.timeouts.interconnect = std::chrono::milliseconds(10000);
  return p;
}

CliResult run_cli(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, int timeout_s) {
  CliResult r;
  int pipe_fd[2];
  if (::pipe2(pipe_fd, O_CLOEXEC) != 0)
    return r;
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (env.count(kv.substr(0, kv.find('='))) == 0)
      env_store.push_back(kv);
  }
  for (const auto& [k, v] : env)
    env_store.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_store)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = argv;
  for (auto& s : argv_store)
    args.push_back(s.data());
  args.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fd[1], 1);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(pipe_fd[1]);
  char buf[4096];
  const auto deadline = t0 + std::chrono::seconds(timeout_s);
  while (true) {
    pollfd p{pipe_fd[0], POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      continue;
    const ssize_t n = ::read(pipe_fd[0], buf, sizeof buf);
    if (n <= 0)
      break;
    r.out.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

} // namespace specbench::testing
