#include "config/dataset_scan.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

namespace specbench::detail {

DatasetSummary scan_dataset(const std::filesystem::path& file) {
  DatasetSummary s;
  std::ifstream in(file);
  if (!in) {
    s.problem = "cannot be opened";
    return s;
  }
  std::string line;
  int line_no = 0;
  bool all_ids = true;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      s.bad_line = line_no;
      s.problem = "line " + std::to_string(line_no) + " is not a JSON object";
      return s;
    }
    const bool has_text = (j.contains("prompt") && j["prompt"].is_string()) ||
                          (j.contains("text") && j["text"].is_string()) ||
                          (j.contains("messages") && j["messages"].is_array());
    const bool has_ids = j.contains("input_ids") && j["input_ids"].is_array();
    if (!has_text && !has_ids) {
      s.bad_line = line_no;
      s.problem = "line " + std::to_string(line_no) +
                  " has none of \"prompt\", \"text\", \"messages\" or \"input_ids\"";
      return s;
    }
    if (has_ids) {
      if (const int n = static_cast<int>(j["input_ids"].size()); n > s.longest_ids) {
        s.longest_ids = n;
        s.longest_ids_line = line_no;
      }
    } else {
      all_ids = false;
    }
    ++s.records;
  }
  if (s.records == 0) s.problem = "holds no prompts";
  else if (all_ids)
    s.max_prompt_tokens = s.longest_ids;
  return s;
}

} // namespace specbench::detail
