#pragma once
/// \file specbench.hpp
/// Umbrella header: the whole public API of specbench.

#include "specbench/client.hpp"
#include "specbench/config.hpp"
#include "specbench/draft_tree.hpp"
#include "specbench/kernels.hpp"
#include "specbench/matrix.hpp"
#include "specbench/preflight.hpp"
#include "specbench/report.hpp"
#include "specbench/results.hpp"
#include "specbench/runner.hpp"
#include "specbench/server.hpp"
#include "specbench/status.hpp"
#include "specbench/cuda_errors.hpp"
#include "specbench/sampling_reference.hpp"
#include "specbench/server_metrics.hpp"
#include "specbench/sglang_layout.hpp"
#include "specbench/sim_server.hpp"
