// ServerProcess: fork/exec in a new process group with the log as stdout/stderr, readiness,
// log scanning and stop. Free-port helpers.
#include "specbench/server.hpp"

#include "specbench/detail/utf8.hpp"

#include "client/simple_http.hpp"
#include "core/ascii_lower.hpp"
#include "core/json_text.hpp"
#include "core/seconds_since.hpp"
#include "server/proc_stat.hpp"
#include "server/registry.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

extern char** environ;

namespace specbench {
namespace {

using Clock = std::chrono::steady_clock;

// --- The guardian -----------------------------------------------------------------------------
// PR_SET_PDEATHSIG reaches only the server's leader. When specbench is SIGKILLed, whatever the
// leader started (a launcher's python, SGLang's scheduler and TP workers) would live on, holding
// the port and the GPUs' memory. So each server gets a guardian: a child of specbench in a
// session of its own (a signal to specbench's process group, a group-wide SIGKILL included, does
// not reach it) that waits on a socket pair. stop() writes one byte when the server is gone: the
// guardian exits. When specbench dies instead, specbench's end closes with it (or the guardian sees
// its parent change): the guardian takes the whole server group down. No signal carries the
// message, so none can be lost or come from someone else. Between fork and _exit it may call
// async-signal-safe functions only.
// Closes every descriptor from `from` to `to` (inclusive): one call where the kernel has it.
void close_from_to(int from, int to) {
  if (from > to)
    return;
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(from), static_cast<unsigned>(to), 0) == 0)
    return;
#endif
  for (int fd = from; fd <= to; ++fd)
    ::close(fd);
}

// The memory of this process's command line (argv's strings, one after another): where glibc's
// program_invocation_name (argv[0]) starts it and as long as /proc/self/cmdline says, or
// {nullptr, 0} when the two do not agree. Read once, before any guardian is forked.
struct CmdlineArea {
  char* start = nullptr;
  size_t size = 0;
};
CmdlineArea own_cmdline_area() {
  static const CmdlineArea area = [] {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    char* start = program_invocation_name;
    if (start == nullptr || text.empty() || std::strlen(start) + 1 > text.size() ||
        std::strcmp(start, text.c_str()) != 0 || std::memcmp(start, text.data(), text.size()) != 0)
      return CmdlineArea{};
    return CmdlineArea{start, text.size()};
  }();
  return area;
}

// The guardian is a fork of specbench and would show specbench's command line: `pkill -9 -f
// "specbench run"`, meant for the runner, would take it too, and a server whose leader had
// started children (a launcher script, SGLang's workers) would outlive both. So it renames
// itself: "sb-server-guardian" in ps's command column, "sb-guardian" as its name.
void retitle_guardian(CmdlineArea area) {
  ::prctl(PR_SET_NAME, "sb-guardian", 0, 0, 0);
  if (area.start == nullptr || area.size < 2)
    return;
  static constexpr char title[] = "sb-server-guardian";
  std::memset(area.start, 0, area.size);
  std::memcpy(area.start, title, std::min(sizeof title - 1, area.size - 1));
}

[[noreturn]] void run_guardian(pid_t parent, pid_t group, long grace_ms, int read_fd, int max_fd,
                               CmdlineArea title_area) {
  // Signals are blocked since before the fork, so the handlers inherited from specbench never
  // run here; reset them, then take only what we need.
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      ::signal(sig, SIG_IGN);
  ::setsid();
  retitle_guardian(title_area);
  const int devnull = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3 && devnull >= 0; ++fd)
    if (fd != read_fd)
      ::dup2(devnull, fd);
  // Hold none of specbench's files (the results directory's lock, a pipe a caller reads to EOF).
  close_from_to(3, read_fd - 1);
  close_from_to(read_fd + 1, max_fd);
  bool stop_asked = false;
  for (;;) {
    if (::getppid() != parent)
      break; // specbench is gone (reparented)
    pollfd p{read_fd, POLLIN, 0};
    const int r = ::poll(&p, 1, 500);
    if (r > 0) {
      char byte = 0;
      const ssize_t n = ::read(read_fd, &byte, 1);
      stop_asked = n == 1;
      if (n == 1 || n == 0 || errno != EINTR)
        break; // a byte: stop() says the server is gone; EOF: specbench is gone
    }
  }
  if (!stop_asked && ::kill(-group, 0) == 0) {
    ::kill(-group, SIGTERM);
    for (long waited = 0; waited < grace_ms && ::kill(-group, 0) == 0; waited += 50) {
      timespec ts{0, 50'000'000L};
      ::nanosleep(&ts, nullptr);
    }
    ::kill(-group, SIGKILL);
  }
  ::_exit(0);
}

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos)
      end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty())
      dir = ".";
    const std::string full = dir + "/" + name;
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0)
      return full;
    start = end + 1;
  }
  return "";
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

std::string now_utc() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos)
      nl = text.size();
    std::string l = text.substr(start, nl - start);
    if (!l.empty() && l.back() == '\r')
      l.pop_back();
    out.push_back(std::move(l));
    start = nl + 1;
  }
  return out;
}

ExitInfo exit_from_status(int st) {
  ExitInfo e;
  if (WIFEXITED(st))
    e.exit_code = WEXITSTATUS(st);
  else if (WIFSIGNALED(st))
    e.term_signal = WTERMSIG(st);
  return e;
}

// Built as JSON, not pasted into a string: a model name may hold a quote or a backslash.
std::string generation_probe_body(ApiKind api, const std::string& model) {
  using nlohmann::json;
  switch (api) {
  case ApiKind::generate:
    // What SGLang's own /health_generate sends.
    return R"({"input_ids":[0],"sampling_params":{"max_new_tokens":1,"temperature":0}})";
  case ApiKind::completions:
    return detail::json_text(
        json{{"model", model}, {"prompt", "Hello"}, {"max_tokens", 1}, {"temperature", 0}});
  case ApiKind::chat:
    return detail::json_text(
        json{{"model", model},
             {"messages", json::array({json{{"role", "user"}, {"content", "Hello"}}})},
             {"max_tokens", 1},
             {"temperature", 0}});
  }
  return "{}";
}

const char* probe_path(ApiKind api) {
  switch (api) {
  case ApiKind::generate:
    return "/generate";
  case ApiKind::completions:
    return "/v1/completions";
  case ApiKind::chat:
    return "/v1/chat/completions";
  }
  return "/generate";
}

} // namespace

const char* to_string(ReadinessOutcome outcome) noexcept {
  switch (outcome) {
  case ReadinessOutcome::ready:
    return "ready";
  case ReadinessOutcome::process_exited:
    return "process_exited";
  case ReadinessOutcome::fatal_log:
    return "fatal_log";
  case ReadinessOutcome::timeout:
    return "timeout";
  case ReadinessOutcome::probe_failed:
    return "probe_failed";
  case ReadinessOutcome::not_started:
    return "not_started";
  case ReadinessOutcome::cancelled:
    return "cancelled";
  }
  return "?";
}

const std::vector<FatalPattern>& default_fatal_patterns() {
  static const std::vector<FatalPattern> patterns = {
      {"Failed to get device capability",
       "the CUDA runtime cannot query the GPU (cudaErrorUnknown, 999): typical of a container "
       "whose GPU state went stale after a host reboot or driver reload; fix the container/host, "
       "then run `specbench preflight`"},
      {"CUDA unknown error",
       "cudaErrorUnknown (999): the driver cannot talk to the GPU; restart the container or reload "
       "nvidia-uvm on the host, then run `specbench preflight`"},
      {"no CUDA-capable device is detected",
       "no GPU visible to the server: check CUDA_VISIBLE_DEVICES and the container's device nodes"},
      {"CUDA driver version is insufficient",
       "the driver is older than the CUDA runtime the server was built with"},
      {"illegal instruction",
       "a GPU kernel faulted (illegal instruction): often a kernel path broken on this "
       "architecture for this configuration; the server is unusable, try another budget/block"},
      {"illegal memory access", "a GPU kernel read or wrote out of bounds; the server is unusable"},
      {"out of memory",
       "GPU (or host) memory exhausted: lower --mem-fraction-static, the context length, the "
       "batch size or the tree budget, or use more GPUs"},
      {"address already in use",
       "the port is taken: another server (an orphan?) still listens; stop it or let specbench "
       "choose a free port"},
      {"NCCL error",
       "a collective failed between GPUs: check P2P/NVLink, NCCL_P2P_DISABLE, shm size"},
      {"ncclSystemError", "NCCL system error: check /dev/shm size and IPC/P2P permissions"},
      {"ncclInternalError", "NCCL internal error between tensor-parallel ranks"},
      {"ncclUnhandledCudaError", "a CUDA error inside NCCL"},
      {"Watchdog caught collective operation timeout",
       "a collective hung (NCCL timeout): a rank died or the interconnect is broken"},
      {"Segmentation fault", "the server process crashed (segmentation fault)"},
  };
  return patterns;
}

// A server that logs its requests (SGLang --log-requests, vLLM's request logging) echoes
// prompts and outputs: a prompt that mentions "Segmentation fault" or "out of memory" is not
// the server failing. These lines are never fatal.
bool is_request_log_line(const std::string& lowered) {
  for (const char* marker : {"receive: obj=", "finish: obj=", "received request", "added request",
                             "generated response", "prompt: '", "prompt: \""})
    if (lowered.find(marker) != std::string::npos)
      return true;
  return false;
}

std::optional<FatalMatch> find_fatal_pattern(std::string_view log_text,
                                             const std::vector<FatalPattern>& patterns) {
  const auto& pats = patterns.empty() ? default_fatal_patterns() : patterns;
  std::vector<std::string> needles;
  needles.reserve(pats.size());
  for (const auto& p : pats)
    needles.push_back(detail::ascii_lower(p.text));
  int line_no = 0;
  while (!log_text.empty()) {
    const size_t nl = log_text.find('\n');
    std::string_view line = log_text.substr(0, nl);
    log_text.remove_prefix(nl == std::string_view::npos ? log_text.size() : nl + 1);
    ++line_no;
    const std::string l = detail::ascii_lower(std::string(line));
    if (is_request_log_line(l))
      continue;
    for (size_t i = 0; i < pats.size(); ++i)
      if (!needles[i].empty() && l.find(needles[i]) != std::string::npos) {
        std::string whole(line);
        if (!whole.empty() && whole.back() == '\r')
          whole.pop_back();
        return FatalMatch{pats[i], whole, line_no};
      }
  }
  return std::nullopt;
}

std::string ExitInfo::to_string() const {
  if (exit_code)
    return "exited with status " + std::to_string(*exit_code);
  if (term_signal) {
    const char* name = ::strsignal(*term_signal);
    return "killed by signal " + std::to_string(*term_signal) + " (" + (name ? name : "?") + ")";
  }
  return "ended (status unknown)";
}

// ---------------------------------------------------------------------------------------------
struct ServerProcess::Impl {
  std::mutex mu;
  LaunchSpec spec;
  std::vector<std::string> argv;
  pid_t pid = 0;
  bool started = false;
  bool registered = false;
  bool reaped = false;
  bool stopped = false; // stop() ran: a second call answers from last_stop
  StopReport last_stop;
  pid_t guardian = 0;   // see run_guardian; 0 when none
  int guardian_fd = -1; // specbench's end of its socket pair
  std::optional<ExitInfo> exit;
  int port = 0;
  // Log scanning state.
  std::mutex scan_mu;
  uint64_t scan_offset = 0;
  int scan_line = 0;
  std::string scan_carry;

  // Forks a guardian for the server group (run_guardian), a child of this process; on failure
  // there is none, and PDEATHSIG still takes the leader. Caller holds mu.
  void spawn_guardian_locked() {
    const pid_t parent = ::getpid();
    int socks[2];
    // A socket pair rather than a pipe: stop()'s write to a guardian that is already gone must
    // not raise SIGPIPE (send with MSG_NOSIGNAL).
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socks) != 0)
      return;
    const long grace_ms = static_cast<long>(std::max(0.0, spec.stop_grace_s) * 1000);
    const long open_max = ::sysconf(_SC_OPEN_MAX);
    const int max_fd = open_max > 0 && open_max < 65536 ? static_cast<int>(open_max) : 65536;
    const CmdlineArea title_area = own_cmdline_area();
    // Blocked across the fork, so that no handler of specbench's runs in the guardian.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    const pid_t g = ::fork();
    if (g == 0) {
      ::close(socks[1]);
      run_guardian(parent, pid, grace_ms, socks[0], max_fd, title_area);
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::close(socks[0]);
    if (g > 0) {
      guardian = g;
      guardian_fd = socks[1];
    } else {
      ::close(socks[1]);
    }
  }

  // A guardian that died while its server runs (killed by name, say: `pkill sb-guardian`)
  // would leave the server group to outlive specbench, so a new one takes its place. Called
  // from alive(), which the watchdog polls while a server is measured. Caller holds mu.
  void rearm_guardian_locked() {
    if (guardian <= 0 || stopped)
      return;
    int st = 0;
    const pid_t r = ::waitpid(guardian, &st, WNOHANG);
    if (r == 0 || (r < 0 && errno != ECHILD))
      return; // it runs (or the check failed: keep it)
    ::close(guardian_fd);
    guardian_fd = -1;
    guardian = 0;
    if (process_group_runs(pid))
      spawn_guardian_locked();
  }

  // Reaps the leader if it exited; returns true while it runs. Caller holds mu.
  bool poll_locked() {
    if (!started || reaped)
      return false;
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == 0)
      return true;
    reaped = true;
    if (r == pid)
      exit = exit_from_status(st);
    else
      exit = ExitInfo{}; // reaped elsewhere (signal cleanup): status unknown
    return false;
  }
};

ServerProcess::ServerProcess() : impl_(std::make_unique<Impl>()) {}

ServerProcess::~ServerProcess() {
  try {
    stop();
  } catch (...) {
  }
}

Status ServerProcess::start(const LaunchSpec& spec) {
  Impl& s = *impl_;
  std::lock_guard lk(s.mu);
  if (s.started)
    return Status(StatusCode::invalid_argument, "ServerProcess::start called twice",
                  "use a new ServerProcess per server", "ServerProcess::start");
  if (spec.argv.empty())
    return Status(StatusCode::invalid_argument, "empty server argv", "set server.launch",
                  "ServerProcess::start");
  if (spec.log_file.empty())
    return Status(StatusCode::invalid_argument, "no log file for the server",
                  "give LaunchSpec::log_file", "ServerProcess::start");
  s.spec = spec;
  int port = spec.port;
  if (port == 0) {
    auto p = choose_free_port(spec.host);
    if (!p)
      return p.status();
    port = *p;
  } else if (!port_is_free(spec.host, port)) {
    // A server that loads for minutes binds late: until then every readiness probe and request
    // would reach whatever already listens here, and be measured as this server's answers.
    return Status(StatusCode::unavailable,
                  "port " + std::to_string(port) + " on " + spec.host +
                      " is already in use: another process listens there, and specbench would "
                      "measure it instead of this server",
                  "stop that process (`ss -ltnp 'sport = :" + std::to_string(port) +
                      "'` names it), or set server.port: 0 so that specbench picks a free port",
                  "ServerProcess::start");
  }
  s.port = port;
  s.argv.clear();
  for (const auto& a : spec.argv)
    s.argv.push_back(replace_all(a, "{port}", std::to_string(port)));
  const std::string exe = find_in_path(s.argv[0]);
  if (exe.empty())
    return Status(StatusCode::not_found, "server executable not found: '" + s.argv[0] + "'",
                  "install it or give its full path in the launch template",
                  "ServerProcess::start");
  std::error_code ec;
  if (spec.log_file.has_parent_path())
    std::filesystem::create_directories(spec.log_file.parent_path(), ec);
  const int log_fd = ::open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return Status(StatusCode::io_error,
                  "cannot open server log " + spec.log_file.string() + ": " + std::strerror(errno),
                  "check the results directory", "ServerProcess::start");
  {
    struct stat st {};
    if (::fstat(log_fd, &st) == 0)
      s.scan_offset = static_cast<uint64_t>(st.st_size);
  }
  std::string banner =
      "[specbench " + now_utc() + "] starting server (port " + std::to_string(port) + "):";
  for (const auto& a : s.argv)
    banner += " " + a;
  banner += "\n";
  [[maybe_unused]] ssize_t w = ::write(log_fd, banner.data(), banner.size());
  s.scan_offset += banner.size(); // never scan our own banner (it may quote a fatal word)

  // Everything the child needs, prepared before fork (the child may only call async-safe code).
  std::vector<std::string> env_strings;
  {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      const size_t eq = kv.find('=');
      if (eq == std::string::npos)
        continue;
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : spec.env)
      env[k] = v;
    for (const auto& [k, v] : env)
      env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp, argvp;
  for (auto& e : env_strings)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& a : s.argv)
    argvp.push_back(a.data());
  argvp.push_back(nullptr);
  const std::string wd = spec.working_dir.string();
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    ::close(log_fd);
    return Status(StatusCode::io_error, std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const bool pdeath = spec.kill_when_parent_dies;
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(log_fd);
    ::close(exec_pipe[0]);
    ::close(exec_pipe[1]);
    return Status(StatusCode::unavailable, std::string("fork: ") + std::strerror(err),
                  "too many processes or not enough memory", "ServerProcess::start");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (pdeath) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD})
      ::signal(sig, SIG_DFL);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (!wd.empty() && ::chdir(wd.c_str()) != 0) {
      const int err = errno;
      [[maybe_unused]] ssize_t r = ::write(exec_pipe[1], &err, sizeof err);
      ::_exit(127);
    }
    ::execve(exe.c_str(), argvp.data(), envp.data());
    const int err = errno;
    [[maybe_unused]] ssize_t r = ::write(exec_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::setpgid(pid, pid); // also here, so the group exists before we ever signal it
  ::close(exec_pipe[1]);
  ::close(log_fd);
  int child_err = 0;
  ssize_t got;
  do {
    got = ::read(exec_pipe[0], &child_err, sizeof child_err);
  } while (got < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  s.pid = pid;
  s.started = true;
  s.registered = detail::register_server_group(pid);
  if (got != static_cast<ssize_t>(sizeof child_err) && pdeath)
    s.spawn_guardian_locked(); // without one, PDEATHSIG still takes the leader
  if (got == static_cast<ssize_t>(sizeof child_err)) {
    s.poll_locked();
    int st = 0;
    if (!s.reaped && ::waitpid(pid, &st, 0) == pid) {
      s.reaped = true;
      s.exit = exit_from_status(st);
    }
    if (s.registered)
      detail::unregister_server_group(pid);
    s.registered = false;
    return Status(StatusCode::not_found, "cannot start '" + exe + "': " + std::strerror(child_err),
                  wd.empty() ? "check the executable" : "check the executable and " + wd,
                  "ServerProcess::start");
  }
  return Status::ok();
}

Readiness ServerProcess::wait_ready(const ReadinessOptions& options,
                                    const std::atomic<bool>* cancel) {
  Readiness r;
  const auto t0 = Clock::now();
  const auto& patterns = options.fatal_patterns;
  if (!impl_->started) {
    r.reason = "the server was not started";
    return r;
  }
  auto finish = [&](ReadinessOutcome o, std::string reason) {
    r.outcome = o;
    r.reason = std::move(reason);
    r.waited_s = detail::seconds_since(t0);
    r.log_tail = log_tail(options.log_tail_lines);
    return r;
  };
  // `seen`: a fatal line already read while the process was alive. The scan consumes what it reads,
  // so without it a server that logs its error and then takes a moment to exit would lose it.
  auto exited = [&](std::optional<FatalMatch> seen = std::nullopt) {
    auto e = exit_info();
    if (e) {
      r.exit_code = e->exit_code;
      r.term_signal = e->term_signal;
    }
    r.fatal = seen ? std::move(seen) : scan_log(patterns);
    std::string why =
        "the server " + (e ? e->to_string() : std::string("ended")) + " before it was ready";
    if (r.fatal)
      why += "; log: \"" + r.fatal->line + "\" (" + r.fatal->pattern.diagnosis + ")";
    return finish(ReadinessOutcome::process_exited, why);
  };
  const std::string base = base_url();
  bool health_ok_seen = false;
  int not_found_in_a_row = 0; // generation probes answered 404 while /health answered 200
  for (;;) {
    if (cancel && cancel->load())
      return finish(ReadinessOutcome::cancelled, "cancelled");
    if (!alive())
      return exited();
    if (auto m = scan_log(patterns)) {
      // A server usually prints its fatal line and exits right after: give it a moment, so the
      // outcome (and the exit code) does not depend on which of the two was seen first.
      for (int i = 0; i < 25 && alive(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (!alive())
        return exited(m);
      r.fatal = m;
      return finish(ReadinessOutcome::fatal_log, "fatal line in the server log: \"" + m->line +
                                                     "\" (" + m->pattern.diagnosis + ")");
    }
    const double left = options.timeout_s - detail::seconds_since(t0);
    if (left <= 0)
      break;
    const double health_timeout = std::clamp(std::min(options.probe_timeout_s, left), 0.05, 5.0);
    auto h = detail::http_request(base + options.health_path, {}, health_timeout, {}, {}, 16u << 20,
                                  cancel);
    r.last_health_status = h.status;
    if (h.status != 200) {
      r.last_probe_error = h.status
                               ? options.health_path + " answered HTTP " + std::to_string(h.status)
                               : options.health_path + ": " + h.error;
    } else if (!options.probe_generation) {
      return finish(ReadinessOutcome::ready, "ready: " + options.health_path + " answered 200");
    } else {
      health_ok_seen = true;
      const double gen_timeout = std::max(
          0.05, std::min(options.probe_timeout_s, options.timeout_s - detail::seconds_since(t0)));
      // A probe may wait up to probe_timeout_s for a slow server: Ctrl-C must not.
      auto g = detail::http_request(base + probe_path(options.api),
                                    generation_probe_body(options.api, options.model), gen_timeout,
                                    "POST", {}, 16u << 20, cancel);
      if (cancel && cancel->load())
        return finish(ReadinessOutcome::cancelled, "cancelled");
      if (g.status >= 200 && g.status < 300)
        return finish(ReadinessOutcome::ready, "ready: " + options.health_path +
                                                   " answered 200 and a one-token generation "
                                                   "succeeded");
      r.last_probe_error =
          g.status ? std::string("one-token generation answered HTTP ") + std::to_string(g.status) +
                         ": " + detail::to_valid_utf8(std::string_view(g.body).substr(0, 200))
                   : std::string("one-token generation: ") + g.error;
      // A live server whose generation endpoint does not exist (server.api generate against
      // vLLM) or that does not serve the model name asked for (vLLM's 404) will not change its
      // mind: three in a row end the wait, instead of the whole readiness timeout per cell.
      not_found_in_a_row = g.status == 404 ? not_found_in_a_row + 1 : 0;
      if (not_found_in_a_row >= 3)
        return finish(ReadinessOutcome::probe_failed,
                      options.health_path + " answers 200 but POST " + probe_path(options.api) +
                          " answered HTTP 404 three times in a row (" +
                          detail::to_valid_utf8(std::string_view(g.body).substr(0, 200)) +
                          "): the server does not serve this API" +
                          (options.api == ApiKind::generate
                               ? std::string()
                               : " or the model name \"" + options.model + "\"") +
                          ". Check server.api (generate is SGLang's own API; vLLM, llama.cpp "
                          "and other OpenAI-compatible servers serve completions or chat), "
                          "server.backend" +
                          (options.api == ApiKind::generate
                               ? std::string()
                               : ", and model.name (the name the server serves)"));
      // A server error that names a fatal condition (a CUDA error, NCCL) will not go away by
      // waiting: say so now instead of after the whole readiness timeout.
      if (g.status >= 500)
        if (auto m = find_fatal_pattern(g.body, patterns)) {
          m->line = detail::to_valid_utf8(std::string_view(m->line).substr(0, 300));
          r.fatal = m;
          return finish(ReadinessOutcome::probe_failed,
                        options.health_path +
                            " answers 200 but the one-token generation "
                            "answered HTTP " +
                            std::to_string(g.status) + " naming a fatal error: \"" + m->line +
                            "\" (" + m->pattern.diagnosis + ")");
        }
    }
    const double sleep_s =
        std::min(options.poll_interval_s, options.timeout_s - detail::seconds_since(t0));
    if (sleep_s > 0) {
      // Sleep in slices so that an exit or a cancel ends the wait promptly.
      const auto until = Clock::now() + std::chrono::duration<double>(sleep_s);
      while (Clock::now() < until) {
        if ((cancel && cancel->load()) || !alive())
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  // One last look: a server that died or logged a fatal line in the last slice says so.
  if (!alive())
    return exited();
  if (auto m = scan_log(patterns)) {
    r.fatal = m;
    return finish(ReadinessOutcome::fatal_log, "fatal line in the server log: \"" + m->line + "\"");
  }
  char when[32];
  std::snprintf(when, sizeof when, "%.1f", options.timeout_s);
  if (health_ok_seen && r.last_health_status == 200)
    return finish(ReadinessOutcome::probe_failed, std::string("not ready after ") + when +
                                                      " s: " + options.health_path +
                                                      " answers 200 but " + r.last_probe_error);
  return finish(ReadinessOutcome::timeout,
                std::string("not ready after ") + when +
                    " s: " + (r.last_probe_error.empty() ? "no answer" : r.last_probe_error));
}

bool ServerProcess::alive() {
  std::lock_guard lk(impl_->mu);
  const bool runs = impl_->poll_locked();
  impl_->rearm_guardian_locked();
  return runs;
}

std::optional<ExitInfo> ServerProcess::exit_info() {
  std::lock_guard lk(impl_->mu);
  impl_->poll_locked();
  return impl_->exit;
}

std::optional<FatalMatch> ServerProcess::scan_log(const std::vector<FatalPattern>& patterns) {
  Impl& s = *impl_;
  if (!s.started)
    return std::nullopt;
  std::lock_guard lk(s.scan_mu);
  std::ifstream in(s.spec.log_file, std::ios::binary);
  if (!in)
    return std::nullopt;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size < s.scan_offset)
    s.scan_offset = 0; // truncated: start over
  if (size == s.scan_offset)
    return std::nullopt;
  const uint64_t want = std::min<uint64_t>(size - s.scan_offset, 4u << 20);
  std::string chunk(want, '\0');
  in.seekg(static_cast<std::streamoff>(s.scan_offset));
  in.read(chunk.data(), static_cast<std::streamsize>(want));
  chunk.resize(static_cast<size_t>(in.gcount()));
  s.scan_offset += chunk.size();
  std::string text = s.scan_carry + chunk;
  // Scan everything, including an unfinished last line (a crashing process may never end it),
  // but carry that partial line over so a pattern split across reads is still found.
  const size_t last_nl = text.rfind('\n');
  const size_t complete_len = last_nl == std::string::npos ? 0 : last_nl + 1;
  auto m = find_fatal_pattern(text, patterns);
  if (m) {
    m->line = detail::to_valid_utf8(m->line);
    m->line_number += s.scan_line;
    s.scan_line += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    s.scan_carry.clear();
    return m;
  }
  s.scan_line += static_cast<int>(
      std::count(text.begin(), text.begin() + static_cast<long>(complete_len), '\n'));
  s.scan_carry = text.size() - complete_len < 64 * 1024 ? text.substr(complete_len) : std::string();
  return std::nullopt;
}

StopReport ServerProcess::stop() {
  Impl& s = *impl_;
  StopReport rep;
  std::unique_lock lk(s.mu);
  if (!s.started)
    return rep;
  if (s.stopped) // the destructor after an explicit stop(), say
    return s.last_stop;
  const auto t0 = Clock::now();
  rep.was_running = s.poll_locked();
  const pid_t pg = s.pid;
  const auto group_alive = [&] {
    s.poll_locked();
    return process_group_runs(pg);
  };
  if (group_alive()) {
    ::kill(-pg, SIGTERM);
    const auto deadline = t0 + std::chrono::duration<double>(std::max(0.0, s.spec.stop_grace_s));
    while (Clock::now() < deadline && group_alive())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (group_alive()) {
      rep.sigkilled = true;
      ::kill(-pg, SIGKILL);
      const auto hard = Clock::now() + std::chrono::seconds(10);
      while (Clock::now() < hard && group_alive())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!s.reaped) { // group gone but the leader not yet reaped by us
    int st = 0;
    if (::waitpid(s.pid, &st, 0) == s.pid)
      s.exit = exit_from_status(st);
    s.reaped = true;
  }
  if (s.registered) {
    detail::unregister_server_group(pg);
    s.registered = false;
  }
  if (s.guardian > 0) { // the group is gone: its guardian has nothing left to do
    const char bye = 1;
    [[maybe_unused]] ssize_t w = ::send(s.guardian_fd, &bye, 1, MSG_NOSIGNAL);
    ::close(s.guardian_fd);
    s.guardian_fd = -1;
    // It answers within a poll; never wait on it for long.
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    int st = 0;
    while (::waitpid(s.guardian, &st, WNOHANG) == 0) {
      if (Clock::now() >= deadline) {
        ::kill(s.guardian, SIGKILL);
        ::waitpid(s.guardian, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    s.guardian = 0;
  }
  rep.exit = s.exit;
  // Wait for the port: a server that is gone must not block the next cell's server.
  const auto port_deadline =
      Clock::now() + std::chrono::duration<double>(std::max(0.0, s.spec.port_free_timeout_s));
  rep.port_free = port_is_free(s.spec.host, s.port);
  while (!rep.port_free && Clock::now() < port_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rep.port_free = port_is_free(s.spec.host, s.port);
  }
  rep.took_s = detail::seconds_since(t0);
  s.stopped = true;
  s.last_stop = rep;
  return rep;
}

pid_t ServerProcess::pid() const noexcept {
  return impl_->pid;
}
int ServerProcess::port() const noexcept {
  return impl_->port;
}
std::string ServerProcess::base_url() const {
  const std::string& h = impl_->spec.host;
  const bool v6 = h.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + h + "]" : h) + ":" + std::to_string(impl_->port);
}
const std::vector<std::string>& ServerProcess::argv() const noexcept {
  return impl_->argv;
}
const std::filesystem::path& ServerProcess::log_file() const noexcept {
  return impl_->spec.log_file;
}

std::vector<std::string> ServerProcess::log_tail(size_t lines) const {
  std::ifstream in(impl_->spec.log_file, std::ios::binary);
  if (!in || lines == 0)
    return {};
  in.seekg(0, std::ios::end);
  const auto size = static_cast<int64_t>(in.tellg());
  const int64_t want = std::min<int64_t>(size, 256 * 1024);
  std::string text(static_cast<size_t>(want), '\0');
  in.seekg(size - want);
  in.read(text.data(), want);
  text.resize(static_cast<size_t>(in.gcount()));
  auto all = split_lines(text);
  if (want < size && !all.empty())
    all.erase(all.begin()); // first line is partial
  if (all.size() > lines)
    all.erase(all.begin(), all.end() - static_cast<long>(lines));
  for (auto& line : all)
    line = detail::to_valid_utf8(line); // a crash may log bytes that are not text
  return all;
}

// ---------------------------------------------------------------------------------------------
namespace {
int bind_probe(const std::string& host, int port, bool reuse, int* out_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
    return EINVAL;
  int err = EADDRNOTAVAIL;
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    if (reuse)
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0) {
      if (out_port) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
        *out_port = ss.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      }
      ::close(fd);
      ::freeaddrinfo(res);
      return 0;
    }
    err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return err;
}
} // namespace

Expected<int> choose_free_port(const std::string& host) {
  int port = 0;
  const int err = bind_probe(host, 0, false, &port);
  if (err != 0 || port <= 0)
    return Status(StatusCode::unavailable,
                  "cannot find a free port on " + host + ": " + std::strerror(err),
                  "check the host address", "choose_free_port");
  return port;
}

// True while a process of group `pg` runs. kill(-pg, 0) alone also counts zombies: a launcher's
// orphaned child that only its new parent may reap (PID 1 in a container where specbench is PID
// 1 never does), and stop() then waited out its grace and a hard wait for a group already gone.
bool process_group_runs(pid_t pg) {
  if (::kill(-pg, 0) != 0)
    return false;
  bool live = false;
  const bool scanned = detail::for_each_process([&](const detail::ProcStat& p) {
    live = p.pgrp == pg && p.state != 'Z' && p.state != 'X';
    return !live;
  });
  return live || !scanned; // without /proc, kill's answer stands
}

bool port_is_free(const std::string& host, int port) {
  return bind_probe(host, port, true, nullptr) == 0;
}

} // namespace specbench
