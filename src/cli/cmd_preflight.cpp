// specbench preflight: the layered GPU check. Parses arguments, calls run_preflight, prints the
// table or the JSON, and maps the verdict to the exit code (0 pass/warn, 1 failed, 2 could not
// run).
#include "cli/command.hpp"

#include "specbench/preflight.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace specbench::cli {
namespace {

struct PreflightArgs {
  int tp = 1;
  std::string gpus;
  std::string model;
  std::string draft_model;
  bool json = false;
  double min_free_gib = 0;
  double alloc_mib = 64;
  double init_timeout_s = 15;
  double compute_timeout_s = 30;
  double interconnect_timeout_s = 60;
  bool no_gemm = false, no_nccl = false, no_bandwidth = false;
  std::vector<std::string> library_path;
  std::string root = "/";
};

const Registrar register_preflight_command{Command{
    "preflight", 20, [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<PreflightArgs>();
      auto* sub = app.add_subcommand(
          "preflight", "Check every layer of the GPU stack (host, driver, CUDA, compute, "
                       "interconnect, model) and say which one is broken and why");
      // Ranges are checked in the command, not by CLI11, so that --json still prints JSON.
      auto* tp = sub->add_option("--tp", args->tp, "GPUs in the tensor-parallel group (1..64)");
      sub->add_option("--gpus", args->gpus, "CUDA ordinals to use, e.g. 0,1,2,3 or 0-3")
          ->check(non_empty);
      sub->add_option("--model", args->model, "model directory to check (config, safetensors, fit)")
          ->check(non_empty);
      sub->add_option("--draft-model", args->draft_model,
                      "drafter directory the speculative cells load (config, safetensors, fit "
                      "beside --model)")
          ->check(non_empty);
      sub->add_flag("--json", args->json, "print the report as JSON (schema_version 1)");
      sub->add_option("--min-free-gib", args->min_free_gib, "fail if a planned GPU has less free");
      sub->add_option("--alloc-mib", args->alloc_mib, "test allocation per GPU (default 64)");
      sub->add_option("--init-timeout", args->init_timeout_s, "seconds for cuInit/count (15)");
      sub->add_option("--compute-timeout", args->compute_timeout_s,
                      "seconds per compute step (30)");
      sub->add_option("--interconnect-timeout", args->interconnect_timeout_s,
                      "seconds per interconnect step (60)");
      sub->add_flag("--no-gemm", args->no_gemm, "skip the cuBLAS GEMM");
      sub->add_flag("--no-nccl", args->no_nccl, "skip the NCCL all-reduce");
      sub->add_flag("--no-bandwidth", args->no_bandwidth, "skip the bandwidth figure");
      sub->add_option("--library-path", args->library_path,
                      "directories searched first for the driver libraries");
      sub->add_option("--root", args->root,
                      "read /dev, /proc, /sys under this directory (tests, chroots; default /)")
          ->check(non_empty);
      return [args, tp]() -> int {
        PreflightPlan plan;
        plan.tp = args->tp;
        // Bad arguments: exit 2, and with --json a could-not-run report rather than nothing.
        const auto refuse = [&](const Status& st) {
          if (args->json) {
            PreflightReport r;
            r.plan = plan;
            r.run_error = st;
            std::cout << r.to_json(2) << "\n";
          } else {
            std::fprintf(stderr, "specbench preflight: %s\n", st.to_string().c_str());
          }
          return exit_could_not_run;
        };
        const auto in_range = [&](double v, double lo, double hi, const char* flag,
                                  const char* unit) -> Status {
          if (std::isfinite(v) && v >= lo && v <= hi)
            return {};
          char msg[160];
          std::snprintf(msg, sizeof msg, "%s %.10g is outside %.10g..%.10g %s", flag, v, lo, hi,
                        unit);
          return Status(StatusCode::invalid_argument, msg, "give a value in that range");
        };
        for (const Status& st :
             {in_range(args->tp, 1, 64, "--tp", "GPUs"),
              in_range(args->alloc_mib, 1, 1 << 20, "--alloc-mib", "MiB"),
              in_range(args->min_free_gib, 0, 1 << 20, "--min-free-gib", "GiB"),
              in_range(args->init_timeout_s, 0.1, 86400, "--init-timeout", "s"),
              in_range(args->compute_timeout_s, 0.1, 86400, "--compute-timeout", "s"),
              in_range(args->interconnect_timeout_s, 0.1, 86400, "--interconnect-timeout", "s")})
          if (!st)
            return refuse(st);
        if (!args->gpus.empty()) {
          auto list = parse_gpu_list(args->gpus);
          if (!list)
            return refuse(list.status());
          plan.gpus = *list;
          if (plan.gpus.size() > 64)
            return refuse(Status(StatusCode::invalid_argument,
                                 "--gpus lists " + std::to_string(plan.gpus.size()) +
                                     " GPUs; a TP group has at most 64",
                                 "list the GPUs of one TP group"));
          // --gpus alone sets the group's size; given with --tp, the two must agree.
          if (tp->count() == 0)
            plan.tp = static_cast<int>(plan.gpus.size());
        }
        plan.model_path = args->model;
        plan.draft_model_path = args->draft_model;
        plan.min_free_memory_bytes = static_cast<std::uint64_t>(args->min_free_gib * (1ull << 30));
        plan.allocation_bytes = static_cast<std::uint64_t>(args->alloc_mib * (1ull << 20));
        auto ms = [](double s) {
          return std::chrono::milliseconds(static_cast<long long>(s * 1000));
        };
        plan.timeouts.cuda_init = ms(args->init_timeout_s);
        plan.timeouts.compute = ms(args->compute_timeout_s);
        plan.timeouts.interconnect = ms(args->interconnect_timeout_s);
        plan.gemm = !args->no_gemm;
        plan.nccl = !args->no_nccl;
        plan.bandwidth = !args->no_bandwidth;
        plan.library_path = args->library_path;
        plan.root = args->root;
        const PreflightReport report = run_preflight(plan);
        if (args->json)
          std::cout << report.to_json(2) << "\n";
        else
          std::cout << report.to_table(stdout_is_tty());
        std::cout.flush();
        if (report.could_not_run())
          return exit_could_not_run;
        return report.passed() ? exit_ok : exit_check_failed;
      };
    }}};

} // namespace
} // namespace specbench::cli
