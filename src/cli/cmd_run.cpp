// `specbench run SWEEP.yaml [--results DIR] [--only ID...] [--fresh]`: run the sweep end to end
// (resuming by default), show live progress, and end with the report.
#include "cli/command.hpp"
#include "cli/print_diagnostics.hpp"

#include "specbench/config.hpp"
#include "specbench/detail/display_text.hpp"
#include "specbench/matrix.hpp"
#include "specbench/report.hpp"
#include "specbench/runner.hpp"
#include "specbench/server.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <unistd.h>

namespace specbench::cli {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signals{0}; // lock-free, so usable from a signal handler

// First Ctrl-C (or SIGTERM): ask the runner to stop cleanly (server stopped, cell in flight
// marked interrupted). Second: kill every server now and die of the signal.
extern "C" void on_stop_signal(int sig) {
  g_stop.store(true);
  if (g_signals.fetch_add(1) + 1 >= 2) {
    kill_all_servers(1.0);
    std::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  const char msg[] = "\nspecbench: stopping after the server is stopped (Ctrl-C again to kill "
                     "it now)\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
}

std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string a; std::getline(in, a, '\0');)
    argv.push_back(a);
  return argv;
}

std::string fmt_duration(double s) {
  if (s < 0)
    return "?";
  const int t = static_cast<int>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", t / 3600, (t / 60) % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%dm%02ds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ds", t);
  return buf;
}

// Live progress: on a terminal one status line redrawn in place, with event lines above it;
// otherwise plain log lines (progress at most every 5 s).
class Progress {
public:
  explicit Progress(bool tty, bool quiet) : tty_(tty), quiet_(quiet) {}

  void operator()(const RunnerEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    switch (e.kind) {
    case RunnerEventKind::sweep_started:
      line(e.message);
      break;
    case RunnerEventKind::phase_started:
      line("phase " + e.phase_id + " (" + e.message + ")");
      phase_ = e.phase_id;
      break;
    case RunnerEventKind::preflight_done:
      line("  preflight " + e.phase_id + ": " + e.status +
           (e.status == "passed" ? "" : " -- " + e.message));
      break;
    case RunnerEventKind::cell_skipped:
      if (!quiet_)
        line("  " + e.cell_id + ": " + e.message);
      break;
    case RunnerEventKind::cell_started:
      cell_ = e.cell_id;
      stage_ = "launch";
      status_line(e, "");
      if (!tty_)
        line(counter(e) + " " + e.cell_id + ": starting");
      break;
    case RunnerEventKind::cell_stage:
      stage_ = e.stage;
      status_line(e, "");
      break;
    case RunnerEventKind::cell_progress: {
      char buf[160];
      std::snprintf(
          buf, sizeof buf, "%s %d/%d requests%s, %.0f tok/s",
          e.run < 0 ? "warm-up"
                    : ("run " + std::to_string(e.run + 1) + "/" + std::to_string(e.runs)).c_str(),
          e.requests_done, e.requests_total,
          e.requests_failed ? (" (" + std::to_string(e.requests_failed) + " failed)").c_str() : "",
          e.tokens_per_s);
      status_line(e, buf);
      if (!tty_ && !quiet_) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_plain_ > std::chrono::seconds(5)) {
          last_plain_ = now;
          line(counter(e) + " " + e.cell_id + ": " + buf + ", ETA " + fmt_duration(e.eta_s));
        }
      }
      break;
    }
    case RunnerEventKind::cell_finished:
      line(counter(e) + " " + e.cell_id + ": " + e.status +
           (e.message.empty() ? "" : " -- " + e.message));
      break;
    case RunnerEventKind::message:
      line("  " + e.message);
      break;
    case RunnerEventKind::sweep_finished:
      status_.clear(); // nothing runs any more: no status line after the summary
      line("sweep " + e.status + " in " + fmt_duration(e.elapsed_s) + ": " + e.message);
      break;
    }
  }

private:
  static std::string counter(const RunnerEvent& e) {
    return "[" + std::to_string(e.cell_index) + "/" + std::to_string(e.to_run) + "]";
  }
  void clear_status() {
    if (tty_ && status_shown_) {
      std::fputs("\r\033[K", stderr);
      status_shown_ = false;
    }
  }
  // One line per event: a reason may carry a server's text (a progress bar's '\r' would
  // overwrite the cell id, an ESC sequence recolour the terminal, a NUL cut the line short).
  void line(const std::string& text) {
    clear_status();
    std::fprintf(stderr, "%s\n", detail::display_line(text, 1000).c_str());
    redraw();
  }
  void status_line(const RunnerEvent& e, const std::string& detail) {
    char buf[400];
    std::snprintf(buf, sizeof buf, "%s %s %s: %s%s%s | elapsed %s, ETA %s", counter(e).c_str(),
                  e.phase_id.c_str(), e.cell_id.c_str(), stage_.c_str(), detail.empty() ? "" : ", ",
                  detail.c_str(), fmt_duration(e.elapsed_s).c_str(), fmt_duration(e.eta_s).c_str());
    status_ = buf;
    redraw();
  }
  void redraw() {
    if (!tty_ || status_.empty())
      return;
    std::fprintf(stderr, "\r\033[K%s", status_.c_str());
    std::fflush(stderr);
    status_shown_ = true;
  }

  std::mutex mu_;
  bool tty_, quiet_;
  bool status_shown_ = false;
  std::string status_, phase_, cell_, stage_;
  std::chrono::steady_clock::time_point last_plain_{};
};

struct RunArgs {
  std::string file;
  std::string results;
  std::vector<std::string> only;
  bool fresh = false;
  bool no_preflight = false;
  bool no_report = false;
  bool quiet = false;
};

int run_run(const RunArgs& a) {
  const LoadResult loaded = load_sweep_file(a.file);
  print_diagnostics(loaded.diagnostics);
  if (!loaded.ok()) {
    std::fprintf(stderr, "specbench run: %d error(s) in %s; nothing was run\n",
                 loaded.error_count(), a.file.c_str());
    return exit_could_not_run;
  }
  const Sweep& sweep = *loaded.sweep;
  auto matrix = expand_matrix(sweep, plan_context_from_environment());
  if (!matrix) {
    std::fprintf(stderr, "specbench run: %s\n", matrix.status().to_string().c_str());
    return exit_could_not_run;
  }

  // Servers die with us on SIGHUP; SIGINT/SIGTERM stop the sweep cleanly first.
  install_server_cleanup_handlers(5.0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Progress goes to stderr, often through a pipe (`| tee`, `| head`): a reader that goes away
  // must not end the sweep. Writes then fail with EPIPE and are dropped; the results and the
  // report go to files. Servers get the default disposition back before exec.
  std::signal(SIGPIPE, SIG_IGN);

  const bool tty = ::isatty(STDERR_FILENO) == 1;
  auto progress = std::make_shared<Progress>(tty, a.quiet);
  RunnerOptions o;
  o.results_dir = a.results;
  o.only = a.only;
  o.fresh = a.fresh;
  o.argv = own_argv();
  o.stop = &g_stop;
  if (a.no_preflight)
    o.preflight = false;
  o.on_event = [progress](const RunnerEvent& e) { (*progress)(e); };

  // The report files are rewritten even with --no-report: the old ones would describe results
  // this run may have moved aside. Written while the results directory is still locked, so that
  // a second run cannot change the results between this report's reading and its writing.
  o.while_locked = [&a](const SweepOutcome& outcome) {
    auto rep = load_report(outcome.results_dir);
    if (rep) {
      if (!a.no_report) {
        const std::string md = report_markdown(*rep);
        std::fwrite(md.data(), 1, md.size(), stdout); // all of it, whatever bytes it holds
        std::fflush(stdout);
      }
      auto files = write_report_files(*rep, outcome.results_dir / "report");
      if (files) {
        if (!a.no_report)
          std::fprintf(stderr, "report: %s (plots: %s, %s)\n", files->markdown.string().c_str(),
                       files->speedup_svg.string().c_str(), files->acceptance_svg.string().c_str());
      } else {
        std::fprintf(stderr, "specbench run: %s\n", files.status().to_string().c_str());
      }
    } else {
      std::fprintf(stderr, "specbench run: no report: %s\n", rep.status().to_string().c_str());
    }
  };

  auto outcome = run_sweep(sweep, *matrix, o);
  if (!outcome) {
    std::fprintf(stderr, "specbench run: %s\n", outcome.status().to_string().c_str());
    return exit_could_not_run;
  }
  if (outcome->stopped)
    std::fprintf(stderr, "interrupted: run the same command again to resume (finished cells are "
                         "kept)\n");
  if (!outcome->write_error.empty())
    std::fprintf(stderr,
                 "specbench run: stopped: %s\n    fix: free space in %s (or pass another "
                 "--results), then run the same command again to resume: the results written "
                 "so far are kept\n",
                 outcome->write_error.c_str(), outcome->results_dir.string().c_str());
  return outcome->exit_code();
}

const Registrar register_run_command{
    {"run", 30, [](CLI::App& app) {
       auto* sub = app.add_subcommand(
           "run", "Run a sweep end to end (resumes: finished cells are skipped)");
       auto a = std::make_shared<RunArgs>();
       // Not ->required(): `--only` takes every word after it, the sweep file too when it comes
       // last (`run --only tp1-autoregressive sweep.yaml`), and run_run takes it back from there.
       sub->add_option("sweep", a->file, "the sweep YAML file");
       sub->add_option("--results", a->results,
                       "results directory (default: the sweep's "
                       "runner.results_dir, else results/NAME in the current directory)")
           ->check(CLI::Validator(
               [](std::string& dir) {
                 return dir.empty() ? std::string("--results is empty: name a folder, or leave "
                                                  "the option out for the sweep's default")
                                    : std::string();
               },
               "DIR"));
       sub->add_option("--only", a->only, "run only these cell or phase ids")->expected(1, -1);
       sub->add_flag("--fresh", a->fresh, "redo the selected cells (old results are moved aside)");
       sub->add_flag("--no-preflight", a->no_preflight, "do not gate phases on the GPU preflight");
       sub->add_flag("--no-report", a->no_report,
                     "do not print the report (DIR/report/ is still brought up to date)");
       sub->add_flag("--quiet", a->quiet, "fewer progress lines");
       return std::function<int()>([a]() -> int {
         if (a->file.empty() && !a->only.empty()) {
           const std::string last = a->only.back();
           std::error_code ec;
           const bool yaml = last.size() > 5 && (last.ends_with(".yaml") || last.ends_with(".yml"));
           if (yaml && std::filesystem::is_regular_file(last, ec)) {
             a->file = last;
             a->only.pop_back();
             if (a->only.empty()) { // `--only $EMPTY sweep.yaml` must not mean "everything"
               std::fprintf(stderr, "specbench run: --only names no cell or phase id\n    fix: "
                                    "give the ids after --only, or leave --only out to run every "
                                    "cell\n");
               return exit_could_not_run;
             }
           }
         }
         if (a->file.empty()) {
           std::fprintf(stderr, "specbench run: the sweep file is missing\n    fix: specbench run "
                                "SWEEP.yaml [--only ID...] (see specbench run --help)\n");
           return exit_could_not_run;
         }
         return run_run(*a);
       });
     }}};

} // namespace
} // namespace specbench::cli
