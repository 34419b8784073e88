// The client against a misbehaving server: every fault ends as a recorded error with a bounded
// wait, never a crash, a hang or a lost record.
#include "core/seconds_since.hpp"
#include "sim_fixture.hpp"
#include "specbench/client.hpp"
#include "specbench/detail/utf8.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace specbench;
using specbench::testing::fast_sim;
using specbench::testing::LocalSim;

namespace {

SimServerOptions with_fault(SimFault f, int after = 0) {
  auto o = fast_sim(MethodKind::linear, 8);
  o.fault = {f, after};
  return o;
}

ClientOptions quick(const std::string& url, bool stream = true) {
  ClientOptions o;
  o.base_url = url;
  o.stream = stream;
  o.connect_timeout_s = 1;
  o.first_byte_timeout_s = 0.5;
  o.request_timeout_s = 1.5;
  return o;
}

std::vector<RequestSpec> requests(int n, int max_new = 12) {
  std::vector<RequestSpec> v(static_cast<size_t>(n));
  for (auto& r : v) {
    r.prompt.input_ids = {1, 2, 3, 4, 5};
    r.max_new_tokens = max_new;
  }
  return v;
}

} // namespace

TEST(ClientFaults, MalformedJsonAndSseAreRecorded) {
  LocalSim sim(with_fault(SimFault::malformed_json));
  for (bool stream : {true, false}) {
    Client c(quick(sim.url, stream));
    auto run = c.run(requests(4), 2);
    ASSERT_TRUE(run.has_value());
    ASSERT_EQ(run->records.size(), 4u);
    for (const auto& r : run->records) {
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.error, ErrorKind::malformed) << to_string(r.error) << " " << r.error_message;
      EXPECT_EQ(r.http_status, 200);
      EXPECT_FALSE(r.body_excerpt.empty());
    }
  }
}

// A body that is not UTF-8 text (and longer than the excerpt, which then cuts a character): the
// record's texts are repaired to UTF-8, since the results that carry them are JSON.
TEST(ClientFaults, ABodyThatIsNotUtf8IsRecordedAsUtf8) {
  LocalSim sim(with_fault(SimFault::garbage_body));
  for (bool stream : {true, false}) {
    Client c(quick(sim.url, stream));
    auto run = c.run(requests(3), 2);
    ASSERT_TRUE(run.has_value());
    ASSERT_EQ(run->records.size(), 3u);
    for (const auto& r : run->records) {
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.error, ErrorKind::http_status) << to_string(r.error) << " " << r.error_message;
      EXPECT_EQ(r.http_status, 500);
      EXPECT_NE(r.error_message.find("HTTP 500: \xE5\x86\x85"), std::string::npos)
          << r.error_message;
      EXPECT_NE(r.error_message.find("\xEF\xBF\xBD"), std::string::npos) << r.error_message;
      EXPECT_EQ(detail::first_invalid_utf8(r.error_message), std::string_view::npos);
      EXPECT_FALSE(r.body_excerpt.empty());
      EXPECT_EQ(detail::first_invalid_utf8(r.body_excerpt), std::string_view::npos);
    }
  }
}

// A server whose answers are well formed but whose counts lie: more tokens than were asked for
// (which would pass as throughput), a fraction, a number no integer holds (converting it was
// undefined behaviour), a negative count, speculative figures that contradict each other (which
// would pass as acceptance). Each request fails as malformed, naming the lie. (-1, the "not known"
// of llama.cpp's timings, is no lie: it counts as not reported.)
TEST(ClientFaults, CountsThatLieFailTheRequest) {
  for (ApiKind api : {ApiKind::generate, ApiKind::completions}) {
    const char* expected[] = {
        "12001 output tokens for a request of at most 12",
        "completion_tokens = 12.5, which is not a count",
        "prompt_tokens = 1e+300, which is not a count",
        "prompt_tokens = -7, which is not a count",
        nullptr, // the honest request
        api == ApiKind::generate
            ? "13 verify steps (spec_verify_ct) for 12 output tokens, but every verify step"
            : "accepted drafts of"};
    for (bool stream : {true, false}) {
      SCOPED_TRACE(std::string(api == ApiKind::generate ? "generate" : "completions") +
                   (stream ? " stream" : ""));
      LocalSim sim(with_fault(SimFault::lying_counts));
      auto o = quick(sim.url, stream);
      o.api = api;
      o.backend = api == ApiKind::generate ? Backend::sglang : Backend::openai;
      o.model = "synthetic/sim-model";
      Client c(o);
      auto run = c.run(requests(6), 1); // one at a time: request n tells lie n % 6
      ASSERT_TRUE(run.has_value());
      ASSERT_EQ(run->records.size(), 6u);
      const auto& honest = run->records[4];
      EXPECT_TRUE(honest.ok) << honest.error_message;
      // Unknown, or the true count from an earlier event or llama.cpp-style timings.
      EXPECT_TRUE(honest.prompt_tokens == -1 || honest.prompt_tokens == 5) << honest.prompt_tokens;
      EXPECT_EQ(honest.output_tokens, 12);
      // The honest request's speculative figures are the ones the lie contradicts.
      if (api == ApiKind::generate) {
        ASSERT_TRUE(honest.spec.verify_steps.has_value());
        EXPECT_GE(*honest.spec.verify_steps, 1);
        EXPECT_LE(*honest.spec.verify_steps, 12);
      } else {
        ASSERT_TRUE(honest.spec.draft_n.has_value() && honest.spec.draft_n_accepted.has_value());
        EXPECT_LE(*honest.spec.draft_n_accepted, *honest.spec.draft_n);
      }
      for (size_t i = 0; i < 6; ++i) {
        if (i == 4)
          continue;
        const auto& r = run->records[i];
        EXPECT_FALSE(r.ok) << i;
        EXPECT_EQ(r.error, ErrorKind::malformed) << i << ": " << r.error_message;
        EXPECT_NE(r.error_message.find(expected[i]), std::string::npos)
            << i << ": " << r.error_message;
      }
    }
  }
}

// A server that truncates prompts answers well formed and fast, for a prompt that was not the one
// asked for: the count it reports for the token ids sent gives it away.
TEST(ClientFaults, APromptTheServerTruncatedFailsTheRequest) {
  for (ApiKind api : {ApiKind::generate, ApiKind::completions, ApiKind::chat}) {
    SCOPED_TRACE(to_string(api));
    LocalSim sim(with_fault(SimFault::truncate_prompts));
    auto o = quick(sim.url);
    o.api = api;
    o.backend = api == ApiKind::generate ? Backend::sglang : Backend::openai;
    o.model = "synthetic/sim-model";
    Client c(o);
    auto reqs = requests(2);
    for (auto& r : reqs)
      r.prompt.input_ids = {11, 12, 13, 14, 15, 16, 17, 18}; // the server keeps 4 of 8
    auto run = c.run(reqs, 1);
    ASSERT_TRUE(run.has_value());
    ASSERT_EQ(run->records.size(), 2u);
    for (const auto& r : run->records) {
      if (api == ApiKind::chat) {
        // Chat cannot take ids (they go as text), so no count is known to hold against it.
        EXPECT_TRUE(r.ok) << r.error_message;
        EXPECT_EQ(r.sent_prompt_tokens, 0);
        continue;
      }
      EXPECT_EQ(r.sent_prompt_tokens, 8);
      EXPECT_EQ(r.prompt_tokens, 4); // the fault happened: the server counted half
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.error, ErrorKind::malformed);
      EXPECT_NE(r.error_message.find("counted 4 prompt tokens for the 8 token ids sent"),
                std::string::npos)
          << r.error_message;
    }
  }
  // The same requests to an honest server pass, with the count sent.
  LocalSim honest(fast_sim(MethodKind::linear, 8));
  Client c(quick(honest.url));
  auto reqs = requests(1);
  reqs[0].prompt.input_ids = {11, 12, 13, 14, 15, 16, 17, 18};
  auto run = c.run(reqs, 1);
  ASSERT_TRUE(run.has_value());
  EXPECT_TRUE(run->records[0].ok) << run->records[0].error_message;
  EXPECT_EQ(run->records[0].prompt_tokens, 8);
}

// Lies that pass every count check of lying-counts: each would have entered the cell's figures
// as a short, fast or highly accepted answer.
TEST(ClientFaults, QuietLiesFailTheRequest) {
  for (ApiKind api : {ApiKind::generate, ApiKind::completions}) {
    const bool gen = api == ApiKind::generate;
    for (bool stream : {true, false}) {
      SCOPED_TRACE(std::string(gen ? "generate" : "completions") + (stream ? " stream" : ""));
      LocalSim sim(with_fault(SimFault::quiet_lies)); // linear, block 8
      auto o = quick(sim.url, stream);
      o.api = api;
      o.backend = gen ? Backend::sglang : Backend::openai;
      o.model = "synthetic/sim-model";
      o.max_tokens_per_step = 8; // the block: 7 drafts and the bonus
      Client c(o);
      auto run = c.run(requests(4), 1); // one at a time: request n tells lie n % 4
      ASSERT_TRUE(run.has_value());
      ASSERT_EQ(run->records.size(), 4u);
      const auto& r = run->records;

      EXPECT_EQ(r[0].error, ErrorKind::server_abort) << r[0].error_message;
      EXPECT_NE(r[0].error_message.find("finish_reason abort"), std::string::npos)
          << r[0].error_message;
      if (gen) {
        EXPECT_NE(r[0].error_message.find("simulated scheduler abort"), std::string::npos)
            << r[0].error_message;
      }

      // No token with finish_reason "length": what SGLang answers when the prompt leaves no
      // room in its context, so it is reported as the context's problem.
      EXPECT_EQ(r[1].error, ErrorKind::context_overflow) << r[1].error_message;
      EXPECT_TRUE(r[1].context_overflow);
      EXPECT_NE(r[1].error_message.find("no output token"), std::string::npos)
          << r[1].error_message;

      // A final count of 1 after 12 tokens: in a stream against the counts before it (OpenAI:
      // the chunks streamed), in a whole /generate body against its output_ids; an OpenAI body
      // has nothing to check it with.
      const char* shrink = !stream
                               ? "output_ids holds 12 ids but meta_info.completion_tokens says 1"
                           : gen ? "meta_info.completion_tokens went down from"
                                 : "tokens but reported 1 output tokens in its final count";
      if (gen || stream) {
        EXPECT_EQ(r[2].error, ErrorKind::malformed) << r[2].error_message;
        EXPECT_NE(r[2].error_message.find(shrink), std::string::npos) << r[2].error_message;
      } else {
        EXPECT_TRUE(r[2].ok) << r[2].error_message;
        EXPECT_EQ(r[2].output_tokens, 1); // the lie stands where nothing contradicts it
      }

      // 12 tokens in one verify step of a method that commits at most 8: only /generate reports
      // verify steps.
      if (gen) {
        EXPECT_EQ(r[3].error, ErrorKind::malformed) << r[3].error_message;
        EXPECT_NE(r[3].error_message.find("12 output tokens in 1 verify steps"), std::string::npos)
            << r[3].error_message;
        EXPECT_NE(r[3].error_message.find("more than the 8 per step"), std::string::npos)
            << r[3].error_message;
      } else {
        EXPECT_TRUE(r[3].ok) << r[3].error_message;
      }
    }
  }
}

// The same per-step bound on an honest speculative server passes, and an autoregressive cell
// whose server reports several tokens per verify step is told it may be speculating.
TEST(ClientFaults, TokensPerStepBoundHoldsForAnHonestServer) {
  LocalSim sim(with_fault(SimFault::none)); // linear, block 8
  auto o = quick(sim.url);
  o.max_tokens_per_step = 8;
  auto run = Client(o).run(requests(3), 1);
  ASSERT_TRUE(run.has_value());
  for (const auto& r : run->records) {
    EXPECT_TRUE(r.ok) << r.error_message;
    ASSERT_TRUE(r.spec.verify_steps.has_value());
    EXPECT_LT(*r.spec.verify_steps, r.output_tokens); // it does accept drafts
  }
  o.max_tokens_per_step = 1; // what an autoregressive cell allows
  run = Client(o).run(requests(1), 1);
  ASSERT_TRUE(run.has_value());
  const auto& r = run->records.at(0);
  EXPECT_EQ(r.error, ErrorKind::malformed);
  EXPECT_NE(r.error_message.find("is the autoregressive cell's server speculating?"),
            std::string::npos)
      << r.error_message;
}

TEST(ClientFaults, TrickleHitsTheRequestTimeout) {
  auto o = with_fault(SimFault::trickle);
  o.trickle_interval_ms = 2; // headers arrive, the body does not finish within 1.5 s
  LocalSim sim(o);
  for (bool stream : {true, false}) {
    Client c(quick(sim.url, stream));
    const auto t0 = std::chrono::steady_clock::now();
    RequestRecord r = c.send(requests(1).front());
    EXPECT_LT(detail::seconds_since(t0), 5.0);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, ErrorKind::timeout_total) << r.error_message;
    EXPECT_GT(r.bytes, 0);
  }
}

TEST(ClientFaults, IdleTimeoutCatchesAStreamThatStallsMidResponse) {
  // hang-after:1: the first request streams, the second freezes the server, so the first stalls
  // after its headers and first events, and the second never gets a byte.
  LocalSim sim(with_fault(SimFault::hang_after, 1));
  ClientOptions co = quick(sim.url);
  co.request_timeout_s = 30;
  co.first_byte_timeout_s = 0.8;
  co.idle_timeout_s = 0.3;
  Client c(co);
  const auto t0 = std::chrono::steady_clock::now();
  auto run = c.run(requests(2, 5000), 2);
  ASSERT_TRUE(run.has_value());
  EXPECT_LT(detail::seconds_since(t0), 5.0);
  int idle = 0, first = 0;
  for (const auto& r : run->records) {
    if (r.error == ErrorKind::timeout_total &&
        r.error_message.find("mid-response") != std::string::npos)
      ++idle;
    if (r.error == ErrorKind::timeout_first_byte)
      ++first;
  }
  EXPECT_EQ(idle, 1);
  EXPECT_EQ(first, 1);
}

TEST(ClientFaults, WrongContentLengthIsATransportError) {
  LocalSim sim(with_fault(SimFault::wrong_content_length));
  for (bool stream : {true, false}) {
    Client c(quick(sim.url, stream));
    auto run = c.run(requests(3), 3);
    ASSERT_TRUE(run.has_value());
    for (const auto& r : run->records) {
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.error, ErrorKind::transport) << to_string(r.error) << " " << r.error_message;
    }
  }
}

TEST(ClientFaults, HangIsAFirstByteTimeout) {
  LocalSim sim(with_fault(SimFault::hang));
  Client c(quick(sim.url));
  const auto t0 = std::chrono::steady_clock::now();
  auto run = c.run(requests(3), 3);
  ASSERT_TRUE(run.has_value());
  EXPECT_LT(detail::seconds_since(t0), 3.0);
  for (const auto& r : run->records)
    EXPECT_EQ(r.error, ErrorKind::timeout_first_byte);
}

TEST(ClientFaults, UnavailableIsAnHttpError) {
  LocalSim sim(with_fault(SimFault::unavailable));
  Client c(quick(sim.url));
  RequestRecord r = c.send(requests(1).front());
  EXPECT_EQ(r.error, ErrorKind::http_status);
  EXPECT_EQ(r.http_status, 503);
  EXPECT_FALSE(r.context_overflow);
}

TEST(ClientFaults, CrashAfterNRequestsCutsTheRest) {
  LocalSim sim(with_fault(SimFault::crash_after, 2));
  Client c(quick(sim.url));
  auto run = c.run(requests(2, 8), 1);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->ok_count, 2);
  auto after = c.run(requests(3, 8), 3);
  ASSERT_TRUE(after.has_value());
  ASSERT_EQ(after->records.size(), 3u);
  for (const auto& r : after->records) {
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.error == ErrorKind::transport || r.error == ErrorKind::connect ||
                r.error == ErrorKind::timeout_first_byte)
        << to_string(r.error) << " " << r.error_message;
  }
}

TEST(ClientFaults, HangAfterNRequests) {
  LocalSim sim(with_fault(SimFault::hang_after, 1));
  Client c(quick(sim.url));
  auto run = c.run(requests(3, 6), 1);
  ASSERT_TRUE(run.has_value());
  EXPECT_TRUE(run->records[0].ok) << run->records[0].error_message;
  EXPECT_EQ(run->records[1].error, ErrorKind::timeout_first_byte);
  EXPECT_EQ(run->records[2].error, ErrorKind::timeout_first_byte);
}

TEST(ClientFaults, BodyCapAndRefusedConnection) {
  LocalSim sim(fast_sim());
  ClientOptions o = quick(sim.url, false);
  o.max_body_bytes = 100;
  Client c(o);
  RequestRecord r = c.send(requests(1, 40).front());
  EXPECT_EQ(r.error, ErrorKind::body_too_large) << r.error_message;
  const int port = sim.server->port();
  sim.server->stop();
  Client refused(quick("http://127.0.0.1:" + std::to_string(port)));
  r = refused.send(requests(1).front());
  EXPECT_EQ(r.error, ErrorKind::connect) << r.error_message;
  Client bad(quick("127.0.0.1:80"));
  EXPECT_FALSE(bad.run(requests(1), 1).has_value());
}

TEST(ClientFaults, AbortEndsEveryRequestPromptly) {
  auto o = fast_sim();
  o.target_fixed_us = 5000; // 5 ms per token: 1000 tokens would take 5 s
  LocalSim sim(o);
  ClientOptions co = quick(sim.url);
  co.request_timeout_s = 60;
  co.first_byte_timeout_s = 60;
  Client c(co);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.abort("watchdog: test");
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto run = c.run(requests(10, 1000), 4);
  killer.join();
  ASSERT_TRUE(run.has_value());
  EXPECT_LT(detail::seconds_since(t0), 2.0);
  EXPECT_EQ(run->aborted, "watchdog: test");
  ASSERT_EQ(run->records.size(), 10u);
  int not_sent = 0;
  for (const auto& r : run->records) {
    EXPECT_EQ(r.error, ErrorKind::aborted);
    if (r.start_s < 0)
      ++not_sent;
  }
  EXPECT_EQ(not_sent, 6);
  EXPECT_EQ(run->failed_count, 10);
  EXPECT_TRUE(c.aborted());
  c.reset_abort();
  EXPECT_FALSE(c.aborted());
  // Work is still possible after the abort is cleared.
  EXPECT_TRUE(c.send(requests(1, 3).front()).ok);
}
