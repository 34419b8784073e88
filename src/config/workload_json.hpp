#pragma once
// One JSON form of a workload, shared by the plan (and its config hash) and the cell results.
#include "specbench/config.hpp"

#include <nlohmann/json.hpp>

namespace specbench::detail {
nlohmann::json workload_json(const Workload& w);
} // namespace specbench::detail
