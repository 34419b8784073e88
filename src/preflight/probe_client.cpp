// Parent side of the GPU probe: fork/exec the probe with argv (never a shell), read its JSON
// lines over a pipe with poll(), and kill its process group when a step runs past its limit.
#include "core/json_text.hpp"
#include "preflight/probe.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace specbench::preflight {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

bool executable(const fs::path& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p);
}

std::chrono::milliseconds limit_for(const std::string& step, const PreflightTimeouts& t) {
  if (step.rfind("compute.", 0) == 0)
    return t.compute;
  if (step.rfind("interconnect.", 0) == 0)
    return t.interconnect;
  return t.cuda_init;
}

} // namespace

std::string find_probe_executable(const PreflightPlan& plan) {
  if (!plan.probe_path.empty())
    return plan.probe_path; // checked when started
  if (auto it = plan.environment.find("SPECBENCH_GPU_PROBE"); it != plan.environment.end())
    return it->second;
  if (const char* env = std::getenv("SPECBENCH_GPU_PROBE"); env && *env)
    return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = self.parent_path();
    for (const fs::path& c : {dir / "specbench-gpu-probe", dir / "bin" / "specbench-gpu-probe",
                              dir.parent_path() / "bin" / "specbench-gpu-probe",
                              dir.parent_path() / "libexec" / "specbench-gpu-probe"})
      if (executable(c))
        return c.string();
  }
#ifdef SPECBENCH_PROBE_BUILD_PATH
  if (executable(SPECBENCH_PROBE_BUILD_PATH))
    return SPECBENCH_PROBE_BUILD_PATH;
#endif
  return {};
}

ProbeOutcome run_probe_child(const nlohmann::json& request, const PreflightPlan& plan) {
  ProbeOutcome out;
  const auto t0 = Clock::now();
  const std::string exe = find_probe_executable(plan);
  out.executable = exe.empty() ? "(fork)" : exe;
  if (!exe.empty() && !executable(exe)) {
    out.start_error = "probe executable " + exe + " does not exist or is not executable";
    return out;
  }
  // Bytes that are not UTF-8 never throw here (a plain dump would, and lose the whole preflight);
  // validate_plan already refuses library names that are not UTF-8, which this would change.
  const std::string req = detail::json_text(request);

  // Environment of the child: ours, with the plan's overrides.
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (plan.environment.count(key) == 0)
      env_store.push_back(std::move(kv));
  }
  for (const auto& [k, v] : plan.environment)
    env_store.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_store)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_store = {exe.empty() ? "specbench-gpu-probe" : exe, "--request",
                                         req};
  std::vector<char*> argv;
  for (auto& s : args_store)
    argv.push_back(s.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    out.start_error = std::string("pipe: ") + std::strerror(errno);
    return out;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    out.start_error = std::string("pipe: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return out;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    out.start_error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      ::close(fd);
    return out;
  }
  if (pid == 0) {
    // Child: its own process group, so that a kill reaches anything it started too; SIGPIPE
    // as a program expects it (`specbench run` ignores it for itself).
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!exe.empty()) {
      ::execve(exe.c_str(), argv.data(), envp.data());
      const std::string msg = std::string("{\"ev\":\"error\",\"message\":\"exec ") + exe + ": " +
                              std::strerror(errno) + "\"}\n";
      (void)!::write(1, msg.data(), msg.size());
      ::_exit(127);
    }
    // No probe executable: run the probe in this fork. The parent never initialised CUDA, so the
    // fork starts clean.
    for (const auto& [k, v] : plan.environment)
      ::setenv(k.c_str(), v.c_str(), 1);
    ::_exit(run_gpu_probe(req, 1));
  }
  ::setpgid(pid, pid); // also from the parent, to win the race with the kill below
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  out.started = true;

  std::string buf, err_buf;
  std::string step = "cuda.load";
  int step_gpu = -1;
  auto step_start = Clock::now();
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    const auto limit = limit_for(step, plan.timeouts);
    const auto left =
        limit - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - step_start);
    if (left.count() <= 0) {
      out.timed_out = true;
      out.hung_step = step;
      out.hung_gpu = step_gpu;
      out.limit_ms = static_cast<double>(limit.count());
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    const int pr = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (pr < 0 && errno != EINTR)
      break;
    char chunk[8192];
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(out_pipe[0], chunk, sizeof chunk);
      if (n <= 0) {
        out_open = false;
      } else {
        buf.append(chunk, static_cast<size_t>(n));
        size_t nl;
        while ((nl = buf.find('\n')) != std::string::npos) {
          auto ev = nlohmann::json::parse(buf.substr(0, nl), nullptr, false);
          buf.erase(0, nl + 1);
          if (ev.is_discarded() || !ev.is_object())
            continue;
          const std::string kind = ev.value("ev", "");
          if (kind == "begin") {
            step = ev.value("id", step);
            step_gpu = ev.value("gpu", -1);
            step_start = Clock::now();
          } else if (kind == "done") {
            out.finished = true;
          }
          if (kind == "done") {
            // Everything is here; do not wait for the child's CUDA teardown to close the pipes.
            out_open = err_open = false;
          }
          out.events.push_back(std::move(ev));
        }
      }
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(err_pipe[0], chunk, sizeof chunk);
      if (n <= 0) {
        err_open = false;
      } else {
        err_buf.append(chunk, static_cast<size_t>(n));
        if (err_buf.size() > 4096)
          err_buf.erase(0, err_buf.size() - 4096);
      }
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  out.stderr_tail = err_buf;

  // Reap it. A process stuck in an uninterruptible driver call may not die at once; wait a short
  // while, then leave it rather than hang the caller.
  int status = 0;
  const auto reap_deadline = Clock::now() + std::chrono::milliseconds(out.timed_out ? 2000 : 10000);
  out.reaped = false;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      out.reaped = true;
      break;
    }
    if (r < 0 || Clock::now() > reap_deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (out.reaped) {
    if (WIFEXITED(status))
      out.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status))
      out.term_signal = WTERMSIG(status);
  } else if (!out.timed_out) {
    ::kill(-pid, SIGKILL);
  }
  out.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return out;
}

} // namespace specbench::preflight
