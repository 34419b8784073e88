// The simulated inference server: HTTP endpoints (SGLang subset + OpenAI completions) over
// MiniHttpServer, a batching scheduler thread that runs SimDecoder steps and sleeps the simulated
// cost of each batched forward pass, and the fault modes the tests use.
#include "specbench/sim_server.hpp"
#include "core/json_text.hpp"
#include "core/seconds_since.hpp"
#include "sim/mini_http.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>

namespace specbench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kSyntheticHeader = "X-Specbench-Synthetic-Model: true\r\n";

// The sim's "tokenizer": one token per whitespace-separated word, hashed into the vocabulary.
std::vector<int32_t> tokenize(const std::string& text, int vocab) {
  std::vector<int32_t> ids;
  uint64_t h = 1469598103934665603ULL;
  bool in_word = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      if (in_word)
        ids.push_back(static_cast<int32_t>(h % static_cast<uint64_t>(vocab)));
      in_word = false;
      h = 1469598103934665603ULL;
    } else {
      in_word = true;
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    }
  }
  if (in_word)
    ids.push_back(static_cast<int32_t>(h % static_cast<uint64_t>(vocab)));
  return ids;
}

void append_token_text(std::string& out, int32_t t) {
  out += 'w';
  out += std::to_string(t);
  out += ' ';
}

std::string token_text(const std::vector<int32_t>& ids, size_t from = 0) {
  std::string s;
  s.reserve((ids.size() - std::min(from, ids.size())) * 5);
  for (size_t i = from; i < ids.size(); ++i)
    append_token_text(s, ids[i]);
  return s;
}

enum class Api { generate, completions, chat };

// One request being decoded.
struct Job {
  Job(const SyntheticModel& m, SimDecodeConfig c, std::vector<int32_t> prompt, int max_new,
      double temperature, uint64_t seed)
      : dec(m, c, prompt, max_new, temperature, seed),
        prompt_tokens(static_cast<int>(prompt.size())), max_new(max_new) {}
  SimDecoder dec;
  int prompt_tokens = 0;
  int max_new = 0;
  Clock::time_point created = Clock::now();
  std::mutex m;
  std::condition_variable cv;
  std::vector<int32_t> output;   // published tokens (under m)
  std::vector<size_t> step_ends; // output size after each published forward pass (under m)
  size_t steps_published = 0;    // forward passes published (under m)
  bool finished = false;         // under m
  SimGeneration final_gen;       // valid once finished
  std::atomic<bool> cancelled{false};
};

} // namespace

struct SimServer::Impl {
  explicit Impl(SimServerOptions o) : opt(std::move(o)), model(opt.model) {}

  SimServerOptions opt;
  SyntheticModel model;
  sim::MiniHttpServer http;
  Clock::time_point started = Clock::now();
  std::thread scheduler;
  bool scheduler_started = false;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Job>> pending;
  std::vector<std::shared_ptr<Job>> running;
  SimServerStats stats;
  uint64_t metric_scrapes = 0; // lying-metrics: scrapes answered so far
  // SGLang-style counters: pending ones are folded into the totals every decode_log_interval steps.
  int64_t pend_accept_tokens = 0, pend_forward_ct = 0;
  int64_t total_accept_tokens = 0, total_forward_ct = 0;
  int64_t prompt_tokens_total = 0;
  double last_interval_accept_length = 0, last_interval_accept_rate = 0;
  int64_t steps = 0;
  double last_gen_throughput = 0;

  std::atomic<bool> stopping{false};
  std::atomic<bool> hung{false};
  std::atomic<bool> crashed{false};
  std::atomic<int64_t> generation_count{0};
  std::atomic<uint64_t> next_id{1};

  mutable std::mutex log_mu;
  std::vector<std::string> log;
  bool echo = false;

  bool speculative() const { return opt.decode.kind != MethodKind::autoregressive; }

  void log_line(const std::string& msg) {
    char ts[32];
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    std::strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    std::string line = std::string("[") + ts + "] " + msg;
    std::lock_guard lk(log_mu);
    if (echo) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
    log.push_back(std::move(line));
    if (log.size() > 10000)
      log.erase(log.begin(), log.begin() + 5000);
  }

  bool loading() const { return detail::seconds_since(started) < opt.load_time_s; }

  // ---- scheduler ----
  void scheduler_loop() {
    std::vector<float> scratch;
    while (!stopping.load()) {
      std::vector<std::shared_ptr<Job>> batch;
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] {
          return stopping.load() ||
                 (!hung.load() && !crashed.load() && (!pending.empty() || !running.empty()));
        });
        if (stopping.load())
          break;
        while (!pending.empty() && static_cast<int>(running.size()) < opt.max_running_requests) {
          running.push_back(std::move(pending.front()));
          pending.pop_front();
        }
        std::erase_if(running, [](const auto& j) { return j->cancelled.load(); });
        batch = running;
      }
      if (batch.empty())
        continue;
      // The cost of this batched forward pass, charged before its tokens appear.
      double cost_us = opt.target_fixed_us;
      int draft_positions = 0;
      for (auto& j : batch) {
        const int w = j->dec.next_verify_width();
        const bool prefill = j->dec.generation().output.empty();
        cost_us += (prefill ? opt.prefill_per_token_us : opt.target_per_token_us) * w;
        draft_positions += j->dec.next_draft_positions();
      }
      if (draft_positions > 0)
        cost_us += opt.draft_fixed_us + opt.draft_per_token_us * draft_positions;
      const auto t0 = Clock::now();
      struct Delta {
        std::vector<int32_t> toks;
        int64_t verify = 0, correct = 0, proposed = 0;
      };
      std::vector<Delta> deltas(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        const SimGeneration before = {{},
                                      {},
                                      batch[i]->dec.generation().verify_steps,
                                      batch[i]->dec.generation().correct_drafts,
                                      batch[i]->dec.generation().proposed_drafts,
                                      {}};
        deltas[i].toks = batch[i]->dec.step();
        const SimGeneration& after = batch[i]->dec.generation();
        deltas[i].verify = after.verify_steps - before.verify_steps;
        deltas[i].correct = after.correct_drafts - before.correct_drafts;
        deltas[i].proposed = after.proposed_drafts - before.proposed_drafts;
      }
      {
        std::unique_lock lk(mu);
        cv.wait_until(lk, t0 + std::chrono::microseconds(static_cast<int64_t>(cost_us)),
                      [&] { return stopping.load(); });
        if (stopping.load())
          break;
        // hang-after / crash while this pass "ran": its tokens never come out.
        if (hung.load() || crashed.load())
          continue;
        ++stats.forward_passes;
        stats.simulated_busy_s += cost_us * 1e-6;
        int64_t tokens = 0, verify = 0, accepted = 0, correct = 0, proposed = 0;
        for (size_t i = 0; i < batch.size(); ++i) {
          tokens += static_cast<int64_t>(deltas[i].toks.size());
          if (deltas[i].verify > 0) {
            verify += deltas[i].verify;
            accepted += static_cast<int64_t>(deltas[i].toks.size());
            correct += deltas[i].correct;
            proposed += deltas[i].proposed;
          }
        }
        // Counted before the tokens are published, so a client never sees a finished request
        // the stats do not show yet.
        for (auto& j : batch)
          if (j->dec.done())
            ++stats.finished_requests;
        stats.output_tokens += tokens;
        stats.verify_steps += verify;
        stats.accepted_tokens += accepted;
        stats.correct_drafts += correct;
        stats.proposed_drafts += proposed;
        pend_accept_tokens += accepted;
        pend_forward_ct += verify;
        last_gen_throughput = tokens / std::max(1e-9, detail::seconds_since(t0));
        if (++steps % std::max(1, opt.decode_log_interval) == 0 && pend_forward_ct > 0) {
          last_interval_accept_length = static_cast<double>(pend_accept_tokens) / pend_forward_ct;
          last_interval_accept_rate = proposed > 0 ? static_cast<double>(correct) / proposed : 0;
          total_accept_tokens += pend_accept_tokens;
          total_forward_ct += pend_forward_ct;
          pend_accept_tokens = pend_forward_ct = 0;
        }
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        Job& j = *batch[i];
        std::lock_guard lk(j.m);
        j.output.insert(j.output.end(), deltas[i].toks.begin(), deltas[i].toks.end());
        j.step_ends.push_back(j.output.size());
        ++j.steps_published;
        if (j.dec.done()) {
          j.finished = true;
          j.final_gen = j.dec.generation();
        }
        j.cv.notify_all();
      }
      std::lock_guard lk(mu);
      std::erase_if(running, [](const auto& j) {
        std::lock_guard jl(j->m);
        return j->finished || j->cancelled.load();
      });
    }
  }

  // ---- helpers for answers ----
  std::string extra_headers() const { return kSyntheticHeader; }

  bool send_json(sim::HttpConnection& c, int status, const json& body, bool keep = true) {
    return c.send(status, "application/json", detail::json_text(body), extra_headers(), keep);
  }

  bool send_error(sim::HttpConnection& c, int status, const std::string& message,
                  const std::string& type = "BadRequestError") {
    json e = {{"error", {{"message", message}, {"type", type}, {"code", status}}},
              {"object", "error"},
              {"message", message},
              {"synthetic_model", true}};
    return send_json(c, status, e);
  }

  // Blocks until the server stops (a hung server answers nothing).
  bool block_forever() {
    while (http.sleep_ms(200)) {
    }
    return false;
  }

  // The crash's log lines; with `garbage`, bytes that are not UTF-8 come with them: a message
  // cut in the middle of a character and a binary dump (what a dying process can leave).
  void log_crash(bool garbage) {
    log_line(std::string("CUDA error: an illegal instruction was encountered") +
             (garbage ? " \xe8\xae" : ""));
    if (garbage)
      log_line("\xff\xfe\x80 core dump \xc0\xaf\xed\xa0\x80\xf5");
  }

  [[noreturn]] void crash_process(bool garbage) {
    log_crash(garbage);
    log_line("Fatal Python error: Aborted (simulated crash, --fault crash-after)");
    std::fflush(stderr);
    std::_Exit(1);
  }

  void crash_in_process(bool garbage) {
    log_crash(garbage);
    log_line("simulated crash (--fault crash-after): every connection cut");
    crashed.store(true);
    {
      std::lock_guard lk(mu);
      for (auto& j : running)
        j->cv.notify_all();
      for (auto& j : pending)
        j->cv.notify_all();
    }
    http.cut_all();
  }

  json server_info() {
    std::lock_guard lk(mu);
    json st = {
        {"last_gen_throughput", last_gen_throughput},
        {"memory_usage", {{"weight", 0}, {"kvcache", 0}, {"token_capacity", 0}, {"graph", 0}}},
        {"synthetic_model", true}};
    if (speculative() && total_forward_ct > 0)
      st["avg_spec_accept_length"] =
          static_cast<double>(total_accept_tokens) / total_forward_ct +
          (opt.fault.kind == SimFault::lying_metrics ? 100.0 : 0.0); // lying-metrics lies here too
    json info = {
        {"model_path", opt.model_path},
        {"served_model_name", opt.model_path},
        {"tp_size", opt.tp_size},
        {"context_length", opt.context_length},
        {"max_req_input_len", opt.context_length - 1},
        {"max_total_num_tokens", opt.context_length * 8},
        {"speculative_algorithm",
         opt.algorithm_name.empty() ? json(nullptr) : json(opt.algorithm_name)},
        {"speculative_num_draft_tokens", speculative() ? json(opt.decode.block) : json(nullptr)},
        {"speculative_ddtree_budget",
         opt.decode.kind == MethodKind::tree ? json(opt.decode.budget) : json(nullptr)},
        {"decode_log_interval", opt.decode_log_interval},
        {"version", "specbench-sim-0.1"},
        {"synthetic_model", true},
        {"note", sim_synthetic_note()},
        {"sim",
         {{"vocab", model.options().vocab},
          {"agreement", model.options().agreement},
          {"cost_target_fixed_us", opt.target_fixed_us},
          {"cost_target_per_token_us", opt.target_per_token_us},
          {"cost_draft_fixed_us", opt.draft_fixed_us},
          {"cost_draft_per_token_us", opt.draft_per_token_us},
          {"cost_prefill_per_token_us", opt.prefill_per_token_us},
          {"fault", to_string(opt.fault.kind)}}},
        {"internal_states", json::array({st})}};
    return info;
  }

  std::string metrics_text() {
    std::lock_guard lk(mu);
    // lying-metrics: every scrape claims 1,000 more accepted tokens than were committed.
    const double claimed = opt.fault.kind == SimFault::lying_metrics
                               ? 1000.0 * static_cast<double>(++metric_scrapes)
                               : 0.0;
    const std::string lbl = "{model_name=\"" + opt.model_path + "\"}";
    std::ostringstream o;
    // Every digit: the default 6 would print a counter of 1234567 as 1.23457e+06, and a client's
    // delta across such a scrape would be off by up to 5.
    o.precision(17);
    auto counter = [&](const char* name, const char* help, double v) {
      o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n"
        << name << lbl << ' ' << v << '\n';
    };
    auto gauge = [&](const char* name, const char* help, double v) {
      o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n"
        << name << lbl << ' ' << v << '\n';
    };
    gauge("specbench_sim:synthetic_model", "1: this server's model is synthetic", 1);
    counter("sglang:num_requests_total", "generation requests received",
            static_cast<double>(stats.generation_requests));
    counter("sglang:prompt_tokens_total", "prompt tokens",
            static_cast<double>(prompt_tokens_total));
    counter("sglang:generation_tokens_total", "generated tokens",
            static_cast<double>(stats.output_tokens));
    gauge("sglang:num_running_reqs", "running requests", static_cast<double>(running.size()));
    gauge("sglang:num_queue_reqs", "queued requests", static_cast<double>(pending.size()));
    if (speculative()) {
      counter("sglang:spec_verify_calls_total", "verify forward passes",
              static_cast<double>(stats.verify_steps));
      gauge("sglang:spec_accept_length", "accepted drafts + bonus per verify, last log interval",
            last_interval_accept_length);
      gauge("sglang:spec_accept_rate", "accepted / proposed drafts, last log interval",
            last_interval_accept_rate);
      counter("specbench_sim:spec_verify_steps_total", "verify passes (exact, no log lag)",
              static_cast<double>(stats.verify_steps));
      counter("specbench_sim:spec_accepted_tokens_total",
              "tokens committed by verify passes (accepted drafts + bonus)",
              static_cast<double>(stats.accepted_tokens) + claimed);
      counter("specbench_sim:spec_correct_drafts_total", "accepted draft tokens",
              static_cast<double>(stats.correct_drafts) + claimed);
      counter("specbench_sim:spec_proposed_drafts_total", "proposed draft tokens (nodes)",
              static_cast<double>(stats.proposed_drafts));
    }
    counter("specbench_sim:forward_passes_total", "batched target forward passes",
            static_cast<double>(stats.forward_passes));
    counter("specbench_sim:simulated_busy_seconds_total", "simulated cost slept",
            stats.simulated_busy_s);
    return o.str();
  }

  // ---- generation ----
  struct GenRequest {
    Api api = Api::generate;
    std::vector<int32_t> ids;
    int max_new = 128;
    double temperature = 1.0;
    uint64_t seed = 0;
    bool stream = false;
    bool include_usage = false;
    std::string rid;
    std::string model;
    int lie = -1; // --fault lying-counts: which lie this request's final counts tell (0..5)
    int quiet_lie = -1; // --fault quiet-lies: which plausible lie this request tells (0..3)
    std::string finish = "length"; // the finish_reason of a finished answer
  };

  // --fault lying-counts: the final counts of request n tell lie n % 6 (more tokens than asked, a
  // fraction, a count beyond any integer, a negative count, speculative figures that contradict
  // each other), or at n % 6 == 4 send the -1 that means "not known" (no lie).
  // `counts` is meta_info or usage: both name them completion_tokens and prompt_tokens. Lie 5 is
  // told in meta_info (more verify steps than tokens) and timings (more drafts accepted than
  // proposed), where the speculative figures are.
  static void tell_lie(json& counts, int lie) {
    switch (lie) {
    case 0:
      counts["completion_tokens"] = counts["completion_tokens"].get<int64_t>() * 1000 + 1;
      break;
    case 1:
      counts["completion_tokens"] = counts["completion_tokens"].get<double>() + 0.5;
      break;
    case 2:
      counts["prompt_tokens"] = 1e300;
      break;
    case 3:
      counts["prompt_tokens"] = -7;
      break;
    case 4:
      counts["prompt_tokens"] = -1; // no lie: the "not known" some servers send
      break;
    case 5:
      if (counts.contains("spec_verify_ct"))
        counts["spec_verify_ct"] = counts["completion_tokens"].get<int64_t>() + 1;
      if (counts.contains("draft_n"))
        counts["draft_n_accepted"] = counts["draft_n"].get<int64_t>() + 1;
      break;
    default:
      break;
    }
  }

  // --fault quiet-lies in a finished answer's meta_info (`m`) or OpenAI choice's finish reason
  // (`choice_finish`): lie 0, SGLang's abort; lie 2, a final count of 1; lie 3, one verify step.
  // (Lie 1, no token at all, is told by running the job with max_new_tokens 0; lie 2 is told in
  // OpenAI usage too.)
  static void tell_quiet_lie(json* m, json* choice_finish, int lie) {
    if (lie == 0) {
      if (m)
        (*m)["finish_reason"] = {{"type", "abort"},
                                 {"message", "Aborted: simulated scheduler abort (quiet-lies)"},
                                 {"status_code", 500},
                                 {"err_type", nullptr}};
      if (choice_finish)
        *choice_finish = "abort";
    } else if (lie == 2 && m) {
      (*m)["completion_tokens"] = 1;
    } else if (lie == 3 && m && m->contains("spec_verify_ct")) {
      (*m)["spec_verify_ct"] = 1;
    }
  }

  // Parses a generation body; returns an error message (empty when fine).
  std::string parse_gen(Api api, const std::string& body, GenRequest& g) {
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return "request body is not a JSON object";
    g.api = api;
    const int vocab = model.options().vocab;
    auto ids_from = [&](const json& a) -> bool {
      for (const auto& x : a) {
        if (!x.is_number_integer())
          return false;
        g.ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
      }
      return true;
    };
    try {
      g.stream = j.value("stream", false);
      if (api == Api::generate) {
        if (j.contains("input_ids") && j["input_ids"].is_array()) {
          const json& a = j["input_ids"];
          if (!a.empty() && a[0].is_array())
            return "batch requests are not supported by sim-server";
          if (!ids_from(a))
            return "input_ids must be integers";
        } else if (j.contains("text") && j["text"].is_string()) {
          g.ids = tokenize(j["text"].get<std::string>(), vocab);
        } else {
          return "Either text or input_ids should be provided.";
        }
        const json sp = j.value("sampling_params", json::object());
        g.max_new = sp.value("max_new_tokens", 128);
        g.temperature = sp.value("temperature", 1.0);
        g.seed = sp.value("sampling_seed", static_cast<uint64_t>(0));
        if (j.contains("rid") && j["rid"].is_string())
          g.rid = j["rid"];
      } else {
        g.model = j.value("model", opt.model_path);
        if (api == Api::completions) {
          if (!j.contains("prompt"))
            return "prompt is required";
          const json& p = j["prompt"];
          if (p.is_string())
            g.ids = tokenize(p.get<std::string>(), vocab);
          else if (p.is_array() && !p.empty() && p[0].is_string())
            g.ids = tokenize(p[0].get<std::string>(), vocab);
          else if (p.is_array()) {
            if (!ids_from(p))
              return "prompt token array must hold integers";
          } else
            return "prompt must be a string or an array of token ids";
        } else {
          if (!j.contains("messages") || !j["messages"].is_array())
            return "messages is required";
          std::string all;
          for (const auto& m : j["messages"]) {
            if (!m.is_object())
              return "each message must be an object";
            all += m.value("role", std::string("user")) + ": ";
            if (m.contains("content") && m["content"].is_string())
              all += m["content"].get<std::string>();
            all += "\n";
          }
          g.ids = tokenize(all, vocab);
        }
        g.max_new = j.contains("max_completion_tokens") ? j["max_completion_tokens"].get<int>()
                                                        : j.value("max_tokens", 16);
        g.temperature = j.value("temperature", 1.0);
        g.seed = j.value("seed", static_cast<uint64_t>(0));
        if (j.contains("stream_options") && j["stream_options"].is_object())
          g.include_usage = j["stream_options"].value("include_usage", false);
      }
    } catch (const json::exception& e) {
      return std::string("invalid field: ") + e.what();
    }
    if (g.max_new < 0)
      return "max_new_tokens must be at least 0";
    if (g.rid.empty())
      g.rid = "sim-" + std::to_string(next_id.fetch_add(1));
    return {};
  }

  std::string context_error(const GenRequest& g) const {
    const int64_t in = static_cast<int64_t>(g.ids.size());
    const int64_t ctx = opt.context_length;
    // The wordings SGLang's tokenizer manager uses for these two cases.
    if (in >= ctx)
      return "The input (" + std::to_string(in) +
             " tokens) is longer than the model's context "
             "length (" +
             std::to_string(ctx) + " tokens).";
    if (in + g.max_new > ctx)
      return "Requested token count exceeds the model's maximum context length of " +
             std::to_string(ctx) + " tokens. You requested a total of " +
             std::to_string(in + g.max_new) + " tokens: " + std::to_string(in) +
             " tokens from the input messages and " + std::to_string(g.max_new) +
             " tokens for the completion. Please reduce the number of tokens in the input "
             "messages or the completion to fit within the limit.";
    return {};
  }

  json spec_fields(const SimGeneration& gen, int64_t completion) const {
    json m = json::object();
    if (!speculative() || gen.verify_steps <= 0)
      return m;
    m["spec_verify_ct"] = gen.verify_steps;
    m["spec_accept_length"] = static_cast<double>(completion) / gen.verify_steps;
    m["spec_accept_rate"] = gen.proposed_drafts > 0
                                ? static_cast<double>(gen.correct_drafts) / gen.proposed_drafts
                                : 0.0;
    m["spec_num_correct_drafts"] = gen.correct_drafts;
    m["spec_num_proposed_drafts"] = gen.proposed_drafts;
    m["spec_accepted_drafts"] = gen.correct_drafts;
    m["spec_proposed_drafts"] = gen.proposed_drafts;
    m["spec_correct_drafts_histogram"] = gen.histogram;
    m["spec_accept_histogram"] = gen.histogram;
    return m;
  }

  json meta_info(const GenRequest& g, const Job& j, const std::vector<int32_t>& out,
                 bool finished) {
    json m = {{"id", g.rid},
              {"finish_reason",
               finished ? json{{"type", g.finish}, {"length", g.max_new}} : json(nullptr)},
              {"prompt_tokens", j.prompt_tokens},
              {"completion_tokens", out.size()},
              {"cached_tokens", 0},
              {"weight_version", "default"}};
    if (finished) {
      m["e2e_latency"] = detail::seconds_since(j.created);
      m.update(spec_fields(j.final_gen, static_cast<int64_t>(out.size())));
      tell_lie(m, g.lie);
      tell_quiet_lie(&m, nullptr, g.quiet_lie);
    }
    return m;
  }

  json timings(const GenRequest& g, const Job& j, size_t completion) const {
    json t = {{"prompt_n", j.prompt_tokens}, {"predicted_n", completion}};
    if (speculative() && j.final_gen.proposed_drafts > 0) {
      t["draft_n"] = j.final_gen.proposed_drafts;
      t["draft_n_accepted"] = j.final_gen.correct_drafts;
      if (g.lie == 5) // the other lies are told in usage
        tell_lie(t, g.lie);
    }
    return t;
  }

  json usage(const GenRequest& g, const Job& j, size_t completion) const {
    json u = {{"prompt_tokens", j.prompt_tokens},
              {"completion_tokens", completion},
              {"total_tokens", static_cast<size_t>(j.prompt_tokens) + completion}};
    tell_lie(u, g.lie);
    if (g.quiet_lie == 2)
      u["completion_tokens"] = 1;
    return u;
  }

  // One SSE event for tokens [from, out.size()) (final: with finish data).
  std::string sse_event(const GenRequest& g, const Job& j, const std::vector<int32_t>& out,
                        size_t from, bool finished) {
    json ev;
    if (g.api == Api::generate) {
      // SGLang's default streaming: cumulative text and output_ids in every chunk.
      ev = {{"text", token_text(out)},
            {"output_ids", out},
            {"meta_info", meta_info(g, j, out, finished)}};
    } else {
      const std::string delta = token_text(out, from);
      json choice = {{"index", 0},
                     {"logprobs", nullptr},
                     {"finish_reason", finished ? json(g.finish) : json(nullptr)}};
      if (finished)
        tell_quiet_lie(nullptr, &choice["finish_reason"], g.quiet_lie);
      if (g.api == Api::completions)
        choice["text"] = delta;
      else
        choice["delta"] =
            from == 0 ? json{{"role", "assistant"}, {"content", delta}} : json{{"content", delta}};
      ev = {{"id", g.rid},
            {"object", g.api == Api::completions ? "text_completion" : "chat.completion.chunk"},
            {"created", static_cast<int64_t>(std::time(nullptr))},
            {"model", g.model},
            {"choices", json::array({choice})}};
    }
    if (finished)
      ev["synthetic_model"] = true;
    std::string s = "data: ";
    s += ev.dump();
    s += "\n\n";
    if (finished && g.api != Api::generate && g.include_usage) {
      json u = {{"id", g.rid},
                {"object", g.api == Api::completions ? "text_completion" : "chat.completion.chunk"},
                {"created", static_cast<int64_t>(std::time(nullptr))},
                {"model", g.model},
                {"choices", json::array()},
                {"usage", usage(g, j, out.size())},
                {"timings", timings(g, j, out.size())},
                {"synthetic_model", true}};
      s += "data: " + u.dump() + "\n\n";
    }
    return s;
  }

  std::string full_body(const GenRequest& g, const Job& j, const std::vector<int32_t>& out) {
    json r;
    if (g.api == Api::generate) {
      r = {{"text", token_text(out)},
           {"output_ids", out},
           {"meta_info", meta_info(g, j, out, true)}};
    } else {
      json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", g.finish}};
      tell_quiet_lie(nullptr, &choice["finish_reason"], g.quiet_lie);
      if (g.api == Api::completions)
        choice["text"] = token_text(out);
      else
        choice["message"] = {{"role", "assistant"}, {"content", token_text(out)}};
      r = {{"id", g.rid},
           {"object", g.api == Api::completions ? "text_completion" : "chat.completion"},
           {"created", static_cast<int64_t>(std::time(nullptr))},
           {"model", g.model},
           {"choices", json::array({choice})},
           {"usage", usage(g, j, out.size())},
           {"timings", timings(g, j, out.size())}};
    }
    r["synthetic_model"] = true;
    r["note"] = sim_synthetic_note();
    return r.dump();
  }

  // Waits for tokens beyond `seen` steps; false when the server stopped, hung or crashed.
  // `ends` receives the output size after each newly published pass.
  bool wait_job(Job& j, size_t& seen, std::vector<int32_t>& out, bool& finished,
                std::vector<size_t>* ends = nullptr) {
    std::unique_lock lk(j.m);
    for (;;) {
      if (stopping.load() || crashed.load())
        return false;
      if (j.steps_published > seen || j.finished)
        break;
      j.cv.wait_for(lk, std::chrono::milliseconds(100));
    }
    out = j.output;
    finished = j.finished;
    if (ends)
      ends->assign(j.step_ends.begin() + static_cast<long>(seen), j.step_ends.end());
    seen = j.steps_published;
    return true;
  }

  bool handle_generation(Api api, const sim::HttpRequest& req, sim::HttpConnection& c) {
    if (req.method != "POST" && req.method != "PUT")
      return send_error(c, 405, "use POST");
    const int64_t n = generation_count.fetch_add(1) + 1;
    {
      std::lock_guard lk(mu);
      ++stats.generation_requests;
    }
    const SimFault f = opt.fault.kind;
    const bool garbage = f == SimFault::garbage_crash_after;
    if ((f == SimFault::crash_after || garbage) && n > opt.fault.after) {
      if (opt.crash_exits_process)
        crash_process(garbage);
      crash_in_process(garbage);
      return false;
    }
    if (f == SimFault::garbage_body) {
      // Longer than a client's excerpt, so the cut falls inside a character too.
      std::string body;
      while (body.size() < 600)
        body += "\xe5\x86\x85\xe9\x83\xa8\xe9\x94\x99\xe8\xaf\xaf "; // "internal error" in Chinese
      body += "\xff\xfe\xc0\xaf";
      return c.send(500, "text/plain", body, extra_headers(), req.keep_alive);
    }
    if (f == SimFault::broken_generation)
      return send_error(c, 500, "CUDA error: an illegal memory access was encountered",
                        "InternalServerError");
    if (f == SimFault::no_generation) // an API this server does not serve (FastAPI's 404)
      return send_json(c, 404, {{"detail", "Not Found"}, {"synthetic_model", true}});
    if (f == SimFault::hang_after && n > opt.fault.after) {
      if (!hung.exchange(true))
        log_line("simulated hang (--fault hang-after): no more answers");
      return block_forever();
    }
    if (f == SimFault::unavailable || f == SimFault::nccl_error || loading())
      return send_error(c, 503, loading() ? "The server is still loading." : "Service unavailable.",
                        "ServiceUnavailable");
    GenRequest g;
    if (std::string err = parse_gen(api, req.body, g); !err.empty()) {
      std::lock_guard lk(mu);
      ++stats.rejected_requests;
      return send_error(c, 400, err);
    }
    if (f == SimFault::truncate_prompts && g.ids.size() >= 2)
      g.ids.erase(g.ids.begin(), g.ids.begin() + static_cast<std::ptrdiff_t>(g.ids.size() / 2));
    if (f == SimFault::lying_counts)
      g.lie = static_cast<int>((n - 1) % 6);
    if (f == SimFault::stop_early) { // a stop token the server keeps under ignore_eos
      g.max_new = std::max(1, g.max_new / 2);
      g.finish = "stop";
    }
    if (f == SimFault::quiet_lies) {
      g.quiet_lie = static_cast<int>((n - 1) % 4);
      if (g.quiet_lie == 0)
        g.max_new = std::max(1, g.max_new / 2); // aborted half way
      else if (g.quiet_lie == 1)
        g.max_new = 0; // finished with no token
    }
    if (std::string err = context_error(g); !err.empty()) {
      {
        std::lock_guard lk(mu);
        ++stats.rejected_requests;
      }
      log_line("request " + g.rid + " rejected: " + err);
      return send_error(c, 400, err);
    }
    auto job = std::make_shared<Job>(model, opt.decode, g.ids, g.max_new, g.temperature, g.seed);
    {
      std::lock_guard lk(mu);
      prompt_tokens_total += static_cast<int64_t>(g.ids.size());
    }
    if (g.max_new == 0) {
      std::lock_guard lk(job->m);
      job->finished = true;
    } else {
      std::lock_guard lk(mu);
      pending.push_back(job);
      cv.notify_all();
    }
    const bool bad_bytes = f == SimFault::trickle || f == SimFault::wrong_content_length;
    if (g.stream && !bad_bytes) {
      if (!c.begin_chunked(200, "text/event-stream", extra_headers()))
        return job->cancelled = true, false;
      size_t seen = 0, sent_tokens = 0;
      std::vector<int32_t> out, prefix;
      std::vector<size_t> ends;
      bool finished = false;
      while (!finished) {
        if (!wait_job(*job, seen, out, finished, &ends))
          return job->cancelled = true, false;
        if (ends.empty())
          ends.push_back(out.size()); // max_new_tokens 0
        // One event per forward pass, even when several passes ended before we woke up.
        std::string ev;
        for (size_t k = 0; k < ends.size(); ++k) {
          const bool last = finished && k + 1 == ends.size();
          prefix.assign(out.begin(), out.begin() + static_cast<long>(ends[k]));
          ev += sse_event(g, *job, prefix, sent_tokens, last);
          sent_tokens = ends[k];
        }
        if (f == SimFault::malformed_json)
          ev = "data: {\"text\": \"w1 w2\", \"meta_info\": {\"completion_tokens\": \n\n";
        if (!c.write_chunk(ev))
          return job->cancelled = true, false;
        if (f == SimFault::malformed_json)
          break;
      }
      if (!c.write_chunk("data: [DONE]\n\n") || !c.end_chunked())
        return false;
      return true;
    }
    // Non-streaming (and the byte-level faults, which render the whole answer first).
    std::vector<int32_t> out;
    bool finished = false;
    size_t seen = 0;
    while (!finished) {
      if (!wait_job(*job, seen, out, finished))
        return job->cancelled = true, false;
    }
    if (f == SimFault::malformed_json)
      return c.send(200, "application/json",
                    "{\"text\": \"w1 w2\", \"meta_info\": {\"completion_tokens\": 2,, }",
                    extra_headers());
    std::string body;
    if (g.stream) {
      size_t from = 0;
      // Reproduce the per-step events from the published output (one event per token here).
      for (size_t i = 1; i <= out.size(); ++i) {
        std::vector<int32_t> prefix(out.begin(), out.begin() + static_cast<long>(i));
        body += sse_event(g, *job, prefix, from, i == out.size());
        from = i;
      }
      body += "data: [DONE]\n\n";
    } else {
      body = full_body(g, *job, out);
    }
    const char* ctype = g.stream ? "text/event-stream" : "application/json";
    if (f == SimFault::wrong_content_length) {
      // Claim more bytes than we send, then close: the client must not wait forever or crash.
      std::string head = "HTTP/1.1 200 OK\r\nContent-Type: " + std::string(ctype) +
                         "\r\nContent-Length: " + std::to_string(body.size() + 100) +
                         "\r\nConnection: close\r\n" + extra_headers() + "\r\n";
      c.write_all(head + body);
      return false;
    }
    if (f != SimFault::trickle)
      return c.send(200, ctype, body, extra_headers(), req.keep_alive);
    // trickle: one byte per interval.
    std::string all = "HTTP/1.1 200 OK\r\nContent-Type: " + std::string(ctype) +
                      "\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n" + extra_headers() + "\r\n" + body;
    for (char ch : all) {
      if (!c.write_all(std::string_view(&ch, 1)))
        return false;
      if (!http.sleep_ms(opt.trickle_interval_ms))
        return false;
    }
    return false;
  }

  bool handle(const sim::HttpRequest& req, sim::HttpConnection& c) {
    if (crashed.load())
      return false;
    if (opt.fault.kind == SimFault::hang || hung.load())
      return block_forever();
    const std::string& p = req.path;
    if (p == "/generate")
      return handle_generation(Api::generate, req, c);
    if (p == "/v1/completions")
      return handle_generation(Api::completions, req, c);
    if (p == "/v1/chat/completions")
      return handle_generation(Api::chat, req, c);
    if (p == "/health" || p == "/health_generate") {
      if (opt.fault.kind == SimFault::unavailable || opt.fault.kind == SimFault::nccl_error ||
          loading())
        return c.send(503, "text/plain", "", extra_headers());
      return c.send(200, "text/plain", "", extra_headers());
    }
    if (p == "/server_info" || p == "/get_server_info")
      return send_json(c, 200, server_info());
    if (p == "/model_info" || p == "/get_model_info")
      return send_json(c, 200,
                       {{"model_path", opt.model_path},
                        {"tokenizer_path", opt.model_path},
                        {"is_generation", true},
                        {"synthetic_model", true},
                        {"note", sim_synthetic_note()}});
    if (p == "/metrics") {
      if (opt.fault.kind == SimFault::no_metrics) // SGLang without --enable-metrics
        return send_json(c, 404, {{"detail", "Not Found"}, {"synthetic_model", true}});
      return c.send(200, "text/plain; version=0.0.4", metrics_text(), extra_headers());
    }
    if (p == "/v1/models")
      return send_json(c, 200,
                       {{"object", "list"},
                        {"data", json::array({{{"id", opt.model_path},
                                               {"object", "model"},
                                               {"owned_by", "specbench-sim"},
                                               {"max_model_len", opt.context_length}}})},
                        {"synthetic_model", true}});
    if (p == "/flush_cache") {
      std::lock_guard lk(mu);
      if (!running.empty() || !pending.empty())
        return c.send(400, "text/plain", "Cache not flushed: requests are running.",
                      extra_headers());
      pend_accept_tokens = pend_forward_ct = total_accept_tokens = total_forward_ct = 0;
      return c.send(200, "text/plain", "Cache flushed.", extra_headers());
    }
    return send_json(c, 404, {{"detail", "Not Found"}, {"synthetic_model", true}});
  }
};

SimServer::SimServer(SimServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

SimServer::~SimServer() {
  stop();
}

Status SimServer::start() {
  Impl& s = *impl_;
  const auto& o = s.opt;
  s.log_line(std::string("specbench sim-server starting: ") + sim_synthetic_note());
  s.log_line("model_path=" + o.model_path + " tp_size=" + std::to_string(o.tp_size) +
             " context_length=" + std::to_string(o.context_length) +
             " vocab=" + std::to_string(s.model.options().vocab) +
             " agreement=" + std::to_string(s.model.options().agreement) +
             " algorithm=" + (o.algorithm_name.empty() ? std::string("none") : o.algorithm_name) +
             " num_draft_tokens=" + std::to_string(o.decode.block) + " ddtree_budget=" +
             std::to_string(o.decode.budget) + " fault=" + to_string(o.fault.kind));
  switch (o.fault.kind) {
  case SimFault::fail_start: {
    const std::string m = "RuntimeError: Failed to get device capability: CUDA unknown error";
    // As a tensor-parallel server's log has it: a worker's colourised error lands in the middle
    // of a progress bar that redraws with '\r'.
    s.log_line("Loading safetensors checkpoint shards:  50% Completed | 2/4\r\x1b[1;31m" + m +
               "\x1b[0m");
    return Status(StatusCode::cuda_error, m, "simulated by --fault fail-start", "sim-server");
  }
  case SimFault::oom_start: {
    const std::string m = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
                          "(simulated by --fault oom-start)";
    s.log_line(m);
    return Status(StatusCode::cuda_error, m, "simulated by --fault oom-start", "sim-server");
  }
  case SimFault::exit_start: {
    const std::string m = "sim-server: exiting at start as asked (--fault exit-start)";
    s.log_line(m);
    return Status(StatusCode::unavailable, m, {}, "sim-server");
  }
  default:
    break;
  }
  if (Status st = s.http.listen(o.host, o.port); !st) {
    s.log_line("ERROR: " + st.message());
    return st;
  }
  s.started = std::chrono::steady_clock::now();
  s.scheduler = std::thread([&s] { s.scheduler_loop(); });
  s.scheduler_started = true;
  s.http.serve([&s](const sim::HttpRequest& r, sim::HttpConnection& c) { return s.handle(r, c); });
  s.log_line("Uvicorn-like listener on http://" + o.host + ":" + std::to_string(s.http.port()) +
             " (loading for " + std::to_string(o.load_time_s) + " s)");
  if (o.fault.kind == SimFault::nccl_error)
    s.log_line("NCCL WARN NET/IB : Got async event : port error; NCCL error: unhandled system "
               "error (simulated by --fault nccl-error)");
  return Status::ok();
}

int SimServer::port() const noexcept {
  return impl_->http.port();
}

void SimServer::stop() {
  Impl& s = *impl_;
  if (s.stopping.exchange(true))
    return;
  {
    std::lock_guard lk(s.mu);
    s.cv.notify_all();
    for (auto& j : s.running)
      j->cv.notify_all();
    for (auto& j : s.pending)
      j->cv.notify_all();
  }
  s.http.stop();
  if (s.scheduler_started)
    s.scheduler.join();
  s.scheduler_started = false;
}

SimServerStats SimServer::stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

std::vector<std::string> SimServer::log_lines() const {
  std::lock_guard lk(impl_->log_mu);
  return impl_->log;
}

void SimServer::set_echo_log(bool echo) {
  std::lock_guard lk(impl_->log_mu);
  impl_->echo = echo;
}

} // namespace specbench
