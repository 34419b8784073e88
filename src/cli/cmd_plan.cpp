// `specbench plan SWEEP.yaml [--json]`: validate a sweep and show its expanded matrix.
#include "cli/command.hpp"
#include "cli/print_diagnostics.hpp"

#include "core/json_text.hpp"
#include "specbench/config.hpp"
#include "specbench/matrix.hpp"
#include "specbench/runner.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace specbench::cli {
namespace {

std::string quote_for_display(const std::string& a) {
  // Display only: argv is never joined into a shell command.
  if (!a.empty() && a.find_first_of(" \t\"'$`\\{}") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string describe_workload(const Workload& w) {
  std::string s = w.name + ": ";
  s += w.prompt_tokens > 0 ? std::to_string(w.prompt_tokens) + "-token prompts"
                           : "dataset " + w.dataset.filename().string();
  s += ", " + std::to_string(w.max_new_tokens) + " new, concurrency " +
       std::to_string(w.concurrency) + ", " + std::to_string(w.requests) + " requests x " +
       std::to_string(w.runs) + " runs";
  if (w.temperature > 0) s += ", T=" + std::to_string(w.temperature).substr(0, 4);
  return s;
}

// Every finding as JSON, for --json: a script reading stdout gets them there too.
nlohmann::json diagnostics_json(const std::vector<Diagnostic>& diags) {
  auto out = nlohmann::json::array();
  for (const auto& d : diags)
    out.push_back({{"severity", d.severity == Severity::error ? "error" : "warning"},
                   {"file", d.file},
                   {"line", d.line},
                   {"column", d.column},
                   {"path", d.path},
                   {"message", d.message},
                   {"fix", d.fix}});
  return out;
}

int run_plan(const std::string& file, bool json) {
  const LoadResult loaded = load_sweep_file(file);
  print_diagnostics(loaded.diagnostics);
  if (!loaded.ok()) {
    std::fprintf(stderr, "specbench plan: %d error(s) in %s; nothing was planned\n",
                 loaded.error_count(), file.c_str());
    if (json)
      std::printf("%s\n", detail::json_text({{"schema_version", 1},
                                             {"kind", "specbench.plan"},
                                             {"ok", false},
                                             {"errors", loaded.error_count()},
                                             {"diagnostics", diagnostics_json(loaded.diagnostics)}},
                                            2)
                              .c_str());
    return exit_could_not_run;
  }
  const Sweep& sweep = *loaded.sweep;
  auto matrix = expand_matrix(sweep, plan_context_from_environment());
  if (!matrix) {
    std::fprintf(stderr, "specbench plan: %s\n", matrix.status().to_string().c_str());
    return exit_could_not_run;
  }
  if (json) {
    auto j = nlohmann::json::parse(matrix_to_json(*matrix, sweep));
    j["ok"] = true;
    j["diagnostics"] = diagnostics_json(loaded.diagnostics); // the warnings
    std::printf("%s\n", detail::json_text(j, 2).c_str());
    return exit_ok;
  }
  const auto ctx = resolve_context_length(sweep.model, allows_longer_context(sweep));
  // The name and the results folder as `specbench run` will use them (a sweep without a name
  // goes to results/sweep), so that the plan says where the results will be.
  std::printf("sweep %s: %zu phases, %zu cells, model %s, backend %s, context %s\n",
              sweep.name.empty() ? "(no name)" : sweep.name.c_str(), matrix->phases.size(),
              matrix->cell_count(), sweep.model.path.c_str(), to_string(sweep.server.backend),
              ctx ? (std::to_string(ctx->tokens) + " (" + ctx->source + ")").c_str() : "unknown");
  std::printf("results in %s (unless run --results says otherwise)\n",
              default_results_dir(sweep).string().c_str());
  for (const auto& p : matrix->phases) {
    std::string gpus;
    for (int g : p.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    std::printf("\nphase %s  (TP%d on GPUs %s, %zu cells)\n", p.id.c_str(), p.tp, gpus.c_str(),
                p.cells.size());
    std::printf("  %-34s %-15s %6s  %s\n", "cell", "method", "width", "workload");
    for (const auto& c : p.cells) {
      std::printf("  %-34s %-15s %6d  %s\n", c.id.c_str(), c.method.kind_name(),
                  c.method.verify_width(), describe_workload(c.workload).c_str());
      std::string argv;
      for (const auto& a : c.argv) argv += (argv.empty() ? "" : " ") + quote_for_display(a);
      std::printf("    argv: %s\n", argv.c_str());
    }
  }
  return exit_ok;
}

const Registrar register_plan_command{
    {"plan", 10, [](CLI::App& app) {
       auto* sub =
           app.add_subcommand("plan", "Validate a sweep file and print its expanded matrix");
       auto file = std::make_shared<std::string>();
       auto json = std::make_shared<bool>(false);
       sub->add_option("sweep", *file, "the sweep YAML file")->required();
       sub->add_flag("--json", *json, "print the matrix as JSON (schema_version 1)");
       return std::function<int()>([file, json] { return run_plan(*file, *json); });
     }}};

} // namespace
} // namespace specbench::cli
