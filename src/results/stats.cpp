// Statistics over requests and runs: percentiles, distributions, per-run and per-cell summaries.
#include "specbench/results.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace specbench {

double percentile(std::vector<double> values, double q) {
  if (values.empty())
    return 0.0;
  std::sort(values.begin(), values.end());
  q = std::clamp(q, 0.0, 1.0);
  // Linear interpolation between closest ranks: position q * (n - 1).
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

Distribution summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty())
    return d;
  std::sort(values.begin(), values.end());
  d.count = static_cast<int>(values.size());
  d.min = values.front();
  d.max = values.back();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / d.count;
  if (d.count > 1) {
    double ss = 0;
    for (double v : values)
      ss += (v - d.mean) * (v - d.mean);
    d.stddev = std::sqrt(ss / (d.count - 1));
  }
  d.p50 = percentile(values, 0.50);
  d.p90 = percentile(values, 0.90);
  d.p99 = percentile(values, 0.99);
  return d;
}

double RequestMetrics::tpot_s() const noexcept {
  if (output_tokens < 2)
    return 0.0;
  return (e2e_s - ttft_s) / static_cast<double>(output_tokens - 1);
}

std::vector<RunSummary> summarize_runs(const std::vector<RequestMetrics>& requests, int runs) {
  std::vector<RunSummary> out(static_cast<size_t>(std::max(runs, 0)));
  std::vector<double> first(out.size(), 0.0), last(out.size(), 0.0);
  std::vector<bool> seen(out.size(), false);
  std::vector<int64_t> verify(out.size(), 0), verified_tokens(out.size(), 0);
  for (size_t i = 0; i < out.size(); ++i)
    out[i].run = static_cast<int>(i);
  for (const auto& r : requests) {
    if (r.run < 0 || static_cast<size_t>(r.run) >= out.size())
      continue;
    auto& s = out[static_cast<size_t>(r.run)];
    const auto i = static_cast<size_t>(r.run);
    ++s.requests;
    const double end = r.start_s + r.e2e_s;
    if (!seen[i]) {
      first[i] = r.start_s;
      last[i] = end;
      seen[i] = true;
    } else {
      first[i] = std::min(first[i], r.start_s);
      last[i] = std::max(last[i], end);
    }
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    s.output_tokens += r.output_tokens;
    if (r.verify_steps > 0) {
      verify[i] += r.verify_steps;
      verified_tokens[i] += r.output_tokens;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    auto& s = out[i];
    s.duration_s = seen[i] ? last[i] - first[i] : 0.0;
    s.output_tokens_per_s =
        s.duration_s > 0 ? static_cast<double>(s.output_tokens) / s.duration_s : 0.0;
    if (verify[i] > 0)
      s.acceptance_length =
          static_cast<double>(verified_tokens[i]) / static_cast<double>(verify[i]);
  }
  return out;
}

CellSummary summarize_cell(const std::vector<RequestMetrics>& requests,
                           const std::vector<RunSummary>& runs) {
  CellSummary c;
  c.runs = static_cast<int>(runs.size());
  std::vector<double> tps, acc_runs, ttft, tpot, itl, e2e;
  for (const auto& r : runs) {
    c.requests += r.requests;
    c.failed += r.failed;
    tps.push_back(r.output_tokens_per_s);
    if (r.acceptance_length)
      acc_runs.push_back(*r.acceptance_length);
  }
  int64_t verify = 0, verified_tokens = 0;
  for (const auto& r : requests) {
    if (!r.ok)
      continue;
    // An answer with no token (an EOS first, allowed without ignore_eos) has no time to first
    // token: its 0 would pull the percentiles down as if a token had come at once.
    if (r.output_tokens > 0)
      ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    if (r.output_tokens >= 2)
      tpot.push_back(r.tpot_s());
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    if (r.verify_steps > 0) {
      verify += r.verify_steps;
      verified_tokens += r.output_tokens;
    }
  }
  c.output_tokens_per_s = summarize(std::move(tps));
  c.ttft_s = summarize(std::move(ttft));
  c.tpot_s = summarize(std::move(tpot));
  c.itl_s = summarize(std::move(itl));
  c.e2e_s = summarize(std::move(e2e));
  c.acceptance_length_runs = summarize(std::move(acc_runs));
  if (verify > 0)
    c.acceptance_length = static_cast<double>(verified_tokens) / static_cast<double>(verify);
  return c;
}

} // namespace specbench
