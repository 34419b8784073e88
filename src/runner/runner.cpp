// The sweep runner: phases gated by the preflight, one server per cell, failures recorded per
// cell, resumable results, clean stop. It uses config, preflight, server, client and results and
// treats every server (the simulated one included) the same way.
#include "specbench/runner.hpp"

#include "core/ascii_lower.hpp"
#include "core/seconds_since.hpp"
#include "results/sorting_lock.hpp"

#include "specbench/build_info.hpp"
#include "specbench/client.hpp"
#include "specbench/report.hpp"
#include "specbench/server.hpp"
#include "specbench/server_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <map>
#include <set>
#include <sstream>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace specbench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines)
    s += l + "\n";
  return s;
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0)
    return {};
  return buf;
}

// An exclusive lock on the results directory, released by the kernel when the process dies
// (also on SIGKILL). O_CLOEXEC keeps servers from inheriting it.
class DirLock {
public:
  static Expected<DirLock> acquire(const fs::path& dir) {
    const auto path = dir / ".lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return Status(StatusCode::io_error, "cannot open " + path.string(),
                    "choose a writable --results directory", "run_sweep");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char buf[64] = {};
      const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      return Status(StatusCode::unavailable,
                    "another specbench run is using " + dir.string() +
                        (n > 0 ? " (pid " + std::string(buf, static_cast<size_t>(n)) + ")" : ""),
                    "wait for it to finish, or use another --results directory", "run_sweep");
    }
    const std::string pid = std::to_string(::getpid());
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      // The pid is only informative.
    }
    return DirLock(fd);
  }
  DirLock(DirLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  DirLock& operator=(DirLock&&) = delete;
  ~DirLock() {
    if (fd_ >= 0)
      ::close(fd_);
  }

private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

RequestMetrics to_metrics(const RequestRecord& q) {
  RequestMetrics m;
  m.run = q.run;
  m.index = q.index;
  m.ok = q.ok;
  if (!q.ok) {
    m.error = to_string(q.error);
    if (!q.error_message.empty())
      m.error += ": " + q.error_message;
  }
  m.http_status = q.http_status;
  m.prompt_tokens = q.prompt_tokens >= 0 ? q.prompt_tokens : q.sent_prompt_tokens;
  m.output_tokens = std::max(0, q.output_tokens);
  m.start_s = q.start_s;
  m.ttft_s = std::max(0.0, q.ttft_s);
  m.e2e_s = std::max(0.0, q.e2e_s);
  m.itl_s = q.itls_s;
  m.verify_steps = q.verify_steps();
  return m;
}

// A note when the server counted text prompts longer than the workload's max_prompt_tokens, the
// bound the context check before the run trusted; "" when none was, or no bound was set.
std::string prompt_bound_note(const std::vector<RequestMetrics>& requests, const Workload& w) {
  if (w.max_prompt_tokens <= 0)
    return {};
  int longest = 0, over = 0;
  for (const auto& q : requests)
    if (q.prompt_tokens > w.max_prompt_tokens) {
      ++over;
      longest = std::max(longest, q.prompt_tokens);
    }
  if (over == 0)
    return {};
  return "the server counted up to " + std::to_string(longest) + " prompt tokens (" +
         std::to_string(over) + " of " + std::to_string(requests.size()) +
         " measured requests), more than max_prompt_tokens " + std::to_string(w.max_prompt_tokens) +
         ", which the context check before the run trusted: raise max_prompt_tokens to at least " +
         std::to_string(longest);
}

// What a request failure of `kind` usually means and what to do: the cell's diagnosis, beside
// the failure's own message (a measure failure used to have none).
std::string request_failure_diagnosis(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::context_overflow:
    return "prompt + max_new_tokens exceed the server's context length: lower prompt_tokens or "
           "max_new_tokens, or raise model.context_length (what the server is launched with)";
  case ErrorKind::timeout_first_byte:
    return "the server took requests but sent nothing within server.request_timeout_s: it is "
           "overloaded (lower the workload's concurrency) or stuck (see the log tail)";
  case ErrorKind::timeout_total:
    return "answers stopped coming, or did not end within server.request_timeout_s: raise it "
           "for long outputs, or see the log tail for a stuck server";
  case ErrorKind::connect:
  case ErrorKind::timeout_connect:
    return "the server stopped accepting connections: it crashed or is overloaded (see the log "
           "tail)";
  case ErrorKind::http_status:
    return "the server refused requests (its message is in the reason): a 4xx is a request it "
           "does not take (check server.api, model.name and the workload's sampling options), a "
           "5xx an error inside it (see the log tail)";
  case ErrorKind::malformed:
    return "the server's answers are not what its API promises (the reason says what): check "
           "that server.backend and server.api match the server, else it is the server's bug";
  case ErrorKind::transport:
  case ErrorKind::incomplete:
    return "connections broke in the middle of answers: a server crash or a proxy in between "
           "(see the log tail)";
  case ErrorKind::server_abort:
    return "the server aborted requests itself (its message is in the reason): often KV-cache "
           "memory pressure (lower concurrency or max_new_tokens) or a request it cannot serve";
  case ErrorKind::body_too_large:
    return "an answer grew past what the client accepts: a server streaming without end";
  case ErrorKind::none:
  case ErrorKind::aborted:
    return {};
  }
  return {};
}

// A note when ok answers under ignore_eos came back shorter than max_new_tokens: the server
// stopped early (a stop token it keeps under ignore_eos, as vLLM does for generation_config's
// extra EOS ids, or SGLang's context clip), so the cells compared did unequal work. "" when none.
std::string short_answer_note(const std::vector<RunResult>& runs, const Workload& w) {
  if (!w.ignore_eos || w.max_new_tokens <= 0)
    return {};
  std::map<std::string, int> by_reason;
  int shortest = w.max_new_tokens, ok = 0, short_ones = 0;
  for (const auto& run : runs)
    for (const auto& q : run.records) {
      if (!q.ok)
        continue;
      ++ok;
      if (q.output_tokens < 0 || q.output_tokens >= w.max_new_tokens)
        continue;
      ++short_ones;
      ++by_reason[q.finish_reason.empty() ? "none" : q.finish_reason];
      shortest = std::min(shortest, q.output_tokens);
    }
  if (short_ones == 0)
    return {};
  std::string reasons;
  for (const auto& [reason, n] : by_reason)
    reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  return std::to_string(short_ones) + " of " + std::to_string(ok) +
         " measured answers ended before max_new_tokens " + std::to_string(w.max_new_tokens) +
         " although ignore_eos asked for exactly that many (finish_reason " + reasons +
         "; the shortest had " + std::to_string(shortest) +
         " tokens): the server stopped early, so its throughput is over less work than asked";
}

std::string cuda_version_text(int v) {
  if (v <= 0)
    return {};
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// A failed preflight check as a cell's failure reason, and its diagnosis with the fix.
std::string failed_check_reason(const CheckResult& f) {
  std::string s = "preflight check " + f.id + " failed: " + f.summary;
  if (!f.cuda_error_name.empty())
    s += " (" + f.cuda_error_name + ")";
  return s;
}

std::string failed_check_diagnosis(const CheckResult& f) {
  std::string s = f.diagnosis;
  if (!f.remedy.empty())
    s += (s.empty() ? "" : " Fix: ") + f.remedy;
  return s;
}

std::string preflight_reason(const PreflightReport& rep) {
  if (rep.could_not_run())
    return "preflight could not run: " + rep.run_error.to_string();
  if (const auto* f = rep.first_failure())
    return failed_check_reason(*f);
  return "preflight failed";
}

std::string preflight_diagnosis(const PreflightReport& rep) {
  if (rep.could_not_run())
    return rep.run_error.remedy();
  if (const auto* f = rep.first_failure())
    return failed_check_diagnosis(*f);
  return {};
}

// Run order inside a phase: as planned, except that with skip_smaller_budgets_after_crash the
// tree budgets run largest first, so that a crash at budget B can spare the budgets below it.
std::vector<const Cell*> phase_order(const Phase& phase, bool largest_budget_first) {
  std::vector<const Cell*> cells;
  for (const auto& c : phase.cells)
    cells.push_back(&c);
  if (!largest_budget_first)
    return cells;
  std::stable_sort(cells.begin(), cells.end(), [](const Cell* a, const Cell* b) {
    const bool ta = a->method.kind == MethodKind::tree, tb = b->method.kind == MethodKind::tree;
    if (ta != tb)
      return !ta; // non-tree cells first, in plan order
    if (!ta)
      return false;
    return a->method.budget > b->method.budget;
  });
  return cells;
}

class SweepRun {
public:
  SweepRun(const Sweep& sweep, const Matrix& matrix, const RunnerOptions& opt, ResultStore store,
           detail::SortingLock sorting)
      : sweep_(sweep), matrix_(matrix), opt_(opt), store_(std::move(store)),
        sorting_(std::move(sorting)) {}

  Expected<SweepOutcome> run();

private:
  // ---- helpers -------------------------------------------------------------------------------
  bool stop_requested() const { return opt_.stop && opt_.stop->load(); }
  // The sweep ends early when the user stops it or when the results directory stops taking
  // writes (a full disk): a cell measured then could not be kept, so running more wastes GPU time.
  bool halted() const { return stop_requested() || !write_error_.empty(); }
  void note_write_error(const std::string& what, const Status& st) {
    message("cannot write " + what + ": " + st.to_string());
    if (write_error_.empty())
      write_error_ = "cannot write " + what + ": " + st.message();
  }
  bool selected(const Cell& c) const {
    if (opt_.only.empty())
      return true;
    for (const auto& id : opt_.only)
      if (id == c.id || id == c.phase_id)
        return true;
    return false;
  }
  void emit(RunnerEvent e) {
    if (!opt_.on_event)
      return;
    e.elapsed_s = detail::seconds_since(t0_);
    e.to_run = to_run_;
    e.total_cells = out_.total_cells;
    if (e.cell_index == 0)
      e.cell_index = index_;
    if (e.eta_s < 0)
      e.eta_s = eta(-1);
    try {
      opt_.on_event(e);
    } catch (...) {
    }
  }
  void message(const std::string& text, const std::string& phase = {}) {
    RunnerEvent e;
    e.kind = RunnerEventKind::message;
    e.phase_id = phase;
    e.message = text;
    emit(e);
  }
  // Seconds left: finished cells' mean time for the cells still to run; `current_fraction` is
  // how far the current cell is (or -1).
  double eta(double current_fraction) const {
    const int left = to_run_ - index_;
    if (cells_timed_ > 0) {
      const double mean = cell_time_sum_ / cells_timed_;
      double cur = 0;
      if (index_ > 0 && in_cell_) {
        const double el = detail::seconds_since(cell_t0_);
        cur = current_fraction > 0 ? std::max(0.0, el / current_fraction - el)
                                   : std::max(0.0, mean - el);
      }
      return mean * std::max(0, left) + cur;
    }
    if (current_fraction > 0.02 && in_cell_) {
      const double el = detail::seconds_since(cell_t0_);
      const double est = el / current_fraction;
      return std::max(0.0, est - el) + est * std::max(0, left);
    }
    return -1;
  }

  Provenance base_provenance() const {
    Provenance p;
    p.specbench_argv = opt_.argv;
    p.specbench_version = build_info::version;
    p.specbench_commit = build_info::git_commit;
    p.hostname = host_;
    p.sweep_name = sweep_.name;
    p.sweep_file = sweep_.source.string();
    p.sweep_hash = sweep_hash_;
    return p;
  }

  CellResult base_result(const Cell& c) const {
    CellResult r;
    r.cell_id = c.id;
    r.phase_id = c.phase_id;
    r.config_hash = c.config_hash;
    r.tp = c.tp;
    r.gpus = c.gpus;
    r.method = c.method;
    r.workload = c.workload;
    r.provenance = base_provenance();
    if (preflight_) {
      r.provenance.preflight_json = preflight_->to_json(-1);
      for (const auto& g : preflight_->gpus)
        if (g.planned)
          r.provenance.gpu_names.push_back(g.name);
      r.provenance.driver_version = preflight_->host.driver_version;
      r.provenance.cuda_version = cuda_version_text(preflight_->host.cuda_driver_version);
    }
    r.started_at = utc_now_iso8601();
    r.finished_at = r.started_at;
    auto prev = previous_.find(c.id);
    r.attempt = prev == previous_.end() ? 1 : prev->second.attempt + 1;
    if (auto kept = kept_attempts_.find(c.id); kept != kept_attempts_.end())
      r.notes.push_back(kept->second);
    return r;
  }

  void set_manifest_cell(const std::string& id, const std::string& status, bool has_file) {
    for (auto& p : manifest_.phases)
      for (auto& c : p.cells)
        if (c.id == id) {
          c.status = status;
          c.file = has_file ? "cells/" + id + ".json" : "";
        }
  }
  ManifestPhase* manifest_phase(const std::string& id) {
    for (auto& p : manifest_.phases)
      if (p.id == id)
        return &p;
    return nullptr;
  }
  void write_manifest() {
    manifest_.updated_at = utc_now_iso8601();
    if (auto st = store_.write_manifest(manifest_); !st)
      note_write_error("the manifest", st);
  }

  void record(CellResult r) {
    r.finished_at = utc_now_iso8601();
    if (r.status != CellStatus::ok && !r.failure)
      r.failure = CellFailure{
          CellStage::runner, "no reason recorded (a specbench bug)", "", "", false, false};
    if (auto st = store_.commit(r); !st) {
      // Not kept, so not counted: the cell stays pending and runs again on resume.
      note_write_error("the result of " + r.cell_id, st);
      set_manifest_cell(r.cell_id, "pending", false);
      write_manifest();
      return;
    }
    set_manifest_cell(r.cell_id, to_string(r.status), true);
    write_manifest();
    final_status_[r.cell_id] = r.status;
    RunnerEvent e;
    e.kind = RunnerEventKind::cell_finished;
    e.phase_id = r.phase_id;
    e.cell_id = r.cell_id;
    e.status = to_string(r.status);
    if (r.failure)
      e.message = std::string(to_string(r.failure->stage)) + ": " + r.failure->reason;
    else if (r.summary.runs > 0)
      e.message =
          // Rounded as the report rounds it (to its one decimal), not cut: 2367.98 is 2368.
          "output " + fmt::format("{:.0f}", r.summary.output_tokens_per_s.mean) + " tok/s" +
          (r.summary.acceptance_length
               ? ", acceptance length " + fmt::format("{:.2f}", *r.summary.acceptance_length)
               : std::string());
    emit(e);
  }

  void record_not_run(const Cell& c, CellStatus status, CellStage stage, const std::string& reason,
                      const std::string& diagnosis) {
    CellResult r = base_result(c);
    r.status = status;
    r.failure = CellFailure{stage, reason, diagnosis, "", false, false};
    record(std::move(r));
  }

  // ---- stages --------------------------------------------------------------------------------
  Status prepare_store(const Manifest* last);
  const std::string& stale_batch(const std::string& why);
  void keep_previous_attempt(const Cell& c);
  void build_manifest(const Manifest* last);
  bool run_preflight_for(const Phase& phase, const std::string& why);
  void take_memory_baseline(const Phase& phase);
  std::string check_memory_back(const Phase& phase, CellResult& r);
  CellResult run_cell(const Cell& c, const Phase& phase);

  const Sweep& sweep_;
  const Matrix& matrix_;
  const RunnerOptions& opt_;
  ResultStore store_;
  Manifest manifest_;
  SweepOutcome out_;
  std::string sweep_hash_, host_;
  Clock::time_point t0_ = Clock::now(), cell_t0_ = Clock::now();
  int to_run_ = 0, index_ = 0, cells_timed_ = 0;
  double cell_time_sum_ = 0;
  bool in_cell_ = false;
  // The stored result this run found for a cell: its attempt and status, and whether it has
  // been moved aside for a new attempt (keep_previous_attempt).
  struct PreviousResult {
    int attempt = 0;
    CellStatus status = CellStatus::ok;
    bool kept_aside = false;
  };
  std::map<std::string, PreviousResult> previous_;
  std::map<std::string, std::string> stale_batches_;  // why -> this run's folder under stale/
  std::map<std::string, std::string> kept_attempts_;  // cell -> where its last attempt was kept
  std::map<std::string, CellStatus> final_status_;
  std::string write_error_; // the first write to the results directory that failed
  std::set<std::string> complete_;
  std::optional<PreflightReport> preflight_;
  std::optional<std::vector<std::uint64_t>> baseline_;
  bool preflight_enabled_ = true;
  std::string memory_held_; // set when a cell left GPU memory held
  detail::SortingLock sorting_; // held from before the store opened until the manifest is rewritten
};

// Sorts the stored results: complete ones are kept, the rest moved aside. A result that cannot be
// moved aside stops the run before anything is measured: running its cell would overwrite it.
// `last` is the manifest the previous run left, or null.
Status SweepRun::prepare_store(const Manifest* last) {
  Status failed;
  auto move = [&](const std::string& id, const std::string& why, const std::string& detail = "") {
    auto moved = store_.move_aside(id, stale_batch(why));
    if (moved) {
      ++out_.moved_aside;
      message("moved " + id + " aside (" + why + ") to " + moved->string() +
              (detail.empty() ? "" : ": " + detail));
    } else if (failed) {
      failed = Status(StatusCode::io_error,
                      "could not move " + id + " (" + why + ") aside into " +
                          (store_.dir() / "stale").string() + ": " + moved.status().message() +
                          "; nothing was run, so that no result is overwritten",
                      "make " + (store_.dir() / "stale").string() +
                          " a writable directory (or free space), then run again",
                      "SweepRun::prepare_store");
    }
  };
  for (const auto& id : store_.stored_ids()) {
    const Cell* cell = matrix_.find(id);
    auto stored = store_.load(id);
    if (!stored) {
      move(id, "unreadable");
      continue;
    }
    if (!cell) {
      move(id, "not-in-sweep");
      continue;
    }
    if (stored->config_hash != cell->config_hash) {
      move(id, "config-changed");
      continue;
    }
    // A finished result whose numbers its own requests do not give was edited or damaged: it
    // is kept in stale/ and the cell is measured again rather than reported.
    if (const Status consistent = check_cell_result(*stored); !consistent) {
      move(id, "inconsistent", consistent.message());
      continue;
    }
    if (opt_.fresh && selected(*cell)) {
      move(id, "fresh");
      continue;
    }
    previous_[id] = {stored->attempt, stored->status, false};
    final_status_[id] = stored->status;
    if (stored->complete())
      complete_.insert(id);
  }
  // A server log with no result, left by an attempt killed with the runner under a config that
  // has changed since (the last manifest says which): it goes with the other results of that
  // config, not to the new config's attempts.
  if (last)
    for (const auto& mp : last->phases)
      for (const auto& mc : mp.cells) {
        const Cell* cell = matrix_.find(mc.id);
        std::error_code ec;
        if (cell && mc.config_hash != cell->config_hash &&
            !fs::exists(store_.cell_path(mc.id), ec) && fs::exists(store_.log_path(mc.id), ec))
          if (auto moved = store_.move_log_aside(mc.id, stale_batch("config-changed")))
            message("moved the server log of " + mc.id + " aside (config-changed) to " +
                    moved->string());
      }
  // A cell with no result whose last attempt was kept aside before it ran again (stale/*-retried/)
  // and then died with the runner (SIGKILL) left nothing else: its count and the pointer to the
  // kept attempt go on from there, so no second "attempt 1" appears. Not after --fresh.
  // stale/ is scanned once for all cells, not once per cell.
  const ResultStore::KeptAttempts kept_index = store_.index_kept_attempts("retried");
  for (const auto& phase : matrix_.phases)
    for (const auto& c : phase.cells) {
      if (previous_.count(c.id) || (opt_.fresh && selected(c)))
        continue;
      if (auto kept = kept_index.latest(c.id, c.config_hash)) {
        std::error_code ec;
        const CellResult& k = kept->result;
        previous_[c.id] = {k.attempt, k.status, true};
        kept_attempts_[c.id] = "attempt " + std::to_string(k.attempt) + " (" + to_string(k.status) +
                               ") is kept in " +
                               fs::relative(kept->path, store_.dir(), ec).string();
      }
    }
  return failed;
}

// One folder under stale/ per occasion and run.
const std::string& SweepRun::stale_batch(const std::string& why) {
  auto it = stale_batches_.find(why);
  if (it == stale_batches_.end())
    it = stale_batches_.emplace(why, stale_batch_name(store_.dir(), why)).first;
  return it->second;
}

// A cell that failed or was interrupted runs again: its result and server log say why it went
// wrong (the crash the user is chasing), so they go to stale/<stamp>-retried/ instead of being
// overwritten, and the new result notes where. A result that only recorded a runner decision
// (blocked, skipped) is overwritten: the new one repeats or replaces it.
void SweepRun::keep_previous_attempt(const Cell& c) {
  std::error_code ec;
  const auto prev = previous_.find(c.id);
  PreviousResult* stored = prev == previous_.end() ? nullptr : &prev->second;
  const bool keep_result =
      stored && !stored->kept_aside &&
      (stored->status == CellStatus::failed || stored->status == CellStatus::interrupted);
  const bool keep_log_only = !keep_result && fs::exists(store_.log_path(c.id), ec);
  if (!keep_result && !keep_log_only)
    return;
  const int attempt = stored ? stored->attempt : 0;
  const std::string& batch = stale_batch("retried");
  if (keep_result) {
    auto moved = store_.move_aside(c.id, batch);
    if (!moved) {
      message("could not keep attempt " + std::to_string(attempt) + " of " + c.id +
              " before running it again (" + moved.status().message() +
              "); the new attempt replaces it");
      return;
    }
    stored->kept_aside = true;
    const std::string status = to_string(stored->status);
    kept_attempts_[c.id] = "attempt " + std::to_string(attempt) + " (" + status + ") is kept in " +
                           fs::relative(*moved, store_.dir(), ec).string();
    message("kept attempt " + std::to_string(attempt) + " of " + c.id + " (" + status + ") in " +
            moved->string());
    return;
  }
  // A log without a result: an attempt killed with the runner (its server's last words).
  auto moved = store_.move_log_aside(c.id, batch);
  if (moved) {
    // After the pointer to a kept attempt (prepare_store), if there is one.
    std::string& note = kept_attempts_[c.id];
    note += (note.empty() ? "" : "; ") +
            std::string("the server log of an earlier attempt that left no result of its own is "
                        "kept in ") +
            fs::relative(*moved, store_.dir(), ec).string();
    message("kept the server log of an earlier attempt of " + c.id + " in " + moved->string());
  } else {
    message("could not keep the server log of an earlier attempt of " + c.id + " (" +
            moved.status().message() + "); the new attempt replaces it");
  }
}

// `previous` is the manifest the previous run left, or null: its preflight verdicts carry on.
void SweepRun::build_manifest(const Manifest* previous) {
  manifest_.sweep_name = sweep_.name;
  manifest_.sweep_file = sweep_.source.string();
  manifest_.sweep_hash = sweep_hash_;
  manifest_.specbench_argv = opt_.argv;
  manifest_.specbench_version = build_info::version;
  manifest_.specbench_commit = build_info::git_commit;
  manifest_.started_at = utc_now_iso8601();
  manifest_.state = "running";
  for (const auto& ph : matrix_.phases) {
    ManifestPhase mp;
    mp.id = ph.id;
    mp.tp = ph.tp;
    mp.gpus = ph.gpus;
    mp.preflight = preflight_enabled_ ? "not_run" : "disabled";
    if (previous)
      for (const auto& pp : previous->phases)
        if (pp.id == ph.id && preflight_enabled_) {
          mp.preflight = pp.preflight.empty() ? "not_run" : pp.preflight;
          mp.preflight_json = pp.preflight_json;
        }
    for (const auto& c : ph.cells) {
      ManifestCell mc;
      mc.id = c.id;
      mc.config_hash = c.config_hash;
      mc.method = c.method.id();
      mc.workload = c.workload.name;
      auto st = final_status_.find(c.id);
      mc.status = st == final_status_.end() ? "pending" : to_string(st->second);
      mc.file = st == final_status_.end() ? "" : "cells/" + c.id + ".json";
      mp.cells.push_back(mc);
    }
    manifest_.phases.push_back(mp);
  }
  write_manifest();
}

// A hub id is the server's to download, so only local paths, gone ones included, are checked.
std::string model_path_to_check(const std::string& path) {
  return is_hub_model_id(path) ? std::string() : path;
}

// Why the cells that load the drafter cannot run, and what to do: from the preflight's drafter
// checks (model.draft_*; gone from /dev/shm, damaged, no room beside the target).
struct DraftProblem {
  std::string reason, diagnosis;
};

bool SweepRun::run_preflight_for(const Phase& phase, const std::string& why) {
  PreflightPlan plan = opt_.preflight_template;
  plan.tp = phase.tp;
  plan.gpus = phase.gpus;
  plan.model_path = model_path_to_check(sweep_.model.path);
  // The drafter is checked in depth (and counted beside the target) only where a cell that will
  // run loads it: not for a phase whose drafter cells are all complete (resume) or not selected.
  if (std::any_of(phase.cells.begin(), phase.cells.end(), [&](const Cell& c) {
        return selected(c) && !complete_.count(c.id) && c.loads_drafter;
      }))
    plan.draft_model_path = model_path_to_check(sweep_.model.draft_path);
  message("preflight for " + phase.id + " (" + why + ")", phase.id);
  preflight_ = opt_.preflight_fn ? opt_.preflight_fn(plan) : run_preflight(plan);
  // A drafter's failed check blocks only the cells that load it (see drafter_problem), so the
  // phase passes without it.
  const bool passed = preflight_->passed_without_drafter() && !preflight_->could_not_run();
  const CheckResult* drafter = passed ? preflight_->first_drafter_failure() : nullptr;
  const char* status = !passed ? "failed" : drafter ? "drafter_failed" : "passed";
  if (auto* mp = manifest_phase(phase.id)) {
    mp->preflight = status;
    mp->preflight_json = preflight_->to_json(-1);
  }
  write_manifest();
  RunnerEvent e;
  e.kind = RunnerEventKind::preflight_done;
  e.phase_id = phase.id;
  e.status = status;
  e.message = !passed ? preflight_reason(*preflight_)
              : drafter
                  ? "the cells that load the drafter are blocked: " + failed_check_reason(*drafter)
                  : std::string(preflight_->verdict());
  emit(e);
  return passed;
}

void SweepRun::take_memory_baseline(const Phase& phase) {
  baseline_.reset();
  auto reader = opt_.gpu_memory;
  auto used = reader ? reader(phase.gpus)
                     : read_gpu_memory_nvml(phase.gpus, preflight_ ? &*preflight_ : nullptr);
  if (!used) {
    message("GPU memory check off for " + phase.id + ": " + used.status().message(), phase.id);
    return;
  }
  baseline_ = *used;
}

// Waits for GPU memory to come back within the tolerance of the phase's baseline; returns ""
// when it did (or when there is no baseline), else what is still held.
std::string SweepRun::check_memory_back(const Phase& phase, CellResult& r) {
  if (!baseline_)
    return {};
  const double tol = sweep_.runner.gpu_memory_tolerance_mib * 1024.0 * 1024.0;
  const auto t = Clock::now();
  std::string held;
  for (;;) {
    auto used = opt_.gpu_memory
                    ? opt_.gpu_memory(phase.gpus)
                    : read_gpu_memory_nvml(phase.gpus, preflight_ ? &*preflight_ : nullptr);
    if (!used) {
      r.notes.push_back("GPU memory could not be read after the server stopped: " +
                        used.status().message());
      return {};
    }
    held.clear();
    for (size_t i = 0; i < used->size() && i < baseline_->size(); ++i) {
      const double extra = static_cast<double>((*used)[i]) - static_cast<double>((*baseline_)[i]);
      if (extra > tol)
        held += (held.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(phase.gpus[i]) +
                " holds " + std::to_string(static_cast<long long>(extra / (1024 * 1024))) +
                " MiB above its baseline";
    }
    if (held.empty())
      return {};
    if (detail::seconds_since(t) >= opt_.gpu_memory_settle_s || stop_requested())
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  r.notes.push_back("GPU memory did not return to baseline within " +
                    std::to_string(static_cast<int>(opt_.gpu_memory_settle_s)) + " s: " + held);
  return held;
}

CellResult SweepRun::run_cell(const Cell& c, const Phase& phase) {
  CellResult r = base_result(c);
  const auto cell_start = Clock::now();
  bool ended = false; // a stage failed or the user stopped: skip the remaining stages
  auto finish = [&](CellResult& res) { res.wall_s = detail::seconds_since(cell_start); };
  auto fail = [&](CellStage stage, const std::string& reason, const std::string& diagnosis,
                  const std::vector<std::string>& tail, bool crashed) {
    ended = true;
    r.status = CellStatus::failed;
    CellFailure f;
    f.stage = stage;
    f.reason = reason;
    f.diagnosis = diagnosis;
    f.log_tail = join_lines(tail);
    // Name the fatal log line (CUDA error, OOM, NCCL, ...) when the reason does not yet.
    if (auto m = find_fatal_pattern(f.log_tail, default_fatal_patterns())) {
      if (f.reason.find(m->line) == std::string::npos)
        f.reason += " [log: " + m->line + "]";
      if (f.diagnosis.empty())
        f.diagnosis = m->pattern.diagnosis;
    }
    f.server_crashed = crashed;
    f.points_at_gpu = text_points_at_gpu(reason + "\n" + diagnosis + "\n" + f.log_tail);
    r.failure = f;
  };
  auto interrupted = [&](CellStage stage, const std::vector<std::string>& tail) {
    ended = true;
    r.status = CellStatus::interrupted;
    r.failure = CellFailure{stage, "interrupted by the user", "", join_lines(tail), false, false};
  };
  auto stage_event = [&](const char* stage) {
    RunnerEvent e;
    e.kind = RunnerEventKind::cell_stage;
    e.phase_id = c.phase_id;
    e.cell_id = c.id;
    e.stage = stage;
    emit(e);
  };

  // A dataset edited since the matrix was expanded would be measured under the old one's hash,
  // mixing two prompt sets in results that claim one: refuse before the server starts, and
  // again once the prompts are read.
  const auto dataset_changed = [&] {
    if (c.workload.dataset.empty() || dataset_file_hash(c.workload.dataset) == c.dataset_hash)
      return false;
    fail(CellStage::runner,
         "the dataset " + c.workload.dataset.string() + " changed after this run started",
         "run the sweep again when the dataset is final: the run re-reads it, and results "
         "measured on its old contents are moved aside as config-changed",
         {}, false);
    return true;
  };
  if (dataset_changed()) {
    finish(r);
    return r;
  }
  std::error_code ec;
  fs::remove(store_.log_path(c.id), ec); // the log of this attempt only
  LaunchSpec spec;
  spec.argv = c.argv;
  spec.env = c.env;
  spec.log_file = store_.log_path(c.id);
  spec.host = sweep_.server.host;
  spec.port = sweep_.server.port;
  spec.stop_grace_s = sweep_.server.stop_grace_s;

  ServerProcess server;
  if (auto st = server.start(spec); !st) {
    fail(CellStage::launch, st.message(), st.remedy(), {}, false);
    finish(r);
    return r;
  }
  r.provenance.server_argv = server.argv();

  stage_event("readiness");
  ReadinessOptions ro;
  ro.timeout_s = sweep_.server.readiness_timeout_s;
  ro.api = sweep_.server.api;
  ro.model = sweep_.model.name.empty() ? sweep_.model.path : sweep_.model.name;
  ro.probe_timeout_s = std::min(30.0, sweep_.server.request_timeout_s);
  ro.log_tail_lines = static_cast<size_t>(opt_.log_tail_lines);
  const Readiness rd = server.wait_ready(ro, opt_.stop);
  if (rd.outcome == ReadinessOutcome::cancelled || (!rd.ok() && stop_requested())) {
    interrupted(CellStage::readiness, rd.log_tail);
  } else if (!rd.ok()) {
    // A server that dies or logs a fatal error before it is ready failed to launch; one that
    // stays up but never answers failed readiness.
    const bool died = rd.outcome == ReadinessOutcome::process_exited;
    const bool launch = died || rd.outcome == ReadinessOutcome::fatal_log ||
                        rd.outcome == ReadinessOutcome::not_started;
    std::string reason = rd.reason.empty() ? to_string(rd.outcome) : rd.reason;
    std::string diagnosis = rd.fatal ? rd.fatal->pattern.diagnosis : std::string();
    if (rd.fatal && reason.find(rd.fatal->line) == std::string::npos)
      reason += " [log: " + rd.fatal->line + "]";
    fail(launch ? CellStage::launch : CellStage::readiness, reason, diagnosis, rd.log_tail, died);
  }
  // The server's own figures per measured run (index = run), attached to the run summaries.
  std::vector<std::optional<ServerSideFigures>> server_side;
  if (!ended) {
    r.readiness_s = rd.waited_s;
    ScrapeOptions so;
    so.base_url = server.base_url();
    so.timeout_s = 3;
    so.metrics = false;
    const auto snap = scrape_server(so);
    r.provenance.server_version = snap.server_version;
    if (snap.synthetic_model)
      r.notes.push_back("server model is synthetic" +
                        (snap.synthetic_note.empty() ? std::string() : ": " + snap.synthetic_note));

    ClientOptions co;
    co.base_url = server.base_url();
    co.backend = sweep_.server.backend;
    co.api = sweep_.server.api;
    co.model = ro.model;
    co.stream = true;
    co.request_timeout_s = sweep_.server.request_timeout_s;
    co.first_byte_timeout_s = sweep_.server.request_timeout_s;
    const double hang =
        std::max(0.5, std::min(opt_.hang_timeout_s, sweep_.server.request_timeout_s));
    co.idle_timeout_s = hang;
    // A step commits at most what it verifies: its drafts (all but the current token) and the
    // bonus. Not min(budget, block - 1) + 1 for trees: a DDTree server given
    // --speculative-num-draft-tokens B+1 may also run a drafter block of B+1 (sglang-ddtree-dev).
    co.max_tokens_per_step = c.method.verify_width();
    Client client(co);

    const int count = std::max(c.workload.requests, c.workload.warmup);
    auto prompts = make_prompts(c.workload, count);
    if (!prompts) {
      fail(CellStage::runner, "cannot make the prompts: " + prompts.status().message(),
           prompts.status().remedy(), {}, false);
    } else if (dataset_changed()) {
      // Read while it was being replaced: the prompts may be of the new contents.
    } else {
      WatchdogOptions wo;
      wo.interval_s = 0.25;
      wo.hang_timeout_s = hang;
      wo.health_probe_timeout_s = std::min(5.0, hang);
      wo.progress = [&client] { return client.bytes_received(); };
      wo.busy = [&client] { return client.in_flight() > 0; };
      wo.stall_timeout_s = hang;
      Watchdog watchdog(server, wo, [&client](const WatchdogEvent& ev) {
        client.abort("watchdog: " + ev.reason);
      });
      std::atomic<bool> done{false};
      std::thread canceller([&] {
        while (!done.load()) {
          if (stop_requested()) {
            client.abort("interrupted by the user");
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      });
      int last_run = -2;
      const int runs = c.workload.runs;
      auto progress = [&](const ClientProgress& p) {
        if (p.run != last_run) {
          last_run = p.run;
          stage_event(p.run < 0 ? "warmup" : "measure");
        }
        RunnerEvent e;
        e.kind = RunnerEventKind::cell_progress;
        e.phase_id = c.phase_id;
        e.cell_id = c.id;
        e.run = p.run;
        e.runs = runs;
        e.requests_done = p.done;
        e.requests_total = p.total;
        e.requests_failed = p.failed;
        e.tokens_per_s = p.elapsed_s > 0 ? static_cast<double>(p.output_tokens) / p.elapsed_s : 0;
        if (p.run >= 0 && p.total > 0 && runs > 0)
          e.eta_s = eta((p.run + static_cast<double>(p.done) / p.total) / runs);
        emit(e);
      };
      // Scrapes right before each measured run's first request and right after its last answer,
      // so warm-up traffic stays out. Short timeouts; a scrape never fails the cell, and none is
      // taken once the run was aborted (watchdog, Ctrl-C): the server may be gone.
      ScrapeOptions mo = so;
      mo.metrics = true;
      mo.timeout_s = 2;
      server_side.resize(static_cast<size_t>(std::max(0, runs)));
      ServerSnapshot before;
      RunHooks hooks;
      hooks.before_run = [&](int) {
        before = client.aborted() || stop_requested() ? ServerSnapshot{} : scrape_server(mo);
      };
      hooks.after_run = [&](const RunResult& run) {
        if (run.run < 0 || run.run >= runs)
          return;
        auto& slot = server_side[static_cast<size_t>(run.run)];
        if (!run.aborted.empty() || client.aborted() || stop_requested()) {
          ServerSideFigures f;
          f.metrics_error = f.server_info_error =
              "not scraped: the run was aborted" +
              (run.aborted.empty() ? std::string() : " (" + run.aborted + ")");
          slot = f;
          return;
        }
        slot = server_side_figures(before, scrape_server(mo), c.method.verify_width());
      };
      stage_event("warmup");
      last_run = -1;
      auto wr = client.run_workload(c.workload, *prompts, progress, hooks);
      done = true;
      canceller.join();
      watchdog.stop();
      const auto trip = watchdog.tripped();

      if (wr) {
        for (const auto& run : wr->runs)
          for (const auto& q : run.records)
            r.requests.push_back(to_metrics(q));
        if (std::string note = short_answer_note(wr->runs, c.workload); !note.empty())
          r.notes.push_back(std::move(note));
      }
      const bool warmup_broke =
          wr && (!wr->warmup.aborted.empty() || (wr->runs.empty() && !wr->aborted.empty()));
      const CellStage where = warmup_broke ? CellStage::warmup : CellStage::measure;
      if (!wr) {
        fail(CellStage::runner, "the client could not run: " + wr.status().message(),
             wr.status().remedy(), server.log_tail(static_cast<size_t>(opt_.log_tail_lines)),
             false);
      } else if (stop_requested()) {
        interrupted(where, {});
      } else if (trip) {
        std::string reason = "server " + std::string(to_string(trip->trip)) + ": " + trip->reason;
        if (trip->exit)
          reason += " (" + trip->exit->to_string() + ")";
        std::string diagnosis = trip->fatal ? trip->fatal->pattern.diagnosis : std::string();
        fail(where, reason, diagnosis, trip->log_tail,
             trip->trip == WatchdogTrip::process_exited || !server.alive());
      } else if (!server.alive()) {
        const auto ex = server.exit_info();
        fail(where, "the server exited" + (ex ? " (" + ex->to_string() + ")" : std::string()), "",
             server.log_tail(static_cast<size_t>(opt_.log_tail_lines)), true);
      } else if (!wr->warmup.records.empty() && wr->warmup.ok_count == 0) {
        const auto& q = wr->warmup.records.front();
        fail(CellStage::warmup,
             "all " + std::to_string(wr->warmup.records.size()) +
                 " warm-up requests failed; first: " + to_string(q.error) + ": " + q.error_message,
             request_failure_diagnosis(q.error),
             server.log_tail(static_cast<size_t>(opt_.log_tail_lines)), false);
      } else {
        // r.requests holds the runs' records in order: the first failed one's text is there,
        // its kind (for the diagnosis) in the record.
        int failed = 0;
        size_t first = 0, i = 0;
        ErrorKind first_kind = ErrorKind::none;
        for (const auto& run : wr->runs)
          for (const auto& q : run.records) {
            if (!q.ok && failed++ == 0) {
              first = i;
              first_kind = q.error;
            }
            ++i;
          }
        if (static_cast<int>(wr->runs.size()) < c.workload.runs || !wr->aborted.empty()) {
          fail(CellStage::measure,
               "only " + std::to_string(wr->runs.size()) + " of " +
                   std::to_string(c.workload.runs) + " runs completed" +
                   (wr->aborted.empty() ? "" : ": " + wr->aborted),
               "", server.log_tail(static_cast<size_t>(opt_.log_tail_lines)), false);
        } else if (failed > 0) {
          fail(CellStage::measure,
               std::to_string(failed) + " of " + std::to_string(r.requests.size()) +
                   " measured requests failed; first: " + r.requests[first].error,
               request_failure_diagnosis(first_kind),
               server.log_tail(static_cast<size_t>(opt_.log_tail_lines)), false);
        } else {
          r.status = CellStatus::ok;
        }
      }
    }
  }

  stage_event("stop");
  const StopReport sr = server.stop();
  if (sr.sigkilled)
    r.notes.push_back("the server ignored SIGTERM for " +
                      std::to_string(static_cast<int>(sweep_.server.stop_grace_s)) +
                      " s and was killed");
  if (!sr.port_free)
    r.notes.push_back("the server's port was still in use after it stopped");

  if (std::string note = prompt_bound_note(r.requests, c.workload); !note.empty())
    r.notes.push_back(std::move(note));
  r.runs = summarize_runs(r.requests, c.workload.runs);
  for (auto& run : r.runs)
    if (run.run >= 0 && static_cast<size_t>(run.run) < server_side.size())
      run.server_side = server_side[static_cast<size_t>(run.run)];
  r.summary = summarize_cell(r.requests, r.runs);
  const std::string held = check_memory_back(phase, r);
  if (!held.empty())
    memory_held_ = held;
  finish(r);
  return r;
}

Expected<SweepOutcome> SweepRun::run() {
  host_ = hostname();
  sweep_hash_ = sweep_.source_hash.empty() ? stable_hash(matrix_to_json(matrix_, sweep_))
                                           : sweep_.source_hash;
  preflight_enabled_ = opt_.preflight.value_or(sweep_.runner.preflight);
  out_.results_dir = store_.dir();
  for (const auto& ph : matrix_.phases)
    for (const auto& c : ph.cells)
      if (selected(c))
        ++out_.total_cells;

  if (!sorting_.note().empty())
    message(sorting_.note());
  // Read once: prepare_store routes orphan logs by it, build_manifest carries its verdicts on.
  // Nothing between the two writes the manifest.
  const Expected<Manifest> last_manifest = store_.load_manifest();
  const Manifest* last = last_manifest ? &*last_manifest : nullptr;
  if (Status st = prepare_store(last); !st)
    return st;
  build_manifest(last);
  sorting_.release(); // a report may read from here on: the directory is sorted
  for (const auto& ph : matrix_.phases)
    for (const auto& c : ph.cells)
      if (selected(c)) {
        if (complete_.count(c.id))
          ++out_.already_done;
        else
          ++to_run_;
      }
  {
    RunnerEvent e;
    e.kind = RunnerEventKind::sweep_started;
    e.message = (sweep_.name.empty() ? std::string("sweep (no name)") : sweep_.name) + ": " +
                std::to_string(out_.total_cells) + " cells, " + std::to_string(out_.already_done) +
                " already complete, results in " + store_.dir().string();
    emit(e);
  }

  const bool largest_first = sweep_.runner.skip_smaller_budgets_after_crash;
  for (const auto& phase : matrix_.phases) {
    if (halted())
      break;
    std::vector<const Cell*> todo;
    for (const Cell* c : phase_order(phase, largest_first))
      if (selected(*c))
        todo.push_back(c);
    const bool any_to_run = std::any_of(todo.begin(), todo.end(),
                                        [&](const Cell* c) { return !complete_.count(c->id); });
    for (const Cell* c : todo)
      if (complete_.count(c->id)) {
        RunnerEvent e;
        e.kind = RunnerEventKind::cell_skipped;
        e.phase_id = phase.id;
        e.cell_id = c->id;
        e.message = "complete result with the same config hash (resume)";
        emit(e);
      }
    if (!any_to_run)
      continue;

    RunnerEvent pe;
    pe.kind = RunnerEventKind::phase_started;
    pe.phase_id = phase.id;
    pe.message = "TP" + std::to_string(phase.tp);
    emit(pe);
    preflight_.reset();
    memory_held_.clear();
    std::string blocked_reason, blocked_diagnosis;
    CellStage blocked_stage = CellStage::preflight;
    if (preflight_enabled_ && !run_preflight_for(phase, "phase start")) {
      blocked_reason = preflight_reason(*preflight_);
      blocked_diagnosis = preflight_diagnosis(*preflight_);
    }
    if (blocked_reason.empty())
      take_memory_baseline(phase);
    // Only cells whose server is given the drafter need it: a failed drafter check blocks them
    // alone. Taken again after each preflight.
    DraftProblem draft;
    const auto update_draft = [&] {
      const CheckResult* f = preflight_ ? preflight_->first_drafter_failure() : nullptr;
      draft =
          f ? DraftProblem{failed_check_reason(*f), failed_check_diagnosis(*f)} : DraftProblem{};
    };
    update_draft();
    int crashed_budget = 0; // largest tree budget that crashed in this phase (0 = none)
    std::string crashed_cell;

    for (const Cell* c : todo) {
      if (complete_.count(c->id))
        continue;
      if (halted())
        break;
      ++index_;
      keep_previous_attempt(*c);
      if (!blocked_reason.empty()) {
        record_not_run(*c, CellStatus::blocked, blocked_stage, blocked_reason, blocked_diagnosis);
        continue;
      }
      if (!draft.reason.empty() && c->loads_drafter) {
        record_not_run(*c, CellStatus::blocked, CellStage::preflight, draft.reason,
                       draft.diagnosis);
        continue;
      }
      if (largest_first && crashed_budget > 0 && c->method.kind == MethodKind::tree &&
          c->method.budget < crashed_budget) {
        record_not_run(*c, CellStatus::skipped, CellStage::runner,
                       "tree budget " + std::to_string(crashed_budget) + " crashed (" +
                           crashed_cell + "); smaller budgets are skipped",
                       "runner.skip_smaller_budgets_after_crash is on; turn it off to run them "
                       "anyway");
        continue;
      }
      RunnerEvent ce;
      ce.kind = RunnerEventKind::cell_started;
      ce.phase_id = phase.id;
      ce.cell_id = c->id;
      emit(ce);
      set_manifest_cell(c->id, "running", false);
      write_manifest();
      if (halted())
        break; // nothing measured now could be kept
      in_cell_ = true;
      cell_t0_ = Clock::now();
      CellResult r = run_cell(*c, phase);
      in_cell_ = false;
      if (r.status != CellStatus::interrupted) {
        cell_time_sum_ += r.wall_s;
        ++cells_timed_;
        ++out_.ran;
      }
      const bool crashed = r.failure && r.failure->server_crashed;
      const bool gpu_suspect = r.failure && r.failure->points_at_gpu;
      if (crashed && c->method.kind == MethodKind::tree && c->method.budget > crashed_budget) {
        crashed_budget = c->method.budget;
        crashed_cell = c->id;
      }
      const CellStatus st = r.status;
      record(std::move(r));
      if (st == CellStatus::interrupted)
        break;
      if (!memory_held_.empty()) {
        blocked_stage = CellStage::gpu_memory;
        blocked_reason =
            "GPU memory did not return to its baseline after " + c->id + ": " + memory_held_;
        blocked_diagnosis = "a server process may survive outside its process group; check "
                            "nvidia-smi for leftover processes before running this phase again";
        if (preflight_enabled_ && !run_preflight_for(phase, "GPU memory held after " + c->id)) {
          blocked_reason += "; " + preflight_reason(*preflight_);
        }
        update_draft();
        continue;
      }
      if (gpu_suspect && preflight_enabled_ && !stop_requested()) {
        if (!run_preflight_for(phase, "after " + c->id + " failed with a GPU error")) {
          blocked_stage = CellStage::preflight;
          blocked_reason = "after " + c->id + " failed, " + preflight_reason(*preflight_);
          blocked_diagnosis = preflight_diagnosis(*preflight_);
        }
        update_draft();
      }
    }
  }

  out_.stopped = stop_requested();
  manifest_.state = out_.stopped || !write_error_.empty() ? "interrupted" : "finished";
  write_manifest();
  out_.write_error = write_error_;
  for (const auto& ph : matrix_.phases)
    for (const auto& c : ph.cells) {
      if (!selected(c))
        continue;
      auto it = final_status_.find(c.id);
      if (it == final_status_.end()) {
        ++out_.pending;
        continue;
      }
      switch (it->second) {
      case CellStatus::ok:
        ++out_.ok;
        break;
      case CellStatus::failed:
        ++out_.failed;
        break;
      case CellStatus::blocked:
        ++out_.blocked;
        break;
      case CellStatus::skipped:
        ++out_.skipped;
        break;
      case CellStatus::interrupted:
        ++out_.interrupted;
        break;
      }
    }
  out_.wall_s = detail::seconds_since(t0_);
  RunnerEvent e;
  e.kind = RunnerEventKind::sweep_finished;
  e.status = out_.stopped               ? "interrupted"
             : out_.write_error.empty() ? "finished"
                                        : "stopped (results directory not writable)";
  e.message = std::to_string(out_.ok) + " ok, " + std::to_string(out_.failed) + " failed, " +
              std::to_string(out_.blocked) + " blocked, " + std::to_string(out_.skipped) +
              " skipped, " + std::to_string(out_.interrupted) + " interrupted, " +
              std::to_string(out_.pending) + " not run";
  e.eta_s = 0;
  emit(e);
  return out_;
}

} // namespace

int SweepOutcome::exit_code() const noexcept {
  if (stopped)
    return 130;
  if (!write_error.empty())
    return 2;
  return ok == total_cells ? 0 : 1;
}

fs::path default_results_dir(const Sweep& sweep) {
  if (!sweep.runner.results_dir.empty())
    return sweep.runner.results_dir;
  return fs::path("results") / (sweep.name.empty() ? std::string("sweep") : sweep.name);
}

bool text_points_at_gpu(const std::string& text) {
  static const char* const patterns[] = {"cuda error",
                                         "cuda_error",
                                         "cudaerror",
                                         "cuda unknown error",
                                         "illegal instruction",
                                         "illegal memory",
                                         "illegal address",
                                         "device capability",
                                         "out of memory",
                                         "xid",
                                         "nccl",
                                         "cublas_status",
                                         "device-side assert",
                                         "no cuda gpus",
                                         "cuda driver",
                                         "ecc error",
                                         "gpu has fallen off"};
  const std::string t = detail::ascii_lower(text);
  for (const char* p : patterns)
    if (t.find(p) != std::string::npos)
      return true;
  return false;
}

Expected<SweepOutcome> run_sweep(const Sweep& sweep, const Matrix& matrix,
                                 const RunnerOptions& options) {
  // --only must name something, or the user asked for nothing by mistake.
  for (const auto& id : options.only) {
    bool found = false;
    for (const auto& ph : matrix.phases) {
      if (ph.id == id)
        found = true;
      for (const auto& c : ph.cells)
        if (c.id == id)
          found = true;
    }
    if (!found)
      return Status(StatusCode::invalid_argument,
                    "--only " + id + " matches no cell or phase of the sweep",
                    "list the cell ids with `specbench plan SWEEP.yaml`", "run_sweep");
  }
  const fs::path dir =
      options.results_dir.empty() ? default_results_dir(sweep) : options.results_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return Status(StatusCode::io_error, "cannot create " + dir.string() + ": " + ec.message(),
                  "choose a writable --results directory", "run_sweep");
  auto lock = DirLock::acquire(dir);
  if (!lock)
    return lock.status();
  // Sorting starts here (temp files, the old report, stale results, the manifest): a report must
  // not read until it is done.
  auto sorting = detail::SortingLock::for_sorting(dir, 30);
  if (!sorting)
    return sorting.status();
  auto store = ResultStore::open(dir);
  if (!store)
    return store.status();
  // The old report describes the results as they were; this run may move some aside or measure
  // them again, and a run killed before it writes the new report must not leave the old one to
  // pass for it.
  if (Status st = remove_report_files(dir / "report"); !st)
    return st;
  SweepRun run(sweep, matrix, options, std::move(*store), std::move(*sorting));
  auto outcome = run.run();
  if (outcome && options.while_locked)
    options.while_locked(*outcome);
  return outcome; // the lock goes here, after the report
}

} // namespace specbench
