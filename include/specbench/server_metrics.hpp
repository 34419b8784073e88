#pragma once
/// \file server_metrics.hpp
/// Server-side figures scraped before and after a run: Prometheus /metrics (vllm:spec_decode_*,
/// sglang:spec_*, llamacpp:*, token and request counters) and SGLang /server_info
/// (internal_states[*].avg_spec_accept_length). They cover more than one run (server lifetime,
/// other clients, SGLang's 40-step logging lag), so they are reported apart from per-request
/// figures, as deltas where the metric is a counter.

#include "specbench/results.hpp"
#include "specbench/status.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specbench {

/// One Prometheus sample: `name{labels} value`.
struct PrometheusSample {
  std::string name;                          ///< e.g. "vllm:spec_decode_num_drafts_total"
  std::map<std::string, std::string> labels; ///< e.g. {"position": "0"}
  double value = 0;

  /// "name{k=\"v\",...}" with labels in sorted order (a stable key).
  std::string key() const;
};

/// Parses Prometheus text exposition format (comments and malformed lines are skipped).
std::vector<PrometheusSample> parse_prometheus_text(std::string_view text);

/// What one scrape found. Absent endpoints are not errors (servers differ); they leave the
/// *_ok flags false with the reason in the *_error fields.
struct ServerSnapshot {
  double taken_at_s = 0;                 ///< seconds since the epoch
  bool metrics_ok = false;               ///< /metrics answered 200 with parseable text
  std::string metrics_error;             ///< why not
  std::vector<PrometheusSample> samples; ///< all samples of /metrics

  bool server_info_ok = false;   ///< /server_info (or /get_server_info) answered 200 JSON
  std::string server_info_error; ///< why not
  /// internal_states[i].avg_spec_accept_length per DP rank (nullopt where absent or null).
  std::vector<std::optional<double>> avg_spec_accept_length;
  std::string model_path;       ///< server_info model_path when given
  std::string server_version;   ///< server_info version when given
  bool synthetic_model = false; ///< the server says its model is synthetic (sim-server)
  std::string synthetic_note;   ///< its own words about that

  /// The first sample with this name (and these labels, when given), if any.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
};

/// Options for a scrape.
struct ScrapeOptions {
  std::string base_url = "http://127.0.0.1:30000";
  double timeout_s = 10;
  bool metrics = true;     ///< GET /metrics
  bool server_info = true; ///< GET /server_info, falling back to /get_server_info on 404
  std::string api_key;     ///< "Authorization: Bearer ..." when not empty
};

/// Scrapes the endpoints. Never fails: problems are recorded in the snapshot.
ServerSnapshot scrape_server(const ScrapeOptions& options);

/// Server-side speculative figures for the interval between two snapshots.
struct ServerDelta {
  double interval_s = 0; ///< after.taken_at_s - before.taken_at_s
  std::map<std::string, double>
      counter_deltas; ///< key() -> after - before, for names ending "_total"
  std::map<std::string, double> gauges_after; ///< key() -> value after, for other names
  /// Acceptance length from counters, bonus token included, with where it came from:
  /// vLLM / llama.cpp: 1 + delta accepted / delta drafts; sim-server/SGLang-style counters:
  /// delta accepted tokens / delta verify steps. -1 when no counters were found.
  double acceptance_length = -1;
  std::string acceptance_source;     ///< e.g. "vllm:spec_decode_* counter deltas"
  /// Why acceptance_length is -1: no metrics, a speculative counter skipped (not finite, went
  /// down), or none in /metrics; "" when it is set.
  std::string acceptance_absent_reason;
  double draft_acceptance_rate = -1; ///< delta accepted / delta draft tokens, -1 = n/a
  /// SGLang's internal_states[0].avg_spec_accept_length after the run (server-cumulative since
  /// start or the last /flush_cache; lags up to 40 decode steps), as the server gave it (even
  /// when impossible: server_side_figures bounds it); absent when the server gave none.
  std::optional<double> sglang_avg_spec_accept_length_after;
  std::vector<std::string> notes; ///< caveats worth printing
};

/// Differences two snapshots (counters that went down, e.g. after a restart, are noted and
/// skipped; when `before` has no metrics but `after` has, counters are not differenced at all).
ServerDelta diff_snapshots(const ServerSnapshot& before, const ServerSnapshot& after);

/// The server's own figures for one measured run, from scrapes right before and right after it.
/// A side that did not answer makes the figures that need it absent, with the reason.
/// `max_tokens_per_step`: the most one verify step of the cell's method commits; counters that
/// give more (or a draft acceptance rate above 1), and an SGLang average outside 1 to that, are
/// not this run's or are wrong: they are left out with a note rather than reported beside the
/// measured figures.
ServerSideFigures server_side_figures(const ServerSnapshot& before, const ServerSnapshot& after,
                                      int max_tokens_per_step);

/// POST /flush_cache (SGLang: frees the prefix cache and resets speculative counters; only
/// works when the server is idle). Fails with the status and body when the server says no.
Status flush_cache(const ScrapeOptions& options);

} // namespace specbench
