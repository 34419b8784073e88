// JSON form of cell results and the manifest (schema in docs/results_schema.md).
#include "core/json_text.hpp"
#include "results/json_detail.hpp"

#include "config/workload_json.hpp"

#include "specbench/results.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <climits>
#include <cstdint>
#include <limits>

namespace specbench {

using nlohmann::json;

namespace {

constexpr std::array<const char*, 5> kStatusNames = {"ok", "failed", "blocked", "skipped",
                                                     "interrupted"};
constexpr std::array<const char*, 8> kStageNames = {"preflight", "launch", "readiness",  "warmup",
                                                    "measure",   "stop",   "gpu_memory", "runner"};

// Embeds a JSON text as an object; text that is not JSON is kept as a string, "" as null.
json embed(const std::string& text) {
  if (text.empty())
    return nullptr;
  auto j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return text;
  return j;
}
std::string unembed(const json& j) {
  if (j.is_null())
    return {};
  if (j.is_string())
    return j.get<std::string>();
  return detail::json_text(j);
}

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}
// A required number. JSON has no NaN or infinity, so the writer stores a non-finite value (an
// overflowed spread, say) as null; it reads back as NaN instead of making the file unreadable.
double real(const json& j, const char* key) {
  const json& v = j.at(key);
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}
// A whole number in [lo, hi] under `key`: nlohmann's get<int> wraps 10^12 to a negative number
// and truncates 96.5, so a damaged or edited file would be read as a different result.
int64_t whole_value(const json& v, const char* key, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) { // nlohmann's type for every integer >= 0
    const uint64_t x = v.get<uint64_t>();
    if (x <= static_cast<uint64_t>(INT64_MAX) && static_cast<int64_t>(x) >= lo &&
        static_cast<int64_t>(x) <= hi)
      return static_cast<int64_t>(x);
  } else if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x >= lo && x <= hi)
      return x;
  }
  throw std::runtime_error(std::string(key) + " is " + v.dump().substr(0, 40) +
                           ", not a whole number from " + std::to_string(lo) + " to " +
                           std::to_string(hi));
}
int whole(const json& j, const char* key, int lo = 0, int hi = INT32_MAX) {
  return static_cast<int>(whole_value(j.at(key), key, lo, hi));
}
int whole_or(const json& j, const char* key, int fallback, int lo = 0, int hi = INT32_MAX) {
  auto it = j.find(key);
  return it == j.end() ? fallback : static_cast<int>(whole_value(*it, key, lo, hi));
}
std::vector<int> wholes(const json& j, const char* key) {
  std::vector<int> out;
  for (const auto& v : j.at(key))
    out.push_back(static_cast<int>(whole_value(v, key, 0, INT32_MAX)));
  return out;
}
std::optional<double> opt_double(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return std::nullopt;
  return it->get<double>();
}

} // namespace

const char* to_string(CellStatus s) noexcept {
  return kStatusNames[static_cast<size_t>(s)];
}
std::optional<CellStatus> cell_status_from_string(const std::string& s) noexcept {
  for (size_t i = 0; i < kStatusNames.size(); ++i)
    if (s == kStatusNames[i])
      return static_cast<CellStatus>(i);
  return std::nullopt;
}
const char* to_string(CellStage s) noexcept {
  return kStageNames[static_cast<size_t>(s)];
}
std::optional<CellStage> cell_stage_from_string(const std::string& s) noexcept {
  for (size_t i = 0; i < kStageNames.size(); ++i)
    if (s == kStageNames[i])
      return static_cast<CellStage>(i);
  return std::nullopt;
}

namespace detail {

json distribution_to_json(const Distribution& d) {
  if (d.count == 0) // no value at all: null, not a 0 tok/s or 0 ms that a reader would take
    return {{"count", 0},     {"mean", nullptr}, {"stddev", nullptr}, {"min", nullptr},
            {"max", nullptr}, {"p50", nullptr},  {"p90", nullptr},    {"p99", nullptr}};
  return {{"count", d.count}, {"mean", d.mean}, {"stddev", d.stddev}, {"min", d.min},
          {"max", d.max},     {"p50", d.p50},   {"p90", d.p90},       {"p99", d.p99}};
}
Distribution distribution_from_json(const json& j) {
  Distribution d;
  d.count = whole(j, "count");
  if (d.count == 0)
    return d; // the zeros in memory that every reader checks `count` against
  d.mean = real(j, "mean");
  d.stddev = real(j, "stddev");
  d.min = real(j, "min");
  d.max = real(j, "max");
  d.p50 = real(j, "p50");
  d.p90 = real(j, "p90");
  d.p99 = real(j, "p99");
  return d;
}

json method_to_json(const Method& m) {
  return {{"id", m.id()},
          {"kind", m.kind_name()},
          {"block", m.block},
          {"budget", m.budget},
          {"verify_width", m.verify_width()}};
}
Method method_from_json(const json& j) {
  Method m;
  const auto kind = j.at("kind").get<std::string>();
  if (kind == "autoregressive")
    m.kind = MethodKind::autoregressive;
  else if (kind == "linear")
    m.kind = MethodKind::linear;
  else if (kind == "tree")
    m.kind = MethodKind::tree;
  else
    throw std::runtime_error("unknown method kind '" + kind + "'");
  m.block = whole(j, "block");
  m.budget = whole(j, "budget");
  return m;
}

json workload_to_json(const Workload& w) {
  return detail::workload_json(w);
}
Workload workload_from_json(const json& j) {
  Workload w;
  w.name = j.at("name").get<std::string>();
  w.dataset = j.value("dataset", std::string());
  w.prompt_tokens = whole_or(j, "prompt_tokens", 0);
  w.max_prompt_tokens = whole_or(j, "max_prompt_tokens", 0);
  w.max_new_tokens = whole_or(j, "max_new_tokens", 0);
  w.concurrency = whole_or(j, "concurrency", 1);
  w.requests = whole_or(j, "requests", 0);
  w.warmup = whole_or(j, "warmup", 0);
  w.runs = whole_or(j, "runs", 1);
  w.temperature = j.value("temperature", 0.0);
  w.seed = j.value("seed", uint64_t{0});
  w.ignore_eos = j.value("ignore_eos", true);
  return w;
}

json provenance_to_json(const Provenance& p) {
  return {{"specbench",
           {{"argv", p.specbench_argv},
            {"version", p.specbench_version},
            {"git_commit", p.specbench_commit},
            {"hostname", p.hostname}}},
          {"sweep", {{"name", p.sweep_name}, {"file", p.sweep_file}, {"hash", p.sweep_hash}}},
          {"server", {{"argv", p.server_argv}, {"version", p.server_version}}},
          {"gpu",
           {{"names", p.gpu_names},
            {"driver_version", p.driver_version},
            {"cuda_version", p.cuda_version}}},
          {"preflight", embed(p.preflight_json)}};
}
Provenance provenance_from_json(const json& j) {
  Provenance p;
  const auto& s = j.at("specbench");
  p.specbench_argv = s.at("argv").get<std::vector<std::string>>();
  p.specbench_version = s.at("version").get<std::string>();
  p.specbench_commit = s.at("git_commit").get<std::string>();
  p.hostname = s.value("hostname", std::string());
  const auto& sw = j.at("sweep");
  p.sweep_name = sw.value("name", std::string());
  p.sweep_file = sw.value("file", std::string());
  p.sweep_hash = sw.value("hash", std::string());
  const auto& sv = j.at("server");
  p.server_argv = sv.at("argv").get<std::vector<std::string>>();
  p.server_version = sv.value("version", std::string());
  const auto& g = j.at("gpu");
  p.gpu_names = g.at("names").get<std::vector<std::string>>();
  p.driver_version = g.value("driver_version", std::string());
  p.cuda_version = g.value("cuda_version", std::string());
  p.preflight_json = unembed(j.value("preflight", json()));
  return p;
}

json request_to_json(const RequestMetrics& r) {
  json j = {{"run", r.run},
            {"index", r.index},
            {"ok", r.ok},
            {"http_status", r.http_status},
            {"prompt_tokens", r.prompt_tokens},
            {"output_tokens", r.output_tokens},
            {"start_s", r.start_s},
            {"ttft_s", r.ttft_s},
            {"e2e_s", r.e2e_s},
            {"tpot_s", r.tpot_s()},
            {"itl_s", r.itl_s},
            {"verify_steps", r.verify_steps >= 0 ? json(r.verify_steps) : json(nullptr)}};
  if (!r.error.empty())
    j["error"] = r.error;
  return j;
}
RequestMetrics request_from_json(const json& j) {
  RequestMetrics r;
  r.run = whole(j, "run");
  r.index = whole(j, "index");
  r.ok = j.at("ok").get<bool>();
  r.error = j.value("error", std::string());
  r.http_status = whole_or(j, "http_status", 0);
  r.prompt_tokens = whole_or(j, "prompt_tokens", 0);
  r.output_tokens = whole(j, "output_tokens");
  r.start_s = j.value("start_s", 0.0);
  r.ttft_s = real(j, "ttft_s");
  r.e2e_s = real(j, "e2e_s");
  r.itl_s = j.value("itl_s", std::vector<double>{});
  const auto v = j.find("verify_steps");
  r.verify_steps =
      (v == j.end() || v->is_null()) ? -1 : whole_value(*v, "verify_steps", -1, INT64_MAX);
  return r;
}

json server_side_to_json(const ServerSideFigures& s) {
  auto text = [](const std::string& t) { return t.empty() ? json(nullptr) : json(t); };
  return {{"interval_s", s.interval_s},
          {"metrics_ok", s.metrics_ok},
          {"metrics_error", text(s.metrics_error)},
          {"server_info_ok", s.server_info_ok},
          {"server_info_error", text(s.server_info_error)},
          {"acceptance_length", opt(s.acceptance_length)},
          {"acceptance_source", text(s.acceptance_source)},
          {"draft_acceptance_rate", opt(s.draft_acceptance_rate)},
          {"acceptance_absent_reason", text(s.acceptance_absent_reason)},
          {"sglang_avg_spec_accept_length_after", opt(s.sglang_avg_spec_accept_length_after)},
          {"sglang_avg_left_out", text(s.sglang_avg_left_out)},
          {"notes", s.notes}};
}
ServerSideFigures server_side_from_json(const json& j) {
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? std::string() : it->get<std::string>();
  };
  ServerSideFigures s;
  s.interval_s = j.value("interval_s", 0.0);
  s.metrics_ok = j.at("metrics_ok").get<bool>();
  s.metrics_error = text("metrics_error");
  s.server_info_ok = j.at("server_info_ok").get<bool>();
  s.server_info_error = text("server_info_error");
  s.acceptance_length = opt_double(j, "acceptance_length");
  s.acceptance_source = text("acceptance_source");
  s.draft_acceptance_rate = opt_double(j, "draft_acceptance_rate");
  s.acceptance_absent_reason = text("acceptance_absent_reason");
  s.sglang_avg_spec_accept_length_after = opt_double(j, "sglang_avg_spec_accept_length_after");
  s.sglang_avg_left_out = text("sglang_avg_left_out");
  s.notes = j.value("notes", std::vector<std::string>{});
  return s;
}

json run_to_json(const RunSummary& r) {
  return {{"run", r.run},
          {"requests", r.requests},
          {"failed", r.failed},
          {"duration_s", r.duration_s},
          {"output_tokens", r.output_tokens},
          {"output_tokens_per_s", r.output_tokens_per_s},
          {"acceptance_length", opt(r.acceptance_length)},
          {"server_side", r.server_side ? server_side_to_json(*r.server_side) : json(nullptr)}};
}
RunSummary run_from_json(const json& j) {
  RunSummary r;
  r.run = whole(j, "run");
  r.requests = whole(j, "requests");
  r.failed = whole(j, "failed");
  r.duration_s = real(j, "duration_s");
  r.output_tokens = whole_value(j.at("output_tokens"), "output_tokens", 0, INT64_MAX);
  r.output_tokens_per_s = real(j, "output_tokens_per_s");
  r.acceptance_length = opt_double(j, "acceptance_length");
  // Optional: results written before specbench recorded server-side figures have no key.
  if (auto it = j.find("server_side"); it != j.end() && !it->is_null())
    r.server_side = server_side_from_json(*it);
  return r;
}

json summary_to_json(const CellSummary& c) {
  return {{"runs", c.runs},
          {"requests", c.requests},
          {"failed", c.failed},
          {"output_tokens_per_s", distribution_to_json(c.output_tokens_per_s)},
          {"ttft_s", distribution_to_json(c.ttft_s)},
          {"tpot_s", distribution_to_json(c.tpot_s)},
          {"itl_s", distribution_to_json(c.itl_s)},
          {"e2e_s", distribution_to_json(c.e2e_s)},
          {"acceptance_length", opt(c.acceptance_length)},
          {"acceptance_length_runs", distribution_to_json(c.acceptance_length_runs)}};
}
CellSummary summary_from_json(const json& j) {
  CellSummary c;
  c.runs = whole(j, "runs");
  c.requests = whole(j, "requests");
  c.failed = whole(j, "failed");
  c.output_tokens_per_s = distribution_from_json(j.at("output_tokens_per_s"));
  c.ttft_s = distribution_from_json(j.at("ttft_s"));
  c.tpot_s = distribution_from_json(j.at("tpot_s"));
  c.itl_s = distribution_from_json(j.at("itl_s"));
  c.e2e_s = distribution_from_json(j.at("e2e_s"));
  c.acceptance_length = opt_double(j, "acceptance_length");
  c.acceptance_length_runs = distribution_from_json(j.at("acceptance_length_runs"));
  return c;
}

json cell_result_to_json(const CellResult& r) {
  json failure = nullptr;
  if (r.failure) {
    failure = {
        {"stage", to_string(r.failure->stage)},        {"reason", r.failure->reason},
        {"diagnosis", r.failure->diagnosis},           {"log_tail", r.failure->log_tail},
        {"server_crashed", r.failure->server_crashed}, {"points_at_gpu", r.failure->points_at_gpu}};
  }
  json requests = json::array();
  for (const auto& q : r.requests)
    requests.push_back(request_to_json(q));
  json runs = json::array();
  for (const auto& s : r.runs)
    runs.push_back(run_to_json(s));
  return {{"schema_version", r.schema_version},
          {"kind", "specbench.cell_result"},
          {"cell_id", r.cell_id},
          {"phase_id", r.phase_id},
          {"config_hash", r.config_hash},
          {"tp", r.tp},
          {"gpus", r.gpus},
          {"method", method_to_json(r.method)},
          {"workload", workload_to_json(r.workload)},
          {"status", to_string(r.status)},
          {"failure", failure},
          {"notes", r.notes},
          {"started_at", r.started_at},
          {"finished_at", r.finished_at},
          {"wall_s", r.wall_s},
          {"readiness_s", r.readiness_s},
          {"attempt", r.attempt},
          {"provenance", provenance_to_json(r.provenance)},
          {"summary", summary_to_json(r.summary)},
          {"runs", runs},
          {"requests", requests}};
}

CellResult cell_result_from_json_obj(const json& j) {
  CellResult r;
  r.schema_version = j.at("schema_version").get<int>();
  if (r.schema_version != results_schema_version)
    throw std::runtime_error("schema_version " + std::to_string(r.schema_version) +
                             " is not the supported " + std::to_string(results_schema_version));
  r.cell_id = j.at("cell_id").get<std::string>();
  r.phase_id = j.at("phase_id").get<std::string>();
  r.config_hash = j.at("config_hash").get<std::string>();
  r.tp = whole(j, "tp", 1);
  r.gpus = wholes(j, "gpus");
  r.method = method_from_json(j.at("method"));
  r.workload = workload_from_json(j.at("workload"));
  const auto status = cell_status_from_string(j.at("status").get<std::string>());
  if (!status)
    throw std::runtime_error("unknown status '" + j.at("status").dump() + "'");
  r.status = *status;
  const auto& f = j.at("failure");
  if (!f.is_null()) {
    CellFailure cf;
    const auto stage = cell_stage_from_string(f.at("stage").get<std::string>());
    if (!stage)
      throw std::runtime_error("unknown failure stage " + f.at("stage").dump());
    cf.stage = *stage;
    cf.reason = f.at("reason").get<std::string>();
    cf.diagnosis = f.value("diagnosis", std::string());
    cf.log_tail = f.value("log_tail", std::string());
    cf.server_crashed = f.value("server_crashed", false);
    cf.points_at_gpu = f.value("points_at_gpu", false);
    r.failure = cf;
  }
  r.notes = j.value("notes", std::vector<std::string>{});
  r.started_at = j.value("started_at", std::string());
  r.finished_at = j.value("finished_at", std::string());
  r.wall_s = j.value("wall_s", 0.0);
  r.readiness_s = j.value("readiness_s", 0.0);
  r.attempt = whole_or(j, "attempt", 1, 1);
  r.provenance = provenance_from_json(j.at("provenance"));
  r.summary = summary_from_json(j.at("summary"));
  for (const auto& s : j.at("runs"))
    r.runs.push_back(run_from_json(s));
  for (const auto& q : j.at("requests"))
    r.requests.push_back(request_from_json(q));
  return r;
}

json manifest_to_json_obj(const Manifest& m) {
  json phases = json::array();
  for (const auto& p : m.phases) {
    json cells = json::array();
    for (const auto& c : p.cells)
      cells.push_back({{"id", c.id},
                       {"config_hash", c.config_hash},
                       {"method", c.method},
                       {"workload", c.workload},
                       {"status", c.status},
                       {"file", c.file}});
    phases.push_back({{"id", p.id},
                      {"tp", p.tp},
                      {"gpus", p.gpus},
                      {"preflight", p.preflight},
                      {"preflight_report", embed(p.preflight_json)},
                      {"cells", cells}});
  }
  return {{"schema_version", m.schema_version},
          {"kind", "specbench.manifest"},
          {"sweep", {{"name", m.sweep_name}, {"file", m.sweep_file}, {"hash", m.sweep_hash}}},
          {"specbench",
           {{"argv", m.specbench_argv},
            {"version", m.specbench_version},
            {"git_commit", m.specbench_commit}}},
          {"started_at", m.started_at},
          {"updated_at", m.updated_at},
          {"state", m.state},
          {"phases", phases}};
}

Manifest manifest_from_json_obj(const json& j) {
  Manifest m;
  m.schema_version = j.at("schema_version").get<int>();
  if (m.schema_version != results_schema_version)
    throw std::runtime_error("schema_version " + std::to_string(m.schema_version) +
                             " is not the supported " + std::to_string(results_schema_version));
  const auto& sw = j.at("sweep");
  m.sweep_name = sw.value("name", std::string());
  m.sweep_file = sw.value("file", std::string());
  m.sweep_hash = sw.value("hash", std::string());
  const auto& s = j.at("specbench");
  m.specbench_argv = s.value("argv", std::vector<std::string>{});
  m.specbench_version = s.value("version", std::string());
  m.specbench_commit = s.value("git_commit", std::string());
  m.started_at = j.value("started_at", std::string());
  m.updated_at = j.value("updated_at", std::string());
  m.state = j.value("state", std::string());
  for (const auto& pj : j.at("phases")) {
    ManifestPhase p;
    p.id = pj.at("id").get<std::string>();
    p.tp = whole_or(pj, "tp", 1, 1);
    p.gpus = pj.contains("gpus") ? wholes(pj, "gpus") : std::vector<int>{};
    p.preflight = pj.value("preflight", std::string());
    p.preflight_json = unembed(pj.value("preflight_report", json()));
    for (const auto& cj : pj.at("cells")) {
      ManifestCell c;
      c.id = cj.at("id").get<std::string>();
      c.config_hash = cj.value("config_hash", std::string());
      c.method = cj.value("method", std::string());
      c.workload = cj.value("workload", std::string());
      c.status = cj.value("status", std::string());
      c.file = cj.value("file", std::string());
      p.cells.push_back(std::move(c));
    }
    m.phases.push_back(std::move(p));
  }
  return m;
}

} // namespace detail

std::string to_json(const CellResult& result) {
  // replace: a byte that is not UTF-8 must not cost the result (text is repaired where it enters;
  // this is the last guard).
  return detail::json_text(detail::cell_result_to_json(result), 2) + "\n";
}

Expected<CellResult> cell_result_from_json(const std::string& text) {
  try {
    return detail::cell_result_from_json_obj(json::parse(text));
  } catch (const std::exception& e) {
    return Status(StatusCode::invalid_argument,
                  std::string("not a specbench cell result: ") + e.what(),
                  "move the file aside or re-run the cell with --fresh", "cell_result_from_json");
  }
}

std::string to_json(const Manifest& manifest) {
  return detail::json_text(detail::manifest_to_json_obj(manifest), 2) + "\n";
}

Expected<Manifest> manifest_from_json(const std::string& text) {
  try {
    return detail::manifest_from_json_obj(json::parse(text));
  } catch (const std::exception& e) {
    return Status(StatusCode::invalid_argument,
                  std::string("not a specbench manifest: ") + e.what(),
                  "move the results directory aside or run with --fresh", "manifest_from_json");
  }
}

} // namespace specbench
