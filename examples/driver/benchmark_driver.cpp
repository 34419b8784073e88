// A custom benchmark driver: builds a small matrix in code (autoregressive, a DFlash-style chain
// and DDTree budgets at TP1), runs it through the specbench library against the simulated server,
// and prints its own summary from the stored results.
//
//   benchmark_driver /path/to/specbench [results-dir]
//
// Any OpenAI-compatible or SGLang server works the same way: change `launch` and `method_args`.
#include <specbench/config.hpp>
#include <specbench/matrix.hpp>
#include <specbench/report.hpp>
#include <specbench/runner.hpp>

#include <cstdio>
#include <string>

using namespace specbench;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SPECBENCH_EXECUTABLE [RESULTS_DIR]\n", argv[0]);
    return 2;
  }
  const std::string specbench_exe = argv[1];
  const std::string results = argc > 2 ? argv[2] : "driver-results";

  Sweep sweep;
  sweep.name = "driver-example";
  sweep.description = "built in code by examples/driver";
  sweep.gpus = 1;
  sweep.model.name = "synthetic";
  sweep.model.path = "synthetic";
  sweep.model.context_length = 4096;
  sweep.server.readiness_timeout_s = 20;
  sweep.server.request_timeout_s = 20;
  sweep.server.stop_grace_s = 3;
  // A per-pass cost that dominates the per-token cost, as in memory-bound decoding on a GPU, and
  // a drafter that agrees with the target 90% of the time (both synthetic, both stated).
  sweep.server.launch = {
      "{specbench}",         "sim-server", "--host",        "{host}", "--port",          "{port}",
      "--model-path",        "{model}",    "--agreement",   "0.9",    "--cost-fixed-us", "3000",
      "--cost-per-token-us", "20",         "--load-time-s", "0.1"};
  sweep.server.method_args["linear"] = {"--speculative-algorithm", "DFLASH",
                                        "--speculative-num-draft-tokens", "{block}"};
  sweep.server.method_args["tree"] = {"--speculative-algorithm",        "DDTREE",
                                      "--speculative-num-draft-tokens", "{block}",
                                      "--speculative-ddtree-budget",    "{budget}"};
  sweep.phases = {PhaseSpec{}}; // TP1 on GPU 0
  sweep.methods = {Method{MethodKind::autoregressive, 0, 0}, Method{MethodKind::linear, 8, 0},
                   Method{MethodKind::tree, 8, 8}, Method{MethodKind::tree, 8, 16}};
  Workload w;
  w.name = "synthetic";
  w.prompt_tokens = 32;
  w.max_new_tokens = 64;
  w.concurrency = 2;
  w.requests = 6;
  w.warmup = 1;
  w.runs = 2;
  sweep.workloads = {w};
  sweep.runner.preflight = false; // the simulated server needs no GPU

  for (const auto& d : validate_sweep(sweep))
    if (d.severity == Severity::error) {
      std::fprintf(stderr, "%s\n", d.to_string().c_str());
      return 2;
    }
  auto matrix = expand_matrix(sweep, PlanContext{specbench_exe});
  if (!matrix) {
    std::fprintf(stderr, "%s\n", matrix.status().to_string().c_str());
    return 2;
  }

  RunnerOptions options;
  options.results_dir = results;
  options.fresh = true; // a driver run measures anew every time
  options.argv = {argv[0], specbench_exe, results};
  options.on_event = [](const RunnerEvent& e) {
    if (e.kind == RunnerEventKind::cell_finished)
      std::printf("  %-26s %s %s\n", e.cell_id.c_str(), e.status.c_str(), e.message.c_str());
  };
  std::printf("driver: %zu cells on the simulated server (synthetic model)\n",
              matrix->cell_count());
  auto outcome = run_sweep(sweep, *matrix, options);
  if (!outcome) {
    std::fprintf(stderr, "driver: %s\n", outcome.status().to_string().c_str());
    return 2;
  }

  // The driver's own summary, from the library's report model.
  auto report = load_report(outcome->results_dir);
  if (!report) {
    std::fprintf(stderr, "driver: %s\n", report.status().to_string().c_str());
    return 2;
  }
  std::printf("\n%-26s %10s %9s %11s %9s\n", "cell", "tok/s", "speedup", "acceptance", "TPOT p50");
  for (const auto& phase : report->phases)
    for (const auto& c : phase.cells)
      std::printf("%-26s %10.1f %8.2fx %11.2f %7.2fms\n", c.cell_id.c_str(),
                  c.output_tokens_per_s.mean, c.speedup.value_or(0.0),
                  c.acceptance_length.value_or(0.0), c.tpot_s.p50 * 1e3);
  std::printf("(synthetic model: speedups are relative to the simulated costs, not GPU figures)\n");

  // The driver checks what it relies on: every cell measured, trees accept more than one token.
  if (outcome->exit_code() != 0)
    return 1;
  for (const auto& phase : report->phases)
    for (const auto& c : phase.cells)
      if (c.method.kind == MethodKind::tree && c.acceptance_length.value_or(0) <= 1.0) {
        std::fprintf(stderr, "driver: %s accepted no drafts\n", c.cell_id.c_str());
        return 1;
      }
  return 0;
}
