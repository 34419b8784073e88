// Preflight only: ask specbench whether this machine can run a TP group, the way a user's own
// scheduler would before it starts an expensive job. Prints the table and acts on the verdict.
//
//   example_preflight_only [TP] [MODEL_DIR]
//
// Exit codes: 0 the machine is ready; 77 it is not (e.g. no GPU here: that is the answer, not a
// bug, so CTest reports it as skipped); 2 the preflight could not run.
#include "specbench/preflight.hpp"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  specbench::PreflightPlan plan;
  plan.tp = argc > 1 ? std::atoi(argv[1]) : 1;
  if (argc > 2) plan.model_path = argv[2];
  plan.bandwidth = false; // a scheduler wants the answer fast; the figure is not needed here

  if (const auto bad = specbench::validate_plan(plan); !bad.is_ok()) {
    std::fprintf(stderr, "bad plan: %s\n", bad.to_string().c_str());
    return 2;
  }
  const specbench::PreflightReport report = specbench::run_preflight(plan);
  std::printf("%s\n", report.to_table().c_str());
  if (report.could_not_run()) {
    std::fprintf(stderr, "preflight could not run: %s\n", report.run_error.to_string().c_str());
    return 2;
  }
  if (report.passed()) {
    std::printf("ready: TP%d in %.0f ms\n", plan.tp, report.elapsed_ms);
    return 0;
  }
  const specbench::CheckResult* first = report.first_failure();
  std::printf("not ready: %s (%s layer)\n  why: %s\n  fix: %s\n",
              first ? first->id.c_str() : "?", first ? specbench::to_string(first->layer) : "?",
              first ? first->diagnosis.c_str() : "", first ? first->remedy.c_str() : "");
  return 77;
}
