// `specbench sim-server`: the simulated inference server (synthetic model, real speculative
// decoding, simulated costs, fault modes). Accepts SGLang-like flags so sweep templates look like
// real ones; unknown SGLang flags are accepted and ignored with a note.
#include "cli/command.hpp"

#include "specbench/sim_server.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <string>
#include <thread>

namespace specbench::cli {
namespace {

struct SimArgs {
  SimServerOptions o;
  std::string algorithm;
  int num_draft_tokens = 16;
  int ddtree_budget = 0;
  std::string fault = "none";
  double exit_delay_s = 0;
  bool quiet = false;
};

int run_sim_server(SimArgs& a, const std::vector<std::string>& extras) {
  auto fault = parse_sim_fault(a.fault);
  if (!fault) {
    std::fprintf(stderr, "sim-server: %s\n", fault.status().to_string().c_str());
    return exit_could_not_run;
  }
  a.o.fault = *fault;
  std::string algo;
  for (char c : a.algorithm)
    algo += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  a.o.algorithm_name = algo;
  if (algo.empty() || algo == "NONE") {
    a.o.algorithm_name.clear();
    a.o.decode = {MethodKind::autoregressive, 1, 0};
  } else if (algo == "DFLASH" && a.ddtree_budget <= 0) {
    a.o.decode = {MethodKind::linear, a.num_draft_tokens, 0};
  } else if (algo == "DDTREE" || algo == "DFLASH") {
    if (a.ddtree_budget <= 0) {
      std::fprintf(stderr, "sim-server: DDTREE needs --speculative-ddtree-budget B (B >= 1)\n");
      return exit_could_not_run;
    }
    a.o.decode = {MethodKind::tree, a.num_draft_tokens, a.ddtree_budget};
  } else {
    std::fprintf(stderr,
                 "sim-server: --speculative-algorithm must be DFLASH or DDTREE (got '%s')\n",
                 a.algorithm.c_str());
    return exit_could_not_run;
  }
  if (a.o.decode.kind != MethodKind::autoregressive && a.num_draft_tokens < 2) {
    std::fprintf(stderr, "sim-server: --speculative-num-draft-tokens must be at least 2\n");
    return exit_could_not_run;
  }
  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  SimServer server(a.o);
  server.set_echo_log(!a.quiet);
  if (!extras.empty()) {
    std::string list;
    for (const auto& e : extras)
      list += " " + e;
    std::fprintf(stderr, "sim-server: ignoring server flags it does not simulate:%s\n",
                 list.c_str());
  }
  if (Status st = server.start(); !st) {
    if (a.quiet) // the log, with the error, is not echoed: say it once here
      std::fprintf(stderr, "sim-server: %s\n", st.to_string().c_str());
    std::fflush(stderr);
    // A real server logs its error, then takes a while to tear down its workers before it exits.
    if (a.exit_delay_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(a.exit_delay_s));
    return a.o.fault.kind == SimFault::exit_start ? 3 : exit_check_failed;
  }
  std::fprintf(stdout, "sim-server listening on http://%s:%d (synthetic model)\n", a.o.host.c_str(),
               server.port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  std::fprintf(stderr, "sim-server: signal %d, shutting down\n", sig);
  server.stop();
  return exit_ok;
}

// A finite number in [lo, hi]: CLI::Range lets NaN through (every comparison with it is false),
// and a NaN agreement or cost would quietly change what the server simulates.
CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
          return "value " + text + " is not a number in [" + CLI::detail::to_string(lo) + ", " +
                 CLI::detail::to_string(hi) + "]";
        return {};
      },
      "NUMBER in [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]");
}

const Registrar register_sim_server_command{Command{
    "sim-server", 90, [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<SimArgs>();
      auto* sub = app.add_subcommand(
          "sim-server", "Run the simulated inference server (synthetic model, real speculative "
                        "decoding, simulated costs, fault modes)");
      sub->allow_extras();
      auto& o = args->o;
      sub->add_option("--host", o.host, "listen address")->capture_default_str();
      sub->add_option("--port", o.port, "listen port (0 = any free port)")
          ->check(CLI::Range(0, 65535))
          ->capture_default_str();
      sub->add_option("--tp-size,--tp", o.tp_size, "reported tensor parallelism")
          ->check(CLI::Range(1, 1024))
          ->capture_default_str();
      sub->add_option("--model-path,--model", o.model_path, "reported model name")
          ->capture_default_str();
      sub->add_option("--context-length", o.context_length, "context length in tokens")
          ->check(CLI::Range(1, 1 << 30))
          ->capture_default_str();
      sub->add_option("--speculative-algorithm", args->algorithm,
                      "DFLASH (chain) or DDTREE (tree)");
      // The sweep's limits: beyond them one verify step would take minutes of CPU, and the
      // server would answer nothing, not even SIGTERM, until it ended.
      sub->add_option("--speculative-num-draft-tokens", args->num_draft_tokens,
                      "drafter block size K incl. the root (chain verifies K tokens)")
          ->check(CLI::Range(1, Limits::max_block))
          ->capture_default_str();
      sub->add_option("--speculative-ddtree-budget", args->ddtree_budget, "DDTree node budget B")
          ->check(CLI::Range(0, Limits::max_budget));
      sub->add_option("--vocab", o.model.vocab, "synthetic vocabulary size")
          ->check(CLI::Range(2, 65536)) // the synthetic model's table
          ->capture_default_str();
      sub->add_option("--agreement", o.model.agreement, "draft/target agreement in [0,1]")
          ->check(finite_in(0.0, 1.0))
          ->capture_default_str();
      sub->add_option("--sharpness", o.model.sharpness, "target logit scale")
          ->check(finite_in(0.0, 1e6))
          ->capture_default_str();
      sub->add_option("--model-seed", o.model.seed, "seed of the synthetic weights");
      sub->add_option("--cost-fixed-us", o.target_fixed_us, "per target forward pass")
          ->check(finite_in(0.0, 1e9))
          ->capture_default_str();
      sub->add_option("--cost-per-token-us", o.target_per_token_us,
                      "per token verified in a target pass")
          ->check(finite_in(0.0, 1e9))
          ->capture_default_str();
      sub->add_option("--cost-draft-fixed-us", o.draft_fixed_us, "per drafter pass")
          ->check(finite_in(0.0, 1e9))
          ->capture_default_str();
      sub->add_option("--cost-draft-per-token-us", o.draft_per_token_us, "per draft position")
          ->check(finite_in(0.0, 1e9))
          ->capture_default_str();
      sub->add_option("--cost-prefill-per-token-us", o.prefill_per_token_us, "per prompt token")
          ->check(finite_in(0.0, 1e9))
          ->capture_default_str();
      sub->add_option("--load-time-s", o.load_time_s, "/health is 503 this long after start")
          ->check(finite_in(0.0, 86400.0))
          ->capture_default_str();
      sub->add_option("--max-running-requests", o.max_running_requests, "batch size cap")
          ->check(CLI::Range(1, 1 << 20))
          ->capture_default_str();
      sub->add_option("--decode-log-interval", o.decode_log_interval,
                      "fold spec counters into /server_info every N steps (SGLang: 40)")
          ->check(CLI::Range(1, 1 << 20))
          ->capture_default_str();
      sub->add_option("--fault", args->fault, sim_fault_names())->capture_default_str();
      sub->add_option("--exit-delay-s", args->exit_delay_s,
                      "fail-start, oom-start, exit-start: linger this long after the error line "
                      "before exiting, as a server tearing down its workers does")
          ->check(CLI::Range(0.0, 60.0))
          ->capture_default_str();
      sub->add_option("--trickle-interval-ms", o.trickle_interval_ms, "trickle: gap between bytes")
          ->check(finite_in(0.0, 60000.0))
          ->capture_default_str();
      sub->add_flag("--quiet", args->quiet, "do not echo the log to stderr");
      return [args, sub] { return run_sim_server(*args, sub->remaining()); };
    }}};

} // namespace
} // namespace specbench::cli
