// bench_client: one client thread (pinned to CPU 0) drives N concurrent streams against the
// simulated server (its threads pinned to the other CPUs), which paces every stream at one token
// per `step` ms. Reported per N: requests ok, client CPU time per token (what the client adds per
// token when it is the bottleneck), and the measured inter-token latency against the pacing.
//
//   bench_client [--streams 64,256,512,1024] [--tokens 64] [--step-ms 20] [--api
//   generate|completions]
#include "specbench/client.hpp"
#include "specbench/sim_server.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace specbench;

namespace {

double thread_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

void pin(int cpu_from, int cpu_to) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = cpu_from; c <= cpu_to; ++c)
    CPU_SET(c, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    while (*p && *p != ',')
      ++p;
    if (*p == ',')
      ++p;
  }
  return v;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty())
    return NAN;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  return "?";
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> streams = {64, 256, 512, 1024};
  int tokens = 64;
  double step_ms = 20;
  ApiKind api = ApiKind::generate;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--streams"))
      streams = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--tokens"))
      tokens = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--step-ms"))
      step_ms = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--api"))
      api = std::strcmp(argv[i + 1], "completions") == 0 ? ApiKind::completions : ApiKind::generate;
  }
  const int ncpu = static_cast<int>(std::thread::hardware_concurrency());
  // Server threads (created from this thread) on CPUs 1..n-1; the client thread on CPU 0.
  if (ncpu > 1)
    pin(1, ncpu - 1);
  SimServerOptions so;
  so.port = 0;
  so.load_time_s = 0;
  so.target_fixed_us = step_ms * 1000;
  so.target_per_token_us = 0;
  so.prefill_per_token_us = 0;
  so.max_running_requests = 1 << 20;
  SimServer server(so);
  if (Status st = server.start(); !st) {
    std::fprintf(stderr, "sim server: %s\n", st.to_string().c_str());
    return 2;
  }
  utsname un{};
  uname(&un);
  std::printf("# bench_client: %s, %d CPUs, %s %s; api %s, %d tokens/stream, server step %.1f ms\n",
              cpu_model().c_str(), ncpu, un.sysname, un.release, to_string(api), tokens, step_ms);
  std::printf("%8s %6s %10s %12s %14s %12s %12s %12s\n", "streams", "ok", "wall_s", "tokens/s",
              "client_us/tok", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms");
  for (int n : streams) {
    double cpu_s = 0;
    Expected<RunResult> result = Status(StatusCode::internal, "not run");
    std::thread client_thread([&] {
      pin(0, 0);
      ClientOptions co;
      co.base_url = "http://127.0.0.1:" + std::to_string(server.port());
      co.api = api;
      co.model = "synthetic/sim-model";
      co.request_timeout_s = 600;
      co.first_byte_timeout_s = 120;
      Client client(co);
      std::vector<RequestSpec> reqs(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        reqs[static_cast<size_t>(i)].prompt.input_ids = {i % 997, 7, 11, 13};
        reqs[static_cast<size_t>(i)].max_new_tokens = tokens;
      }
      const double c0 = thread_cpu_s();
      result = client.run(reqs, n);
      cpu_s = thread_cpu_s() - c0;
    });
    client_thread.join();
    if (!result) {
      std::printf("%8d run failed: %s\n", n, result.status().to_string().c_str());
      continue;
    }
    int64_t toks = 0;
    std::vector<double> itls;
    for (const auto& r : result->records) {
      if (r.output_tokens > 0)
        toks += r.output_tokens;
      for (double x : r.itls_s)
        itls.push_back(x * 1000);
    }
    double mean = 0;
    for (double x : itls)
      mean += x;
    mean = itls.empty() ? NAN : mean / static_cast<double>(itls.size());
    std::printf("%8d %6d %10.2f %12.0f %14.2f %12.2f %12.2f %12.2f\n", n, result->ok_count,
                result->wall_s, static_cast<double>(toks) / result->wall_s,
                toks > 0 ? cpu_s * 1e6 / static_cast<double>(toks) : NAN, mean,
                percentile(itls, 0.5), percentile(itls, 0.99));
    std::fflush(stdout);
  }
  server.stop();
  return 0;
}
