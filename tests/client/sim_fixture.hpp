#pragma once
// An in-process simulated server on a free loopback port, cheap costs, for client tests.
#include "specbench/sim_server.hpp"

#include <memory>
#include <stdexcept>
#include <string>

namespace specbench::testing {

inline SimServerOptions fast_sim(MethodKind kind = MethodKind::autoregressive, int block = 16,
                                 int budget = 0) {
  SimServerOptions o;
  o.port = 0;
  o.load_time_s = 0;
  o.target_fixed_us = 300;
  o.target_per_token_us = 2;
  o.draft_fixed_us = 50;
  o.draft_per_token_us = 1;
  o.prefill_per_token_us = 0.1;
  o.decode.kind = kind;
  o.decode.block = block;
  o.decode.budget = budget;
  o.algorithm_name = kind == MethodKind::autoregressive ? ""
                     : kind == MethodKind::linear       ? "DFLASH"
                                                        : "DDTREE";
  o.decode_log_interval = 1;
  o.crash_exits_process = false;
  o.trickle_interval_ms = 20;
  return o;
}

struct LocalSim {
  explicit LocalSim(SimServerOptions o) : server(std::make_unique<SimServer>(std::move(o))) {
    Status st = server->start();
    if (!st)
      throw std::runtime_error(st.to_string());
    url = "http://127.0.0.1:" + std::to_string(server->port());
  }
  std::unique_ptr<SimServer> server;
  std::string url;
};

} // namespace specbench::testing
