#include "e2e_support.hpp"

#include "support/test_paths.hpp"

#include <atomic>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace specbench::e2e {

namespace fs = std::filesystem;

std::string unique_marker(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

fs::path write_sweep(const fs::path& dir, const SweepSpec& s) {
  std::ostringstream y;
  y << "name: " << s.name << "\n"
    << "gpus: 8\n"
    << "model:\n  name: e2e-model\n  path: " << s.marker << "\n  draft_path: e2e-draft\n"
    << "  context_length: 4096\n"
    << "server:\n  backend: sglang\n  api: generate\n"
    << "  readiness_timeout_s: " << s.readiness_timeout_s << "\n"
    << "  stop_grace_s: 3\n"
    << "  request_timeout_s: " << s.request_timeout_s << "\n"
    << "  launch: ["
    << (s.launch_through_shell ? "/bin/sh, -c, '\"$0\" \"$@\"; status=$?; exit $status', " : "")
    << "\"" << E2E_FAULT_ROUTER << "\", --cell, \"{cell_id}\", --faults, \"" << s.faults
    << "\", --, \"{specbench}\", sim-server, --host, \"{host}\", --port, \"{port}\", --tp-size, "
       "\"{tp}\", --model-path, \"{model}\", --context-length, \"{context_length}\", "
       "--cost-fixed-us, \""
    << s.cost_fixed_us << "\", --cost-per-token-us, \"5\", --load-time-s, \"0.1\"]\n"
    << "  method_args:\n"
    << "    linear: [--speculative-algorithm, DFLASH, --speculative-num-draft-tokens, "
       "\"{block}\"]\n"
    << "    tree: [--speculative-algorithm, DDTREE, --speculative-num-draft-tokens, \"{block}\", "
       "--speculative-ddtree-budget, \"{budget}\"]\n"
    << "phases:\n";
  for (int tp : s.tps)
    y << "  - tp: " << tp << "\n";
  y << "methods:\n  - kind: autoregressive\n";
  if (s.linear)
    y << "  - kind: linear\n    block: 8\n";
  if (!s.budgets.empty()) {
    y << "  - kind: tree\n    block: 8\n    budgets: [";
    for (size_t i = 0; i < s.budgets.size(); ++i)
      y << (i ? ", " : "") << s.budgets[i];
    y << "]\n";
  }
  y << "workloads:\n  - name: w\n    prompt_tokens: 16\n    max_new_tokens: " << s.max_new_tokens
    << "\n    concurrency: " << s.concurrency << "\n    requests: " << s.requests
    << "\n    warmup: " << s.warmup << "\n    runs: " << s.runs << "\n    seed: 3\n"
    << "runner:\n  preflight: " << (s.preflight ? "true" : "false")
    << "\n  skip_smaller_budgets_after_crash: " << (s.skip_rule ? "true" : "false") << "\n";
  const fs::path file = dir / (s.name + ".yaml");
  std::ofstream(file) << y.str();
  return file;
}

std::vector<pid_t> find_processes(const std::vector<std::string>& needles) {
  std::vector<pid_t> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string a; std::getline(in, a, '\0');)
      args.push_back(a);
    if (args.empty())
      continue; // zombie or kernel thread
    bool all = true;
    for (const auto& n : needles) {
      bool any = false;
      for (const auto& a : args)
        any |= a.find(n) != std::string::npos;
      all &= any;
    }
    if (all && std::stoi(name) != ::getpid())
      found.push_back(std::stoi(name));
  }
  return found;
}

std::vector<pid_t> wait_no_processes(const std::vector<std::string>& needles,
                                     std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = find_processes(needles);
    if (left.empty() || std::chrono::steady_clock::now() > end)
      return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

namespace {
// Starts the CLI with `args`, its stdout on `out` and its stderr on `err`, in a fresh process
// group, so that a signal meant for the CLI reaches only what we send it to.
pid_t exec_cli(const std::vector<std::string>& args, int out, int err) {
  std::vector<std::string> argv = {specbench::testing::cli_path().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setpgid(0, 0);
    std::vector<char*> a;
    for (auto& s : argv)
      a.push_back(s.data());
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  return pid;
}
} // namespace

Child spawn_cli(const std::vector<std::string>& args, const fs::path& log_prefix) {
  Child c;
  c.out = log_prefix.string() + ".out";
  c.err = log_prefix.string() + ".err";
  const int o = ::open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int e = ::open(c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  c.pid = exec_cli(args, o, e);
  ::close(o);
  ::close(e);
  return c;
}

Child spawn_cli_to_fd(const std::vector<std::string>& args, int fd) {
  Child c;
  c.pid = exec_cli(args, fd, fd);
  return c;
}

int wait_child(Child& c, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(c.pid, &st, WNOHANG);
    if (r == c.pid) {
      c.pid = -1;
      if (WIFEXITED(st))
        return WEXITSTATUS(st);
      if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
      return -1;
    }
    if (std::chrono::steady_clock::now() > end) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &st, 0);
      c.pid = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace specbench::e2e
