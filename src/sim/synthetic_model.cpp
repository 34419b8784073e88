// The simulated server's synthetic model pair and its decoding loop. Nothing here sleeps or does
// I/O: SimDecoder::step() is one target forward pass, and the server charges the cost.
#include "specbench/sim_server.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace specbench {
namespace {

uint64_t mix(uint64_t x) {
  // splitmix64 finaliser: a cheap, well-spread hash.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double unit(uint64_t h) {
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t context_hash(uint64_t seed, int32_t prev2, int32_t prev1, int64_t position) {
  uint64_t h = mix(seed ^ 0x7a3c0f11ULL);
  h = mix(h ^ static_cast<uint64_t>(static_cast<uint32_t>(prev2)));
  h = mix(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(prev1)) << 1));
  return mix(h ^ static_cast<uint64_t>(position) * 0x2545f4914f6cdd1dULL);
}

void log_softmax(std::vector<float>& v) {
  const float m = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (float x : v)
    sum += std::exp(static_cast<double>(x - m));
  const float lse = m + static_cast<float>(std::log(sum));
  for (float& x : v)
    x -= lse;
}

} // namespace

SyntheticModel::SyntheticModel(SyntheticModelOptions options) : opt_(options) {
  opt_.vocab = std::clamp(opt_.vocab, 2, 65536);
  opt_.agreement = std::clamp(opt_.agreement, 0.0, 1.0);
  if (!(opt_.sharpness > 0))
    opt_.sharpness = 8.0;
  if (!(opt_.depth_decay >= 0))
    opt_.depth_decay = 0.0;
}

void SyntheticModel::target_logits(int32_t prev2, int32_t prev1, int64_t position,
                                   std::span<float> out) const {
  const uint64_t h = context_hash(opt_.seed, prev2, prev1, position);
  // Gumbel-distributed logits: the top token usually stands clear of the rest (gap ~ scale),
  // and the context sets how peaked the distribution is, as in language.
  const double scale = opt_.sharpness * 0.25 * (0.5 + unit(mix(h ^ 0xabcdefULL)));
  for (int v = 0; v < opt_.vocab; ++v) {
    const double u = std::max(unit(mix(h + static_cast<uint64_t>(v))), 1e-12);
    out[v] = static_cast<float>(scale * -std::log(-std::log(u)));
  }
}

int32_t SyntheticModel::target_token(int32_t prev2, int32_t prev1, int64_t position,
                                     double temperature, uint64_t sample_seed) const {
  if (temperature <= 0) {
    // The logits are a monotone function of the hashed uniforms: the argmax needs no logarithms.
    const uint64_t h = context_hash(opt_.seed, prev2, prev1, position);
    int32_t best = 0;
    double best_u = -1;
    for (int v = 0; v < opt_.vocab; ++v) {
      const double u = std::max(unit(mix(h + static_cast<uint64_t>(v))), 1e-12);
      if (u > best_u) {
        best_u = u;
        best = v;
      }
    }
    return best;
  }
  std::vector<float> logits(opt_.vocab);
  target_logits(prev2, prev1, position, logits);
  // A sample keyed by the context, not by a running RNG: every method draws the same token at the
  // same place, so speculative decoding here is lossless by construction, as it must be.
  const float m = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(opt_.vocab);
  double sum = 0;
  for (int v = 0; v < opt_.vocab; ++v)
    sum += (p[v] = std::exp((logits[v] - m) / temperature));
  const double r =
      unit(mix(context_hash(sample_seed ^ 0x5a5a5a5aULL, prev2, prev1, position))) * sum;
  double acc = 0;
  for (int v = 0; v < opt_.vocab; ++v)
    if ((acc += p[v]) > r)
      return v;
  return opt_.vocab - 1;
}

void SyntheticModel::draft_logits(int32_t prev2, int32_t prev1, int64_t position, int depth,
                                  std::span<float> out) const {
  target_logits(prev2, prev1, position, out);
  if (opt_.agreement >= 1.0)
    return;
  const double a = std::max(opt_.agreement, 1e-3);
  const double sigma = (1.0 - a) / a * (1.0 + opt_.depth_decay * std::max(0, depth - 1));
  const uint64_t h = mix(context_hash(opt_.seed ^ 0xd1a5ULL, prev2, prev1, position) ^
                         static_cast<uint64_t>(depth));
  for (int v = 0; v < opt_.vocab; ++v) {
    const double u = std::max(unit(mix(h + static_cast<uint64_t>(v))), 1e-12);
    out[v] += static_cast<float>(sigma * opt_.sharpness * 0.25 * -std::log(-std::log(u)));
  }
}

SimDecoder::SimDecoder(const SyntheticModel& model, SimDecodeConfig config,
                       std::span<const int32_t> prompt, int max_new_tokens, double temperature,
                       uint64_t sample_seed)
    : model_(&model), cfg_(config), max_new_(std::max(0, max_new_tokens)),
      temperature_(temperature), sample_seed_(sample_seed) {
  const int vocab = model.options().vocab;
  ctx_.reserve(prompt.size() + static_cast<size_t>(max_new_) + 2);
  for (int32_t id : prompt)
    ctx_.push_back(static_cast<int32_t>(((id % vocab) + vocab) % vocab));
  if (ctx_.empty())
    ctx_.push_back(0);
  prompt_len_ = ctx_.size();
  if (cfg_.kind == MethodKind::linear)
    cfg_.block = std::max(cfg_.block, 1);
  if (cfg_.kind == MethodKind::tree) {
    cfg_.block = std::max(cfg_.block, 2);
    cfg_.budget = std::max(cfg_.budget, 1);
  }
}

bool SimDecoder::done() const noexcept {
  return static_cast<int>(gen_.output.size()) >= max_new_;
}

int SimDecoder::next_verify_width() const noexcept {
  if (!prefilled_)
    return static_cast<int>(prompt_len_);
  switch (cfg_.kind) {
  case MethodKind::autoregressive:
    return 1;
  case MethodKind::linear:
    return cfg_.block;
  case MethodKind::tree:
    return cfg_.budget + 1;
  }
  return 1;
}

int SimDecoder::next_draft_positions() const noexcept {
  if (!prefilled_ || cfg_.kind == MethodKind::autoregressive)
    return 0;
  return cfg_.block - 1;
}

std::vector<int32_t> SimDecoder::step() {
  std::vector<int32_t> committed;
  if (done())
    return committed;
  const SyntheticModel& m = *model_;
  const int vocab = m.options().vocab;
  auto prev = [&](size_t back) -> int32_t { // ctx_[size - back], or a sentinel before the start
    return ctx_.size() >= back ? ctx_[ctx_.size() - back] : vocab;
  };
  const int remaining = max_new_ - static_cast<int>(gen_.output.size());
  if (!prefilled_) { // prefill: the first token comes from the prompt's last position
    prefilled_ = true;
    committed.push_back(m.target_token(prev(2), prev(1), static_cast<int64_t>(ctx_.size()),
                                       temperature_, sample_seed_));
  } else if (cfg_.kind == MethodKind::autoregressive) {
    committed.push_back(m.target_token(prev(2), prev(1), static_cast<int64_t>(ctx_.size()),
                                       temperature_, sample_seed_));
  } else {
    // Drafter: one pass gives a distribution per block position; position d sees the context
    // and its own argmax chain before d (block diffusion drafts all positions at once).
    const int depth = cfg_.block - 1;
    const int64_t base = static_cast<int64_t>(ctx_.size()); // position of draft depth 1
    const int k = cfg_.kind == MethodKind::tree ? std::min(cfg_.budget, vocab) : 1;
    std::vector<float> top_logp(static_cast<size_t>(depth) * k);
    std::vector<int32_t> top_ids(static_cast<size_t>(depth) * k);
    std::vector<float> logits(vocab);
    std::vector<int32_t> order(vocab);
    int32_t p2 = prev(2), p1 = prev(1);
    for (int d = 1; d <= depth; ++d) {
      m.draft_logits(p2, p1, base + d - 1, d, logits);
      log_softmax(logits);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
      });
      for (int r = 0; r < k; ++r) {
        top_logp[static_cast<size_t>(d - 1) * k + r] = logits[order[r]];
        top_ids[static_cast<size_t>(d - 1) * k + r] = order[r];
      }
      p2 = p1;
      p1 = order[0];
    }
    Acceptance acc;
    if (cfg_.kind == MethodKind::linear) {
      std::vector<int32_t> drafts(top_ids.begin(), top_ids.begin() + depth);
      std::vector<int32_t> target(depth + 1);
      int32_t t2 = prev(2), t1 = prev(1);
      for (int i = 0; i <= depth; ++i) { // target's token after ctx + drafts[0..i-1]
        target[i] = m.target_token(t2, t1, base + i, temperature_, sample_seed_);
        if (i < depth) {
          t2 = t1;
          t1 = drafts[i];
        }
      }
      acc = verify_chain_reference(drafts, target);
      for (size_t i = 1; i < acc.path.size(); ++i)
        committed.push_back(drafts[acc.path[i] - 1]);
      gen_.proposed_drafts += depth;
    } else {
      const DraftTree tree =
          build_ddtree_reference(top_logp, top_ids, depth, k, cfg_.budget, prev(1));
      // The target at every node: its context is the committed text plus the node's path.
      std::vector<int32_t> target(tree.size());
      for (int i = 0; i < tree.size(); ++i) {
        const int32_t tok = tree.tokens[i];
        const int par = tree.parents[i];
        const int32_t before = par < 0 ? prev(2) : tree.tokens[par];
        target[i] = m.target_token(before, tok, base + tree.depths[i], temperature_, sample_seed_);
      }
      acc = verify_tree_reference(tree, target);
      for (size_t i = 1; i < acc.path.size(); ++i)
        committed.push_back(tree.tokens[acc.path[i]]);
      gen_.proposed_drafts += cfg_.budget;
    }
    committed.push_back(acc.bonus_token);
    ++gen_.verify_steps;
    gen_.correct_drafts += acc.accepted_drafts();
    if (gen_.histogram.size() <= static_cast<size_t>(acc.accepted_drafts()))
      gen_.histogram.resize(acc.accepted_drafts() + 1, 0);
    ++gen_.histogram[acc.accepted_drafts()];
  }
  if (static_cast<int>(committed.size()) > remaining)
    committed.resize(remaining);
  if (gen_.verify_steps > static_cast<int64_t>(gen_.accept_lengths.size()))
    gen_.accept_lengths.push_back(static_cast<int>(committed.size()));
  for (int32_t t : committed) {
    ctx_.push_back(t);
    gen_.output.push_back(t);
  }
  return committed;
}

SimGeneration simulate_generation(const SyntheticModel& model, const SimDecodeConfig& config,
                                  std::span<const int32_t> prompt, int max_new_tokens,
                                  double temperature, uint64_t sample_seed) {
  SimDecoder d(model, config, prompt, max_new_tokens, temperature, sample_seed);
  while (!d.done())
    d.step();
  return d.generation();
}

const char* to_string(SimFault fault) noexcept {
  switch (fault) {
  case SimFault::none:
    return "none";
  case SimFault::fail_start:
    return "fail-start";
  case SimFault::oom_start:
    return "oom-start";
  case SimFault::exit_start:
    return "exit-start";
  case SimFault::nccl_error:
    return "nccl-error";
  case SimFault::crash_after:
    return "crash-after";
  case SimFault::hang:
    return "hang";
  case SimFault::hang_after:
    return "hang-after";
  case SimFault::unavailable:
    return "unavailable";
  case SimFault::malformed_json:
    return "malformed-json";
  case SimFault::trickle:
    return "trickle";
  case SimFault::wrong_content_length:
    return "wrong-content-length";
  case SimFault::no_metrics:
    return "no-metrics";
  case SimFault::garbage_crash_after:
    return "garbage-crash-after";
  case SimFault::garbage_body:
    return "garbage-body";
  case SimFault::lying_counts:
    return "lying-counts";
  case SimFault::quiet_lies:
    return "quiet-lies";
  case SimFault::lying_metrics:
    return "lying-metrics";
  case SimFault::broken_generation:
    return "broken-generation";
  case SimFault::truncate_prompts:
    return "truncate-prompts";
  case SimFault::stop_early:
    return "stop-early";
  case SimFault::no_generation:
    return "no-generation";
  }
  return "?";
}

namespace {
// Every fault, in the order --help and the parser's error list them.
constexpr SimFault kAllFaults[] = {SimFault::none,
                                   SimFault::fail_start,
                                   SimFault::oom_start,
                                   SimFault::exit_start,
                                   SimFault::nccl_error,
                                   SimFault::crash_after,
                                   SimFault::hang,
                                   SimFault::hang_after,
                                   SimFault::unavailable,
                                   SimFault::malformed_json,
                                   SimFault::trickle,
                                   SimFault::wrong_content_length,
                                   SimFault::no_metrics,
                                   SimFault::garbage_crash_after,
                                   SimFault::garbage_body,
                                   SimFault::lying_counts,
                                   SimFault::quiet_lies,
                                   SimFault::lying_metrics,
                                   SimFault::broken_generation,
                                   SimFault::truncate_prompts,
                                   SimFault::stop_early,
                                   SimFault::no_generation};

// The faults written with a count: crash-after:N, hang-after:N, garbage-crash-after:N.
bool takes_count(SimFault f) {
  return f == SimFault::crash_after || f == SimFault::hang_after ||
         f == SimFault::garbage_crash_after;
}
} // namespace

std::string sim_fault_names() {
  std::string names;
  for (SimFault f : kAllFaults) {
    names += std::string(names.empty() ? "" : ", ") + to_string(f);
    if (takes_count(f))
      names += ":N";
  }
  return names;
}

Expected<SimFaultSpec> parse_sim_fault(std::string_view text) {
  std::string_view name = text, count;
  const auto colon = text.find(':');
  if (colon != std::string_view::npos) {
    name = text.substr(0, colon);
    count = text.substr(colon + 1);
  }
  for (SimFault f : kAllFaults) {
    if (name != to_string(f))
      continue;
    SimFaultSpec spec{f, 0};
    if (takes_count(f)) {
      if (count.empty() && colon != std::string_view::npos)
        return Status(StatusCode::invalid_argument,
                      "fault '" + std::string(text) + "' has a ':' but no count",
                      "e.g. --fault " + std::string(name) + ":3, or drop the ':' for 0");
      if (count.empty())
        count = "0";
      int n = 0;
      for (char c : count) {
        if (c < '0' || c > '9' || n > 100000000)
          return Status(StatusCode::invalid_argument,
                        "fault count must be a non-negative integer: " + std::string(text),
                        "e.g. --fault crash-after:3");
        n = n * 10 + (c - '0');
      }
      spec.after = n;
    } else if (!count.empty()) {
      return Status(StatusCode::invalid_argument,
                    "fault '" + std::string(name) + "' takes no count",
                    "drop ':" + std::string(count) + "'");
    }
    return spec;
  }
  return Status(StatusCode::invalid_argument, "unknown fault '" + std::string(text) + "'",
                "use one of: " + sim_fault_names());
}

const char* sim_synthetic_note() noexcept {
  return "specbench simulated server: the model is SYNTHETIC (hash-defined target and draft "
         "distributions over a small vocabulary); latencies are simulated costs, not GPU timings";
}

} // namespace specbench
