// Server-side figures: Prometheus /metrics and SGLang /server_info, scraped before and after a run.
#include "specbench/server_metrics.hpp"

#include "client/simple_http.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace specbench {
namespace {

using json = nlohmann::json;

double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string trim_url(std::string u) {
  while (!u.empty() && u.back() == '/')
    u.pop_back();
  return u;
}

bool ends_with(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

// Sum of a counter's delta over all its label sets (e.g. per model_name).
std::optional<double> sum_delta(const ServerDelta& d, const std::string& name) {
  std::optional<double> sum;
  for (const auto& [key, v] : d.counter_deltas)
    if (key == name || key.rfind(name + "{", 0) == 0)
      sum = sum.value_or(0) + v;
  return sum;
}

} // namespace

std::string PrometheusSample::key() const {
  if (labels.empty())
    return name;
  std::string k = name + "{";
  bool first = true;
  for (const auto& [l, v] : labels) {
    if (!first)
      k += ",";
    first = false;
    k += l + "=\"" + v + "\"";
  }
  return k + "}";
}

std::vector<PrometheusSample> parse_prometheus_text(std::string_view text) {
  std::vector<PrometheusSample> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ')
      line.remove_prefix(1);
    if (line.empty() || line.front() == '#')
      continue;
    PrometheusSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t')
      ++i;
    s.name = std::string(line.substr(0, i));
    if (s.name.empty())
      continue;
    bool ok = true;
    if (i < line.size() && line[i] == '{') {
      ++i;
      for (;;) {
        while (i < line.size() && (line[i] == ' ' || line[i] == ','))
          ++i;
        if (i >= line.size()) {
          ok = false;
          break;
        }
        if (line[i] == '}') {
          ++i;
          break;
        }
        const size_t eq = line.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          ok = false;
          break;
        }
        std::string label(line.substr(i, eq - i));
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) {
          ok = false;
          break;
        }
        s.labels[label] = value;
        i = j + 1;
      }
    }
    if (!ok)
      continue;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    std::string num(line.substr(i));
    if (auto sp = num.find_first_of(" \t"); sp != std::string::npos)
      num.resize(sp); // timestamp
    if (num.empty())
      continue;
    if (num == "+Inf" || num == "Inf")
      s.value = INFINITY;
    else if (num == "-Inf")
      s.value = -INFINITY;
    else if (num == "NaN")
      s.value = NAN;
    else {
      char* end = nullptr;
      s.value = std::strtod(num.c_str(), &end);
      if (!end || *end != '\0')
        continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double>
ServerSnapshot::value(const std::string& name,
                      const std::map<std::string, std::string>& labels) const {
  for (const auto& s : samples) {
    if (s.name != name)
      continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) {
        match = false;
        break;
      }
    }
    if (match)
      return s.value;
  }
  return std::nullopt;
}

ServerSnapshot scrape_server(const ScrapeOptions& options) {
  ServerSnapshot snap;
  snap.taken_at_s = now_epoch();
  const std::string base = trim_url(options.base_url);
  if (options.metrics) {
    auto r = detail::http_request(base + "/metrics", {}, options.timeout_s, {}, options.api_key);
    if (r.status == 200) {
      snap.samples = parse_prometheus_text(r.body);
      snap.metrics_ok = true;
      if (snap.samples.empty() && !r.body.empty()) {
        // llama.cpp older versions answer JSON here; keep it as "not Prometheus".
        snap.metrics_ok = false;
        snap.metrics_error = "/metrics answered 200 without Prometheus samples";
      }
    } else {
      snap.metrics_error =
          r.status ? "/metrics answered HTTP " + std::to_string(r.status) : "/metrics: " + r.error;
    }
  }
  if (options.server_info) {
    auto r =
        detail::http_request(base + "/server_info", {}, options.timeout_s, {}, options.api_key);
    if (r.status == 404)
      r = detail::http_request(base + "/get_server_info", {}, options.timeout_s, {},
                               options.api_key);
    if (r.status == 200) {
      json j = json::parse(r.body, nullptr, false);
      if (j.is_object()) {
        snap.server_info_ok = true;
        const json* info = &j;
        // PD disaggregation: {"decode": [{...}], "prefill": [...]}
        if (!j.contains("internal_states") && j.contains("decode") && j["decode"].is_array() &&
            !j["decode"].empty() && j["decode"][0].is_object())
          info = &j["decode"][0];
        if (auto it = info->find("internal_states"); it != info->end() && it->is_array()) {
          for (const auto& st : *it) {
            std::optional<double> v;
            if (st.is_object())
              if (auto a = st.find("avg_spec_accept_length"); a != st.end() && a->is_number())
                v = a->get<double>();
            snap.avg_spec_accept_length.push_back(v);
          }
        }
        if (auto it = info->find("model_path"); it != info->end() && it->is_string())
          snap.model_path = it->get<std::string>();
        if (auto it = info->find("version"); it != info->end() && it->is_string())
          snap.server_version = it->get<std::string>();
        if (auto it = info->find("synthetic_model"); it != info->end() && it->is_boolean())
          snap.synthetic_model = it->get<bool>();
        if (auto it = info->find("note");
            it != info->end() && it->is_string() && snap.synthetic_model)
          snap.synthetic_note = it->get<std::string>();
      } else {
        snap.server_info_error = "/server_info did not answer a JSON object";
      }
    } else {
      snap.server_info_error = r.status ? "/server_info answered HTTP " + std::to_string(r.status)
                                        : "/server_info: " + r.error;
    }
  }
  if (!snap.synthetic_model && snap.metrics_ok && snap.value("specbench_sim:synthetic_model"))
    snap.synthetic_model = true;
  return snap;
}

ServerDelta diff_snapshots(const ServerSnapshot& before, const ServerSnapshot& after) {
  ServerDelta d;
  d.interval_s = after.taken_at_s - before.taken_at_s;
  std::map<std::string, double> prev;
  for (const auto& s : before.samples)
    prev[s.key()] = s.value;
  // Without a "before" scrape every counter would count from 0: the server's lifetime totals
  // would pass for the interval's. Only gauges are kept then.
  const bool counters = before.metrics_ok || !after.metrics_ok;
  if (!counters)
    d.notes.push_back("no metrics before the interval (" + before.metrics_error +
                      "); counters not differenced");
  std::string spec_counter_skipped; // the first speculative counter left out, and why
  auto skipped = [&](const std::string& key, std::string note) {
    if (spec_counter_skipped.empty() && key.find("spec") != std::string::npos)
      spec_counter_skipped = note;
    d.notes.push_back(std::move(note));
  };
  for (const auto& s : after.samples) {
    const std::string k = s.key();
    if (ends_with(s.name, "_total") || ends_with(s.name, "_count") || ends_with(s.name, "_sum")) {
      if (!counters)
        continue;
      if (!std::isfinite(s.value) || (prev.count(k) && !std::isfinite(prev[k]))) {
        skipped(k, "counter " + k + " is not a finite number (NaN or Inf); skipped");
        continue;
      }
      auto it = prev.find(k);
      const double p = it == prev.end() ? 0.0 : it->second;
      if (s.value < p) {
        skipped(k, "counter " + k + " went down (server restarted?); skipped");
        continue;
      }
      d.counter_deltas[k] = s.value - p;
    } else {
      d.gauges_after[k] = s.value;
    }
  }
  auto ratio = [&](const char* num, const char* den, double add, const char* src) {
    auto n = sum_delta(d, num), m = sum_delta(d, den);
    if (!n || !m || *m <= 0 || d.acceptance_length >= 0)
      return;
    d.acceptance_length = add + *n / *m;
    d.acceptance_source = src;
  };
  ratio("specbench_sim:spec_accepted_tokens_total", "specbench_sim:spec_verify_steps_total", 0.0,
        "specbench_sim:spec_accepted_tokens_total / spec_verify_steps_total deltas (sim-server)");
  ratio("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_drafts_total", 1.0,
        "vLLM: 1 + delta spec_decode_num_accepted_tokens / delta spec_decode_num_drafts");
  ratio("llamacpp:spec_decode_num_accepted_tokens_total", "llamacpp:spec_decode_num_drafts_total",
        1.0, "llama.cpp: 1 + delta spec_decode_num_accepted_tokens / delta spec_decode_num_drafts");
  auto rate = [&](const char* num, const char* den) {
    auto n = sum_delta(d, num), m = sum_delta(d, den);
    if (n && m && *m > 0 && d.draft_acceptance_rate < 0)
      d.draft_acceptance_rate = *n / *m;
  };
  rate("specbench_sim:spec_correct_drafts_total", "specbench_sim:spec_proposed_drafts_total");
  rate("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total");
  rate("llamacpp:spec_decode_num_accepted_tokens_total",
       "llamacpp:spec_decode_num_draft_tokens_total");
  if (!after.avg_spec_accept_length.empty())
    d.sglang_avg_spec_accept_length_after = after.avg_spec_accept_length[0];
  if (d.sglang_avg_spec_accept_length_after)
    d.notes.push_back(
        "SGLang avg_spec_accept_length is cumulative since server start or the last "
        "/flush_cache, from DP rank 0 only, and lags up to decode_log_interval steps");
  if (d.acceptance_length < 0 && !after.metrics_ok)
    d.notes.push_back("no Prometheus metrics (" + after.metrics_error + ")");
  if (d.acceptance_length < 0)
    d.acceptance_absent_reason =
        !after.metrics_ok ? d.notes.back()
        : !counters
            ? "no metrics before the run (" + before.metrics_error + "); counters not differenced"
        : !spec_counter_skipped.empty() ? spec_counter_skipped
                                        : "no speculative counters in /metrics";
  if (after.synthetic_model)
    d.notes.push_back("the server's model is synthetic (specbench sim-server)");
  return d;
}

ServerSideFigures server_side_figures(const ServerSnapshot& before, const ServerSnapshot& after,
                                      int max_tokens_per_step) {
  auto why = [](bool ok_before, const std::string& err_before, bool ok_after,
                const std::string& err_after) -> std::string {
    if (!ok_before)
      return err_before + (ok_after ? " (before the run; it answered after)" : "");
    if (!ok_after)
      return err_after + " (after the run)";
    return {};
  };
  const ServerDelta d = diff_snapshots(before, after);
  ServerSideFigures f;
  f.interval_s = d.interval_s;
  f.metrics_ok = before.metrics_ok && after.metrics_ok;
  f.metrics_error =
      why(before.metrics_ok, before.metrics_error, after.metrics_ok, after.metrics_error);
  f.server_info_ok = before.server_info_ok && after.server_info_ok;
  f.server_info_error = why(before.server_info_ok, before.server_info_error, after.server_info_ok,
                            after.server_info_error);
  f.notes = d.notes;
  const auto number = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  if (!f.metrics_ok)
    f.acceptance_absent_reason = f.metrics_error;
  else if (d.acceptance_length < 0)
    f.acceptance_absent_reason = d.acceptance_absent_reason;
  if (f.metrics_ok && d.acceptance_length >= 0) {
    if (d.acceptance_length < 1 || d.acceptance_length > max_tokens_per_step + 1e-9) {
      f.notes.push_back("the server's counters give an acceptance length of " +
                        number(d.acceptance_length) + " (" + d.acceptance_source +
                        "), outside 1.." + std::to_string(max_tokens_per_step) +
                        ", what a step of this method commits: left out (another client's "
                        "traffic, or counters that are wrong)");
      f.acceptance_absent_reason = f.notes.back();
    } else {
      f.acceptance_length = d.acceptance_length;
      f.acceptance_source = d.acceptance_source;
    }
  }
  if (f.metrics_ok && d.draft_acceptance_rate >= 0) {
    if (d.draft_acceptance_rate > 1 + 1e-9)
      f.notes.push_back("the server's counters give a draft acceptance rate of " +
                        number(d.draft_acceptance_rate) +
                        ", more accepted drafts than proposed: left out");
    else
      f.draft_acceptance_rate = d.draft_acceptance_rate;
  }
  if (d.sglang_avg_spec_accept_length_after) {
    // The same bound as the counters: a step commits 1 to max_tokens_per_step tokens (a
    // negative average too: it is no "absent" marker here).
    const double avg = *d.sglang_avg_spec_accept_length_after;
    if (!std::isfinite(avg) || avg < 1 || avg > max_tokens_per_step + 1e-9) {
      f.sglang_avg_left_out = "SGLang's avg_spec_accept_length is " + number(avg) +
                              ", outside 1.." + std::to_string(max_tokens_per_step) +
                              ", what a step of this method commits: left out";
      f.notes.push_back(f.sglang_avg_left_out);
    } else {
      f.sglang_avg_spec_accept_length_after = avg;
    }
  }
  return f;
}

Status flush_cache(const ScrapeOptions& options) {
  auto r = detail::http_request(trim_url(options.base_url) + "/flush_cache", "{}",
                                options.timeout_s, "POST", options.api_key);
  if (r.status == 200)
    return Status::ok();
  return Status(r.status ? StatusCode::unavailable : StatusCode::io_error,
                r.status ? "/flush_cache answered HTTP " + std::to_string(r.status) + ": " +
                               r.body.substr(0, 200)
                         : "/flush_cache: " + r.error,
                "flush only while the server is idle", "flush_cache");
}

} // namespace specbench
