// Whether a stored cell result agrees with itself: the runner derives every run and the cell
// summary from the request records, so a summary that its requests do not give was edited or
// damaged after the run, and a report built on it would show numbers nobody measured.
#include "specbench/results.hpp"

#include "specbench/detail/verify_step_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>

namespace specbench {
namespace {

// A stored figure and the one its requests give are the same up to the last bits (JSON
// round-trips doubles exactly; the tolerance only absorbs another writer's rounding). A
// non-finite figure is written as null and read back as NaN, so NaN stands for any of them.
bool same(double stored, double derived) {
  if (!std::isfinite(derived))
    return std::isnan(stored) || stored == derived;
  if (!std::isfinite(stored))
    return false;
  return std::fabs(stored - derived) <=
         1e-9 * std::max(std::fabs(stored), std::fabs(derived)) + 1e-12;
}

std::string number(double v) {
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

// The first field where `stored` differs from `derived`, as "where: stored X, its requests give Y".
struct FirstDifference {
  std::optional<std::string> found;
  void value(const std::string& where, double stored, double derived) {
    if (!found && !same(stored, derived))
      found = where + " is " + number(stored) + " in the file, " + number(derived) +
              " from its requests";
  }
  void count(const std::string& where, int64_t stored, int64_t derived) {
    if (!found && stored != derived)
      found = where + " is " + std::to_string(stored) + " in the file, " + std::to_string(derived) +
              " from its requests";
  }
  void optional(const std::string& where, const std::optional<double>& stored,
                const std::optional<double>& derived) {
    if (found || (!stored && !derived))
      return;
    if (stored && derived)
      return value(where, *stored, *derived);
    found =
        where + (stored ? " is " + number(*stored) + " in the file, absent from its requests"
                        : " is absent from the file, " + number(*derived) + " from its requests");
  }
  void distribution(const std::string& where, const Distribution& s, const Distribution& d) {
    count(where + ".count", s.count, d.count);
    value(where + ".mean", s.mean, d.mean);
    value(where + ".stddev", s.stddev, d.stddev);
    value(where + ".min", s.min, d.min);
    value(where + ".max", s.max, d.max);
    value(where + ".p50", s.p50, d.p50);
    value(where + ".p90", s.p90, d.p90);
    value(where + ".p99", s.p99, d.p99);
  }
};

bool time_ok(double t) {
  return std::isfinite(t) && t >= 0;
}

std::optional<std::string> request_problem(const RequestMetrics& q, size_t runs) {
  const std::string who = "request " + std::to_string(q.index) + " of run " + std::to_string(q.run);
  if (q.run < 0 || static_cast<size_t>(q.run) >= runs)
    return who + " belongs to no run of the " + std::to_string(runs) + " recorded";
  if (!time_ok(q.start_s) || !time_ok(q.ttft_s) || !time_ok(q.e2e_s))
    return who + " has a negative or non-finite time";
  if (q.ttft_s > q.e2e_s)
    return who + " has its first token (" + number(q.ttft_s) + " s) after its end (" +
           number(q.e2e_s) + " s)";
  for (double gap : q.itl_s)
    if (!time_ok(gap))
      return who + " has a negative or non-finite inter-token gap";
  if (q.output_tokens < 0 || q.prompt_tokens < 0)
    return who + " has a negative token count";
  return std::nullopt;
}

// What no run could have measured, though the summaries were recomputed to agree: a request twice
// or more requests than the workload sends, more tokens than asked for, none under ignore_eos,
// fewer tokens than verify steps or more than the method commits in them, gaps longer than the
// request, a request longer than the whole cell.
std::optional<std::string> impossible(const CellResult& r) {
  const Workload& w = r.workload;
  std::vector<std::vector<bool>> seen(r.runs.size());
  for (const auto& q : r.requests) {
    const std::string who =
        "request " + std::to_string(q.index) + " of run " + std::to_string(q.run);
    auto& indices = seen[static_cast<size_t>(q.run)];
    if (q.index < 0 || (w.requests > 0 && q.index >= w.requests))
      return who + " is outside the workload's " + std::to_string(w.requests) + " requests per run";
    if (indices.size() <= static_cast<size_t>(q.index))
      indices.resize(static_cast<size_t>(q.index) + 1, false);
    if (indices[static_cast<size_t>(q.index)])
      return who + " appears twice";
    indices[static_cast<size_t>(q.index)] = true;
    if (r.wall_s > 0 && (q.e2e_s > r.wall_s + 1 || q.start_s > r.wall_s + 1))
      return who + " lasts " + number(q.e2e_s) + " s from " + number(q.start_s) +
             " s, beyond the whole cell's " + number(r.wall_s) + " s";
    if (!q.ok) // a failed request keeps the gaps it streamed but has no end time
      continue;
    double gaps = 0;
    for (double gap : q.itl_s)
      gaps += gap;
    if (gaps > q.e2e_s - q.ttft_s + 1e-6)
      return who + " has inter-token gaps of " + number(gaps) + " s after its first token, in a " +
             number(q.e2e_s) + " s request whose first token came at " + number(q.ttft_s) + " s";
    if (w.max_new_tokens > 0 && q.output_tokens > w.max_new_tokens)
      return who + " has " + std::to_string(q.output_tokens) +
             " output tokens, more than max_new_tokens " + std::to_string(w.max_new_tokens);
    if (w.ignore_eos && q.output_tokens == 0)
      return who + " is ok with no output token, though ignore_eos asked for " +
             std::to_string(w.max_new_tokens);
    if (q.verify_steps > 0) { // judged as the client judges an answer
      const int64_t width = std::max(1, r.method.verify_width());
      if (detail::fewer_tokens_than_steps(q.output_tokens, q.verify_steps))
        return who + " has " + std::to_string(q.verify_steps) + " verify steps for " +
               std::to_string(q.output_tokens) + " output tokens";
      if (detail::more_tokens_than_steps_commit(q.output_tokens, q.verify_steps, width))
        return who + " has " + std::to_string(q.output_tokens) + " output tokens in " +
               std::to_string(q.verify_steps) + " verify steps, more than " +
               std::to_string(width) + " per step (" + r.method.id() + ")";
    }
  }
  return std::nullopt;
}

} // namespace

Status check_cell_result(const CellResult& r) {
  const auto bad = [&](const std::string& what) {
    return Status(StatusCode::invalid_argument,
                  "the result of cell " + r.cell_id + " contradicts itself: " + what,
                  "the file was edited or damaged after the run: move it out of cells/ (or run "
                  "the cell again with `specbench run SWEEP --only " +
                      r.cell_id + " --fresh`)",
                  "check_cell_result");
  };
  // Only finished measurements carry numbers that reports show and resumes keep.
  if (!r.complete())
    return {};
  if (r.failure)
    return bad("its status is ok but it records a failure (" + r.failure->reason + ")");
  if (r.requests.empty())
    return bad("its status is ok but it holds no measured request");
  if (r.runs.size() != static_cast<size_t>(std::max(r.workload.runs, 0)))
    return bad("it holds " + std::to_string(r.runs.size()) + " runs where its workload has " +
               std::to_string(r.workload.runs));
  for (const auto& q : r.requests)
    if (auto problem = request_problem(q, r.runs.size()))
      return bad(*problem);
  if (auto problem = impossible(r))
    return bad(*problem);

  FirstDifference diff;
  const auto runs = summarize_runs(r.requests, static_cast<int>(r.runs.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string where = "runs[" + std::to_string(i) + "]";
    const RunSummary& s = r.runs[i];
    const RunSummary& d = runs[i];
    diff.count(where + ".run", s.run, d.run);
    diff.count(where + ".requests", s.requests, d.requests);
    diff.count(where + ".failed", s.failed, d.failed);
    diff.value(where + ".duration_s", s.duration_s, d.duration_s);
    diff.count(where + ".output_tokens", s.output_tokens, d.output_tokens);
    diff.value(where + ".output_tokens_per_s", s.output_tokens_per_s, d.output_tokens_per_s);
    diff.optional(where + ".acceptance_length", s.acceptance_length, d.acceptance_length);
  }
  const CellSummary d = summarize_cell(r.requests, r.runs);
  const CellSummary& s = r.summary;
  diff.count("summary.runs", s.runs, d.runs);
  diff.count("summary.requests", s.requests, d.requests);
  diff.count("summary.failed", s.failed, d.failed);
  diff.distribution("summary.output_tokens_per_s", s.output_tokens_per_s, d.output_tokens_per_s);
  diff.distribution("summary.ttft_s", s.ttft_s, d.ttft_s);
  diff.distribution("summary.tpot_s", s.tpot_s, d.tpot_s);
  diff.distribution("summary.itl_s", s.itl_s, d.itl_s);
  diff.distribution("summary.e2e_s", s.e2e_s, d.e2e_s);
  diff.optional("summary.acceptance_length", s.acceptance_length, d.acceptance_length);
  diff.distribution("summary.acceptance_length_runs", s.acceptance_length_runs,
                    d.acceptance_length_runs);
  if (diff.found)
    return bad(*diff.found);
  return {};
}

} // namespace specbench
