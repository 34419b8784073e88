// PreflightReport: verdicts, the JSON document (schema in docs/preflight.md) and the human table.
#include "core/json_text.hpp"
#include "specbench/build_info.hpp"
#include "specbench/preflight.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace specbench {

const char* to_string(PreflightLayer layer) noexcept {
  switch (layer) {
  case PreflightLayer::host:
    return "host";
  case PreflightLayer::driver:
    return "driver";
  case PreflightLayer::cuda_driver:
    return "cuda-driver";
  case PreflightLayer::compute:
    return "compute";
  case PreflightLayer::interconnect:
    return "interconnect";
  case PreflightLayer::model:
    return "model";
  }
  return "unknown";
}

const char* to_string(CheckStatus status) noexcept {
  switch (status) {
  case CheckStatus::pass:
    return "pass";
  case CheckStatus::warn:
    return "warn";
  case CheckStatus::fail:
    return "fail";
  case CheckStatus::skipped:
    return "skipped";
  }
  return "unknown";
}

bool PreflightReport::passed() const noexcept {
  if (could_not_run())
    return false;
  return std::none_of(checks.begin(), checks.end(),
                      [](const CheckResult& c) { return c.status == CheckStatus::fail; });
}

bool is_drafter_check(const std::string& id) noexcept {
  return id.rfind("model.draft_", 0) == 0;
}

bool PreflightReport::passed_without_drafter() const noexcept {
  if (could_not_run())
    return false;
  return std::none_of(checks.begin(), checks.end(), [](const CheckResult& c) {
    return c.status == CheckStatus::fail && !is_drafter_check(c.id);
  });
}

const CheckResult* PreflightReport::first_drafter_failure() const noexcept {
  for (const auto& c : checks)
    if (c.status == CheckStatus::fail && is_drafter_check(c.id))
      return &c;
  return nullptr;
}

bool PreflightReport::has_warnings() const noexcept {
  return std::any_of(checks.begin(), checks.end(),
                     [](const CheckResult& c) { return c.status == CheckStatus::warn; });
}

const char* PreflightReport::verdict() const noexcept {
  if (could_not_run())
    return "could-not-run";
  if (!passed())
    return "fail";
  return has_warnings() ? "warn" : "pass";
}

const CheckResult* PreflightReport::first_failure() const noexcept {
  // Host findings are evidence for the other layers' diagnoses: the headline is the first failure
  // of a deeper layer (whose diagnosis already cites the host evidence), else the host's own. The
  // drafter's come last: they stop only the cells that load it, not the machine or the target.
  const auto first = [&](auto&& pick) -> const CheckResult* {
    for (const auto& c : checks)
      if (c.status == CheckStatus::fail && pick(c))
        return &c;
    return nullptr;
  };
  if (const auto* c = first([](const CheckResult& c) {
        return c.layer != PreflightLayer::host && !is_drafter_check(c.id);
      }))
    return c;
  if (const auto* c = first([](const CheckResult& c) { return !is_drafter_check(c.id); }))
    return c;
  return first([](const CheckResult&) { return true; });
}

std::vector<const CheckResult*> PreflightReport::checks_of(PreflightLayer l) const {
  std::vector<const CheckResult*> out;
  for (const auto& c : checks)
    if (c.layer == l)
      out.push_back(&c);
  return out;
}

const CheckResult* PreflightReport::find(const std::string& id) const noexcept {
  for (const auto& c : checks)
    if (c.id == id)
      return &c;
  return nullptr;
}

const LayerResult& PreflightReport::layer(PreflightLayer l) const {
  for (const auto& r : layers)
    if (r.layer == l)
      return r;
  throw std::out_of_range("layer not in report");
}

std::string PreflightReport::to_json(int indent) const {
  using json = nlohmann::ordered_json;
  json j;
  j["schema_version"] = schema_version;
  j["tool"] = "specbench preflight";
  j["specbench_version"] = build_info::version;
  j["git_commit"] = build_info::git_commit;
  j["started_at"] = started_at;
  j["elapsed_ms"] = elapsed_ms;
  j["verdict"] = verdict();
  j["exit_code"] = could_not_run() ? 2 : passed() ? 0 : 1;
  if (could_not_run())
    j["error"] = {{"code", to_string(run_error.code())},
                  {"message", run_error.message()},
                  {"remedy", run_error.remedy()},
                  {"where", run_error.where()}};
  else
    j["error"] = nullptr;
  if (const auto* f = first_failure())
    j["first_failure"] = {{"id", f->id},
                          {"layer", to_string(f->layer)},
                          {"summary", f->summary},
                          {"diagnosis", f->diagnosis},
                          {"remedy", f->remedy}};
  else
    j["first_failure"] = nullptr;
  j["plan"] = {{"tp", plan.tp},
               {"gpus", plan.gpus},
               {"model_path", plan.model_path},
               {"draft_model_path", plan.draft_model_path},
               {"min_free_memory_bytes", plan.min_free_memory_bytes},
               {"allocation_bytes", plan.allocation_bytes},
               {"gemm", plan.gemm},
               {"bandwidth", plan.bandwidth},
               {"nccl", plan.nccl},
               {"timeouts_ms",
                {{"nvml", plan.timeouts.nvml.count()},
                 {"cuda_init", plan.timeouts.cuda_init.count()},
                 {"compute", plan.timeouts.compute.count()},
                 {"interconnect", plan.timeouts.interconnect.count()}}}};
  j["planned_gpus"] = planned_gpus;
  json h;
  h["hostname"] = host.hostname;
  h["kernel"] = host.kernel;
  h["container"] = host.container;
  h["driver_version"] = host.driver_version;
  h["kernel_module_version"] = host.kernel_module_version;
  h["cuda_driver_version"] = host.cuda_driver_version;
  h["cuda_runtime_version"] = host.cuda_runtime_version;
  h["nvml_device_count"] = host.nvml_device_count;
  h["cuda_device_count"] = host.cuda_device_count;
  h["cuda_visible_devices"] =
      host.cuda_visible_devices ? json(*host.cuda_visible_devices) : json(nullptr);
  h["nvidia_visible_devices"] =
      host.nvidia_visible_devices ? json(*host.nvidia_visible_devices) : json(nullptr);
  h["libcuda_path"] = host.libcuda_path;
  h["libnvidia_ml_path"] = host.libnvidia_ml_path;
  h["cuda_compiled"] = build_info::cuda_compiled;
  h["cuda_architectures"] = build_info::cuda_architectures;
  j["host"] = h;
  j["layers"] = json::array();
  for (const auto& l : layers)
    j["layers"].push_back(
        {{"layer", to_string(l.layer)},
         {"status", to_string(l.status)},
         {"elapsed_ms", l.elapsed_ms},
         {"blocked_by", l.blocked_by.empty() ? json(nullptr) : json(l.blocked_by)}});
  j["gpus"] = json::array();
  for (const auto& g : gpus)
    j["gpus"].push_back({{"cuda_ordinal", g.cuda_ordinal},
                         {"nvml_index", g.nvml_index},
                         {"planned", g.planned},
                         {"name", g.name},
                         {"uuid", g.uuid},
                         {"pci_bus_id", g.pci_bus_id},
                         {"compute_capability", g.compute_capability},
                         {"memory_total_bytes", g.memory_total_bytes},
                         {"memory_used_bytes", g.memory_used_bytes},
                         {"memory_free_bytes", g.memory_free_bytes},
                         {"bandwidth_gbps", g.bandwidth_gbps},
                         {"status", to_string(g.status)}});
  j["checks"] = json::array();
  for (const auto& c : checks) {
    json f = json::object();
    for (const auto& [k, v] : c.facts)
      f[k] = v;
    json cj = {{"id", c.id},
               {"layer", to_string(c.layer)},
               {"status", to_string(c.status)},
               {"gpu", c.gpu < 0 ? json(nullptr) : json(c.gpu)},
               {"summary", c.summary},
               {"elapsed_ms", c.elapsed_ms},
               {"facts", f}};
    cj["cuda_error"] =
        c.cuda_error ? json{{"code", c.cuda_error}, {"name", c.cuda_error_name}} : json(nullptr);
    cj["diagnosis"] = c.diagnosis.empty() ? json(nullptr) : json(c.diagnosis);
    cj["remedy"] = c.remedy.empty() ? json(nullptr) : json(c.remedy);
    j["checks"].push_back(std::move(cj));
  }
  return detail::ordered_json_text(j, indent);
}

std::string PreflightReport::to_table(bool colour) const {
  auto paint = [&](CheckStatus s) -> std::string {
    const char* word = s == CheckStatus::pass   ? "PASS"
                       : s == CheckStatus::warn ? "WARN"
                       : s == CheckStatus::fail ? "FAIL"
                                                : "SKIP";
    if (!colour)
      return word;
    const char* code = s == CheckStatus::pass   ? "\033[32m"
                       : s == CheckStatus::warn ? "\033[33m"
                       : s == CheckStatus::fail ? "\033[1;31m"
                                                : "\033[2m";
    return std::string(code) + word + "\033[0m";
  };
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-4s  %-12s  %-26s %8s  %s\n", "", "LAYER", "CHECK", "MS",
                "RESULT");
  out += line;
  for (const auto& c : checks) {
    std::snprintf(line, sizeof line, "  %-12s  %-26s %8.1f  ", to_string(c.layer), c.id.c_str(),
                  c.elapsed_ms);
    out += paint(c.status) + line + c.summary + "\n";
    if (c.status == CheckStatus::fail || c.status == CheckStatus::warn) {
      if (!c.diagnosis.empty())
        out += "        why: " + c.diagnosis + "\n";
      if (!c.remedy.empty())
        out += "        fix: " + c.remedy + "\n";
    }
  }
  out += "\nlayers:";
  for (const auto& l : layers) {
    std::snprintf(line, sizeof line, " %s %s %.0f ms%s;", to_string(l.layer), to_string(l.status),
                  l.elapsed_ms,
                  l.blocked_by.empty() ? "" : (" (blocked by " + l.blocked_by + ")").c_str());
    out += line;
  }
  out += "\n";
  if (could_not_run()) {
    out += "verdict: COULD NOT RUN: " + run_error.to_string() + "\n";
  } else if (const auto* f = first_failure()) {
    out += std::string("verdict: ") + paint(CheckStatus::fail) + " at layer " +
           to_string(f->layer) + " (" + f->id + "): " + f->summary + "\n";
    if (!f->diagnosis.empty())
      out += "  why: " + f->diagnosis + "\n";
    if (!f->remedy.empty())
      out += "  fix: " + f->remedy + "\n";
  } else {
    out += std::string("verdict: ") +
           paint(has_warnings() ? CheckStatus::warn : CheckStatus::pass) +
           (has_warnings() ? " (warnings above)" : "") + "\n";
  }
  std::snprintf(line, sizeof line, "total: %.0f ms\n", elapsed_ms);
  out += line;
  return out;
}

} // namespace specbench
