// End-to-end sweeps through the CLI on the simulated server.
#include "e2e_support.hpp"

#include "specbench/report.hpp"
#include "specbench/results.hpp"
#include "support/server_side_expect.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <random>
#include <regex>
#include <thread>
#include <unistd.h>

using namespace specbench;
using namespace specbench::e2e;
namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

std::map<std::string, CellResult> results_of(const fs::path& dir) {
  auto store = ResultStore::open(dir);
  std::map<std::string, CellResult> out;
  if (!store)
    return out;
  std::vector<std::string> problems;
  for (auto& r : store->load_all(&problems))
    out[r.cell_id] = r;
  for (const auto& p : problems)
    ADD_FAILURE() << "unreadable result: " << p;
  return out;
}

std::string describe(const std::map<std::string, CellResult>& rs) {
  std::string s;
  for (const auto& [id, r] : rs) {
    s += id + "=" + to_string(r.status);
    if (r.failure)
      s += "(" + std::string(to_string(r.failure->stage)) + ": " + r.failure->reason + ")";
    s += "\n";
  }
  return s;
}

// Servers recorded in results, still alive?
void expect_no_recorded_server_alive(const std::map<std::string, CellResult>& rs) {
  for (const auto& [id, r] : rs) {
    const auto& argv = r.provenance.server_argv;
    for (size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "--port") {
        auto left = wait_no_processes({"sim-server", "--port", argv[i + 1]}, seconds(3));
        EXPECT_TRUE(left.empty()) << "server of " << id << " still running (pid " << left[0] << ")";
      }
  }
}

} // namespace

TEST(E2E, DemoSweepRunsEndToEndAndResumeSkipsEverything) {
  const auto dir = specbench::testing::make_temp_dir("e2e-demo");
  auto child = spawn_cli({"run", (specbench::testing::source_dir() / "configs/demo.yaml").string(),
                          "--results", (dir / "results").string()},
                         dir / "run1");
  const int rc = wait_child(child, seconds(150));
  const auto out = read_file(dir / "run1.out"), err = read_file(dir / "run1.err");
  ASSERT_EQ(rc, 0) << err << out;
  const auto rs = results_of(dir / "results");
  ASSERT_EQ(rs.size(), 12u) << describe(rs);
  for (const auto& [id, r] : rs) {
    EXPECT_EQ(r.status, CellStatus::ok) << id;
    EXPECT_EQ(r.requests.size(), 24u) << id; // 12 requests x 2 runs, warm-up not stored
    EXPECT_FALSE(r.provenance.server_argv.empty());
    EXPECT_EQ(r.provenance.specbench_argv.at(1), "run");
    if (r.method.kind != MethodKind::autoregressive) {
      ASSERT_TRUE(r.summary.acceptance_length) << id;
      EXPECT_GT(*r.summary.acceptance_length, 1.0) << id; // really drafted and accepted
    }
    // The server's own counters, per run, agree exactly with the requests of that run.
    specbench::testing::expect_sim_server_side_matches_requests(r);
  }
  // The report is printed and written, with the synthetic-model warning.
  EXPECT_NE(out.find("# specbench report: demo"), std::string::npos) << out;
  EXPECT_NE(out.find("## Phase tp2"), std::string::npos);
  EXPECT_NE(out.find("Synthetic model"), std::string::npos);
  EXPECT_NE(out.find("server-side acceptance length †"), std::string::npos);
  for (const char* f : {"report.md", "report.csv", "report.json", "speedup.svg", "acceptance.svg"})
    EXPECT_TRUE(fs::exists(dir / "results" / "report" / f)) << f;
  auto rep = load_report(dir / "results");
  ASSERT_TRUE(rep);
  EXPECT_TRUE(rep->all_ok());
  // Real drafting: in every phase the largest tree budget accepts more per step than the smallest.
  for (const auto& p : rep->phases) {
    std::optional<double> smallest, largest;
    int lo = 1 << 30, hi = 0;
    for (const auto& c : p.cells)
      if (c.method.kind == MethodKind::tree && c.acceptance_length) {
        if (c.method.budget < lo)
          lo = c.method.budget, smallest = c.acceptance_length;
        if (c.method.budget > hi)
          hi = c.method.budget, largest = c.acceptance_length;
      }
    ASSERT_TRUE(smallest && largest) << p.id;
    EXPECT_GT(*largest, *smallest) << p.id;
    for (const auto& c : p.cells)
      EXPECT_EQ(c.server_acceptance_length.has_value(), c.method.kind != MethodKind::autoregressive)
          << c.cell_id;
  }
  expect_no_recorded_server_alive(rs);

  // Running the same command again resumes: everything is complete, nothing is started.
  const auto before = fs::last_write_time(dir / "results" / "cells" / "tp1-autoregressive.json");
  auto again = spawn_cli({"run", (specbench::testing::source_dir() / "configs/demo.yaml").string(),
                          "--results", (dir / "results").string(), "--no-report"},
                         dir / "run2");
  ASSERT_EQ(wait_child(again, seconds(30)), 0) << read_file(dir / "run2.err");
  EXPECT_NE(read_file(dir / "run2.err").find("12 already complete"), std::string::npos)
      << read_file(dir / "run2.err");
  EXPECT_EQ(fs::last_write_time(dir / "results" / "cells" / "tp1-autoregressive.json"), before);
  // `specbench report` reads the directory on its own and says all is well (exit 0).
  auto report = spawn_cli({"report", (dir / "results").string(), "--format", "csv", "--no-write"},
                          dir / "report");
  EXPECT_EQ(wait_child(report, seconds(20)), 0);
  EXPECT_NE(read_file(dir / "report.out").find("tp2-ddtree-b32"), std::string::npos);

  // A plot or report path never replaces what is not the report's own: a cell result (in the
  // cells folder, whatever its name) or an existing file that is not an SVG, such as a sweep.
  const auto cell_file = dir / "results" / "cells" / "tp1-autoregressive.json";
  const std::string cell_before = read_file(cell_file);
  const auto sweep_copy = dir / "sweep-copy.yaml";
  fs::copy_file(specbench::testing::source_dir() / "configs/demo.yaml", sweep_copy);
  const std::string sweep_before = read_file(sweep_copy);
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--plot-acceptance", cell_file.string()}, "cells folder"},
      {{"--plot", (dir / "results" / "cells" / "new.svg").string()}, "cells folder"},
      {{"--plot", sweep_copy.string()}, "not an SVG plot"},
      {{"--plot", dir.string()}, "is a folder"},
      {{"--plot", (dir / "same.svg").string(), "--plot-acceptance",
        (dir / "." / "same.svg").string()},
       "both name"},
      {{"--out", (dir / "results" / "cells").string()}, "cells folder"},
      // An empty value would read as the option not given.
      {{"--plot", ""}, "--plot: the value is empty"},
      {{"--out", ""}, "--out: the value is empty"}};
  int k = 0;
  for (const auto& [extra, why] : refused) {
    std::vector<std::string> args = {"report", (dir / "results").string()};
    if (extra[0] != "--out")
      args.push_back("--no-write");
    args.insert(args.end(), extra.begin(), extra.end());
    const auto log = dir / ("refused" + std::to_string(k++));
    auto r = spawn_cli(args, log);
    EXPECT_EQ(wait_child(r, seconds(20)), 2) << extra[1];
    EXPECT_NE(read_file(fs::path(log.string() + ".err")).find(why), std::string::npos)
        << read_file(fs::path(log.string() + ".err"));
  }
  EXPECT_EQ(read_file(cell_file), cell_before);
  EXPECT_EQ(read_file(sweep_copy), sweep_before);
  EXPECT_FALSE(fs::exists(dir / "results" / "cells" / "new.svg"));
  EXPECT_FALSE(fs::exists(dir / "same.svg"));
  EXPECT_FALSE(fs::exists(dir / "results" / "cells" / "report.json"));
  // A plot replaces an earlier plot.
  for (int i = 0; i < 2; ++i) {
    auto r = spawn_cli({"report", (dir / "results").string(), "--no-write", "--plot",
                        (dir / "plots" / "speedup.svg").string()},
                       dir / ("plot" + std::to_string(i)));
    EXPECT_EQ(wait_child(r, seconds(20)), 0)
        << read_file(dir / ("plot" + std::to_string(i) + ".err"));
  }
  EXPECT_NE(read_file(dir / "plots" / "speedup.svg").find("<svg"), std::string::npos);
}

TEST(E2E, FaultsMidSweepEndInTheRightRecordsWhileOtherCellsComplete) {
  const auto dir = specbench::testing::make_temp_dir("e2e-faults");
  SweepSpec s;
  s.name = "faults";
  s.marker = unique_marker("e2e-faults");
  s.budgets = {4, 8, 16, 32};
  s.faults = "tp1-linear-k8=crash-after:4;tp1-ddtree-b16=fail-start;tp1-ddtree-b8=hang;"
             "tp1-ddtree-b4=hang-after:4";
  const auto file = write_sweep(dir, s);
  auto child =
      spawn_cli({"run", file.string(), "--results", (dir / "results").string()}, dir / "run");
  const int rc = wait_child(child, seconds(120));
  const auto err = read_file(dir / "run.err"), out = read_file(dir / "run.out");
  EXPECT_EQ(rc, 1) << err;
  const auto rs = results_of(dir / "results");
  ASSERT_EQ(rs.size(), 6u) << describe(rs) << err;
  auto stage = [&](const std::string& id) {
    const auto& r = rs.at(id);
    return r.failure ? std::string(to_string(r.failure->stage)) : std::string("-");
  };
  EXPECT_EQ(rs.at("tp1-autoregressive").status, CellStatus::ok);
  EXPECT_EQ(rs.at("tp1-ddtree-b32").status, CellStatus::ok);
  // Crash while measuring: the server died mid-run; the log tail names the illegal instruction.
  const auto& lin = rs.at("tp1-linear-k8");
  EXPECT_EQ(lin.status, CellStatus::failed);
  EXPECT_EQ(stage("tp1-linear-k8"), "measure") << describe(rs);
  ASSERT_TRUE(lin.failure);
  EXPECT_TRUE(lin.failure->server_crashed);
  EXPECT_TRUE(lin.failure->points_at_gpu);
  EXPECT_NE(lin.failure->log_tail.find("illegal instruction"), std::string::npos)
      << lin.failure->log_tail;
  // Crash at start: failed to launch, with the device-capability message from its log.
  EXPECT_EQ(rs.at("tp1-ddtree-b16").status, CellStatus::failed);
  EXPECT_EQ(stage("tp1-ddtree-b16"), "launch");
  EXPECT_NE(rs.at("tp1-ddtree-b16").failure->log_tail.find("device capability"), std::string::npos);
  // Its fatal line came after a progress bar's '\r', in colour: the terminal line that reports the
  // cell is still one plain line that names it (a '\r' would have overwritten the cell id).
  const size_t at = err.find("tp1-ddtree-b16: failed -- ");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string cell_line = err.substr(at, err.find('\n', at) - at);
  EXPECT_EQ(cell_line.find_first_of("\r\x1b"), std::string::npos) << cell_line;
  EXPECT_NE(cell_line.find("2/4 RuntimeError: Failed to get device capability"), std::string::npos)
      << cell_line;
  // Hang from the start: never ready.
  EXPECT_EQ(rs.at("tp1-ddtree-b8").status, CellStatus::failed);
  EXPECT_EQ(stage("tp1-ddtree-b8"), "readiness");
  // Hang while measuring: the watchdog notices and the cell fails at measure.
  EXPECT_EQ(rs.at("tp1-ddtree-b4").status, CellStatus::failed);
  EXPECT_EQ(stage("tp1-ddtree-b4"), "measure") << describe(rs);
  // The report lists every failed cell with its reason.
  for (const char* id : {"tp1-linear-k8", "tp1-ddtree-b16", "tp1-ddtree-b8", "tp1-ddtree-b4"})
    EXPECT_NE(out.find(std::string("**") + id + "**: failed at"), std::string::npos) << id << out;
  EXPECT_TRUE(wait_no_processes({s.marker}, seconds(3)).empty()) << "a server was left behind";
}

TEST(E2E, CrashAtATreeBudgetSkipsTheSmallerBudgets) {
  const auto dir = specbench::testing::make_temp_dir("e2e-skip");
  SweepSpec s;
  s.name = "skip";
  s.marker = unique_marker("e2e-skip");
  s.linear = false;
  s.budgets = {4, 8, 16};
  s.skip_rule = true;
  s.faults = "tp1-ddtree-b8=crash-after:3";
  const auto file = write_sweep(dir, s);
  auto child =
      spawn_cli({"run", file.string(), "--results", (dir / "results").string()}, dir / "run");
  EXPECT_EQ(wait_child(child, seconds(60)), 1) << read_file(dir / "run.err");
  const auto rs = results_of(dir / "results");
  ASSERT_EQ(rs.size(), 4u) << describe(rs);
  EXPECT_EQ(rs.at("tp1-ddtree-b16").status, CellStatus::ok) << describe(rs); // larger: ran first
  EXPECT_EQ(rs.at("tp1-ddtree-b8").status, CellStatus::failed);
  EXPECT_EQ(rs.at("tp1-ddtree-b4").status, CellStatus::skipped);
  EXPECT_NE(rs.at("tp1-ddtree-b4").failure->reason.find("tree budget 8 crashed"),
            std::string::npos);
  EXPECT_TRUE(wait_no_processes({s.marker}, seconds(3)).empty());
}

TEST(E2E, AKilledRunLeavesNoOldReportAndAClosedPipeDoesNotStopARun) {
  const auto dir = specbench::testing::make_temp_dir("e2e-report-pipe");
  SweepSpec s;
  s.name = "pipe";
  s.marker = unique_marker("e2e-pipe");
  s.budgets = {4};
  s.cost_fixed_us = 1500;
  const auto file = write_sweep(dir, s);
  const auto results = dir / "results";
  auto first = spawn_cli({"run", file.string(), "--results", results.string(), "--no-report"},
                         dir / "first");
  ASSERT_EQ(wait_child(first, seconds(60)), 0) << read_file(dir / "first.err");
  ASSERT_TRUE(fs::exists(results / "report" / "report.md"));
  std::ofstream(results / "report" / "notes.txt") << "mine";

  // --fresh moves every result aside and measures again. Killed once the old results are
  // aside, it must not leave the old report (of results no longer there) in place.
  auto fresh =
      spawn_cli({"run", file.string(), "--results", results.string(), "--fresh"}, dir / "fresh");
  const auto until = std::chrono::steady_clock::now() + seconds(20);
  while (!fs::exists(results / "stale") && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(fs::exists(results / "stale")) << read_file(dir / "fresh.err");
  ::kill(fresh.pid, SIGKILL);
  wait_child(fresh, seconds(10));
  EXPECT_TRUE(wait_no_processes({s.marker}, seconds(4)).empty());
  for (const char* f : {"report.md", "report.csv", "report.json", "speedup.svg", "acceptance.svg"})
    EXPECT_FALSE(fs::exists(results / "report" / f)) << f << " outlived the results it describes";
  EXPECT_EQ(read_file(results / "report" / "notes.txt"), "mine"); // not the report's: kept

  // Output into a pipe nobody reads any more (`specbench run ... 2>&1 | head -3`): the run goes
  // on to the end instead of dying of SIGPIPE at its next progress line.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]); // the reader is gone before the first line
  auto piped = spawn_cli_to_fd({"run", file.string(), "--results", results.string()}, fds[1]);
  ::close(fds[1]);
  EXPECT_EQ(wait_child(piped, seconds(60)), 0) << "128 + 13 is SIGPIPE";
  auto m = ResultStore::open(results)->load_manifest();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->state, "finished");
  EXPECT_TRUE(fs::exists(results / "report" / "report.md"));
  EXPECT_TRUE(wait_no_processes({s.marker}, seconds(4)).empty());
}

TEST(E2E, ADatasetEditedDuringARunIsNotMeasuredUnderItsOldHash) {
  const auto dir = specbench::testing::make_temp_dir("e2e-dataset-edit");
  SweepSpec s;
  s.name = "dataset";
  s.marker = unique_marker("e2e-ds");
  s.budgets = {4, 8};
  s.cost_fixed_us = 1500;
  auto file = write_sweep(dir, s);
  std::string yaml = read_file(file);
  const auto at = yaml.find("prompt_tokens: 16");
  ASSERT_NE(at, std::string::npos) << yaml;
  yaml.replace(at, 17, "dataset: prompts.jsonl");
  std::ofstream(file) << yaml;
  const auto write_prompts = [&](const std::string& word) {
    std::ofstream out(dir / "prompts.jsonl");
    for (int i = 0; i < 10; ++i)
      out << "{\"prompt\": \"" << word << " " << i << "\"}\n";
  };
  write_prompts("short");
  const auto results = dir / "results";
  auto child =
      spawn_cli({"run", file.string(), "--results", results.string(), "--no-report"}, dir / "run");
  // Once the first cell is stored, the dataset is replaced. (Watched by listing the folder:
  // opening a store to write would tidy the run's temporary files away under it.)
  const auto stored = [&] {
    std::error_code ec;
    for (auto it = fs::directory_iterator(results / "cells", ec); !ec && it != fs::end(it);
         it.increment(ec))
      if (it->path().extension() == ".json")
        return true;
    return false;
  };
  const auto until = std::chrono::steady_clock::now() + seconds(30);
  while (!stored() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(stored()) << read_file(dir / "run.err");
  write_prompts("a much longer prompt than before");
  EXPECT_EQ(wait_child(child, seconds(60)), 1) << read_file(dir / "run.err");
  int ok = 0, refused = 0;
  for (const auto& [id, r] : results_of(results)) {
    if (r.status == CellStatus::ok)
      ++ok;
    else if (r.failure &&
             r.failure->reason.find("changed after this run started") != std::string::npos)
      ++refused;
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(refused, 1) << "every cell after the edit must refuse the new prompts";
  EXPECT_EQ(ok + refused, 4) << describe(results_of(results));
  EXPECT_TRUE(wait_no_processes({s.marker}, seconds(4)).empty());
  // Run again: the cells measured on the old dataset go aside, and all are measured on the new.
  auto again = spawn_cli({"run", file.string(), "--results", results.string(), "--no-report"},
                         dir / "again");
  EXPECT_EQ(wait_child(again, seconds(60)), 0) << read_file(dir / "again.err");
  for (const auto& [id, r] : results_of(results))
    EXPECT_EQ(r.status, CellStatus::ok) << id;
}

// `pkill -9 -f "specbench run SWEEP"` kills every process whose command line names the sweep. The
// guardian of each server is a fork of the runner: it renames itself so that it survives that,
// and takes the server down. A server started by a launcher script (here /bin/sh) is the
// launcher's child, which no parent-death signal reaches: only the guardian stops it.
TEST(E2E, KillingTheRunnerByItsCommandLineLeavesNoServer) {
  const auto dir = specbench::testing::make_temp_dir("e2e-pkill");
  SweepSpec s;
  s.name = "pkill";
  s.marker = unique_marker("e2e-pkill");
  s.budgets = {};
  s.linear = false;
  s.launch_through_shell = true;
  s.requests = 400;
  s.max_new_tokens = 64;
  s.cost_fixed_us = 1500;
  s.request_timeout_s = 30;
  const auto file = write_sweep(dir, s);
  auto child =
      spawn_cli({"run", file.string(), "--results", (dir / "results").string()}, dir / "run");
  const auto until = std::chrono::steady_clock::now() + seconds(15);
  while (find_processes({s.marker, "sim-server"}).empty() &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_FALSE(find_processes({s.marker, "sim-server"}).empty()) << read_file(dir / "run.err");
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(find_processes({"sb-server-guardian"}).empty());
  int killed = 0;
  for (pid_t pid : find_processes({file.string()}))
    killed += ::kill(pid, SIGKILL) == 0 ? 1 : 0;
  EXPECT_GE(killed, 1);
  EXPECT_EQ(wait_child(child, seconds(10)), 128 + SIGKILL);
  const auto left = wait_no_processes({s.marker}, seconds(8));
  EXPECT_TRUE(left.empty()) << left.size() << " server processes outlived the runner";
  for (pid_t pid : left)
    ::kill(pid, SIGKILL);
}

// Interrupt the sweep at random moments with SIGINT (clean stop) and SIGKILL (no chance to clean
// up), resume each time, and finish: every cell present exactly once, all ok, nothing left over.
TEST(E2E, SigintAndSigkillAtRandomPointsThenResumeFinishesEveryCellOnce) {
  const auto dir = specbench::testing::make_temp_dir("e2e-interrupt");
  SweepSpec s;
  s.name = "interrupt";
  s.marker = unique_marker("e2e-int");
  s.budgets = {4, 8, 16};
  s.requests = 6;
  s.max_new_tokens = 48;
  s.cost_fixed_us = 1500;
  const auto file = write_sweep(dir, s);
  const auto results = dir / "results";
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("random seed " + std::to_string(seed));
  int interrupted_cells_seen = 0;
  for (int round = 0; round < 6; ++round) {
    const bool kill9 = round % 2 == 1;
    auto child = spawn_cli({"run", file.string(), "--results", results.string(), "--no-report"},
                           dir / ("round" + std::to_string(round)));
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(150, 2200)(rng)));
    ::kill(child.pid, kill9 ? SIGKILL : SIGINT);
    const int rc = wait_child(child, seconds(30));
    const auto err = read_file(dir / ("round" + std::to_string(round) + ".err"));
    if (kill9)
      EXPECT_TRUE(rc == 128 + SIGKILL || rc == 0) << rc << err;
    else
      EXPECT_TRUE(rc == 130 || rc == 0) << rc << err; // 0: it finished before the signal
    // No server survives, not even after SIGKILL of specbench (parent-death signal).
    EXPECT_TRUE(wait_no_processes({s.marker}, seconds(4)).empty())
        << "server left behind after " << (kill9 ? "SIGKILL" : "SIGINT") << " in round " << round;
    // Every result on disk is whole.
    for (const auto& [id, r] : results_of(results))
      if (r.status == CellStatus::interrupted)
        ++interrupted_cells_seen;
  }
  auto last = spawn_cli({"run", file.string(), "--results", results.string()}, dir / "final");
  const int rc = wait_child(last, seconds(90));
  ASSERT_EQ(rc, 0) << read_file(dir / "final.err");
  const auto rs = results_of(results);
  ASSERT_EQ(rs.size(), 5u) << describe(rs);
  for (const auto& [id, r] : rs)
    EXPECT_EQ(r.status, CellStatus::ok) << id;
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(results / "cells")) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".json") << e.path(); // no temp file left
  }
  EXPECT_EQ(files, 5u);
  // A resume moves no finished same-config result aside; only interrupted attempts of cells that
  // ran again (and logs of attempts killed before their result) are kept, under "-retried".
  if (fs::exists(results / "stale"))
    for (const auto& batch : fs::directory_iterator(results / "stale")) {
      // "<stamp>-retried", or "<stamp>-2-retried" for a second run within the same second (every
      // batch ends in "-<why>": that is how the next run finds its kept attempts).
      EXPECT_TRUE(std::regex_match(batch.path().filename().string(),
                                   std::regex("[0-9TZ]+(-[0-9]+)?-retried")))
          << batch.path();
      if (!fs::exists(batch.path() / "cells"))
        continue;
      for (const auto& e : fs::directory_iterator(batch.path() / "cells")) {
        auto kept = cell_result_from_json(read_file(e.path()));
        ASSERT_TRUE(kept) << e.path();
        EXPECT_NE(kept->status, CellStatus::ok) << e.path();
      }
    }
  auto m = ResultStore::open(results)->load_manifest();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->state, "finished");
  EXPECT_TRUE(wait_no_processes({s.marker}, seconds(3)).empty());
  RecordProperty("interrupted_cells_seen", interrupted_cells_seen);
}
