// Server lifecycle with real processes: the `specbench sim-server` binary and its fault modes for
// every readiness outcome, stop with grace and SIGKILL, no orphan after exceptions or SIGINT, and
// the watchdog aborting a measuring client when the server dies or hangs.
#include "core/seconds_since.hpp"
#include "server/proc_stat.hpp"
#include "specbench/client.hpp"
#include "specbench/server.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

using namespace specbench;
namespace sbt = specbench::testing;

namespace {

LaunchSpec sim_launch(const std::string& name, std::vector<std::string> extra = {}) {
  LaunchSpec s;
  s.argv = {
      sbt::cli_path().string(), "sim-server", "--port",          "{port}", "--host", "127.0.0.1",
      "--load-time-s",          "0.3",        "--cost-fixed-us", "300"};
  s.argv.insert(s.argv.end(), extra.begin(), extra.end());
  s.log_file = sbt::make_temp_dir("server") / (name + ".log");
  s.stop_grace_s = 5;
  return s;
}

ReadinessOptions quick_ready(double timeout_s = 10) {
  ReadinessOptions r;
  r.timeout_s = timeout_s;
  r.poll_interval_s = 0.05;
  r.probe_timeout_s = 2;
  return r;
}

// A zombie left for init to reap is not a running server.
bool group_exists(pid_t pg) {
  return process_group_runs(pg);
}

bool wait_gone(pid_t pg, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (!group_exists(pg))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !group_exists(pg);
}

// A child process that plays specbench: optionally installs the cleanup handlers, starts a
// server with `argv` (stop grace 1 s), reports its group, then waits to be signalled; with
// `poll_alive` it asks alive() every 20 ms meanwhile, as the watchdog does while it measures.
struct Driver {
  pid_t pid = 0, group = 0;
};
Driver start_driver(std::vector<std::string> argv, const std::string& name, bool handlers,
                    bool own_group = false, bool poll_alive = false) {
  int fds[2];
  if (::pipe(fds) != 0)
    return {};
  const auto log = sbt::make_temp_dir("server") / (name + ".log");
  const pid_t child = ::fork();
  if (child < 0)
    return {};
  if (child == 0) {
    ::close(fds[0]);
    if (own_group)
      ::setpgid(0, 0);
    if (handlers)
      install_server_cleanup_handlers(1.0);
    ServerProcess p;
    LaunchSpec s;
    s.argv = std::move(argv);
    s.log_file = log;
    s.stop_grace_s = 1;
    if (!p.start(s))
      ::_exit(10);
    const pid_t pg = p.pid();
    [[maybe_unused]] ssize_t w = ::write(fds[1], &pg, sizeof pg);
    for (;;) {
      if (!poll_alive)
        ::pause();
      p.alive();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ::close(fds[1]);
  Driver d{child, 0};
  if (::read(fds[0], &d.group, sizeof d.group) != static_cast<ssize_t>(sizeof d.group))
    d.group = 0;
  ::close(fds[0]);
  return d;
}

// The pids of `parent`'s children named `comm` that are not zombies.
std::vector<pid_t> children_named(pid_t parent, const std::string& comm) {
  std::vector<pid_t> found;
  detail::for_each_process([&](const detail::ProcStat& p) {
    if (p.ppid == parent && p.state != 'Z' && p.comm == comm)
      found.push_back(p.pid);
    return true;
  });
  return found;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines)
    s += l + "\n";
  return s;
}

} // namespace

TEST(Readiness, SimServerBecomesReadyAfterLoading) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("ready")).is_ok());
  EXPECT_GT(p.port(), 0);
  EXPECT_EQ(p.argv()[3], std::to_string(p.port())); // {port} substituted in its own argument
  const Readiness r = p.wait_ready(quick_ready());
  ASSERT_TRUE(r.ok()) << r.reason << "\n" << joined(r.log_tail);
  EXPECT_GE(r.waited_s, 0.25); // /health was 503 while "loading"
  EXPECT_EQ(r.last_health_status, 200);
  EXPECT_TRUE(p.alive());
  const pid_t pg = p.pid();
  const StopReport s = p.stop();
  EXPECT_TRUE(s.was_running);
  EXPECT_FALSE(s.sigkilled); // it honours SIGTERM
  EXPECT_TRUE(s.port_free);
  EXPECT_FALSE(group_exists(pg));
  ASSERT_TRUE(s.exit.has_value());
  EXPECT_EQ(s.exit->exit_code.value_or(-1), 0);
  EXPECT_TRUE(port_is_free("127.0.0.1", p.port()));
  // The log carries our banner and the server's own synthetic-model note.
  EXPECT_NE(joined(p.log_tail(100)).find("SYNTHETIC"), std::string::npos);
}

TEST(Readiness, FailedStartWithCudaErrorEndsAtOnce) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("fail", {"--fault", "fail-start"})).is_ok());
  const Readiness r = p.wait_ready(quick_ready(30));
  EXPECT_EQ(r.outcome, ReadinessOutcome::process_exited);
  EXPECT_LT(r.waited_s, 10);
  EXPECT_EQ(r.exit_code.value_or(-1), 1);
  ASSERT_TRUE(r.fatal.has_value());
  EXPECT_NE(r.fatal->line.find("Failed to get device capability: CUDA unknown error"),
            std::string::npos);
  EXPECT_NE(r.reason.find("Failed to get device capability"), std::string::npos);
  EXPECT_NE(joined(r.log_tail).find("CUDA unknown error"), std::string::npos);
}

// A server that logs its fatal line and exits a moment later (SGLang tearing down its workers):
// the line read while it was alive is kept in the outcome, whichever of the two was seen first.
TEST(Readiness, FatalLineThenExitKeepsTheLine) {
  for (const char* delay : {"0.2", "0.05"}) {
    SCOPED_TRACE(delay);
    ServerProcess p;
    ASSERT_TRUE(p.start(sim_launch("fail-late", {"--fault", "fail-start", "--exit-delay-s", delay}))
                    .is_ok());
    const Readiness r = p.wait_ready(quick_ready(30));
    EXPECT_EQ(r.outcome, ReadinessOutcome::process_exited) << r.reason;
    EXPECT_EQ(r.exit_code.value_or(-1), 1);
    ASSERT_TRUE(r.fatal.has_value()) << r.reason;
    EXPECT_NE(r.fatal->line.find("CUDA unknown error"), std::string::npos);
    EXPECT_NE(r.reason.find("Failed to get device capability"), std::string::npos) << r.reason;
  }
}

TEST(Readiness, PlainExitAndOutOfMemory) {
  {
    ServerProcess p;
    ASSERT_TRUE(p.start(sim_launch("exit", {"--fault", "exit-start"})).is_ok());
    const Readiness r = p.wait_ready(quick_ready(30));
    EXPECT_EQ(r.outcome, ReadinessOutcome::process_exited);
    EXPECT_EQ(r.exit_code.value_or(-1), 3);
    EXPECT_FALSE(r.fatal.has_value());
  }
  {
    ServerProcess p;
    ASSERT_TRUE(p.start(sim_launch("oom", {"--fault", "oom-start"})).is_ok());
    const Readiness r = p.wait_ready(quick_ready(30));
    EXPECT_EQ(r.outcome, ReadinessOutcome::process_exited);
    ASSERT_TRUE(r.fatal.has_value());
    EXPECT_EQ(r.fatal->pattern.text, "out of memory");
  }
}

// Draft sizes past the sweep's limits, or a vocabulary the synthetic model cannot hold, are
// refused at start: a block of 10^8 once started, then spun on its first request and ignored
// SIGTERM; a vocabulary of 100,000 was cut to 65,536 without a word.
TEST(Readiness, SimServerOptionsOutsideItsLimitsAreRefusedAtStart) {
  const std::vector<std::vector<std::string>> bad = {
      {"--speculative-algorithm", "DFLASH", "--speculative-num-draft-tokens", "100000000"},
      {"--speculative-algorithm", "DDTREE", "--speculative-num-draft-tokens", "8",
       "--speculative-ddtree-budget", "100000000"},
      {"--vocab", "100000"}};
  for (const auto& extra : bad) {
    ServerProcess p;
    ASSERT_TRUE(p.start(sim_launch("limits", extra)).is_ok());
    const Readiness r = p.wait_ready(quick_ready(30));
    EXPECT_EQ(r.outcome, ReadinessOutcome::process_exited) << extra[extra.size() - 2];
    std::string tail;
    for (const auto& line : r.log_tail)
      tail += line + "\n";
    EXPECT_NE(tail.find(extra[extra.size() - 2]), std::string::npos) << tail;
    EXPECT_NE(tail.find("not in range"), std::string::npos) << tail;
  }
}

TEST(Readiness, FatalLogLineWhileAliveEndsTheWait) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("nccl", {"--fault", "nccl-error"})).is_ok());
  const Readiness r = p.wait_ready(quick_ready(30));
  EXPECT_EQ(r.outcome, ReadinessOutcome::fatal_log);
  EXPECT_LT(r.waited_s, 10);
  ASSERT_TRUE(r.fatal.has_value());
  EXPECT_NE(r.fatal->line.find("NCCL error"), std::string::npos);
  EXPECT_TRUE(p.alive());
  EXPECT_TRUE(p.stop().port_free);
}

TEST(Readiness, Unavailable503ForeverTimesOut) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("503", {"--fault", "unavailable"})).is_ok());
  const Readiness r = p.wait_ready(quick_ready(1.2));
  EXPECT_EQ(r.outcome, ReadinessOutcome::timeout);
  EXPECT_EQ(r.last_health_status, 503);
  EXPECT_NE(r.reason.find("503"), std::string::npos);
  EXPECT_LT(r.waited_s, 4);
}

TEST(Readiness, HungServerTimesOutWithoutAnAnswer) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("hang", {"--fault", "hang"})).is_ok());
  ReadinessOptions o = quick_ready(1.5);
  o.probe_timeout_s = 0.4;
  const Readiness r = p.wait_ready(o);
  EXPECT_EQ(r.outcome, ReadinessOutcome::timeout);
  EXPECT_EQ(r.last_health_status, 0);
  EXPECT_LT(r.waited_s, 4);
}

TEST(Readiness, HealthyButGenerationFailsIsProbeFailed) {
  ServerProcess p;
  // A 1-token context: /health is 200 but the one-token probe is a context-overflow 400.
  ASSERT_TRUE(p.start(sim_launch("probe", {"--context-length", "1"})).is_ok());
  const Readiness r = p.wait_ready(quick_ready(1.5));
  EXPECT_EQ(r.outcome, ReadinessOutcome::probe_failed) << r.reason;
  EXPECT_NE(r.last_probe_error.find("400"), std::string::npos);
}

// /health 200 while every generation fails with a CUDA error (the seeds' "CUDA unknown error"
// under a healthy-looking server): the readiness check says so at once, not after its timeout.
TEST(Readiness, AGenerationErrorNamingAFatalConditionEndsTheWaitAtOnce) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("broken-gen", {"--fault", "broken-generation"})).is_ok());
  const Readiness r = p.wait_ready(quick_ready(20));
  EXPECT_EQ(r.outcome, ReadinessOutcome::probe_failed) << r.reason;
  EXPECT_LT(r.waited_s, 5);
  ASSERT_TRUE(r.fatal.has_value());
  EXPECT_EQ(r.fatal->pattern.text, "illegal memory access");
  EXPECT_NE(r.reason.find("answered HTTP 500 naming a fatal error"), std::string::npos) << r.reason;
}

// /health 200 and every generation probe 404: the API is not this server's (server.api generate
// against vLLM) or the model name is not one it serves. Waiting cannot help; the audit's cell
// waited out the whole readiness timeout (600 s by default, per cell) with no fix named.
TEST(Readiness, AGenerationEndpointThatIsNotThereEndsTheWaitWithTheFix) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("no-generation", {"--fault", "no-generation"})).is_ok());
  for (const ApiKind api : {ApiKind::generate, ApiKind::chat}) {
    ReadinessOptions ro = quick_ready(20);
    ro.api = api;
    ro.model = "served-name";
    const Readiness r = p.wait_ready(ro);
    EXPECT_EQ(r.outcome, ReadinessOutcome::probe_failed) << r.reason;
    EXPECT_LT(r.waited_s, 5);
    EXPECT_NE(r.reason.find("answered HTTP 404 three times in a row"), std::string::npos)
        << r.reason;
    EXPECT_NE(r.reason.find("Check server.api"), std::string::npos) << r.reason;
    EXPECT_EQ(r.reason.find("served-name") != std::string::npos, api == ApiKind::chat) << r.reason;
  }
}

TEST(Readiness, AModelNameWithAQuoteOrABackslashStillMakesAValidProbe) {
  // The OpenAI probes carry the model name; pasted into the body unescaped, it made invalid JSON,
  // every probe got HTTP 400, and the cell waited out the whole readiness timeout.
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("probe-name")).is_ok());
  for (const ApiKind api : {ApiKind::completions, ApiKind::chat}) {
    ReadinessOptions ro = quick_ready();
    ro.api = api;
    ro.model = R"(org/Llama "chat" \ v2)";
    const Readiness r = p.wait_ready(ro);
    EXPECT_TRUE(r.ok()) << r.reason << " " << r.last_probe_error;
  }
}

TEST(Readiness, PortInUseIsFatal) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  EXPECT_FALSE(port_is_free("127.0.0.1", port));
  LaunchSpec s = sim_launch("inuse");
  s.port = port;
  s.port_free_timeout_s = 0.2;
  {
    // A fixed port someone else listens on is refused before anything starts: a server that binds
    // only after loading would otherwise be judged, and measured, by that process's answers.
    ServerProcess p;
    const Status st = p.start(s);
    EXPECT_EQ(st.code(), StatusCode::unavailable);
    EXPECT_NE(st.message().find("already in use"), std::string::npos) << st.to_string();
    EXPECT_NE(st.remedy().find("server.port: 0"), std::string::npos) << st.to_string();
    EXPECT_EQ(p.pid(), 0);
  }
  // A server that finds its port taken later (bound between the check and its own bind) dies
  // with the log line, which readiness reports.
  s.port = 0;
  for (auto& a : s.argv)
    if (a == "{port}")
      a = std::to_string(port);
  ServerProcess p;
  ASSERT_TRUE(p.start(s).is_ok());
  const Readiness r = p.wait_ready(quick_ready(30));
  EXPECT_EQ(r.outcome, ReadinessOutcome::process_exited);
  ASSERT_TRUE(r.fatal.has_value());
  EXPECT_EQ(r.fatal->pattern.text, "address already in use");
  ::close(fd);
}

TEST(Readiness, CancelAndNotStarted) {
  ServerProcess idle;
  EXPECT_EQ(idle.wait_ready(quick_ready()).outcome, ReadinessOutcome::not_started);
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("cancel", {"--fault", "unavailable"})).is_ok());
  std::atomic<bool> cancel{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const Readiness r = p.wait_ready(quick_ready(30), &cancel);
  t.join();
  EXPECT_EQ(r.outcome, ReadinessOutcome::cancelled);
  EXPECT_LT(r.waited_s, 3);
}

TEST(ServerProcessStart, MissingExecutableAndBadLog) {
  ServerProcess p;
  LaunchSpec s = sim_launch("missing");
  s.argv = {"specbench-no-such-server-binary", "--port", "{port}"};
  const Status st = p.start(s);
  EXPECT_EQ(st.code(), StatusCode::not_found);
  ServerProcess q;
  s.argv = {"/bin/true"};
  s.log_file.clear();
  EXPECT_EQ(q.start(s).code(), StatusCode::invalid_argument);
  ServerProcess r;
  s = sim_launch("twice");
  ASSERT_TRUE(r.start(s).is_ok());
  EXPECT_FALSE(r.start(s).is_ok());
}

TEST(ServerProcessStop, SigkillAfterGraceAndTheWholeGroupGoes) {
  ServerProcess p;
  LaunchSpec s;
  // A "server" that ignores SIGTERM and has a child in its group.
  s.argv = {"/bin/sh", "-c", "trap '' TERM; sleep 30 & sleep 30; wait"};
  s.log_file = sbt::make_temp_dir("server") / "stubborn.log";
  s.stop_grace_s = 0.3;
  s.port_free_timeout_s = 0.1;
  ASSERT_TRUE(p.start(s).is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const pid_t pg = p.pid();
  EXPECT_TRUE(group_exists(pg));
  EXPECT_GE(live_server_count(), 1);
  const StopReport r = p.stop();
  EXPECT_TRUE(r.sigkilled);
  EXPECT_FALSE(group_exists(pg));
  EXPECT_LT(r.took_s, 5);
  EXPECT_TRUE(p.stop().exit.has_value()); // idempotent
}

TEST(ServerProcessStop, RaiiStopsOnExceptions) {
  pid_t pg = 0;
  try {
    ServerProcess p;
    LaunchSpec s;
    s.argv = {"/bin/sleep", "30"};
    s.log_file = sbt::make_temp_dir("server") / "raii.log";
    ASSERT_TRUE(p.start(s).is_ok());
    pg = p.pid();
    throw std::runtime_error("a cell failed");
  } catch (const std::runtime_error&) {
  }
  ASSERT_GT(pg, 0);
  EXPECT_FALSE(group_exists(pg));
}

TEST(ServerProcessStop, SigintToTheDriverKillsItsServers) {
  const Driver d = start_driver({"/bin/sh", "-c", "sleep 30 & sleep 30; wait"}, "sigint", true);
  ASSERT_GT(d.group, 0);
  EXPECT_TRUE(group_exists(d.group));
  ::kill(d.pid, SIGINT);
  int st = 0;
  ASSERT_EQ(::waitpid(d.pid, &st, 0), d.pid);
  EXPECT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGINT); // the exit status still says what ended it
  EXPECT_TRUE(wait_gone(d.group, 3)) << "server group " << d.group << " survived its driver";
}

TEST(ServerProcessStop, SigkillOfTheDriverTakesTheServerAlong) {
  // SIGKILL cannot be handled: PR_SET_PDEATHSIG is what takes the server down with its driver.
  const Driver d = start_driver({"/bin/sleep", "30"}, "sigkill", false);
  ASSERT_GT(d.group, 0);
  EXPECT_TRUE(group_exists(d.group));
  ::kill(d.pid, SIGKILL);
  int st = 0;
  ASSERT_EQ(::waitpid(d.pid, &st, 0), d.pid);
  EXPECT_TRUE(wait_gone(d.group, 3)) << "server " << d.group << " outlived a SIGKILLed driver";
}

TEST(ServerProcessStop, SigkillOfTheDriverTakesTheServersChildrenAlong) {
  // A launcher script, or SGLang's scheduler and workers: the leader's children get no
  // PDEATHSIG of their own. The guardian takes the whole group down once the driver is gone.
  const Driver d =
      start_driver({"/bin/sh", "-c", "sleep 30 & sleep 30 & wait"}, "sigkill-children", false);
  ASSERT_GT(d.group, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the sleeps are started
  EXPECT_TRUE(group_exists(d.group));
  ::kill(d.pid, SIGKILL);
  int st = 0;
  ASSERT_EQ(::waitpid(d.pid, &st, 0), d.pid);
  EXPECT_TRUE(wait_gone(d.group, 5))
      << "the children of server " << d.group << " outlived a SIGKILLed driver";
}

// Someone kills the guardian by name (`pkill sb-guardian`) while the server is measured, and then
// the driver is SIGKILLed: a new guardian must have taken the first one's place, or the server's
// children outlive both.
TEST(ServerProcessStop, AKilledGuardianIsReplacedWhileTheServerRuns) {
  const Driver d = start_driver({"/bin/sh", "-c", "sleep 30 & sleep 30 & wait"}, "guardian-killed",
                                false, false, /*poll_alive=*/true);
  ASSERT_GT(d.pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::vector<pid_t> first = children_named(d.pid, "sb-guardian");
  std::vector<pid_t> now;
  if (d.group > 0 && first.size() == 1 && ::kill(first[0], SIGKILL) == 0) {
    for (int i = 0; i < 150; ++i) { // 3 s
      now = children_named(d.pid, "sb-guardian");
      if (now.size() == 1 && now[0] != first[0])
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const bool group_ran = d.group > 0 && group_exists(d.group);
  // The driver goes in every case: left running it would hold the test's output open.
  ::kill(d.pid, SIGKILL);
  int st = 0;
  ASSERT_EQ(::waitpid(d.pid, &st, 0), d.pid);
  ASSERT_GT(d.group, 0);
  ASSERT_EQ(first.size(), 1u) << "the driver should have one guardian";
  EXPECT_TRUE(group_ran);
  ASSERT_EQ(now.size(), 1u) << "no guardian took the killed one's place";
  EXPECT_NE(now[0], first[0]);
  EXPECT_TRUE(wait_gone(d.group, 5))
      << "the children of server " << d.group << " outlived a SIGKILLed driver and its guardian";
  if (HasFailure())
    ::kill(-d.group, SIGKILL); // leave nothing behind
}

// A server that is gone before stop() (it exited at once) while the driver has a SIGTERM
// handler of its own, as `specbench run` does: the guardian must still be told to go, and stop()
// must not wait on it (a signal to it once met the driver's inherited handler and was lost).
TEST(ServerProcessStop, StopNeverHangsOnAServerThatExitedAtOnce) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGTERM, &sa, &old), 0);
  for (int i = 0; i < 20; ++i) {
    ServerProcess p;
    LaunchSpec s;
    s.argv = {"/bin/true"};
    s.log_file = sbt::make_temp_dir("server") / "true.log";
    s.port_free_timeout_s = 0;
    ASSERT_TRUE(p.start(s).is_ok());
    while (p.alive())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto t0 = std::chrono::steady_clock::now();
    p.stop();
    EXPECT_LT(detail::seconds_since(t0), 2.5) << "iteration " << i;
  }
  ::sigaction(SIGTERM, &old, nullptr);
}

// `timeout -s KILL`, or a kill of the whole process group: the guardian lives in a session of its
// own, so it survives and takes the server's children down.
TEST(ServerProcessStop, AGroupWideSigkillOfTheDriverLeavesNoServer) {
  const Driver d = start_driver({"/bin/sh", "-c", "sleep 30 & sleep 30 & wait"}, "group-kill",
                                false, /*own_group=*/true);
  ASSERT_GT(d.group, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(group_exists(d.group));
  ::kill(-d.pid, SIGKILL); // the driver's whole process group
  int st = 0;
  ASSERT_EQ(::waitpid(d.pid, &st, 0), d.pid);
  EXPECT_TRUE(wait_gone(d.group, 5)) << "server " << d.group << " outlived a group-wide SIGKILL";
}

// Where nobody reaps orphans (specbench as PID 1 in a container; here a subreaper that never
// waits), a server's child ends as a zombie in the group. Runs `body` on such a server (a shell
// whose background child outlives it) in a forked subreaper and returns the child's exit code
// (10: the server did not start; -1: the child did not exit normally).
static int with_zombie_making_server(const std::string& log_name,
                                     const std::function<int(ServerProcess&)>& body) {
  const pid_t child = ::fork();
  if (child < 0)
    return -1;
  if (child == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ServerProcess p;
    LaunchSpec s;
    s.argv = {"/bin/sh", "-c", "sleep 30 & exec sleep 31"};
    s.log_file = sbt::make_temp_dir("server") / log_name;
    s.stop_grace_s = 5;
    s.port_free_timeout_s = 0;
    if (!p.start(s))
      ::_exit(10);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::_exit(body(p));
  }
  int st = 0;
  if (::waitpid(child, &st, 0) != child || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st);
}

// stop() must see the group gone instead of waiting out the grace, a hard wait, and all of it
// again in the destructor.
TEST(ServerProcessStop, ZombiesLeftForOthersToReapDoNotHoldStop) {
  const int code = with_zombie_making_server("zombie.log", [](ServerProcess& p) {
    const StopReport r = p.stop();
    const StopReport again = p.stop(); // answered from the first
    return r.took_s < 2.0 && !r.sigkilled && again.took_s == r.took_s ? 0 : 1;
  });
  EXPECT_EQ(code, 0) << "stop() waited on a zombie (or sent SIGKILL for it)";
}

// The signal handler's path (kill_all_servers) must not count those zombies either: it reaps
// what is its own, so a Ctrl-C under PID 1 does not wait out the grace and then SIGKILL.
TEST(ServerCleanup, KillAllServersReapsZombiesOfTheGroup) {
  const int code = with_zombie_making_server("zombie-all.log", [](ServerProcess& p) {
    const auto t0 = std::chrono::steady_clock::now();
    kill_all_servers(5.0);
    const double took = detail::seconds_since(t0);
    const bool gone = ::kill(-p.pid(), 0) != 0;
    return !gone ? 2 : took < 2.0 ? 0 : 1;
  });
  EXPECT_NE(code, 2) << "the server group outlived kill_all_servers";
  EXPECT_EQ(code, 0) << "kill_all_servers waited out the grace on a zombie";
}

TEST(Readiness, CancelEndsASlowGenerationProbe) {
  // /health answers at once, the one-token generation trickles for many seconds: a Ctrl-C then
  // must not wait for the probe's timeout.
  ServerProcess p;
  ASSERT_TRUE(
      p.start(sim_launch("cancel-probe", {"--fault", "trickle", "--trickle-interval-ms", "500"}))
          .is_ok());
  ReadinessOptions o = quick_ready(60);
  o.probe_timeout_s = 30;
  std::atomic<bool> cancel{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    cancel = true;
  });
  const Readiness r = p.wait_ready(o, &cancel);
  t.join();
  EXPECT_EQ(r.outcome, ReadinessOutcome::cancelled) << r.reason;
  EXPECT_LT(r.waited_s, 4);
}

TEST(ServerProcessStart, EnvironmentWorkingDirectoryAndLog) {
  const auto dir = sbt::make_temp_dir("server");
  ServerProcess p;
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c", "echo FOO=$FOO PORT_ARG=$0; pwd", "x{port}y"};
  s.env = {{"FOO", "bar baz"}};
  s.working_dir = dir;
  s.port = 4242;                         // fixed by the sweep: used as given
  s.log_file = dir / "logs" / "env.log"; // parent directory created
  ASSERT_TRUE(p.start(s).is_ok());
  EXPECT_EQ(p.port(), 4242);
  EXPECT_EQ(p.argv()[3], "x4242y");
  for (int i = 0; i < 100 && p.alive(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(p.exit_info().has_value());
  EXPECT_EQ(p.exit_info()->exit_code.value_or(-1), 0);
  const std::string log = joined(p.log_tail(10));
  EXPECT_NE(log.find("FOO=bar baz PORT_ARG=x4242y"), std::string::npos) << log;
  EXPECT_NE(log.find(std::filesystem::canonical(dir).string()), std::string::npos) << log;
  EXPECT_NE(log.find("[specbench"), std::string::npos); // our banner before the server's output
}

TEST(Ports, FreePortChooserGivesBindablePorts) {
  auto a = choose_free_port();
  ASSERT_TRUE(a.has_value());
  EXPECT_GT(*a, 1023);
  EXPECT_TRUE(port_is_free("127.0.0.1", *a));
  EXPECT_FALSE(choose_free_port("256.1.1.1").has_value());
}

TEST(FatalPatterns, FindsTheSeedFailuresCaseInsensitively) {
  const std::string log =
      "loading weights\n"
      "Process 7: RuntimeError: CUDA error: an Illegal Instruction was encountered\n";
  auto m = find_fatal_pattern(log, {});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->pattern.text, "illegal instruction");
  EXPECT_EQ(m->line_number, 2);
  EXPECT_FALSE(find_fatal_pattern("all good\nready\n", {}).has_value());
  auto custom = find_fatal_pattern("boom here\n", {{"boom", "custom"}});
  ASSERT_TRUE(custom.has_value());
  EXPECT_EQ(custom->pattern.diagnosis, "custom");
}

// A server that logs its requests echoes what users asked: a prompt about a segmentation fault
// is not the server crashing, and must not fail a healthy cell. The server's own line still is.
TEST(FatalPatterns, EchoedRequestsAreNotTheServerFailing) {
  const std::string echoed =
      "[2026-12-05 19:40:01] INFO Receive: obj=GenerateReqInput(text='why does my program say "
      "Segmentation fault (core dumped)?', sampling_params={'max_new_tokens': 64})\n"
      "[2026-12-05 19:40:02] Finish: obj=GenerateReqInput(rid='a'), out={'text': 'CUDA out of "
      "memory means...'}\n"
      "INFO 12-05 19:40:03 Received request cmpl-1: prompt: 'an illegal memory access', "
      "params: SamplingParams(n=1)\n";
  EXPECT_FALSE(find_fatal_pattern(echoed, {}).has_value());
  const auto real = find_fatal_pattern(echoed + "Segmentation fault (core dumped)\n", {});
  ASSERT_TRUE(real.has_value());
  EXPECT_EQ(real->line_number, 4);
}

// ---- watchdog ----

TEST(Watchdog, ServerCrashWhileMeasuringAbortsTheClient) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("crash", {"--fault", "crash-after:3"})).is_ok());
  ReadinessOptions ro = quick_ready();
  ASSERT_TRUE(p.wait_ready(ro).ok()); // the one-token probe is generation request 1
  ClientOptions co;
  co.base_url = p.base_url();
  co.first_byte_timeout_s = 20;
  co.request_timeout_s = 30;
  Client client(co);
  WatchdogOptions wo;
  wo.interval_s = 0.05;
  wo.hang_timeout_s = 0;
  Watchdog dog(p, wo, [&](const WatchdogEvent& e) { client.abort(e.reason); });
  std::vector<RequestSpec> reqs(6);
  for (auto& r : reqs) {
    r.prompt.input_ids = {1, 2, 3};
    r.max_new_tokens = 400; // 400 x 0.3 ms: still running when request 4 crashes the server
  }
  const auto run = client.run(reqs, 2);
  ASSERT_TRUE(run.has_value());
  ASSERT_EQ(run->records.size(), 6u);
  EXPECT_LT(run->ok_count, 6);
  // The client may see the reset connections before the watchdog's next look.
  for (int i = 0; i < 100 && !dog.tripped(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto ev = dog.tripped();
  ASSERT_TRUE(ev.has_value());
  EXPECT_TRUE(ev->trip == WatchdogTrip::process_exited || ev->trip == WatchdogTrip::fatal_log)
      << to_string(ev->trip);
  EXPECT_NE(joined(ev->log_tail).find("illegal instruction"), std::string::npos);
  // The log line may come a moment before the process is gone.
  for (int i = 0; i < 100 && p.alive(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(p.alive());
}

TEST(Watchdog, HangIsNoticedByHealthProbes) {
  ServerProcess p;
  ASSERT_TRUE(p.start(sim_launch("hangafter", {"--fault", "hang-after:1"})).is_ok());
  ASSERT_TRUE(p.wait_ready(quick_ready()).ok());
  ClientOptions co;
  co.base_url = p.base_url();
  co.first_byte_timeout_s = 60;
  co.request_timeout_s = 60;
  Client client(co);
  WatchdogOptions wo;
  wo.interval_s = 0.1;
  wo.hang_timeout_s = 0.6;
  wo.health_probe_timeout_s = 0.2;
  Watchdog dog(p, wo, [&](const WatchdogEvent& e) { client.abort(e.reason); });
  RequestSpec r;
  r.prompt.input_ids = {1};
  r.max_new_tokens = 4;
  const auto t0 = std::chrono::steady_clock::now();
  const auto run = client.run({r, r}, 2);
  const double took = detail::seconds_since(t0);
  ASSERT_TRUE(run.has_value());
  EXPECT_LT(took, 5);
  EXPECT_FALSE(run->aborted.empty());
  for (const auto& rec : run->records)
    EXPECT_EQ(rec.error, ErrorKind::aborted);
  ASSERT_TRUE(dog.tripped().has_value());
  EXPECT_EQ(dog.tripped()->trip, WatchdogTrip::health_hang);
  EXPECT_TRUE(p.stop().port_free);
}

TEST(Watchdog, StallOfTheClientsProgress) {
  ServerProcess p;
  LaunchSpec s;
  s.argv = {"/bin/sleep", "30"};
  s.log_file = sbt::make_temp_dir("server") / "stall.log";
  ASSERT_TRUE(p.start(s).is_ok());
  std::atomic<uint64_t> counter{0};
  WatchdogOptions wo;
  wo.interval_s = 0.05;
  wo.hang_timeout_s = 0; // no HTTP here
  wo.progress = [&] { return counter.load(); };
  wo.busy = [] { return true; };
  wo.stall_timeout_s = 0.3;
  Watchdog dog(p, wo);
  for (int i = 0; i < 8; ++i) { // progressing: no trip
    ++counter;
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  EXPECT_FALSE(dog.tripped().has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_TRUE(dog.tripped().has_value());
  EXPECT_EQ(dog.tripped()->trip, WatchdogTrip::stalled);
}
