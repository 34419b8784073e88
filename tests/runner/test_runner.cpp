// The runner through its library API: resume by hash, stale results moved aside, --fresh,
// --only, the directory lock, the GPU-memory gate, progress events, a stop request.
#include "specbench/runner.hpp"

#include "specbench/detail/utf8.hpp"
#include "specbench/matrix.hpp"
#include "specbench/report.hpp"
#include "specbench/server.hpp"
#include "support/server_side_expect.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <condition_variable>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sys/file.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace specbench;
namespace fs = std::filesystem;

namespace {

// A sweep built in code (no YAML): the simulated server via {specbench}.
Sweep small_sweep(int max_new_tokens = 16, std::vector<int> budgets = {4}) {
  Sweep s;
  s.name = "runner-unit";
  s.gpus = 2;
  s.model.name = "unit-model";
  s.model.path = "runner-unit-model-" + std::to_string(::getpid());
  s.model.context_length = 2048;
  s.server.readiness_timeout_s = 10;
  s.server.request_timeout_s = 5;
  s.server.stop_grace_s = 3;
  s.server.launch = {"{specbench}",     "sim-server", "--host",        "{host}",
                     "--port",          "{port}",     "--model-path",  "{model}",
                     "--cost-fixed-us", "200",        "--load-time-s", "0.05"};
  s.server.method_args["tree"] = {"--speculative-algorithm",        "DDTREE",
                                  "--speculative-num-draft-tokens", "{block}",
                                  "--speculative-ddtree-budget",    "{budget}"};
  PhaseSpec p;
  p.tp = 1;
  s.phases = {p};
  s.methods.push_back(Method{MethodKind::autoregressive, 0, 0});
  for (int b : budgets)
    s.methods.push_back(Method{MethodKind::tree, 8, b});
  Workload w;
  w.name = "w";
  w.prompt_tokens = 8;
  w.max_new_tokens = max_new_tokens;
  w.requests = 3;
  w.warmup = 1;
  w.runs = 1;
  w.concurrency = 2;
  s.workloads = {w};
  s.runner.preflight = false;
  return s;
}

Matrix expand(const Sweep& s) {
  auto m = expand_matrix(s, {specbench::testing::cli_path().string()});
  EXPECT_TRUE(m) << m.status().to_string();
  return *m;
}

RunnerOptions options(const fs::path& dir) {
  RunnerOptions o;
  o.results_dir = dir;
  o.gpu_memory = [](const std::vector<int>&) -> Expected<std::vector<std::uint64_t>> {
    return Status(StatusCode::unavailable, "no GPU in unit tests");
  };
  return o;
}

// A preflight report that passes (one stand-in check), for tests that need a preflight to run.
PreflightReport passing_preflight() {
  PreflightReport r;
  CheckResult c;
  c.id = "stand-in";
  c.status = CheckStatus::pass;
  r.checks.push_back(c);
  return r;
}

// A sweep slow enough to stop mid-cell: 400 tokens a request, 200 us a token.
Sweep slow_sweep() {
  auto sweep = small_sweep(400, {4});
  sweep.server.launch.push_back("--cost-per-token-us");
  sweep.server.launch.push_back("200");
  return sweep;
}

// Runs `sweep` into `dir` and asks it to stop as soon as its second cell (tp1-ddtree-b4) is
// measuring.
Expected<SweepOutcome> run_stopped_in_the_second_cell(const fs::path& dir, const Sweep& sweep) {
  std::atomic<bool> stop{false};
  auto o = options(dir);
  o.stop = &stop;
  o.on_event = [&](const RunnerEvent& e) {
    if (e.kind == RunnerEventKind::cell_progress && e.cell_id == "tp1-ddtree-b4" && e.run >= 0)
      stop = true;
  };
  return run_sweep(sweep, expand(sweep), o);
}

// What running one cell gave: the sweep's outcome and that cell's stored result.
struct OneCell {
  Expected<SweepOutcome> out;
  Expected<CellResult> result;
};

// Runs only `cell` of `sweep` into `dir`, with `server_args` added to the server's launch line
// (a sim-server --fault, say), and loads that cell's result.
OneCell run_one_cell(const fs::path& dir, Sweep sweep, const std::string& cell,
                     const std::vector<std::string>& server_args = {}) {
  for (const auto& a : server_args)
    sweep.server.launch.push_back(a);
  auto o = options(dir);
  o.only = {cell};
  auto out = run_sweep(sweep, expand(sweep), o);
  auto store = ResultStore::open(dir);
  if (!store)
    return {std::move(out), store.status()};
  return {std::move(out), store->load(cell)};
}

// The autoregressive cell of `sweep` against a sim-server started with `--fault fault`.
OneCell run_autoregressive_with_fault(const fs::path& dir, const std::string& fault,
                                      Sweep sweep = small_sweep(16, {4})) {
  return run_one_cell(dir, std::move(sweep), "tp1-autoregressive", {"--fault", fault});
}

size_t count_files(const fs::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); ++it)
    n += it->is_regular_file() ? 1 : 0;
  return n;
}

} // namespace

TEST(Runner, ValidatesTheSweepBuiltInCode) {
  const auto diags = validate_sweep(small_sweep());
  for (const auto& d : diags)
    EXPECT_NE(d.severity, Severity::error) << d.to_string();
}

TEST(Runner, ResumeSkipsCompleteCellsAndConfigChangeMovesResultsAside) {
  const auto dir = specbench::testing::make_temp_dir("runner-resume");
  auto sweep = small_sweep();
  auto matrix = expand(sweep);
  std::vector<RunnerEvent> events;
  auto o = options(dir);
  o.on_event = [&](const RunnerEvent& e) { events.push_back(e); };
  auto first = run_sweep(sweep, matrix, o);
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_EQ(first->ok, 2);
  EXPECT_EQ(first->ran, 2);
  EXPECT_EQ(first->exit_code(), 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().kind, RunnerEventKind::sweep_started);
  EXPECT_EQ(events.back().kind, RunnerEventKind::sweep_finished);
  bool progress = false, measure_stage = false;
  for (const auto& e : events) {
    progress |= e.kind == RunnerEventKind::cell_progress && e.requests_total > 0;
    measure_stage |= e.kind == RunnerEventKind::cell_stage && e.stage == "measure";
  }
  EXPECT_TRUE(progress);
  EXPECT_TRUE(measure_stage);

  // Same sweep again: nothing runs.
  auto second = run_sweep(sweep, matrix, options(dir));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->already_done, 2);
  EXPECT_EQ(second->ran, 0);
  EXPECT_EQ(second->exit_code(), 0);

  // The workload changes: the old results are stale, moved aside (never mixed), and redone.
  auto changed = small_sweep(24);
  auto changed_matrix = expand(changed);
  EXPECT_NE(changed_matrix.phases[0].cells[0].config_hash, matrix.phases[0].cells[0].config_hash);
  auto third = run_sweep(changed, changed_matrix, options(dir));
  ASSERT_TRUE(third);
  EXPECT_EQ(third->moved_aside, 2);
  EXPECT_EQ(third->ran, 2);
  ASSERT_TRUE(fs::exists(dir / "stale"));
  EXPECT_EQ(count_files(dir / "stale") >= 2, true);
  auto store = ResultStore::open(dir);
  auto r = store->load("tp1-autoregressive");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->config_hash, changed_matrix.phases[0].cells[0].config_hash);
  EXPECT_EQ(r->workload.max_new_tokens, 24);
}

// "Moved aside, never deleted": when stale/ cannot take an outdated result, the run stops before
// measuring anything, instead of overwriting the only copy.
TEST(Runner, AResultThatCannotBeMovedAsideStopsTheRunAndSurvives) {
  const auto dir = specbench::testing::make_temp_dir("runner-no-stale");
  auto sweep = small_sweep();
  auto o = options(dir);
  o.only = {"tp1-autoregressive"};
  ASSERT_TRUE(run_sweep(sweep, expand(sweep), o));
  const auto cell = dir / "cells" / "tp1-autoregressive.json";
  std::string before;
  {
    std::ifstream in(cell);
    before.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_FALSE(before.empty());
  std::ofstream(dir / "stale") << "a file where the stale/ folder should go";
  auto changed = small_sweep(24); // a new config hash: the stored result must go aside
  auto out = run_sweep(changed, expand(changed), o);
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("could not move tp1-autoregressive (config-changed) aside"),
            std::string::npos)
      << out.status().to_string();
  EXPECT_NE(out.status().message().find("nothing was run"), std::string::npos);
  std::string after;
  {
    std::ifstream in(cell);
    after.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(after, before);
}

TEST(Runner, FreshRedoesOnlyTheSelectedCells) {
  const auto dir = specbench::testing::make_temp_dir("runner-fresh");
  auto sweep = small_sweep();
  auto matrix = expand(sweep);
  ASSERT_TRUE(run_sweep(sweep, matrix, options(dir)));
  auto o = options(dir);
  o.fresh = true;
  o.only = {"tp1-ddtree-b4"};
  auto again = run_sweep(sweep, matrix, o);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->total_cells, 1);
  EXPECT_EQ(again->ran, 1);
  EXPECT_EQ(again->moved_aside, 1);
  auto store = ResultStore::open(dir);
  EXPECT_EQ(store->load("tp1-ddtree-b4")->attempt, 1); // a fresh start, old one set aside
  o.only = {"tp9-nothing"};
  auto bad = run_sweep(sweep, matrix, o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().code(), StatusCode::invalid_argument);
}

// A finished result whose numbers were edited after the run is not reused or reported: it goes
// to stale/ (kept, never deleted) and the cell is measured again.
TEST(Runner, AnEditedResultIsMovedAsideAndMeasuredAgain) {
  const auto dir = specbench::testing::make_temp_dir("runner-edited");
  auto sweep = small_sweep();
  auto matrix = expand(sweep);
  ASSERT_TRUE(run_sweep(sweep, matrix, options(dir)));
  const fs::path file = dir / "cells" / "tp1-autoregressive.json";
  auto j = nlohmann::json::parse(std::ifstream(file));
  const double measured = j["summary"]["output_tokens_per_s"]["p50"].get<double>();
  j["summary"]["output_tokens_per_s"]["p50"] = measured * 10; // a better number, typed in
  std::ofstream(file) << j.dump(2);
  auto edited = ResultStore::open(dir)->load("tp1-autoregressive");
  ASSERT_TRUE(edited);
  const Status verdict = check_cell_result(*edited);
  ASSERT_FALSE(verdict);
  EXPECT_NE(verdict.message().find("summary.output_tokens_per_s.p50"), std::string::npos)
      << verdict.message();

  std::vector<std::string> messages;
  auto o = options(dir);
  o.on_event = [&](const RunnerEvent& e) {
    if (e.kind == RunnerEventKind::message)
      messages.push_back(e.message);
  };
  auto again = run_sweep(sweep, matrix, o);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(again->moved_aside, 1);
  EXPECT_EQ(again->ran, 1);
  EXPECT_EQ(again->already_done, 1);
  bool told = false;
  for (const auto& m : messages)
    told |= m.find("tp1-autoregressive aside (inconsistent)") != std::string::npos &&
            m.find("summary.output_tokens_per_s.p50") != std::string::npos;
  EXPECT_TRUE(told);
  // The edited file is kept in stale/, and the new result is a measurement that agrees with itself.
  bool kept = false;
  for (auto it = fs::recursive_directory_iterator(dir / "stale");
       it != fs::recursive_directory_iterator(); ++it)
    kept |= it->path().filename() == "tp1-autoregressive.json";
  EXPECT_TRUE(kept);
  auto fresh = ResultStore::open(dir)->load("tp1-autoregressive");
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(check_cell_result(*fresh));
  EXPECT_LT(fresh->summary.output_tokens_per_s.p50, measured * 5);
}

TEST(Runner, ASecondRunOnTheSameDirectoryIsRefused) {
  const auto dir = specbench::testing::make_temp_dir("runner-lock");
  const int fd = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  auto sweep = small_sweep();
  auto out = run_sweep(sweep, expand(sweep), options(dir));
  ::close(fd);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.status().code(), StatusCode::unavailable);
  EXPECT_NE(out.status().message().find("another specbench run"), std::string::npos);
}

// The report is written while the directory is still locked: a second run that took the lock
// between the sweep's end and the report could move results aside and leave a report of results
// that are no longer there.
TEST(Runner, TheReportHookRunsWhileTheDirectoryIsLocked) {
  const auto dir = specbench::testing::make_temp_dir("runner-lock-report");
  auto sweep = small_sweep();
  auto o = options(dir);
  o.only = {"tp1-autoregressive"};
  int calls = 0;
  std::optional<Status> second;
  o.while_locked = [&](const SweepOutcome& outcome) {
    ++calls;
    EXPECT_EQ(outcome.ok, 1);
    auto again = options(dir);
    again.fresh = true; // would move the finished result aside if it ran
    auto out = run_sweep(sweep, expand(sweep), again);
    second = out ? Status::ok() : out.status();
  };
  auto out = run_sweep(sweep, expand(sweep), o);
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->code(), StatusCode::unavailable) << second->to_string();
  EXPECT_NE(second->message().find("another specbench run"), std::string::npos);
  EXPECT_TRUE(ResultStore::open(dir)->load("tp1-autoregressive")); // still there
  // Once the run has returned, the lock is free again.
  auto later = run_sweep(sweep, expand(sweep), options(dir));
  EXPECT_TRUE(later) << later.status().to_string();
}

// A report taken while a run sorts the directory (the audit's "no result for cell X", 3 reports
// in 235) read half of it: a result already moved aside beside the old manifest that lists it as
// ok, or an old result not moved yet. The report now waits for the sorting to end. Here it is
// started right after the first result is moved aside; the run then waits (in its preflight, which
// follows the sorting) until that report is read.
TEST(Runner, AReportTakenWhileARunSortsTheDirectoryWaitsForTheSorting) {
  const auto dir = specbench::testing::make_temp_dir("runner-report-while-sorting");
  auto sweep = small_sweep();
  auto first = run_sweep(sweep, expand(sweep), options(dir));
  ASSERT_TRUE(first) << first.status().to_string();
  ASSERT_EQ(first->ok, 2);

  auto changed = small_sweep(24); // both results are stale now, to be moved aside
  changed.runner.preflight = true;
  auto o = options(dir);
  std::optional<Expected<Report>> report;
  std::mutex mu;
  std::condition_variable cv;
  std::thread reader;
  auto wait_for_report = [&](double seconds) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, std::chrono::duration<double>(seconds),
                       [&] { return report.has_value(); });
  };
  o.on_event = [&](const RunnerEvent& e) {
    if (e.kind != RunnerEventKind::message || reader.joinable() ||
        e.message.find("moved tp1-autoregressive aside") == std::string::npos)
      return;
    reader = std::thread([&] {
      auto r = load_report(dir);
      std::lock_guard lk(mu);
      report = std::move(r);
      cv.notify_all();
    });
    // Without the lock the report is read in this second, while the tree cell is still to move.
    wait_for_report(1.0);
  };
  bool report_read_before_cells = false;
  o.preflight_fn = [&](const PreflightPlan&) {
    report_read_before_cells = wait_for_report(20.0);
    return passing_preflight();
  };
  auto out = run_sweep(changed, expand(changed), o);
  if (reader.joinable())
    reader.join();
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->moved_aside, 2);
  ASSERT_TRUE(report_read_before_cells);
  ASSERT_TRUE(report.has_value() && *report) << (report ? report->status().to_string() : "none");
  const Report& rep = **report;
  // The sorted directory: the new manifest, both cells pending, no result left in cells/.
  EXPECT_TRUE(rep.problems.empty()) << rep.problems.front();
  EXPECT_EQ(rep.cell_count(), 0);
  ASSERT_EQ(rep.missing.size(), 2u);
  for (const auto& m : rep.missing)
    EXPECT_NE(m.find("(pending)"), std::string::npos) << m;
}

// The progress line's throughput is the report's, rounded, not cut (2367.98 printed as 2367
// beside the report's 2368.0).
TEST(Runner, TheFinishedLineRoundsThroughputAsTheReportDoes) {
  const auto dir = specbench::testing::make_temp_dir("runner-finished-line");
  auto sweep = small_sweep();
  auto o = options(dir);
  o.only = {"tp1-autoregressive"};
  std::string line;
  o.on_event = [&](const RunnerEvent& e) {
    if (e.kind == RunnerEventKind::cell_finished)
      line = e.message;
  };
  auto out = run_sweep(sweep, expand(sweep), o);
  ASSERT_TRUE(out) << out.status().to_string();
  auto r = ResultStore::open(dir)->load("tp1-autoregressive");
  ASSERT_TRUE(r);
  const double mean = r->summary.output_tokens_per_s.mean;
  EXPECT_EQ(line, "output " + std::to_string(std::llround(mean)) + " tok/s") << mean;
}

TEST(Runner, GpuMemoryNotBackToBaselineBlocksTheRestOfThePhase) {
  const auto dir = specbench::testing::make_temp_dir("runner-memory");
  auto sweep = small_sweep(16, {4, 8});
  sweep.runner.skip_smaller_budgets_after_crash = false;
  auto matrix = expand(sweep);
  auto o = options(dir);
  int calls = 0;
  // Baseline 1 GiB; after the first cell 3 GiB stay held (an orphaned process, say).
  o.gpu_memory = [&](const std::vector<int>& gpus) -> Expected<std::vector<std::uint64_t>> {
    EXPECT_EQ(gpus, std::vector<int>{0});
    return std::vector<std::uint64_t>{(calls++ == 0 ? 1ull : 3ull) << 30};
  };
  o.gpu_memory_settle_s = 0.3;
  auto out = run_sweep(sweep, matrix, o);
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->ok, 1);
  EXPECT_EQ(out->blocked, 2);
  auto store = ResultStore::open(dir);
  auto first = store->load("tp1-autoregressive");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, CellStatus::ok);
  ASSERT_FALSE(first->notes.empty());
  EXPECT_NE(first->notes.back().find("2048 MiB above its baseline"), std::string::npos)
      << first->notes.back();
  auto next = store->load("tp1-ddtree-b8");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, CellStatus::blocked);
  EXPECT_EQ(next->failure->stage, CellStage::gpu_memory);
}

TEST(Runner, StopRequestInterruptsTheCellInFlightAndKeepsFinishedOnes) {
  const auto dir = specbench::testing::make_temp_dir("runner-stop");
  auto out = run_stopped_in_the_second_cell(dir, slow_sweep());
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_TRUE(out->stopped);
  EXPECT_EQ(out->exit_code(), 130);
  auto store = ResultStore::open(dir);
  EXPECT_EQ(store->load("tp1-autoregressive")->status, CellStatus::ok);
  auto cut = store->load("tp1-ddtree-b4");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->status, CellStatus::interrupted);
  EXPECT_EQ(store->load_manifest()->state, "interrupted");
  EXPECT_EQ(live_server_count(), 0);
}

// ignore_eos asks for exactly max_new_tokens; a server that stops early anyway (a stop token it
// keeps) measures its throughput over less work than the other cells. The answers are honest, so
// the cell stays ok, with a note that says how many ended early, why, and the shortest.
TEST(Runner, AnswersShorterThanIgnoreEosAskedAreNoted) {
  const auto dir = specbench::testing::make_temp_dir("runner-stop-early");
  auto [out, r] = run_autoregressive_with_fault(dir, "stop-early");
  ASSERT_TRUE(out) << out.status().to_string();
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(r->status, CellStatus::ok);
  std::string note;
  for (const auto& n : r->notes)
    if (n.find("ended before max_new_tokens") != std::string::npos)
      note = n;
  EXPECT_EQ(note, "3 of 3 measured answers ended before max_new_tokens 16 although ignore_eos "
                  "asked for exactly that many (finish_reason stop 3; the shortest had 8 tokens): "
                  "the server stopped early, so its throughput is over less work than asked");

  // Without ignore_eos an early stop is the model's to make: no note.
  const auto dir2 = specbench::testing::make_temp_dir("runner-stop-early-eos");
  auto sweep = small_sweep(16, {4});
  sweep.workloads[0].ignore_eos = false;
  auto [out2, r2] = run_autoregressive_with_fault(dir2, "stop-early", sweep);
  ASSERT_TRUE(out2) << out2.status().to_string();
  ASSERT_TRUE(r2) << r2.status().to_string();
  for (const auto& n : r2->notes)
    EXPECT_EQ(n.find("ended before max_new_tokens"), std::string::npos) << n;
}

// A cell whose requests failed said what failed but not what to do: its diagnosis was empty.
TEST(Runner, FailedRequestsGiveTheCellADiagnosisForTheirKind) {
  const auto dir = specbench::testing::make_temp_dir("runner-request-diagnosis");
  auto [out, r] = run_autoregressive_with_fault(dir, "lying-counts");
  ASSERT_TRUE(out) << out.status().to_string();
  ASSERT_TRUE(r) << r.status().to_string();
  ASSERT_EQ(r->status, CellStatus::failed);
  ASSERT_TRUE(r->failure);
  EXPECT_NE(r->failure->reason.find("malformed"), std::string::npos) << r->failure->reason;
  EXPECT_NE(r->failure->diagnosis.find("check that server.backend and server.api match the "
                                       "server"),
            std::string::npos)
      << r->failure->diagnosis;
}

// model.draft_path was never checked: a drafter in an emptied /dev/shm passed the model layer and
// every speculative cell started a server that died loading it. Now those cells are blocked with
// the reason; the autoregressive cell, which does not load the drafter, still runs.
TEST(Runner, AGoneLocalDrafterBlocksTheCellsThatLoadIt) {
  const auto dir = specbench::testing::make_temp_dir("runner-gone-draft");
  auto sweep = small_sweep(16, {4});
  sweep.runner.preflight = true;
  sweep.model.draft_path = "/dev/shm/specbench-gone-draft-" + std::to_string(::getpid());
  sweep.server.method_args["tree"].push_back("--speculative-draft-model-path={draft_model}");
  // An argument that only holds the path's text does not load the drafter.
  sweep.server.launch.push_back("--log-requests-dir=" + sweep.model.draft_path + "-logs");
  auto o = options(dir);
  // The preflight's drafter checks (model.draft_*, tested with the model layer) stand in here:
  // the drafter is gone when the plan names it.
  std::vector<std::string> asked; // the drafter each preflight was asked to check
  o.preflight_fn = [&](const PreflightPlan& plan) {
    asked.push_back(plan.draft_model_path);
    PreflightReport r = passing_preflight();
    if (!plan.draft_model_path.empty()) {
      CheckResult c;
      c.id = "model.draft_dir";
      c.layer = PreflightLayer::model;
      c.status = CheckStatus::fail;
      c.summary = "drafter directory " + plan.draft_model_path + " does not exist";
      c.diagnosis = "the drafter lived in /dev/shm, which is memory";
      c.remedy = "download the drafter again";
      r.checks.push_back(c);
    }
    return r;
  };
  auto out = run_sweep(sweep, expand(sweep), o);
  ASSERT_TRUE(out) << out.status().to_string();
  ASSERT_EQ(asked, std::vector<std::string>{sweep.model.draft_path});
  EXPECT_EQ(out->ok, 1); // the autoregressive cell does not load the drafter
  EXPECT_EQ(out->blocked, 1);
  auto tree = ResultStore::open(dir)->load("tp1-ddtree-b4");
  ASSERT_TRUE(tree && tree->failure);
  EXPECT_EQ(tree->status, CellStatus::blocked);
  EXPECT_EQ(tree->failure->reason, "preflight check model.draft_dir failed: drafter directory " +
                                       sweep.model.draft_path + " does not exist");
  EXPECT_EQ(tree->failure->diagnosis,
            "the drafter lived in /dev/shm, which is memory Fix: download the drafter again");
  const auto manifest = ResultStore::open(dir)->load_manifest();
  ASSERT_TRUE(manifest);
  EXPECT_EQ(manifest->phases.at(0).preflight, "drafter_failed");

  // A hub id is the server's to download: the preflight is not asked to check it.
  const auto dir2 = specbench::testing::make_temp_dir("runner-hub-draft");
  sweep.model.draft_path = "z-lab/some-drafter";
  asked.clear();
  auto o2 = options(dir2);
  o2.preflight_fn = o.preflight_fn;
  auto out2 = run_sweep(sweep, expand(sweep), o2);
  ASSERT_TRUE(out2) << out2.status().to_string();
  EXPECT_EQ(asked, std::vector<std::string>{""});
  EXPECT_EQ(out2->ok, 2);
  EXPECT_EQ(ResultStore::open(dir2)->load_manifest()->phases.at(0).preflight, "passed");

  // On resume, a drafter whose cells are all complete is not checked, nor said to block them.
  const auto dir3 = specbench::testing::make_temp_dir("runner-draft-done");
  sweep.model.draft_path = "/dev/shm/specbench-gone-draft-" + std::to_string(::getpid());
  asked.clear();
  auto o3 = options(dir3);
  o3.preflight_fn = [&](const PreflightPlan& plan) {
    asked.push_back(plan.draft_model_path);
    return passing_preflight(); // this time the drafter is there
  };
  o3.only = {"tp1-ddtree-b4"};
  auto first = run_sweep(sweep, expand(sweep), o3);
  ASSERT_TRUE(first) << first.status().to_string();
  EXPECT_EQ(first->ok, 1);
  o3.only.clear();
  o3.preflight_fn = o.preflight_fn; // gone now: it would block tp1-ddtree-b4 if it were checked
  auto second = run_sweep(sweep, expand(sweep), o3);
  ASSERT_TRUE(second) << second.status().to_string();
  EXPECT_EQ(asked, (std::vector<std::string>{sweep.model.draft_path, ""}));
  EXPECT_EQ(second->already_done, 1); // tp1-ddtree-b4
  EXPECT_EQ(second->ok, 2);
  EXPECT_EQ(second->blocked, 0);
  EXPECT_EQ(ResultStore::open(dir3)->load_manifest()->phases.at(0).preflight, "passed");
}

// A failed or interrupted cell runs again on resume. Its record and its server's log are what the
// user reads to find out why (the seeds' crashes), so the new attempt must not overwrite them:
// they go to stale/<stamp>-retried/, and the new result says where.
TEST(Runner, ACellRunAgainKeepsItsEarlierAttemptAndLogAside) {
  const auto dir = specbench::testing::make_temp_dir("runner-retried");
  const auto sweep = slow_sweep();
  auto first = run_stopped_in_the_second_cell(dir, sweep);
  ASSERT_TRUE(first) << first.status().to_string();
  ASSERT_EQ(ResultStore::open(dir)->load("tp1-ddtree-b4")->status, CellStatus::interrupted);
  const auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string first_log = read(dir / "logs" / "tp1-ddtree-b4.log");
  ASSERT_FALSE(first_log.empty());

  auto second = run_sweep(sweep, expand(sweep), options(dir));
  ASSERT_TRUE(second) << second.status().to_string();
  EXPECT_EQ(second->ran, 1);
  auto now = ResultStore::open(dir)->load("tp1-ddtree-b4");
  ASSERT_TRUE(now) << now.status().to_string();
  EXPECT_EQ(now->status, CellStatus::ok);
  EXPECT_EQ(now->attempt, 2);
  ASSERT_TRUE(fs::is_directory(dir / "stale")) << "the earlier attempt was overwritten";
  std::vector<fs::path> kept;
  for (const auto& e : fs::directory_iterator(dir / "stale"))
    if (e.path().filename().string().ends_with("-retried"))
      kept.push_back(e.path());
  ASSERT_EQ(kept.size(), 1u);
  auto earlier = cell_result_from_json(read(kept[0] / "cells" / "tp1-ddtree-b4.json"));
  ASSERT_TRUE(earlier) << earlier.status().to_string();
  EXPECT_EQ(earlier->status, CellStatus::interrupted);
  EXPECT_EQ(earlier->attempt, 1);
  EXPECT_EQ(read(kept[0] / "logs" / "tp1-ddtree-b4.log"), first_log);
  const std::string where =
      "attempt 1 (interrupted) is kept in stale/" + kept[0].filename().string() + "/cells/";
  bool noted = false;
  for (const auto& n : now->notes)
    noted |= n.find(where) != std::string::npos;
  EXPECT_TRUE(noted) << where;

  // A log with no result: the runner was killed while the server ran. Its last words are kept too.
  const auto dir2 = specbench::testing::make_temp_dir("runner-retried-log-only");
  fs::create_directories(dir2 / "logs");
  std::ofstream(dir2 / "logs" / "tp1-autoregressive.log") << "RuntimeError: CUDA error: unknown\n";
  auto o2 = options(dir2);
  o2.only = {"tp1-autoregressive"};
  auto third = run_sweep(small_sweep(), expand(small_sweep()), o2);
  ASSERT_TRUE(third) << third.status().to_string();
  ASSERT_TRUE(fs::is_directory(dir2 / "stale")) << "the earlier log was deleted";
  std::string kept_log;
  for (const auto& e : fs::recursive_directory_iterator(dir2 / "stale"))
    if (e.path().filename() == "tp1-autoregressive.log")
      kept_log = read(e.path());
  EXPECT_EQ(kept_log, "RuntimeError: CUDA error: unknown\n");
  EXPECT_EQ(read(dir2 / "logs" / "tp1-autoregressive.log").find("CUDA error: unknown"),
            std::string::npos); // this attempt's log is its own
}

// The runner keeps a failed attempt in stale/*-retried/ before it runs the cell again. When that
// new attempt dies with the runner (SIGKILL: no result), the next run started again at attempt 1
// beside a kept attempt 1, and nothing pointed at the kept one. Here the kill is staged by hand:
// attempt 1 kept aside, a log left, no result.
TEST(Runner, AnAttemptKilledAfterItsPredecessorWasKeptAsideCountsOn) {
  const auto dir = specbench::testing::make_temp_dir("runner-killed-after-keep");
  auto first = run_autoregressive_with_fault(dir, "crash-after:2");
  ASSERT_TRUE(first.out) << first.out.status().to_string();
  ASSERT_TRUE(first.result);
  ASSERT_EQ(first.result->status, CellStatus::failed);
  ASSERT_EQ(first.result->attempt, 1);
  const fs::path batch = dir / "stale" / "20261206T000000Z-retried";
  fs::create_directories(batch / "cells");
  fs::rename(dir / "cells" / "tp1-autoregressive.json",
             batch / "cells" / "tp1-autoregressive.json");
  std::ofstream(dir / "logs" / "tp1-autoregressive.log") << "attempt 2's last words\n";

  auto next =
      run_one_cell(dir, small_sweep(16, {4}), "tp1-autoregressive", {"--fault", "crash-after:2"});
  ASSERT_TRUE(next.out) << next.out.status().to_string();
  ASSERT_TRUE(next.result) << next.result.status().to_string();
  EXPECT_EQ(next.result->attempt,
            2); // the kept attempt 1, then this one (the killed one left no number)
  bool points_at_kept = false, points_at_log = false;
  for (const auto& n : next.result->notes) {
    points_at_kept |= n.find("attempt 1 (failed) is kept in stale/20261206T000000Z-retried/cells/"
                             "tp1-autoregressive.json") != std::string::npos;
    points_at_log |= n.find("the server log of an earlier attempt that left no result of its own "
                            "is kept in stale/") != std::string::npos;
  }
  EXPECT_TRUE(points_at_kept);
  EXPECT_TRUE(points_at_log);
  // Its own failure is kept aside in turn, with the count going on.
  auto third =
      run_one_cell(dir, small_sweep(16, {4}), "tp1-autoregressive", {"--fault", "crash-after:2"});
  ASSERT_TRUE(third.result) << third.result.status().to_string();
  EXPECT_EQ(third.result->attempt, 3);
}

// A server log left by an attempt killed with the runner belongs to the config it ran under: after
// the sweep changes, it goes with that config's results to stale/*-config-changed/, and is not
// called an earlier attempt of the new config.
TEST(Runner, AnOrphanLogOfAChangedConfigGoesWithThatConfig) {
  const auto dir = specbench::testing::make_temp_dir("runner-orphan-log");
  auto sweep = small_sweep(16, {4});
  auto first = run_one_cell(dir, sweep, "tp1-autoregressive");
  ASSERT_TRUE(first.result) << first.result.status().to_string();
  fs::remove(dir / "cells" / "tp1-autoregressive.json"); // as if killed before its result
  std::ofstream(dir / "logs" / "tp1-autoregressive.log") << "old config's last words\n";
  sweep.workloads[0].max_new_tokens += 1;
  auto next = run_one_cell(dir, sweep, "tp1-autoregressive");
  ASSERT_TRUE(next.result) << next.result.status().to_string();
  EXPECT_EQ(next.result->attempt, 1);
  for (const auto& n : next.result->notes)
    EXPECT_EQ(n.find("left no result"), std::string::npos) << n;
  std::string kept_in;
  for (const auto& e : fs::recursive_directory_iterator(dir / "stale"))
    if (e.path().filename() == "tp1-autoregressive.log")
      kept_in = e.path().parent_path().parent_path().filename().string();
  EXPECT_TRUE(kept_in.ends_with("-config-changed")) << kept_in;
}

// Each measured run stores what the server's own counters said about exactly that run (warm-up
// excluded): the sim-server's figure equals the run's requests' sums (see server_side_expect.hpp).
TEST(Runner, EachRunStoresTheServersOwnFiguresForExactlyThatRun) {
  const auto dir = specbench::testing::make_temp_dir("runner-server-side");
  auto sweep = small_sweep(24, {4});
  sweep.workloads[0].runs = 2;
  sweep.workloads[0].warmup = 2;
  auto out = run_sweep(sweep, expand(sweep), options(dir));
  ASSERT_TRUE(out) << out.status().to_string();
  ASSERT_EQ(out->ok, 2);
  auto store = ResultStore::open(dir);
  for (const char* id : {"tp1-autoregressive", "tp1-ddtree-b4"}) {
    auto r = store->load(id);
    ASSERT_TRUE(r) << id;
    EXPECT_EQ(r->status, CellStatus::ok);
    specbench::testing::expect_sim_server_side_matches_requests(*r);
  }
  const auto rep = load_report(dir);
  ASSERT_TRUE(rep) << rep.status().to_string();
  for (const auto& c : rep->phases.at(0).cells) {
    EXPECT_EQ(c.server_side_runs, 2) << c.cell_id;
    if (c.method.kind == MethodKind::tree) {
      ASSERT_TRUE(c.server_acceptance_length);
      ASSERT_TRUE(c.acceptance_length);
      EXPECT_LT(*c.server_acceptance_length, *c.acceptance_length); // no prefill token
      EXPECT_TRUE(c.server_side_absent_reason.empty()) << c.server_side_absent_reason;
    } else {
      EXPECT_FALSE(c.server_acceptance_length);
      EXPECT_EQ(c.server_side_absent_reason, "no speculative counters in /metrics");
    }
  }
}

// A server without /metrics (SGLang without --enable-metrics): the cell is measured as usual and
// every run says why it has no counter figures; /server_info still gives SGLang's average.
TEST(Runner, AServerWithoutMetricsLeavesTheFiguresAbsentWithTheReason) {
  const auto dir = specbench::testing::make_temp_dir("runner-no-metrics");
  auto sweep = small_sweep(24, {4});
  sweep.workloads[0].runs = 2;
  auto [out, r] = run_one_cell(dir, sweep, "tp1-ddtree-b4",
                               {"--fault", "no-metrics", "--decode-log-interval", "1"});
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->ok, 1);
  EXPECT_EQ(out->exit_code(), 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, CellStatus::ok);
  EXPECT_FALSE(r->failure);
  ASSERT_EQ(r->runs.size(), 2u);
  for (const auto& run : r->runs) {
    ASSERT_TRUE(run.server_side) << "run " << run.run;
    const auto& s = *run.server_side;
    EXPECT_FALSE(s.metrics_ok);
    EXPECT_EQ(s.metrics_error, "/metrics answered HTTP 404");
    EXPECT_FALSE(s.acceptance_length);
    EXPECT_FALSE(s.draft_acceptance_rate);
    EXPECT_TRUE(s.server_info_ok) << s.server_info_error;
    // Folded every step here, so it is there; cumulative (warm-up included), hence not checked
    // against the run's requests.
    ASSERT_TRUE(s.sglang_avg_spec_accept_length_after);
    EXPECT_GT(*s.sglang_avg_spec_accept_length_after, 1.0);
    ASSERT_TRUE(run.acceptance_length); // the client's own figure is unaffected
  }
  const auto rep = load_report(dir);
  ASSERT_TRUE(rep);
  const auto& c = rep->phases.at(0).cells.at(0);
  EXPECT_FALSE(c.server_acceptance_length);
  EXPECT_EQ(c.server_side_absent_reason, "/metrics answered HTTP 404");
  ASSERT_TRUE(c.sglang_avg_spec_accept_length);
  EXPECT_NE(report_markdown(*rep).find("(SGLang avg)"), std::string::npos);
}

// An autoregressive baseline whose server really speculates (its launch line kept a draft model)
// would make every speedup of its phase too small. The runner bounds the tokens per verify step
// by the cell's method, so the baseline fails, saying why, instead of passing as a fast one.
// Counters that give more tokens per step than the method can commit (another client's traffic,
// or a broken counter) are left out with the reason, not reported beside the measured figures.
TEST(Runner, ServerCountersBeyondWhatTheMethodCanCommitAreLeftOut) {
  const auto dir = specbench::testing::make_temp_dir("runner-lying-metrics");
  auto [out, r] = run_one_cell(dir, small_sweep(24, {4}), "tp1-ddtree-b4",
                               {"--fault", "lying-metrics", "--decode-log-interval", "1"});
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->ok, 1);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->runs.size(), 1u);
  ASSERT_TRUE(r->runs[0].server_side);
  const auto& s = *r->runs[0].server_side;
  EXPECT_TRUE(s.metrics_ok) << s.metrics_error;
  EXPECT_FALSE(s.acceptance_length); // 1,000 claimed tokens over a few dozen steps
  EXPECT_FALSE(s.draft_acceptance_rate);
  EXPECT_NE(s.acceptance_absent_reason.find("what a step of this method commits: left out"),
            std::string::npos)
      << s.acceptance_absent_reason;
  bool told_length = false, told_rate = false;
  for (const auto& n : s.notes) {
    told_length |=
        n.find("outside 1..5, what a step of this method commits: left out") != std::string::npos;
    told_rate |= n.find("more accepted drafts than proposed: left out") != std::string::npos;
  }
  EXPECT_TRUE(told_length);
  EXPECT_TRUE(told_rate);
  // SGLang's own average (from /server_info) gets the same bound: the report printed 7.50 for an
  // autoregressive cell, and a 300-digit number for 1e300.
  EXPECT_FALSE(s.sglang_avg_spec_accept_length_after);
  bool told_avg = false;
  for (const auto& n : s.notes)
    told_avg |=
        n.find("SGLang's avg_spec_accept_length is 10") == 0 &&
        n.find(", outside 1..5, what a step of this method commits: left out") != std::string::npos;
  EXPECT_TRUE(told_avg);
  ASSERT_TRUE(r->runs[0].acceptance_length); // the client's own figure stands
  EXPECT_LE(*r->runs[0].acceptance_length, 5.0);
  // The report says why the server-side column is empty: not "no counters".
  const auto rep = load_report(dir);
  ASSERT_TRUE(rep);
  const auto& c = rep->phases.at(0).cells.at(0);
  EXPECT_FALSE(c.server_acceptance_length);
  EXPECT_NE(c.server_side_absent_reason.find("left out"), std::string::npos)
      << c.server_side_absent_reason;
}

// Text prompts have no length before the run: the context check trusts max_prompt_tokens. When the
// server counts more, the cell says so and by how much, so the next campaign's check is right.
TEST(Runner, TextPromptsLongerThanMaxPromptTokensAreNoted) {
  const auto dir = specbench::testing::make_temp_dir("runner-prompt-bound");
  const auto data = dir / "prompts.jsonl";
  {
    std::ofstream f(data);
    std::string words;
    for (int i = 0; i < 30; ++i)
      words += "word" + std::to_string(i) + " "; // 30 tokens to the sim's tokenizer
    f << R"({"prompt": ")" << words << "\"}\n"
      << R"({"prompt": "four short words here"})"
      << "\n";
  }
  auto sweep = small_sweep(8, {4});
  sweep.workloads[0].prompt_tokens = 0;
  sweep.workloads[0].dataset = data;
  sweep.workloads[0].max_prompt_tokens = 10;
  sweep.workloads[0].requests = 2;
  sweep.workloads[0].concurrency = 1;
  for (const auto& d : validate_sweep(sweep))
    ASSERT_NE(d.severity, Severity::error) << d.to_string();
  auto [out, r] = run_one_cell(dir / "results", sweep, "tp1-autoregressive");
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->ok, 1);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->requests.size(), 2u);
  // The server's counts of the two prompts (in the order the workload drew them).
  EXPECT_EQ(std::max(r->requests[0].prompt_tokens, r->requests[1].prompt_tokens), 30);
  EXPECT_EQ(std::min(r->requests[0].prompt_tokens, r->requests[1].prompt_tokens), 4);
  bool noted = false;
  for (const auto& n : r->notes)
    noted |= n.find("counted up to 30 prompt tokens (1 of 2 measured requests), more than "
                    "max_prompt_tokens 10") != std::string::npos &&
             n.find("raise max_prompt_tokens to at least 30") != std::string::npos;
  EXPECT_TRUE(noted) << (r->notes.empty() ? std::string("no notes") : r->notes.front());
}

TEST(Runner, AnAutoregressiveCellWhoseServerSpeculatesFails) {
  const auto dir = specbench::testing::make_temp_dir("runner-ar-speculates");
  auto [out, r] =
      run_one_cell(dir, small_sweep(24, {4}), "tp1-autoregressive",
                   {"--speculative-algorithm", "DDTREE", "--speculative-num-draft-tokens", "8",
                    "--speculative-ddtree-budget", "4"});
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->failed, 1);
  EXPECT_EQ(out->exit_code(), 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, CellStatus::failed);
  ASSERT_TRUE(r->failure);
  EXPECT_NE(r->failure->reason.find("is the autoregressive cell's server speculating?"),
            std::string::npos)
      << r->failure->reason;
}

// A crashing server can log bytes that are not UTF-8, and a broken one can answer them. The results
// are JSON, which cannot hold such bytes: writing a cell used to throw, and `specbench run` stopped
// with "internal error" and no record of the cell. Now the text is repaired where it enters
// (U+FFFD for each bad byte), the cell is recorded, and the sweep goes on to the next cell.
TEST(Runner, BytesThatAreNotUtf8FromTheServerLoseNoResult) {
  const std::string replacement = "\xEF\xBF\xBD";
  {
    const auto dir = specbench::testing::make_temp_dir("runner-garbage-crash");
    auto sweep = small_sweep(24, {4});
    for (const char* a : {"--fault", "garbage-crash-after:1"})
      sweep.server.launch.push_back(a);
    auto out = run_sweep(sweep, expand(sweep), options(dir));
    ASSERT_TRUE(out) << out.status().to_string();
    EXPECT_EQ(out->failed, 2); // both cells ran: the first one's crash did not stop the sweep
    for (const char* id : {"tp1-autoregressive", "tp1-ddtree-b4"}) {
      auto r = ResultStore::open(dir)->load(id);
      ASSERT_TRUE(r) << id << ": " << r.status().to_string();
      EXPECT_EQ(r->status, CellStatus::failed) << id;
      ASSERT_TRUE(r->failure) << id;
      EXPECT_TRUE(r->failure->server_crashed) << id;
      const std::string& tail = r->failure->log_tail;
      EXPECT_NE(tail.find("an illegal instruction was encountered " + replacement),
                std::string::npos)
          << tail;
      EXPECT_NE(tail.find(replacement + " core dump"), std::string::npos) << tail;
      EXPECT_EQ(detail::first_invalid_utf8(tail), std::string_view::npos);
      EXPECT_EQ(detail::first_invalid_utf8(r->failure->reason), std::string_view::npos);
    }
    const auto rep = load_report(dir);
    ASSERT_TRUE(rep) << rep.status().to_string();
    EXPECT_NE(report_markdown(*rep).find("tp1-ddtree-b4"), std::string::npos);
  }
  {
    const auto dir = specbench::testing::make_temp_dir("runner-garbage-body");
    auto sweep = small_sweep(24, {4});
    sweep.server.readiness_timeout_s = 2;
    auto [out, r] = run_autoregressive_with_fault(dir, "garbage-body", sweep);
    ASSERT_TRUE(out) << out.status().to_string();
    ASSERT_TRUE(r) << r.status().to_string();
    EXPECT_EQ(r->status, CellStatus::failed);
    ASSERT_TRUE(r->failure);
    // The readiness probe's one-token generation gets the body, cut in a character.
    EXPECT_EQ(r->failure->stage, CellStage::readiness);
    EXPECT_NE(r->failure->reason.find("answered HTTP 500: \xE5\x86\x85"), std::string::npos)
        << r->failure->reason;
    EXPECT_EQ(detail::first_invalid_utf8(r->failure->reason), std::string_view::npos);
  }
}

// A results directory that stops taking writes (a full disk) mid-sweep: the cell measured then
// cannot be kept, so the sweep stops there (more cells would waste GPU time) with exit code 2 and
// the reason, that cell stays pending, and the results already written are reused on resume.
// Before, every later cell ran, was measured and thrown away, and the run ended "finished" with
// exit code 0. The write failure is real: RLIMIT_FSIZE makes larger files fail with EFBIG.
TEST(Runner, AResultsDirectoryThatStopsTakingWritesStopsTheSweep) {
  const auto dir = specbench::testing::make_temp_dir("runner-disk-full");
  auto sweep = small_sweep(16, {4, 8});
  {
    auto o = options(dir);
    o.only = {"tp1-autoregressive"};
    auto first = run_sweep(sweep, expand(sweep), o);
    ASSERT_TRUE(first) << first.status().to_string();
    ASSERT_EQ(first->ok, 1);
  }
  const auto kept = fs::file_size(dir / "cells" / "tp1-autoregressive.json");
  const auto limit = static_cast<rlim_t>(kept / 2); // no cell result fits, the manifest does
  ASSERT_LT(fs::file_size(dir / "manifest.json"), limit);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN); // write() then fails with EFBIG instead
  rlimit small = old;
  small.rlim_cur = limit;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto full = run_sweep(sweep, expand(sweep), options(dir));
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_TRUE(full) << full.status().to_string();
  EXPECT_NE(full->write_error.find("cannot write the result of tp1-ddtree-b8"), std::string::npos)
      << full->write_error; // the largest budget runs first
  EXPECT_EQ(full->exit_code(), 2);
  EXPECT_EQ(full->already_done, 1);
  EXPECT_EQ(full->ran, 1); // it stopped after the first cell it could not keep
  EXPECT_EQ(full->ok, 1);
  EXPECT_EQ(full->pending, 2);
  EXPECT_EQ(count_files(dir / "cells"), 1u);
  auto manifest = ResultStore::open(dir)->load_manifest();
  ASSERT_TRUE(manifest) << manifest.status().to_string();
  EXPECT_EQ(manifest->state, "interrupted");
  for (const auto& c : manifest->phases.at(0).cells)
    EXPECT_EQ(c.status, c.id == "tp1-autoregressive" ? "ok" : "pending") << c.id;
  // Space again: the resume keeps the first result and runs the other two.
  auto resumed = run_sweep(sweep, expand(sweep), options(dir));
  ASSERT_TRUE(resumed) << resumed.status().to_string();
  EXPECT_TRUE(resumed->write_error.empty()) << resumed->write_error;
  EXPECT_EQ(resumed->already_done, 1);
  EXPECT_EQ(resumed->ok, 3);
  EXPECT_EQ(resumed->exit_code(), 0);
}

TEST(Runner, TextPointsAtGpu) {
  EXPECT_TRUE(
      text_points_at_gpu("RuntimeError: CUDA error: an illegal instruction was encountered"));
  EXPECT_TRUE(text_points_at_gpu("Failed to get device capability: CUDA unknown error"));
  EXPECT_TRUE(text_points_at_gpu("torch.OutOfMemoryError: CUDA out of memory"));
  EXPECT_TRUE(text_points_at_gpu("NCCL WARN Cuda failure"));
  EXPECT_FALSE(text_points_at_gpu("HTTP 400: prompt too long for the context"));
  EXPECT_FALSE(text_points_at_gpu("connection refused"));
}

// The seeds' first failure: the model lived in /dev/shm and a reboot emptied it. A local path
// that no longer exists must still reach the preflight (whose model layer diagnoses it) and
// block the phase; a hub id is the server's to download and is not checked locally.
TEST(Runner, AVanishedLocalModelReachesThePreflightAndBlocksThePhase) {
  const auto dir = specbench::testing::make_temp_dir("runner-vanished-model");
  auto sweep = small_sweep();
  sweep.model.path = "/dev/shm/specbench-vanished-model-" + std::to_string(::getpid());
  sweep.runner.preflight = true;
  auto matrix = expand(sweep);
  auto o = options(dir);
  std::vector<std::string> checked;
  o.preflight_fn = [&](const PreflightPlan& plan) {
    checked.push_back(plan.model_path);
    PreflightReport r;
    CheckResult c;
    c.id = "model.directory";
    c.layer = PreflightLayer::model;
    c.status = plan.model_path.empty() ? CheckStatus::pass : CheckStatus::fail;
    c.diagnosis = "the model directory is gone";
    r.checks.push_back(c);
    return r;
  };
  auto out = run_sweep(sweep, matrix, o);
  ASSERT_TRUE(out) << out.status().to_string();
  ASSERT_FALSE(checked.empty());
  EXPECT_EQ(checked.front(), sweep.model.path);
  EXPECT_EQ(out->blocked, 2);
  EXPECT_EQ(out->ok, 0);

  const auto dir2 = specbench::testing::make_temp_dir("runner-hub-model");
  sweep.model.path = "org/some-model";
  checked.clear();
  auto o2 = options(dir2);
  o2.preflight_fn = o.preflight_fn;
  auto out2 = run_sweep(sweep, expand(sweep), o2);
  ASSERT_TRUE(out2) << out2.status().to_string();
  ASSERT_FALSE(checked.empty());
  EXPECT_EQ(checked.front(), "");
  EXPECT_EQ(out2->ok, 2);

  // Relative paths: what is here (a dangling link too: the seeds' link into /dev/shm) or has two
  // slashes is a local folder and is checked; only "org/name" or a bare name with nothing here
  // can be a hub id. The audit's relative dangling link skipped the model layer entirely.
  const std::string link = "sb-dangling-model-" + std::to_string(::getpid());
  fs::create_symlink("/dev/shm/specbench-gone-" + std::to_string(::getpid()), link);
  struct RemoveLink {
    std::string path;
    ~RemoveLink() { fs::remove(path); }
  } remove_link{link};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {link, link},
      {"models/qwen/Qwen3-8B-missing", "models/qwen/Qwen3-8B-missing"},
      {"gpt2-like-" + std::to_string(::getpid()), ""},
      {"org/other-model", ""}};
  for (const auto& [path, expected] : cases) {
    const auto d = specbench::testing::make_temp_dir("runner-relative-model");
    sweep.model.path = path;
    checked.clear();
    auto o3 = options(d);
    o3.preflight_fn = o.preflight_fn;
    o3.only = {"tp1-autoregressive"};
    ASSERT_TRUE(run_sweep(sweep, expand(sweep), o3));
    ASSERT_FALSE(checked.empty()) << path;
    EXPECT_EQ(checked.front(), expected) << path;
  }
}
