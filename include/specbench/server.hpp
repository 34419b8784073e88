#pragma once
/// \file server.hpp
/// The inference server of one cell as a process: started from an argv vector (never a shell) in
/// its own process group with its output in a log file; readiness (alive, /health 200, a one-token
/// generation) with an early, explained end on exit or a fatal log line; a watchdog while the cell
/// is measured; stop (SIGTERM to the group, SIGKILL after a grace period, port free again).
/// Every live server is in a process-wide registry so that exceptions, SIGINT and SIGTERM never
/// leave an orphan behind.

#include "specbench/config.hpp"
#include "specbench/status.hpp"

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specbench {

/// How to launch one server process.
struct LaunchSpec {
  /// argv; every "{port}" inside an argument is replaced by the chosen port (no shell, no
  /// splitting). argv[0] is looked up in PATH when it has no '/'.
  std::vector<std::string> argv;
  std::map<std::string, std::string> env; ///< added to (or overriding) this process's environment
  std::filesystem::path log_file;         ///< stdout+stderr go here (appended); required
  std::filesystem::path working_dir;      ///< empty = this process's working directory
  std::string host = "127.0.0.1";         ///< where the server will listen (for URLs and probes)
  int port = 0;                           ///< 0 = choose a free port on `host`
  double stop_grace_s = 20;               ///< SIGTERM, then SIGKILL after this many seconds
  double port_free_timeout_s = 10;        ///< after the group is gone, wait this long for the port
  /// Ask the kernel to SIGKILL the server when the *thread* that called start() ends (Linux
  /// PR_SET_PDEATHSIG): the last line of defence when specbench itself is SIGKILLed. Call start()
  /// from a thread that outlives the server (e.g. the main thread), or turn this off.
  bool kill_when_parent_dies = true;
};

/// How a readiness wait ended.
enum class ReadinessOutcome {
  ready,          ///< alive, /health 200 and the one-token generation succeeded
  process_exited, ///< the server process exited (or was killed) while we waited
  fatal_log,      ///< its log shows a fatal pattern (CUDA error, OOM, port in use, NCCL, ...)
  timeout,        ///< not ready within the timeout (e.g. /health 503 forever, no answer)
  probe_failed,   ///< /health was 200 but the one-token generation kept failing until timeout
  not_started,    ///< start() was not called or failed
  cancelled,      ///< the caller's cancel flag was set
};
/// Stable name, e.g. "process_exited".
const char* to_string(ReadinessOutcome outcome) noexcept;

/// A log line pattern that means the server will never become ready.
struct FatalPattern {
  std::string text;      ///< matched case-insensitively as a substring of a log line
  std::string diagnosis; ///< what it usually means and what to do
};

/// The built-in fatal patterns: "CUDA unknown error", "Failed to get device capability",
/// "illegal instruction", "out of memory", "address already in use", NCCL errors, ...
const std::vector<FatalPattern>& default_fatal_patterns();

/// A fatal pattern found in a log, with the line it was found in.
struct FatalMatch {
  FatalPattern pattern;
  std::string line;    ///< the whole log line
  int line_number = 0; ///< 1-based in the text scanned
};

/// First line of `log_text` that matches one of `patterns` (case-insensitive substring).
std::optional<FatalMatch> find_fatal_pattern(std::string_view log_text,
                                             const std::vector<FatalPattern>& patterns);

/// How to decide that a server is ready.
struct ReadinessOptions {
  double timeout_s = 600;        ///< total wait
  double poll_interval_s = 0.25; ///< between /health polls and log scans
  double probe_timeout_s = 30;   ///< per HTTP probe (health, one-token generation)
  std::string health_path = "/health";
  /// After /health is 200, send a one-token generation and require a 2xx answer. The request
  /// matches `api`: SGLang /generate with input_ids [0], or /v1/completions, /v1/chat/completions.
  bool probe_generation = true;
  ApiKind api = ApiKind::generate;
  std::string model; ///< OpenAI "model" field for the probe
  /// Fatal patterns; default_fatal_patterns() when empty.
  std::vector<FatalPattern> fatal_patterns;
  size_t log_tail_lines = 40; ///< lines of log attached to the outcome
};

/// The outcome of a readiness wait.
struct Readiness {
  ReadinessOutcome outcome = ReadinessOutcome::not_started;
  std::string reason;                ///< one line for humans
  std::optional<FatalMatch> fatal;   ///< set for fatal_log (and when a dead server's log had one)
  std::optional<int> exit_code;      ///< set when the process exited normally
  std::optional<int> term_signal;    ///< set when the process was killed by a signal
  int last_health_status = 0;        ///< last /health HTTP status, 0 = no answer
  std::string last_probe_error;      ///< why the last health/generation probe failed
  std::vector<std::string> log_tail; ///< the last lines of the server log
  double waited_s = 0;               ///< how long the wait took

  /// True when the server is ready.
  bool ok() const noexcept { return outcome == ReadinessOutcome::ready; }
};

/// How the process ended (when it did).
struct ExitInfo {
  std::optional<int> exit_code;   ///< normal exit status
  std::optional<int> term_signal; ///< killed by this signal
  /// "exited with status 1" or "killed by signal 9 (Killed)".
  std::string to_string() const;
};

/// What stop() did.
struct StopReport {
  bool was_running = false;     ///< the process was alive when stop() began
  bool sigkilled = false;       ///< SIGKILL was needed after the grace period
  bool port_free = true;        ///< the port could be bound again before port_free_timeout_s
  double took_s = 0;            ///< time from SIGTERM to the end
  std::optional<ExitInfo> exit; ///< how the group leader ended
};

/// One inference server process (and its process group). Not copyable or movable: hold it in a
/// std::unique_ptr to pass it around. The destructor stops the server (RAII: no orphan survives
/// an exception).
class ServerProcess {
public:
  /// An idle object; start() launches.
  ServerProcess();
  /// Stops the server if it is still running.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  /// Chooses the port (when spec.port == 0), substitutes {port}, opens the log, and forks/execs
  /// the server in a new process group. Fails (not_found, io_error, unavailable) when the
  /// executable, the log or a port cannot be had. Only one start per object.
  Status start(const LaunchSpec& spec);

  /// Waits until ready, the process exits, a fatal log line appears, `cancel` becomes true, or
  /// the timeout passes; always returns promptly with the reason and the log tail.
  Readiness wait_ready(const ReadinessOptions& options, const std::atomic<bool>* cancel = nullptr);

  /// True while the group leader has not exited (reaps it when it has). Also replaces the
  /// server's guardian if it was killed while the group runs (docs/client.md).
  bool alive();
  /// How the process ended, once it has.
  std::optional<ExitInfo> exit_info();
  /// Scans the log written since the last call (and the whole log on the first) for a fatal
  /// pattern; default_fatal_patterns() when `patterns` is empty.
  std::optional<FatalMatch> scan_log(const std::vector<FatalPattern>& patterns = {});

  /// SIGTERM to the group, SIGKILL after the grace period, reap, then wait for the port to be
  /// free. Safe to call more than once and on an object never started.
  StopReport stop();

  /// Group leader pid (0 before start).
  pid_t pid() const noexcept;
  /// The port the server was told to use (0 before start).
  int port() const noexcept;
  /// "http://host:port".
  std::string base_url() const;
  /// The argv after {port} substitution.
  const std::vector<std::string>& argv() const noexcept;
  /// The log file.
  const std::filesystem::path& log_file() const noexcept;
  /// The last `lines` lines of the log (reads the file).
  std::vector<std::string> log_tail(size_t lines = 40) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What the watchdog noticed.
enum class WatchdogTrip {
  none,
  process_exited, ///< the server died while being measured
  fatal_log,      ///< a fatal pattern appeared in its log
  health_hang,    ///< /health did not answer 200 for hang_timeout_s
  stalled,        ///< the caller's progress counter did not move for stall_timeout_s
};
/// Stable name, e.g. "health_hang".
const char* to_string(WatchdogTrip trip) noexcept;

/// A watchdog finding.
struct WatchdogEvent {
  WatchdogTrip trip = WatchdogTrip::none;
  std::string reason;                ///< one line for humans
  std::optional<FatalMatch> fatal;   ///< for fatal_log
  std::optional<ExitInfo> exit;      ///< for process_exited
  std::vector<std::string> log_tail; ///< the log's last lines when it tripped
  double after_s = 0;                ///< seconds since the watchdog started
};

/// What the watchdog checks and how often.
struct WatchdogOptions {
  double interval_s = 0.5;    ///< between checks
  double hang_timeout_s = 60; ///< /health failing this long = hang; <= 0 disables the probe
  double health_probe_timeout_s = 5;
  std::string health_path = "/health";
  /// A counter that grows while work progresses (e.g. bytes or tokens the client received);
  /// with `stall_timeout_s` > 0, no growth for that long while `busy` says work is pending trips
  /// the watchdog. Either may be empty.
  std::function<uint64_t()> progress;
  std::function<bool()> busy;
  double stall_timeout_s = 0;
  std::vector<FatalPattern> fatal_patterns; ///< default_fatal_patterns() when empty
};

/// Watches a ServerProcess on a thread of its own while a cell is measured. On the first finding
/// it calls `on_trip` once (from its thread; e.g. to abort the Client) and stops checking. The
/// server must outlive the watchdog; the destructor stops the thread.
class Watchdog {
public:
  /// Starts watching at once.
  Watchdog(ServerProcess& server, WatchdogOptions options,
           std::function<void(const WatchdogEvent&)> on_trip = {});
  /// Stops the thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// The finding, once there is one (thread-safe).
  std::optional<WatchdogEvent> tripped() const;
  /// Stops checking (idempotent).
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A port on `host` that nothing listens on right now (bind to port 0 and ask the kernel).
Expected<int> choose_free_port(const std::string& host = "127.0.0.1");
/// True when a listening socket could be bound to host:port now (SO_REUSEADDR, as servers do).
bool port_is_free(const std::string& host, int port);

/// True while a process of process group `pgid` runs: a zombie does not count (an orphan's
/// zombie waits for its new parent, which in a container may never reap it).
bool process_group_runs(pid_t pgid);

/// Installs SIGINT, SIGTERM and SIGHUP handlers (and an atexit hook) that stop every live
/// ServerProcess of this process: SIGTERM to each group, up to `grace_s` for them to go, SIGKILL,
/// then the signal's default action (so the exit status still says "killed by SIGINT"). The
/// handlers are async-signal-safe. Call once, early, from main(). Idempotent.
void install_server_cleanup_handlers(double grace_s = 5.0);
/// Kills every live registered server group now (SIGTERM, `grace_s`, SIGKILL). Async-signal-safe.
void kill_all_servers(double grace_s = 5.0) noexcept;
/// Number of live registered server groups (for tests and diagnostics).
int live_server_count() noexcept;

} // namespace specbench
