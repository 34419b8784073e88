#include "config/dataset_scan.hpp"

#include "specbench/client.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace specbench::detail {

DatasetSummary scan_dataset(const std::filesystem::path& file) {
  DatasetSummary s;
  // A FIFO would block this read for ever, and /dev/zero would fill memory with one endless line.
  if (std::string why = dataset_file_problem(file); !why.empty()) {
    s.problem = why;
    s.fix = "give a JSONL file (one {\"prompt\": ...} or {\"input_ids\": [...]} per line)";
    return s;
  }
  std::ifstream in(file);
  if (!in) {
    s.problem = "cannot be opened (" + std::string(std::strerror(errno)) + ")";
    s.fix = "make it readable by the user who runs specbench";
    return s;
  }
  std::string line;
  int line_no = 0;
  bool all_ids = true;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    // The run's own rule (parse_prompt_line), so that what plan passes the run can read.
    const auto p = parse_prompt_line(line);
    if (!p) {
      s.bad_line = line_no;
      s.problem = "line " + std::to_string(line_no) + ": " + p.status().message();
      s.fix = p.status().remedy();
      return s;
    }
    if (!p->input_ids.empty()) {
      if (const int n = static_cast<int>(p->input_ids.size()); n > s.longest_ids) {
        s.longest_ids = n;
        s.longest_ids_line = line_no;
      }
    } else {
      all_ids = false;
    }
    ++s.records;
  }
  if (s.records == 0) {
    s.problem = "holds no prompts";
    s.fix = "add JSONL lines, one prompt per line";
  } else if (all_ids)
    s.max_prompt_tokens = s.longest_ids;
  return s;
}

} // namespace specbench::detail
