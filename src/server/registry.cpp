// The process-wide registry of live server process groups, and the async-signal-safe cleanup that
// kills them when specbench is interrupted, exits or terminates.
#include "server/registry.hpp"

#include "specbench/server.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <sys/wait.h>
#include <unistd.h>

namespace specbench {
namespace {

constexpr int kSlots = 256;
// pgid (== leader pid) of every live server; 0 = free slot. Lock-free so that a signal handler
// may read it.
std::atomic<pid_t> g_slots[kSlots];
std::atomic<long> g_grace_ms{5000};
std::atomic<bool> g_installed{false};
struct sigaction g_previous[3];
const int g_signals[3] = {SIGINT, SIGTERM, SIGHUP};
std::terminate_handler g_prev_terminate = nullptr;

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// True while any process of the group exists. First reaps every zombie of the group that is our
// child (waitpid is async-signal-safe): the leader, and where specbench is PID 1 or a subreaper
// the orphaned members too, which kill(-pgid, 0) would otherwise count as alive until the grace
// ran out.
bool group_alive(pid_t pgid) {
  int st = 0;
  while (::waitpid(-pgid, &st, WNOHANG) > 0) {
  }
  return ::kill(-pgid, 0) == 0;
}

void on_signal(int sig) {
  const int saved = errno;
  kill_all_servers(static_cast<double>(g_grace_ms.load()) / 1000.0);
  for (int i = 0; i < 3; ++i) {
    if (g_signals[i] != sig)
      continue;
    const struct sigaction& prev = g_previous[i];
    if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN &&
        prev.sa_handler != nullptr) {
      prev.sa_handler(sig); // the program's own handler (e.g. "stop after this cell")
      errno = saved;
      return;
    }
    if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
      prev.sa_sigaction(sig, nullptr, nullptr);
      errno = saved;
      return;
    }
  }
  // Default action, so that the exit status still says which signal ended us.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  errno = saved;
}

void on_exit_hook() {
  kill_all_servers(static_cast<double>(g_grace_ms.load()) / 1000.0);
}

[[noreturn]] void on_terminate() {
  kill_all_servers(static_cast<double>(g_grace_ms.load()) / 1000.0);
  if (g_prev_terminate)
    g_prev_terminate();
  std::abort();
}

} // namespace

namespace detail {

bool register_server_group(pid_t pgid) noexcept {
  for (auto& s : g_slots) {
    pid_t expected = 0;
    if (s.compare_exchange_strong(expected, pgid))
      return true;
  }
  return false;
}

void unregister_server_group(pid_t pgid) noexcept {
  for (auto& s : g_slots) {
    pid_t expected = pgid;
    if (s.compare_exchange_strong(expected, 0))
      return;
  }
}

} // namespace detail

void kill_all_servers(double grace_s) noexcept {
  pid_t groups[kSlots];
  int n = 0;
  for (auto& s : g_slots) {
    const pid_t p = s.load();
    if (p > 0)
      groups[n++] = p;
  }
  if (n == 0)
    return;
  for (int i = 0; i < n; ++i)
    ::kill(-groups[i], SIGTERM);
  const long grace_ms = grace_s > 0 ? static_cast<long>(grace_s * 1000) : 0;
  for (long waited = 0; waited < grace_ms; waited += 20) {
    bool any = false;
    for (int i = 0; i < n; ++i)
      any = group_alive(groups[i]) || any;
    if (!any)
      break;
    sleep_ms(20);
  }
  for (int i = 0; i < n; ++i)
    if (group_alive(groups[i]))
      ::kill(-groups[i], SIGKILL);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 100 && group_alive(groups[i]); ++k)
      sleep_ms(10);
    // Leave the slot for its ServerProcess to clear; mark dead ones free for a dying process.
  }
}

int live_server_count() noexcept {
  int n = 0;
  for (auto& s : g_slots) {
    const pid_t p = s.load();
    if (p > 0 && ::kill(-p, 0) == 0)
      ++n;
  }
  return n;
}

void install_server_cleanup_handlers(double grace_s) {
  g_grace_ms.store(static_cast<long>(grace_s * 1000));
  if (g_installed.exchange(true))
    return;
  for (int i = 0; i < 3; ++i) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(g_signals[i], &sa, &g_previous[i]);
  }
  std::atexit(on_exit_hook);
  g_prev_terminate = std::set_terminate(on_terminate);
}

} // namespace specbench
