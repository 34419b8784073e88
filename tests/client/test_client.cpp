// The measuring client against the in-process simulated server: what it measures must equal what
// the server computed, no request may be lost or counted twice, and every API shape is read.
#include "sim_fixture.hpp"
#include "specbench/client.hpp"
#include "specbench/server_metrics.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <fstream>
#include <numeric>
#include <set>

using namespace specbench;
using specbench::testing::fast_sim;
using specbench::testing::LocalSim;

namespace {

Workload small_workload(int prompt_tokens, int max_new, int requests, int concurrency) {
  Workload w;
  w.name = "t";
  w.prompt_tokens = prompt_tokens;
  w.max_new_tokens = max_new;
  w.requests = requests;
  w.concurrency = concurrency;
  w.warmup = 0;
  w.runs = 1;
  w.temperature = 0;
  w.seed = 11;
  return w;
}

ClientOptions opts_for(const std::string& url, ApiKind api = ApiKind::generate,
                       bool stream = true) {
  ClientOptions o;
  o.base_url = url;
  o.api = api;
  o.backend = api == ApiKind::generate ? Backend::sglang : Backend::openai;
  o.model = "synthetic/sim-model";
  o.stream = stream;
  o.connect_timeout_s = 2;
  o.first_byte_timeout_s = 10;
  o.request_timeout_s = 20;
  return o;
}

} // namespace

TEST(Client, MeasuredAcceptanceEqualsWhatTheServerComputed) {
  auto so = fast_sim(MethodKind::tree, 16, 16);
  LocalSim sim(so);
  const Workload w = small_workload(24, 40, 8, 4);
  auto prompts = make_prompts(w, w.requests);
  ASSERT_TRUE(prompts.has_value());
  ScrapeOptions sc;
  sc.base_url = sim.url;
  const ServerSnapshot before = scrape_server(sc);
  ASSERT_TRUE(before.metrics_ok) << before.metrics_error;
  ASSERT_TRUE(before.server_info_ok) << before.server_info_error;
  EXPECT_TRUE(before.synthetic_model);

  Client client(opts_for(sim.url));
  int progress_calls = 0;
  auto run = client.run(make_requests(w, *prompts, w.requests), w.concurrency,
                        [&](const ClientProgress& p) {
                          ++progress_calls;
                          EXPECT_LE(p.done, p.total);
                        });
  ASSERT_TRUE(run.has_value()) << run.status().to_string();
  ASSERT_EQ(run->records.size(), 8u);
  EXPECT_EQ(run->ok_count, 8);
  EXPECT_GE(progress_calls, 1);
  const SyntheticModel model(so.model);
  for (const auto& r : run->records) {
    ASSERT_TRUE(r.ok) << to_string(r.error) << ": " << r.error_message;
    const auto& ids = (*prompts)[static_cast<size_t>(r.index)].input_ids;
    const SimGeneration g = simulate_generation(model, so.decode, ids, 40);
    EXPECT_EQ(r.output_tokens, 40);
    EXPECT_EQ(r.prompt_tokens, 24);
    EXPECT_EQ(r.verify_steps(), g.verify_steps);
    EXPECT_EQ(r.spec.correct_drafts.value_or(-1), g.correct_drafts);
    EXPECT_EQ(r.spec.proposed_drafts.value_or(-1), g.proposed_drafts);
    EXPECT_EQ(r.spec.accept_histogram, g.histogram);
    EXPECT_DOUBLE_EQ(r.acceptance_length(), 40.0 / static_cast<double>(g.verify_steps));
    EXPECT_DOUBLE_EQ(r.spec.accept_length.value_or(-1), r.acceptance_length());
    // Streaming: one chunk per forward pass, carrying that pass's committed tokens.
    EXPECT_EQ(std::accumulate(r.chunk_tokens.begin(), r.chunk_tokens.end(), 0), 40);
    ASSERT_EQ(r.chunk_tokens.size(), static_cast<size_t>(g.verify_steps + 1));
    EXPECT_EQ(r.chunk_tokens.front(), 1); // prefill token
    for (size_t i = 1; i < r.chunk_tokens.size(); ++i)
      EXPECT_EQ(r.chunk_tokens[i], g.accept_lengths[i - 1]);
    EXPECT_EQ(r.itls_s.size(), r.chunk_tokens.size() - 1);
    EXPECT_GT(r.ttft_s, 0);
    EXPECT_GE(r.e2e_s, r.ttft_s);
    EXPECT_EQ(r.finish_reason, "length");
  }
  const AcceptanceSummary acc = summarize_acceptance(run->records);
  EXPECT_EQ(acc.requests, 8);
  EXPECT_EQ(acc.output_tokens, 320);

  const ServerSnapshot after = scrape_server(sc);
  ASSERT_EQ(after.avg_spec_accept_length.size(), 1u);
  ASSERT_TRUE(after.avg_spec_accept_length[0].has_value());
  // The server folds its counters every step here (decode_log_interval 1): its average of
  // committed tokens per verify equals the client's prefill-corrected acceptance length.
  EXPECT_NEAR(*after.avg_spec_accept_length[0], acc.acceptance_length_unbiased, 1e-9);
  const ServerDelta d = diff_snapshots(before, after);
  EXPECT_NEAR(d.acceptance_length, acc.acceptance_length_unbiased, 1e-9);
  EXPECT_NE(d.acceptance_source.find("sim-server"), std::string::npos);
  EXPECT_GT(d.draft_acceptance_rate, 0);
  EXPECT_DOUBLE_EQ(
      d.counter_deltas.at("sglang:generation_tokens_total{model_name=\"synthetic/sim-model\"}"),
      320);
}

// The hooks bracket each measured run and never the warm-up: when before_run(r) is called the
// server has finished exactly the warm-up and the earlier runs, and nothing of run r yet.
TEST(Client, RunHooksBracketEachMeasuredRunButNotTheWarmup) {
  LocalSim sim(fast_sim(MethodKind::linear, 8));
  Workload w = small_workload(8, 6, 3, 2);
  w.warmup = 2;
  w.runs = 2;
  auto prompts = make_prompts(w, w.warmup + w.runs * w.requests);
  ASSERT_TRUE(prompts.has_value());
  std::vector<std::string> calls;
  RunHooks hooks;
  hooks.before_run = [&](int r) {
    calls.push_back("before " + std::to_string(r));
    EXPECT_EQ(sim.server->stats().finished_requests, w.warmup + r * w.requests);
  };
  hooks.after_run = [&](const RunResult& run) {
    calls.push_back("after " + std::to_string(run.run));
    EXPECT_EQ(run.ok_count, w.requests);
    EXPECT_EQ(sim.server->stats().finished_requests, w.warmup + (run.run + 1) * w.requests);
  };
  Client client(opts_for(sim.url));
  auto res = client.run_workload(w, *prompts, {}, hooks);
  ASSERT_TRUE(res.has_value()) << res.status().to_string();
  EXPECT_EQ(res->warmup.records.size(), 2u);
  EXPECT_EQ(calls, (std::vector<std::string>{"before 0", "after 0", "before 1", "after 1"}));
}

TEST(Client, NonStreamingGenerateAndOpenAIShapes) {
  LocalSim sim(fast_sim(MethodKind::linear, 8));
  const Workload w = small_workload(12, 20, 3, 3);
  auto prompts = make_prompts(w, 3);
  ASSERT_TRUE(prompts.has_value());
  {
    Client c(opts_for(sim.url, ApiKind::generate, false));
    auto run = c.run(make_requests(w, *prompts, 3), 3);
    ASSERT_TRUE(run.has_value());
    for (const auto& r : run->records) {
      ASSERT_TRUE(r.ok) << r.error_message;
      EXPECT_EQ(r.output_tokens, 20);
      EXPECT_LT(r.ttft_s, 0); // not measurable without streaming
      EXPECT_GT(r.e2e_s, 0);
      EXPECT_GT(r.verify_steps(), 0);
    }
  }
  for (ApiKind api : {ApiKind::completions, ApiKind::chat}) {
    for (bool stream : {true, false}) {
      Client c(opts_for(sim.url, api, stream));
      auto run = c.run(make_requests(w, *prompts, 3), 2);
      ASSERT_TRUE(run.has_value());
      for (const auto& r : run->records) {
        ASSERT_TRUE(r.ok) << to_string(api) << " stream=" << stream << ": " << r.error_message;
        EXPECT_EQ(r.output_tokens, 20); // usage.completion_tokens
        if (api == ApiKind::completions)
          EXPECT_EQ(r.prompt_tokens, 12); // ids sent as a token array
        else
          EXPECT_GE(r.prompt_tokens, 12); // ids written as words, plus the role
        EXPECT_EQ(r.finish_reason, "length");
        EXPECT_TRUE(r.spec.draft_n.has_value()); // llama.cpp-style timings
        EXPECT_GE(r.spec.draft_n.value_or(0), r.spec.draft_n_accepted.value_or(-1));
        EXPECT_FALSE(r.spec.verify_steps.has_value()); // OpenAI APIs carry no verify count
        if (stream) {
          EXPECT_GT(r.ttft_s, 0);
          EXPECT_FALSE(r.itls_s.empty());
        }
      }
    }
  }
}

TEST(Client, ConcurrencyLosesNothingAndCountsNothingTwice) {
  LocalSim sim(fast_sim(MethodKind::tree, 8, 12));
  const Workload w = small_workload(8, 6, 150, 32);
  auto prompts = make_prompts(w, 150);
  ASSERT_TRUE(prompts.has_value());
  Client c(opts_for(sim.url));
  int max_in_flight = 0;
  c.set_progress_interval(0);
  auto run = c.run(make_requests(w, *prompts, 150), 32, [&](const ClientProgress& p) {
    max_in_flight = std::max(max_in_flight, p.in_flight);
  });
  ASSERT_TRUE(run.has_value());
  ASSERT_EQ(run->records.size(), 150u);
  std::set<int> seen;
  int64_t tokens = 0;
  for (size_t i = 0; i < run->records.size(); ++i) {
    const auto& r = run->records[i];
    EXPECT_EQ(r.index, static_cast<int>(i));
    EXPECT_TRUE(seen.insert(r.index).second);
    EXPECT_TRUE(r.ok) << r.error_message;
    tokens += r.output_tokens;
  }
  EXPECT_EQ(run->ok_count, 150);
  EXPECT_LE(max_in_flight, 32);
  EXPECT_GT(max_in_flight, 1);
  const SimServerStats st = sim.server->stats();
  EXPECT_EQ(st.generation_requests, 150);
  EXPECT_EQ(st.finished_requests, 150);
  EXPECT_EQ(st.output_tokens, tokens);
  EXPECT_EQ(tokens, 150 * 6);
}

TEST(Client, ContextOverflowIsRecognised) {
  auto so = fast_sim();
  so.context_length = 64;
  LocalSim sim(so);
  Client c(opts_for(sim.url));
  RequestSpec r;
  r.prompt.input_ids.assign(60, 5);
  r.max_new_tokens = 10;
  RequestRecord rec = c.send(r);
  EXPECT_FALSE(rec.ok);
  EXPECT_EQ(rec.http_status, 400);
  EXPECT_TRUE(rec.context_overflow);
  EXPECT_EQ(rec.error, ErrorKind::context_overflow);
  EXPECT_NE(rec.body_excerpt.find("maximum context length"), std::string::npos);
  r.prompt.input_ids.assign(70, 5);
  rec = c.send(r);
  EXPECT_TRUE(rec.context_overflow);
  EXPECT_NE(rec.error_message.find("longer than the model's context length"), std::string::npos);
  r.prompt.input_ids.assign(10, 5);
  EXPECT_TRUE(c.send(r).ok);
}

TEST(Client, OverflowWordingsOfOtherServers) {
  EXPECT_TRUE(is_context_overflow_message(
      400,
      R"({"message":"This model's maximum context length is 4096 tokens. However, you requested 4122 tokens"})"));
  EXPECT_TRUE(is_context_overflow_message(
      400,
      R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}})"));
  EXPECT_FALSE(is_context_overflow_message(400, R"({"error":"temperature must be >= 0"})"));
  EXPECT_FALSE(is_context_overflow_message(500, "maximum context length"));
}

TEST(Prompts, SyntheticPromptsHaveExactLengthsAndAreDeterministic) {
  Workload w = small_workload(37, 8, 4, 1);
  auto a = make_prompts(w, 5), b = make_prompts(w, 5);
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(a->size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ((*a)[i].input_ids.size(), 37u);
    EXPECT_EQ((*a)[i].tokens, 37);
    EXPECT_EQ((*a)[i].input_ids, (*b)[i].input_ids);
    for (int32_t id : (*a)[i].input_ids)
      EXPECT_TRUE(id >= 1000 && id <= 30000);
  }
  EXPECT_NE((*a)[0].input_ids, (*a)[1].input_ids);
  w.seed = 12;
  EXPECT_NE(make_prompts(w, 1)->front().input_ids, (*a)[0].input_ids);
  const auto reqs = make_requests(w, *a, 7, 3);
  ASSERT_EQ(reqs.size(), 7u);
  EXPECT_EQ(reqs[0].prompt.input_ids, (*a)[3].input_ids);
  EXPECT_EQ(reqs[2].prompt.input_ids, (*a)[0].input_ids); // cycles
  EXPECT_EQ(reqs[1].seed, w.seed + 4);
}

TEST(Prompts, DatasetJsonl) {
  const auto dir = specbench::testing::make_temp_dir("prompts");
  {
    std::ofstream f(dir / "ok.jsonl");
    f << R"({"prompt": "hello there"})"
      << "\n\n"
      << R"({"text": "t", "input_ids": [1, 2, 3]})"
      << "\n"
      << R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]})"
      << "\n";
  }
  auto p = load_prompt_dataset(dir / "ok.jsonl");
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].text, "hello there");
  EXPECT_EQ((*p)[1].input_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ((*p)[1].tokens, 3);
  ASSERT_EQ((*p)[2].messages.size(), 2u);
  EXPECT_EQ((*p)[2].messages[0].role, "system");
  {
    std::ofstream f(dir / "bad.jsonl");
    f << R"({"prompt": "fine"})"
      << "\n"
      << R"({"input_ids": [1, "x"]})"
      << "\n";
  }
  // The run reads the dataset again: a file replaced by a device or FIFO since the plan is refused,
  // not read for ever.
  auto device = load_prompt_dataset("/dev/zero");
  ASSERT_FALSE(device);
  EXPECT_NE(device.status().message().find("/dev/zero is not a regular file (a device)"),
            std::string::npos)
      << device.status().message();
  EXPECT_NE(load_prompt_dataset(dir).status().message().find("is a folder"), std::string::npos);
  auto bad = load_prompt_dataset(dir / "bad.jsonl");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("bad.jsonl:2"), std::string::npos);
  EXPECT_FALSE(load_prompt_dataset(dir / "missing.jsonl").has_value());
  // Token ids and counts out of range are refused with the value, not cut to other numbers.
  for (const char* line : {R"({"input_ids": [1, 4294967297]})", R"({"input_ids": [-1]})",
                           R"({"text": "t", "prompt_tokens": 1e3})",
                           R"({"text": "t", "prompt_tokens": 8589934592})"}) {
    {
      std::ofstream f(dir / "range.jsonl");
      f << line << "\n";
    }
    auto r = load_prompt_dataset(dir / "range.jsonl");
    ASSERT_FALSE(r.has_value()) << line;
    EXPECT_NE(r.status().message().find("range.jsonl:1"), std::string::npos) << line;
    EXPECT_NE(r.status().message().find("2^31 - 1 (got "), std::string::npos)
        << r.status().message();
  }
  Workload w = small_workload(0, 8, 4, 1);
  w.dataset = dir / "ok.jsonl";
  auto cyc = make_prompts(w, 5);
  ASSERT_TRUE(cyc.has_value());
  EXPECT_EQ((*cyc)[3].text, "hello there");
}

TEST(Metrics, PrometheusParsing) {
  const auto s = parse_prometheus_text(
      "# HELP x y\n# TYPE vllm:spec_decode_num_drafts counter\n"
      "vllm:spec_decode_num_drafts_total{model_name=\"m\",engine=\"0\"} 10\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 7 1700000000000\n"
      "weird{label=\"a \\\"quoted\\\" b\"} +Inf\n"
      "no_labels 3.5e2\n"
      "broken{label=\"x} 1\n"
      "garbage line\n");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].name, "vllm:spec_decode_num_drafts_total");
  EXPECT_EQ(s[0].labels.at("engine"), "0");
  EXPECT_EQ(s[0].key(), "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"}");
  EXPECT_DOUBLE_EQ(s[1].value, 7);
  EXPECT_EQ(s[2].labels.at("label"), "a \"quoted\" b");
  EXPECT_TRUE(std::isinf(s[2].value));
  EXPECT_DOUBLE_EQ(s[3].value, 350);
}

TEST(Metrics, VllmCounterDeltasGiveAcceptanceLength) {
  ServerSnapshot a, b;
  a.taken_at_s = 1;
  b.taken_at_s = 3;
  a.metrics_ok = b.metrics_ok = true;
  a.samples = parse_prometheus_text("vllm:spec_decode_num_drafts_total 100\n"
                                    "vllm:spec_decode_num_draft_tokens_total 1500\n"
                                    "vllm:spec_decode_num_accepted_tokens_total 300\n");
  b.samples = parse_prometheus_text("vllm:spec_decode_num_drafts_total 140\n"
                                    "vllm:spec_decode_num_draft_tokens_total 2100\n"
                                    "vllm:spec_decode_num_accepted_tokens_total 400\n");
  const auto d = diff_snapshots(a, b);
  EXPECT_DOUBLE_EQ(d.interval_s, 2);
  EXPECT_DOUBLE_EQ(d.acceptance_length, 1.0 + 100.0 / 40.0);
  EXPECT_DOUBLE_EQ(d.draft_acceptance_rate, 100.0 / 600.0);
  EXPECT_NE(d.acceptance_source.find("vLLM"), std::string::npos);
  EXPECT_TRUE(d.acceptance_absent_reason.empty()) << d.acceptance_absent_reason;
  // A counter that went down (restart) is skipped with a note, not turned into a negative delta.
  b.samples = parse_prometheus_text("vllm:spec_decode_num_drafts_total 5\n");
  const auto r = diff_snapshots(a, b);
  EXPECT_LT(r.acceptance_length, 0);
  EXPECT_FALSE(r.notes.empty());
  EXPECT_EQ(r.acceptance_absent_reason,
            "counter vllm:spec_decode_num_drafts_total went down (server restarted?); skipped");
  // Another counter that went down is no reason: the figure is absent for want of counters.
  b.samples = parse_prometheus_text("http_requests_total 1\n");
  a.samples = parse_prometheus_text("http_requests_total 9\n");
  EXPECT_EQ(diff_snapshots(a, b).acceptance_absent_reason, "no speculative counters in /metrics");
  a.samples = parse_prometheus_text("vllm:spec_decode_num_drafts_total 100\n"
                                    "vllm:spec_decode_num_accepted_tokens_total 300\n");
  // A counter that is NaN or Inf on either side is named and skipped, not a NaN ratio.
  for (const char* bad : {"NaN", "+Inf"}) {
    b.samples = parse_prometheus_text(std::string("vllm:spec_decode_num_drafts_total ") + bad +
                                      "\nvllm:spec_decode_num_accepted_tokens_total 400\n");
    const auto n = diff_snapshots(a, b);
    EXPECT_LT(n.acceptance_length, 0) << bad;
    ASSERT_FALSE(n.notes.empty()) << bad;
    EXPECT_NE(n.notes[0].find("vllm:spec_decode_num_drafts_total is not a finite number"),
              std::string::npos)
        << n.notes[0];
    EXPECT_EQ(n.acceptance_absent_reason, n.notes[0]) << bad;
  }
}

// A "before" scrape that failed must not turn the server's lifetime totals into the interval's.
TEST(Metrics, NoCounterDeltasWithoutABeforeScrape) {
  ServerSnapshot a, b;
  a.metrics_error = "/metrics: connection timed out";
  b.metrics_ok = true;
  b.samples = parse_prometheus_text("vllm:spec_decode_num_drafts_total 140\n"
                                    "vllm:spec_decode_num_draft_tokens_total 2100\n"
                                    "vllm:spec_decode_num_accepted_tokens_total 400\n"
                                    "vllm:num_requests_running 3\n");
  const auto d = diff_snapshots(a, b);
  EXPECT_TRUE(d.counter_deltas.empty());
  EXPECT_LT(d.acceptance_length, 0);
  EXPECT_LT(d.draft_acceptance_rate, 0);
  EXPECT_DOUBLE_EQ(d.gauges_after.at("vllm:num_requests_running"), 3);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes.front().find("connection timed out"), std::string::npos) << d.notes.front();
  EXPECT_EQ(d.acceptance_absent_reason, "no metrics before the run (/metrics: connection timed "
                                        "out); counters not differenced");
}

// SGLang's avg_spec_accept_length gets the counters' bound, 1 to what a step commits. A negative
// value was taken for "absent" (the old -1 marker) and dropped without a word; now it is left
// out, saying so, like any other impossible value.
TEST(Metrics, AnImpossibleSglangAverageIsLeftOutWithTheReason) {
  ServerSnapshot a, b;
  a.server_info_ok = b.server_info_ok = true;
  for (const auto& [avg, text] :
       std::vector<std::pair<double, std::string>>{{-1.0, "-1"}, {0.5, "0.5"}, {6.0, "6"}}) {
    b.avg_spec_accept_length = {avg};
    const auto f = server_side_figures(a, b, 5);
    EXPECT_FALSE(f.sglang_avg_spec_accept_length_after) << avg;
    EXPECT_EQ(f.sglang_avg_left_out, "SGLang's avg_spec_accept_length is " + text +
                                         ", outside 1..5, what a step of this method commits: "
                                         "left out");
    EXPECT_NE(std::find(f.notes.begin(), f.notes.end(), f.sglang_avg_left_out), f.notes.end());
  }
  b.avg_spec_accept_length = {3.5};
  const auto kept = server_side_figures(a, b, 5);
  EXPECT_EQ(kept.sglang_avg_spec_accept_length_after, 3.5);
  EXPECT_TRUE(kept.sglang_avg_left_out.empty());
  b.avg_spec_accept_length = {std::nullopt}; // no average given: nothing to say
  const auto none = server_side_figures(a, b, 5);
  EXPECT_FALSE(none.sglang_avg_spec_accept_length_after);
  EXPECT_TRUE(none.sglang_avg_left_out.empty());
}

TEST(Metrics, ScrapeWithoutEndpointsIsNotAnError) {
  ScrapeOptions sc;
  sc.base_url = "http://127.0.0.1:1"; // nothing listens on port 1
  sc.timeout_s = 1;
  const auto s = scrape_server(sc);
  EXPECT_FALSE(s.metrics_ok);
  EXPECT_FALSE(s.server_info_ok);
  EXPECT_FALSE(s.metrics_error.empty());
}
