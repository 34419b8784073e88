// The results store: JSON round trip, atomic writes that survive SIGKILL, moving results aside.
#include "specbench/results.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace specbench;
namespace fs = std::filesystem;

namespace {

CellResult sample_result(const std::string& id, int requests = 3) {
  CellResult r;
  r.cell_id = id;
  r.phase_id = "tp1";
  r.config_hash = "0123456789abcdef";
  r.tp = 1;
  r.gpus = {0};
  r.method.kind = MethodKind::tree;
  r.method.block = 16;
  r.method.budget = 12;
  r.workload.name = "short";
  r.workload.prompt_tokens = 64;
  r.workload.requests = requests;
  r.status = CellStatus::ok;
  r.notes = {"synthetic model"};
  r.started_at = utc_now_iso8601();
  r.finished_at = utc_now_iso8601();
  r.provenance.specbench_argv = {"specbench", "run", "x.yaml"};
  r.provenance.specbench_version = "0.1.0";
  r.provenance.specbench_commit = "abc";
  r.provenance.server_argv = {"sim", "--port", "1234"};
  r.provenance.gpu_names = {"NVIDIA H200"};
  r.provenance.preflight_json = R"({"verdict":"pass","checks":[]})";
  for (int i = 0; i < requests; ++i) {
    RequestMetrics q;
    q.run = 0;
    q.index = i;
    q.ok = i != 1;
    if (!q.ok)
      q.error = "http 500";
    q.output_tokens = 32;
    q.ttft_s = 0.01 * (i + 1);
    q.e2e_s = 0.5 + i;
    q.itl_s = {0.01, 0.02};
    q.verify_steps = i == 2 ? -1 : 8;
    r.requests.push_back(q);
  }
  r.runs = summarize_runs(r.requests, 1);
  r.summary = summarize_cell(r.requests, r.runs);
  return r;
}

} // namespace

TEST(CellResultJson, RoundTripKeepsEverything) {
  auto r = sample_result("tp1-ddtree-b12");
  r.status = CellStatus::failed;
  r.failure = CellFailure{CellStage::measure, "server died", "CUDA illegal instruction",
                          "line1\nline2",     true,          true};
  const auto text = to_json(r);
  auto back = cell_result_from_json(text);
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->cell_id, r.cell_id);
  EXPECT_EQ(back->method.kind, MethodKind::tree);
  EXPECT_EQ(back->method.budget, 12);
  EXPECT_EQ(back->status, CellStatus::failed);
  ASSERT_TRUE(back->failure);
  EXPECT_EQ(back->failure->stage, CellStage::measure);
  EXPECT_TRUE(back->failure->server_crashed);
  EXPECT_EQ(back->failure->log_tail, "line1\nline2");
  EXPECT_EQ(back->requests.size(), 3u);
  EXPECT_FALSE(back->requests[1].ok);
  EXPECT_EQ(back->requests[2].verify_steps, -1);
  EXPECT_EQ(back->requests[0].itl_s.size(), 2u);
  EXPECT_EQ(back->provenance.gpu_names, r.provenance.gpu_names);
  EXPECT_NE(back->provenance.preflight_json.find("\"verdict\""), std::string::npos);
  EXPECT_EQ(back->summary.failed, 1);
  ASSERT_TRUE(back->summary.acceptance_length);
  EXPECT_DOUBLE_EQ(*back->summary.acceptance_length, 4.0);
  // The preflight report is embedded as an object, not a string.
  EXPECT_NE(text.find("\"preflight\": {"), std::string::npos);
  // Serializing again gives the same text: nothing lost or reordered.
  EXPECT_EQ(to_json(*back), text);
}

TEST(CellResultJson, AnEmptyDistributionIsNullNotZero) {
  auto r = sample_result("tp1-ddtree-b12");
  r.summary.acceptance_length_runs = Distribution{}; // nothing measured
  const auto j = nlohmann::json::parse(to_json(r));
  const auto& d = j.at("summary").at("acceptance_length_runs");
  EXPECT_EQ(d.at("count"), 0);
  EXPECT_TRUE(d.at("mean").is_null());
  EXPECT_TRUE(d.at("p99").is_null());
  auto back = cell_result_from_json(to_json(r));
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->summary.acceptance_length_runs.count, 0);
  EXPECT_EQ(back->summary.acceptance_length_runs.mean, 0.0); // in memory, count says "none"
  EXPECT_EQ(to_json(*back), to_json(r));
}

TEST(CellResultJson, ANonFiniteFigureKeepsTheFileReadable) {
  auto r = sample_result("tp1-ddtree-b12");
  r.requests[0].e2e_s = 1e300; // a clock gone wrong: the spread of e2e overflows
  r.runs = summarize_runs(r.requests, 1);
  r.summary = summarize_cell(r.requests, r.runs);
  ASSERT_FALSE(std::isfinite(r.summary.e2e_s.stddev));
  const auto text = to_json(r);
  auto back = cell_result_from_json(text);
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_TRUE(std::isnan(back->summary.e2e_s.stddev)); // written as null, read as NaN
  EXPECT_EQ(back->summary.e2e_s.max, 1e300);
  EXPECT_EQ(back->requests.size(), 3u);
}

TEST(CellResultCheck, AResultAsTheRunnerWritesItAgreesWithItselfAfterARoundTrip) {
  auto r = sample_result("tp1-ddtree-b12");
  EXPECT_TRUE(check_cell_result(r));
  auto back = cell_result_from_json(to_json(r));
  ASSERT_TRUE(back);
  EXPECT_TRUE(check_cell_result(*back)) << check_cell_result(*back).to_string();
  // Figures that overflowed are written as null and read as NaN: still the runner's own.
  r.requests[0].e2e_s = 1e300;
  r.runs = summarize_runs(r.requests, 1);
  r.summary = summarize_cell(r.requests, r.runs);
  back = cell_result_from_json(to_json(r));
  ASSERT_TRUE(back);
  EXPECT_TRUE(check_cell_result(*back)) << check_cell_result(*back).to_string();
}

// check_cell_result's verdict on the sample result after `edit`, as read back from its file;
// with `resummarize`, its runs and summary recomputed from the edited requests first.
static std::string verdict_after(const std::function<void(CellResult&)>& edit, bool resummarize) {
  auto r = sample_result("tp1-ddtree-b12");
  r.wall_s = 10;
  edit(r);
  if (resummarize) {
    r.runs = summarize_runs(r.requests, static_cast<int>(r.runs.size()));
    r.summary = summarize_cell(r.requests, r.runs);
  }
  auto back = cell_result_from_json(to_json(r));
  EXPECT_TRUE(back) << back.status().to_string();
  const Status s = check_cell_result(*back);
  return s ? std::string("consistent") : s.message();
}

TEST(CellResultCheck, EachKindOfEditIsFoundAndNamed) {
  const auto verdict = [](const std::function<void(CellResult&)>& edit) {
    return verdict_after(edit, false);
  };
  const auto names = [&](const std::function<void(CellResult&)>& edit, const std::string& what) {
    const std::string message = verdict(edit);
    EXPECT_NE(message.find(what), std::string::npos) << message;
    EXPECT_NE(message.find("tp1-ddtree-b12 contradicts itself"), std::string::npos) << message;
  };
  names([](CellResult& r) { r.summary.output_tokens_per_s.p50 *= 1.5; },
        "summary.output_tokens_per_s.p50 is");
  names([](CellResult& r) { r.summary.e2e_s.p99 = 0.1; }, "summary.e2e_s.p99");
  names([](CellResult& r) { r.summary.acceptance_length = 7.0; }, "summary.acceptance_length is 7");
  names([](CellResult& r) { r.summary.acceptance_length.reset(); },
        "summary.acceptance_length is absent from the file");
  names([](CellResult& r) { r.runs[0].duration_s /= 2; }, "runs[0].duration_s");
  names([](CellResult& r) { r.summary.failed = 0; }, "summary.failed is 0 in the file, 1");
  // A request edited alone: the summary no longer follows from it.
  names([](CellResult& r) { r.requests[0].e2e_s = 0.2; }, "from its requests");
  names([](CellResult& r) { r.requests[0].ttft_s = -1; }, "negative or non-finite time");
  names([](CellResult& r) { r.requests[2].ttft_s = 5; }, "first token (5 s) after its end");
  names([](CellResult& r) { r.requests[0].run = 3; }, "belongs to no run of the 1 recorded");
  names([](CellResult& r) { r.requests[0].itl_s.push_back(-0.5); }, "inter-token gap");
  names([](CellResult& r) { r.requests.clear(); }, "holds no measured request");
  names([](CellResult& r) { r.workload.runs = 3; }, "holds 1 runs where its workload has 3");
  names(
      [](CellResult& r) {
        r.failure = CellFailure{CellStage::measure, "died"};
      },
      "status is ok but it records a failure (died)");
  // A cell that did not finish is never reported as measured: not checked.
  EXPECT_EQ(verdict([](CellResult& r) {
              r.status = CellStatus::failed;
              r.summary.e2e_s.p99 = 0.1;
            }),
            "consistent");
}

// Edits whose summaries were recomputed to agree still cannot pass for a measurement when no run
// could have measured them (each was shown as a good result: acceptance 0.5 or 96, a 68x speedup).
TEST(CellResultCheck, WhatNoRunCouldMeasureIsFoundEvenWithSummariesThatAgree) {
  const auto verdict = [](const std::function<void(CellResult&)>& edit) {
    return verdict_after(edit, true);
  };
  const auto names = [&](const std::function<void(CellResult&)>& edit, const std::string& what) {
    const std::string message = verdict(edit);
    EXPECT_NE(message.find(what), std::string::npos) << message;
  };
  EXPECT_EQ(verdict([](CellResult&) {}), "consistent");
  // A failed request keeps the gaps it streamed, with no end time (stored as 0): no contradiction.
  EXPECT_EQ(verdict([](CellResult& r) {
              r.requests[1].e2e_s = 0;
              r.requests[1].ttft_s = 0;
              r.requests[1].itl_s = {0.01, 0.02};
            }),
            "consistent");
  names([](CellResult& r) { r.requests[0].verify_steps = 64; },
        "request 0 of run 0 has 64 verify steps for 32 output tokens");
  names([](CellResult& r) { r.requests[0].verify_steps = 1; },
        "has 32 output tokens in 1 verify steps, more than 13 per step (ddtree-b12)");
  names([](CellResult& r) { r.requests[0].output_tokens = 50 * r.workload.max_new_tokens; },
        "output tokens, more than max_new_tokens 256");
  names([](CellResult& r) { r.requests[2].output_tokens = 0; },
        "is ok with no output token, though ignore_eos asked for 256");
  names([](CellResult& r) { r.requests.push_back(r.requests[0]); },
        "request 0 of run 0 appears twice");
  names(
      [](CellResult& r) {
        auto q = r.requests[0];
        q.index = 3;
        r.requests.push_back(q);
      },
      "request 3 of run 0 is outside the workload's 3 requests per run");
  names([](CellResult& r) { r.requests[0].itl_s = {10.0, 20.0}; }, "has inter-token gaps of 30 s");
  names([](CellResult& r) { r.requests[0].e2e_s = 1e200; }, "beyond the whole cell's 10 s");
}

// nlohmann's get<int> wraps 10^12 to a negative number and truncates 96.5: read so, a damaged
// or edited file would become another result. Such a file is refused, naming the field.
TEST(CellResultJson, NumbersThatAreNotWholeOrDoNotFitAreRefused) {
  const auto j = nlohmann::json::parse(to_json(sample_result("tp1-ddtree-b12")));
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto e = j;
    edit(e);
    auto back = cell_result_from_json(e.dump());
    return back ? std::string("accepted") : back.status().message();
  };
  EXPECT_NE(refused([](auto& e) {
              e["tp"] = 1000000000000LL;
            }).find("tp is 1000000000000, not a whole number from 1 to 2147483647"),
            std::string::npos);
  EXPECT_NE(refused([](auto& e) { e["method"]["budget"] = 2147483648LL; }).find("budget is"),
            std::string::npos);
  EXPECT_NE(refused([](auto& e) { e["method"]["budget"] = -4; }).find("budget is -4"),
            std::string::npos);
  EXPECT_NE(refused([](auto& e) {
              e["requests"][0]["output_tokens"] = 96.5;
            }).find("output_tokens is 96.5"),
            std::string::npos);
  EXPECT_NE(refused([](auto& e) {
              e["requests"][0]["output_tokens"] = 1e30;
            }).find("output_tokens is 1e+30"),
            std::string::npos);
  EXPECT_NE(refused([](auto& e) { e["gpus"] = {0, -1}; }).find("gpus is -1"), std::string::npos);
  EXPECT_NE(refused([](auto& e) { e["summary"]["runs"] = "1"; }).find("runs is \"1\""),
            std::string::npos);
  EXPECT_EQ(refused([](auto&) {}), "accepted");
  // What the runner can write stays readable: an error object's code, an unsent request's start.
  EXPECT_EQ(refused([](auto& e) { e["requests"][0]["http_status"] = 40001; }), "accepted");
  EXPECT_EQ(refused([](auto& e) { e["requests"][0]["start_s"] = -1; }), "accepted");
}

TEST(CellResultCheck, LoadAllLeavesAnEditedResultOutAsAProblem) {
  const auto dir = specbench::testing::make_temp_dir("store-edited");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->commit(sample_result("tp1-a")));
  auto edited = sample_result("tp1-b");
  edited.summary.output_tokens_per_s.max *= 2;
  ASSERT_TRUE(store->commit(edited));
  std::vector<std::string> problems;
  const auto loaded = store->load_all(&problems);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].cell_id, "tp1-a");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("tp1-b.json"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("summary.output_tokens_per_s.max"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("left out"), std::string::npos) << problems[0];
}

TEST(CellResultJson, ServerSideFiguresRoundTrip) {
  auto r = sample_result("tp1-ddtree-b12", 4);
  for (auto& q : r.requests)
    q.run = q.index % 2;
  r.runs = summarize_runs(r.requests, 2);
  ServerSideFigures full;
  full.interval_s = 1.25;
  full.metrics_ok = true;
  full.server_info_ok = true;
  full.acceptance_length = 2.75;
  full.acceptance_source = "vLLM: 1 + delta spec_decode_num_accepted_tokens / delta "
                           "spec_decode_num_drafts";
  full.draft_acceptance_rate = 0.3125;
  full.sglang_avg_spec_accept_length_after = 2.5;
  full.notes = {"the server's model is synthetic (specbench sim-server)"};
  r.runs[0].server_side = full;
  ServerSideFigures none;
  none.interval_s = 0.5;
  none.metrics_error = "/metrics answered HTTP 404";
  none.server_info_error = "/server_info: connection refused";
  r.runs[1].server_side = none;
  const auto text = to_json(r);
  auto back = cell_result_from_json(text);
  ASSERT_TRUE(back) << back.status().to_string();
  ASSERT_EQ(back->runs.size(), 2u);
  ASSERT_TRUE(back->runs[0].server_side);
  const auto& a = *back->runs[0].server_side;
  EXPECT_DOUBLE_EQ(a.interval_s, 1.25);
  EXPECT_TRUE(a.metrics_ok);
  EXPECT_TRUE(a.metrics_error.empty());
  EXPECT_TRUE(a.server_info_ok);
  EXPECT_EQ(a.acceptance_length, 2.75);
  EXPECT_EQ(a.acceptance_source, full.acceptance_source);
  EXPECT_EQ(a.draft_acceptance_rate, 0.3125);
  EXPECT_EQ(a.sglang_avg_spec_accept_length_after, 2.5);
  EXPECT_EQ(a.notes, full.notes);
  ASSERT_TRUE(back->runs[1].server_side);
  const auto& b = *back->runs[1].server_side;
  EXPECT_FALSE(b.metrics_ok);
  EXPECT_EQ(b.metrics_error, "/metrics answered HTTP 404");
  EXPECT_FALSE(b.server_info_ok);
  EXPECT_EQ(b.server_info_error, "/server_info: connection refused");
  EXPECT_FALSE(b.acceptance_length);
  EXPECT_FALSE(b.draft_acceptance_rate);
  EXPECT_FALSE(b.sglang_avg_spec_accept_length_after);
  EXPECT_EQ(to_json(*back), text);
  // A run without the section is written as null and read back as absent.
  r.runs[1].server_side.reset();
  const auto text2 = to_json(r);
  EXPECT_NE(text2.find("\"server_side\": null"), std::string::npos);
  auto back2 = cell_result_from_json(text2);
  ASSERT_TRUE(back2);
  EXPECT_FALSE(back2->runs[1].server_side);
}

// A result written by specbench before runs had a server-side section (a build stamped 646573c,
// the demo sweep): it must still load, so a resume keeps it instead of moving it aside as
// unreadable.
TEST(CellResultJson, AResultWithoutServerSideFiguresStillParses) {
  std::ifstream in(specbench::testing::source_dir() /
                   "tests/results/fixtures/cell_result_before_server_side.json");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_EQ(text.str().find("server_side"), std::string::npos) << "not an old result";
  auto r = cell_result_from_json(text.str());
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(r->schema_version, results_schema_version);
  EXPECT_EQ(r->cell_id, "tp1-ddtree-b16");
  EXPECT_TRUE(r->complete());
  ASSERT_EQ(r->runs.size(), 2u);
  for (const auto& run : r->runs) {
    EXPECT_FALSE(run.server_side);
    ASSERT_TRUE(run.acceptance_length);
  }
  EXPECT_EQ(r->requests.size(), 24u);
  ASSERT_TRUE(r->summary.acceptance_length);
  EXPECT_NEAR(*r->summary.acceptance_length, 3.4594594594594597, 1e-12);
  // Written again, absent sections become explicit nulls and read back the same.
  auto again = cell_result_from_json(to_json(*r));
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->runs[0].server_side);
}

TEST(CellResultJson, RejectsOtherSchemaVersionsAndGarbage) {
  auto r = sample_result("a");
  r.schema_version = results_schema_version + 1;
  EXPECT_FALSE(cell_result_from_json(to_json(r)));
  EXPECT_FALSE(cell_result_from_json("{\"schema_version\": 1"));
  EXPECT_FALSE(cell_result_from_json("[]"));
}

TEST(ResultStore, CommitLoadAndMoveAside) {
  const auto dir = specbench::testing::make_temp_dir("store");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store) << store.status().to_string();
  EXPECT_EQ(store->load("x").status().code(), StatusCode::not_found);
  ASSERT_TRUE(store->commit(sample_result("tp1-autoregressive")));
  ASSERT_TRUE(store->commit(sample_result("tp1-linear-k16")));
  { std::ofstream(store->log_path("tp1-linear-k16")) << "log\n"; }
  EXPECT_EQ(store->stored_ids(),
            (std::vector<std::string>{"tp1-autoregressive", "tp1-linear-k16"}));
  auto batch = stale_batch_name(dir, "config-changed");
  auto moved = store->move_aside("tp1-linear-k16", batch);
  ASSERT_TRUE(moved) << moved.status().to_string();
  EXPECT_TRUE(fs::exists(*moved));
  EXPECT_TRUE(fs::exists(dir / "stale" / batch / "logs" / "tp1-linear-k16.log"));
  EXPECT_EQ(store->stored_ids(), (std::vector<std::string>{"tp1-autoregressive"}));
  // A second batch in the same second gets a distinct name, still ending in "-<why>".
  fs::create_directories(dir / "stale" / batch);
  EXPECT_NE(stale_batch_name(dir, "config-changed"), batch);
  // Bad files are reported, not silently used.
  { std::ofstream(dir / "cells" / "broken.json") << "{not json"; }
  std::vector<std::string> problems;
  const auto all = store->load_all(&problems);
  EXPECT_EQ(all.size(), 1u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("broken.json"), std::string::npos);
}

// Kept attempts: several stale/*-retried/ batches, other hashes and occasions, a broken file
// and a folder where a result should be. The answer is the highest attempt with the cell's hash.
TEST(ResultStore, KeptAttemptsIndexGivesTheLatestAcrossSeveralRetriedBatches) {
  const auto dir = specbench::testing::make_temp_dir("store-kept");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store) << store.status().to_string();
  const std::string hash = "0123456789abcdef", old_hash = "fedcba9876543210";
  const auto keep = [&](const std::string& id, int attempt, const std::string& h,
                        const std::string& batch) {
    CellResult r = sample_result(id);
    r.attempt = attempt;
    r.config_hash = h;
    r.status = CellStatus::failed;
    r.failure = CellFailure{CellStage::measure, "server died", "", "", true, false};
    ASSERT_TRUE(store->commit(r));
    ASSERT_TRUE(store->move_aside(id, batch));
  };
  keep("a", 1, hash, "20260101T000000Z-retried");
  keep("b", 1, hash, "20260101T000000Z-retried");
  keep("a", 2, hash, "20260102T000000Z-retried");
  keep("c", 3, old_hash, "20260102T000000Z-retried");
  keep("a", 4, old_hash, "20260103T000000Z-retried"); // later, but of a config since changed
  keep("a", 3, hash, "20260104T000000Z-retried");
  keep("b", 5, hash, "20260104T000000Z-config-changed"); // moved aside, not kept for a retry
  fs::create_directories(dir / "stale" / "20260105T000000Z-retried" / "cells" / "d.json");
  { std::ofstream(dir / "stale" / "20260105T000000Z-retried" / "cells" / "e.json") << "{broken"; }
  { std::ofstream(dir / "stale" / "retried") << "not a batch"; }

  struct Expect {
    std::string id, hash;
    int attempt; // 0: none
    std::string batch;
  };
  const std::vector<Expect> expected = {{"a", hash, 3, "20260104T000000Z-retried"},
                                        {"a", old_hash, 4, "20260103T000000Z-retried"},
                                        {"b", hash, 1, "20260101T000000Z-retried"},
                                        {"c", old_hash, 3, "20260102T000000Z-retried"},
                                        {"c", hash, 0, ""},
                                        {"d", hash, 0, ""},
                                        {"e", hash, 0, ""},
                                        {"never-run", hash, 0, ""}};
  // The runner takes the index once and looks every cell up in it: the same answers as asking
  // for one cell at a time (these were checked against the per-cell scan before the index).
  const auto index = store->index_kept_attempts("retried");
  for (const auto& e : expected) {
    SCOPED_TRACE(e.id + " " + e.hash);
    for (const auto& found :
         {store->latest_kept_attempt(e.id, e.hash, "retried"), index.latest(e.id, e.hash)}) {
      ASSERT_EQ(found.has_value(), e.attempt > 0);
      if (!found)
        continue;
      EXPECT_EQ(found->result.attempt, e.attempt);
      EXPECT_EQ(found->result.cell_id, e.id);
      EXPECT_EQ(found->path, dir / "stale" / e.batch / "cells" / (e.id + ".json"));
    }
  }
  // Another occasion's batches are another index.
  const auto moved = store->index_kept_attempts("config-changed").latest("b", hash);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->result.attempt, 5);
  EXPECT_FALSE(store->index_kept_attempts("config-changed").latest("a", hash));
  // No stale/ at all: nothing kept.
  const auto empty_dir = specbench::testing::make_temp_dir("store-kept-none");
  auto empty = ResultStore::open(empty_dir);
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->index_kept_attempts("retried").latest("a", hash));
}

// Two retried batches named in the same second (two quick runs): the second name gets a counter,
// and its kept attempt must still be found, or the next run numbers the cell's attempts from 1
// again beside the kept ones.
TEST(ResultStore, ASecondRetriedBatchOfTheSameSecondIsStillIndexed) {
  const auto dir = specbench::testing::make_temp_dir("store-kept-same-second");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store) << store.status().to_string();
  // Take names until one collides with the batch before it (the clock may tick between two).
  std::string first, second;
  for (int i = 0; i < 5 && second.empty(); ++i) {
    first = stale_batch_name(dir, "retried");
    fs::create_directories(dir / "stale" / first);
    const std::string next = stale_batch_name(dir, "retried");
    if (next.substr(0, 16) == first.substr(0, 16)) // the same stamp, YYYYMMDDTHHMMSSZ
      second = next;
  }
  ASSERT_FALSE(second.empty()) << "no two names in the same second";
  ASSERT_NE(second, first);
  EXPECT_TRUE(second.ends_with("-retried")) << second;
  CellResult r = sample_result("tp1-linear-k16");
  r.attempt = 2;
  r.config_hash = "0123456789abcdef";
  r.status = CellStatus::failed;
  r.failure = CellFailure{CellStage::measure, "server died", "", "", true, false};
  ASSERT_TRUE(store->commit(r));
  ASSERT_TRUE(store->move_aside("tp1-linear-k16", second));
  const auto kept = store->index_kept_attempts("retried").latest("tp1-linear-k16", r.config_hash);
  ASSERT_TRUE(kept) << "nothing found in stale/" << second;
  EXPECT_EQ(kept->result.attempt, 2);
  EXPECT_EQ(kept->path, dir / "stale" / second / "cells" / "tp1-linear-k16.json");
}

TEST(ResultStore, OpenRemovesTempFilesOfAKilledWriter) {
  const auto dir = specbench::testing::make_temp_dir("store-tmp");
  fs::create_directories(dir / "cells");
  { std::ofstream(dir / "cells" / "a.json.tmp.12345") << "{partial"; }
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  EXPECT_FALSE(fs::exists(dir / "cells" / "a.json.tmp.12345"));
  EXPECT_TRUE(store->stored_ids().empty());
}

TEST(ResultStore, OnlyItsOwnTempFilesAreRemoved) {
  const auto dir = specbench::testing::make_temp_dir("store-tmp-names");
  fs::create_directories(dir / "cells");
  fs::create_directories(dir / "report");
  // A writer that is gone (a child that exited and was reaped) and one that still runs.
  const pid_t gone = ::fork();
  if (gone == 0)
    ::_exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  const std::string dead = std::to_string(gone), live = std::to_string(::getppid());
  // Left by killed writers: removed, in the report folder too.
  const std::vector<fs::path> ours = {dir / ("manifest.json.tmp." + dead),
                                      dir / "report" / ("report.csv.tmp." + dead),
                                      dir / "report" / ("speedup.svg.tmp." + dead),
                                      // under the run's lock no live writer owns cells/ files
                                      dir / "cells" / ("z.json.tmp." + live)};
  // Not ours: a cell of workload "chat.tmp.v2", a user's file in a --results folder; and a live
  // writer's temp file (a report being written while a run opens the directory).
  const std::vector<fs::path> theirs = {dir / "cells" / "tp1-autoregressive-chat.tmp.v2.json",
                                        dir / "paper.tmp.v3.tex", dir / "notes.tmp.1",
                                        dir / "cells" / "x.json.tmp.12a",
                                        dir / "report" / ("report.md.tmp." + live)};
  for (const auto& p : ours)
    std::ofstream(p) << "partial";
  for (const auto& p : theirs)
    std::ofstream(p) << "keep";
  ASSERT_TRUE(ResultStore::open(dir));
  for (const auto& p : ours)
    EXPECT_FALSE(fs::exists(p)) << p;
  for (const auto& p : theirs)
    EXPECT_TRUE(fs::exists(p)) << p;
  // The cell of workload "chat.tmp.v2" is a stored result, not a temp file.
  EXPECT_EQ(ResultStore::open(dir)->stored_ids(),
            std::vector<std::string>{"tp1-autoregressive-chat.tmp.v2"});
}

TEST(ResultStore, ManifestRoundTrip) {
  const auto dir = specbench::testing::make_temp_dir("manifest");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  Manifest m;
  m.sweep_name = "demo";
  m.sweep_hash = "feed";
  m.state = "running";
  ManifestPhase p;
  p.id = "tp4";
  p.tp = 4;
  p.gpus = {0, 1, 2, 3};
  p.preflight = "failed";
  p.preflight_json = R"({"verdict":"fail"})";
  p.cells.push_back({"tp4-autoregressive", "h1", "autoregressive", "default", "blocked",
                     "cells/tp4-autoregressive.json"});
  m.phases.push_back(p);
  ASSERT_TRUE(store->write_manifest(m));
  auto back = store->load_manifest();
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->sweep_name, "demo");
  ASSERT_EQ(back->phases.size(), 1u);
  EXPECT_EQ(back->phases[0].gpus.size(), 4u);
  EXPECT_EQ(back->phases[0].cells[0].status, "blocked");
  EXPECT_EQ(back->phases[0].preflight_json, R"({"verdict":"fail"})");
}

// A writer rewriting one result over and over is SIGKILLed at random moments: the file on disk
// is always a complete, parseable result (the old one or the new one), never a part.
TEST(ResultStore, SigkillDuringWritesNeverCorruptsAFinishedResult) {
  const auto dir = specbench::testing::make_temp_dir("store-kill");
  {
    auto store = ResultStore::open(dir);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->commit(sample_result("cell", 2)));
  }
  std::mt19937 rng(42);
  for (int round = 0; round < 8; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = ResultStore::open(dir);
      for (int i = 0;; ++i)
        (void)store->commit(sample_result("cell", 200 + (i % 50)));
    }
    ::usleep(std::uniform_int_distribution<int>(2000, 40000)(rng));
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st));
    auto store = ResultStore::open(dir);
    ASSERT_TRUE(store);
    auto r = store->load("cell");
    ASSERT_TRUE(r) << "round " << round << ": " << r.status().to_string();
    EXPECT_EQ(r->requests.size(), static_cast<size_t>(r->workload.requests));
    // The temp file the killed writer left is gone after open().
    for (const auto& e : fs::directory_iterator(dir / "cells"))
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos);
  }
}
