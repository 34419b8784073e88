// A failing preflight (fake driver libraries: one GPU visible, the TP2 phase needs two) blocks
// its phase: no server is started for it, its cells are recorded as blocked with the report,
// and the other phase completes.
#include "e2e_support.hpp"
#include "fake_machine.hpp"

#include "specbench/config.hpp"
#include "specbench/matrix.hpp"
#include "specbench/runner.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace specbench;
using namespace specbench::e2e;
namespace fs = std::filesystem;

TEST(E2E, FailingPreflightBlocksItsPhaseAndStartsNoServer) {
  specbench::testing::FakeMachine machine("e2e-preflight");
  machine.healthy(1);
  const auto dir = specbench::testing::make_temp_dir("e2e-preflight");
  SweepSpec s;
  s.name = "preflight";
  s.marker = unique_marker("e2e-pf");
  s.tps = {1, 2};
  s.linear = false;
  s.budgets = {8};
  s.preflight = true;
  s.runs = 1;
  // A GPU-looking crash in TP1 (illegal instruction in the log) makes the runner check the GPUs
  // again before the next cell.
  s.faults = "tp1-ddtree-b8=crash-after:2";
  const auto file = write_sweep(dir, s);
  const auto loaded = load_sweep_file(file);
  ASSERT_TRUE(loaded.ok());
  auto matrix = expand_matrix(*loaded.sweep, {specbench::testing::cli_path().string()});
  ASSERT_TRUE(matrix) << matrix.status().to_string();

  RunnerOptions o;
  o.results_dir = dir / "results";
  o.preflight_template = machine.plan(1);
  std::vector<std::string> preflights;
  o.on_event = [&](const RunnerEvent& e) {
    if (e.kind == RunnerEventKind::preflight_done)
      preflights.push_back(e.phase_id + ":" + e.status);
  };
  auto out = run_sweep(*loaded.sweep, *matrix, o);
  ASSERT_TRUE(out) << out.status().to_string();
  EXPECT_EQ(out->exit_code(), 1);
  EXPECT_EQ(out->ok, 1);
  EXPECT_EQ(out->failed, 1);
  EXPECT_EQ(out->blocked, 2);
  EXPECT_EQ(preflights, (std::vector<std::string>{"tp1:passed", "tp1:passed", "tp2:failed"}));

  auto store = ResultStore::open(o.results_dir);
  ASSERT_TRUE(store);
  auto ar = store->load("tp1-autoregressive");
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->status, CellStatus::ok);
  EXPECT_NE(ar->provenance.preflight_json.find("\"checks\""), std::string::npos);
  auto crashed = store->load("tp1-ddtree-b8");
  ASSERT_TRUE(crashed);
  EXPECT_EQ(crashed->status, CellStatus::failed);
  ASSERT_TRUE(crashed->failure);
  EXPECT_TRUE(crashed->failure->points_at_gpu);
  for (const char* id : {"tp2-autoregressive", "tp2-ddtree-b8"}) {
    auto r = store->load(id);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, CellStatus::blocked) << id;
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->stage, CellStage::preflight);
    EXPECT_NE(r->failure->reason.find("preflight check"), std::string::npos) << r->failure->reason;
    EXPECT_NE(r->provenance.preflight_json.find("\"checks\""), std::string::npos);
    EXPECT_TRUE(r->provenance.server_argv.empty()); // never launched
    EXPECT_FALSE(fs::exists(store->log_path(id))) << "a server was started for a blocked phase";
  }
  auto m = store->load_manifest();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->phases.at(0).preflight, "passed");
  EXPECT_EQ(m->phases.at(1).preflight, "failed");
  EXPECT_FALSE(m->phases.at(1).preflight_json.empty());
  EXPECT_TRUE(wait_no_processes({s.marker}, std::chrono::seconds(3)).empty());
}

TEST(E2E, RunExitsTwoWhenItCannotRun) {
  const auto dir = specbench::testing::make_temp_dir("e2e-cannot");
  auto missing = spawn_cli({"run", (dir / "nope.yaml").string()}, dir / "missing");
  EXPECT_EQ(wait_child(missing, std::chrono::seconds(20)), 2);
  SweepSpec s;
  s.name = "only";
  s.marker = unique_marker("e2e-only");
  const auto file = write_sweep(dir, s);
  auto bad_only = spawn_cli({"run", file.string(), "--results", (dir / "r").string(), "--only",
                             "tp9-nothing"},
                            dir / "only");
  EXPECT_EQ(wait_child(bad_only, std::chrono::seconds(20)), 2);
  EXPECT_NE(read_file(dir / "only.err").find("matches no cell"), std::string::npos);
  auto no_results = spawn_cli({"report", (dir / "empty").string()}, dir / "report");
  EXPECT_EQ(wait_child(no_results, std::chrono::seconds(20)), 2);
}

// The command line says what is wrong in the words the user typed, and --json means JSON.
TEST(E2E, CommandLineMistakesAreNamedAndJsonStaysJson) {
  const auto dir = specbench::testing::make_temp_dir("e2e-cli");
  auto typo = spawn_cli({"plna", "x.yaml"}, dir / "typo");
  EXPECT_EQ(wait_child(typo, std::chrono::seconds(20)), 2);
  EXPECT_NE(read_file(dir / "typo.err").find("unknown command 'plna'"), std::string::npos);
  EXPECT_NE(read_file(dir / "typo.err").find("did you mean plan?"), std::string::npos);

  // An invalid sweep under --json: the findings as JSON on stdout, not silence.
  std::ofstream(dir / "bad.yaml") << "gpus: 8\nphases: [{tp: 16}]\n";
  auto plan = spawn_cli({"plan", (dir / "bad.yaml").string(), "--json"}, dir / "plan");
  EXPECT_EQ(wait_child(plan, std::chrono::seconds(20)), 2);
  const auto j = nlohmann::json::parse(read_file(dir / "plan.out"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << read_file(dir / "plan.out");
  EXPECT_EQ(j.value("schema_version", 0), 1);
  EXPECT_EQ(j.value("ok", true), false);
  EXPECT_GE(j.value("errors", 0), 2);

  // Bad preflight arguments under --json: a could-not-run report.
  auto pf = spawn_cli({"preflight", "--tp", "0", "--json"}, dir / "pf");
  EXPECT_EQ(wait_child(pf, std::chrono::seconds(20)), 2);
  const auto p = nlohmann::json::parse(read_file(dir / "pf.out"), nullptr, false);
  ASSERT_TRUE(p.is_object()) << read_file(dir / "pf.out");
  EXPECT_EQ(p.value("verdict", ""), "could-not-run");

  // sim-server refuses values that would quietly change what it simulates, naming the flag,
  // and says why it could not start even under --quiet.
  const std::vector<std::pair<std::vector<std::string>, std::string>> sim_bad = {
      {{"--port", "70000"}, "--port"},
      {{"--port", "-1"}, "--port"},
      {{"--agreement", "nan"}, "--agreement"},
      {{"--cost-fixed-us", "-1000000"}, "--cost-fixed-us"},
      {{"--cost-per-token-us", "inf"}, "--cost-per-token-us"},
      {{"--context-length", "0"}, "--context-length"},
      {{"--tp", "0"}, "--tp"},
      {{"--decode-log-interval", "0"}, "--decode-log-interval"},
      {{"--load-time-s", "nan"}, "--load-time-s"},
      {{"--trickle-interval-ms", "-5"}, "--trickle-interval-ms"},
      {{"--fault", "crash-after:"}, "no count"}};
  int k = 0;
  for (const auto& [extra, why] : sim_bad) {
    std::vector<std::string> args = {"sim-server", "--quiet", "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto log = dir / ("sim" + std::to_string(k++));
    auto sim = spawn_cli(args, log);
    EXPECT_EQ(wait_child(sim, std::chrono::seconds(20)), 2) << extra[0] << " " << extra[1];
    EXPECT_NE(read_file(log.string() + ".err").find(why), std::string::npos)
        << read_file(log.string() + ".err");
  }
  {
    auto sim =
        spawn_cli({"sim-server", "--quiet", "--host", "256.1.1.1", "--port", "0"}, dir / "simhost");
    EXPECT_NE(wait_child(sim, std::chrono::seconds(20)), 0);
    EXPECT_NE(read_file(dir / "simhost.err").find("sim-server: "), std::string::npos)
        << "a start error under --quiet must still be said";
  }

  // `--only` takes every word after it; the sweep file given last is still the sweep.
  SweepSpec s;
  s.name = "only-last";
  s.marker = unique_marker("e2e-only-last");
  s.budgets = {4};
  s.linear = false;
  s.runs = 1;
  const auto file = write_sweep(dir, s);
  auto only = spawn_cli({"run", "--results", (dir / "r").string(), "--no-report", "--only",
                         "tp1-autoregressive", file.string()},
                        dir / "only");
  EXPECT_EQ(wait_child(only, std::chrono::seconds(60)), 0) << read_file(dir / "only.err");
  EXPECT_TRUE(std::filesystem::exists(dir / "r" / "cells" / "tp1-autoregressive.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "r" / "cells" / "tp1-ddtree-b4.json"));
  // `--only $EMPTY sweep.yaml`: no ids is refused, not taken as "every cell".
  auto no_ids = spawn_cli({"run", "--results", (dir / "r2").string(), "--only", file.string()},
                          dir / "no-ids");
  EXPECT_EQ(wait_child(no_ids, std::chrono::seconds(20)), 2);
  EXPECT_NE(read_file(dir / "no-ids.err").find("--only names no cell or phase id"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "r2" / "cells"));
  // A value that is not a number under --json: JSON too.
  auto nan_tp = spawn_cli({"preflight", "--tp", "abc", "--json"}, dir / "nan-tp");
  EXPECT_EQ(wait_child(nan_tp, std::chrono::seconds(20)), 2);
  const auto e = nlohmann::json::parse(read_file(dir / "nan-tp.out"), nullptr, false);
  ASSERT_TRUE(e.is_object()) << read_file(dir / "nan-tp.out");
  EXPECT_EQ(e.value("verdict", ""), "could-not-run");
  // --no-report prints no report, but DIR/report/ is up to date.
  EXPECT_EQ(read_file(dir / "only.out").find("# specbench report"), std::string::npos);
  EXPECT_NE(read_file(dir / "r" / "report" / "report.md").find("tp1-autoregressive"),
            std::string::npos);

  // A report of a directory that is not one creates nothing there.
  std::filesystem::create_directories(dir / "plain");
  auto rep = spawn_cli({"report", (dir / "plain").string(), "--no-write"}, dir / "rep");
  EXPECT_EQ(wait_child(rep, std::chrono::seconds(20)), 2);
  EXPECT_TRUE(std::filesystem::is_empty(dir / "plain"));
}
