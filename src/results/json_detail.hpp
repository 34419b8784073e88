#pragma once
// JSON conversions shared by the results store and the report (private to the library).
#include "specbench/results.hpp"

#include <nlohmann/json.hpp>

namespace specbench::detail {
nlohmann::json distribution_to_json(const Distribution& d);
Distribution distribution_from_json(const nlohmann::json& j);
nlohmann::json method_to_json(const Method& m);
Method method_from_json(const nlohmann::json& j);
nlohmann::json workload_to_json(const Workload& w);
Workload workload_from_json(const nlohmann::json& j);
nlohmann::json provenance_to_json(const Provenance& p);
Provenance provenance_from_json(const nlohmann::json& j);
nlohmann::json request_to_json(const RequestMetrics& r);
RequestMetrics request_from_json(const nlohmann::json& j);
nlohmann::json server_side_to_json(const ServerSideFigures& s);
ServerSideFigures server_side_from_json(const nlohmann::json& j);
nlohmann::json run_to_json(const RunSummary& r);
RunSummary run_from_json(const nlohmann::json& j);
nlohmann::json summary_to_json(const CellSummary& c);
CellSummary summary_from_json(const nlohmann::json& j);
nlohmann::json cell_result_to_json(const CellResult& r);
CellResult cell_result_from_json_obj(const nlohmann::json& j);
nlohmann::json manifest_to_json_obj(const Manifest& m);
Manifest manifest_from_json_obj(const nlohmann::json& j);
} // namespace specbench::detail
