#pragma once
// A quick look at a JSONL prompt file at plan time: is it readable, how many prompts, and the
// longest prompt in tokens when every record carries input_ids (and the longest input_ids
// prompt in any case).
#include <filesystem>
#include <optional>
#include <string>

namespace specbench::detail {
struct DatasetSummary {
  int records = 0;
  std::optional<int> max_prompt_tokens; ///< set when every record has "input_ids"
  int longest_ids = 0;      ///< the longest "input_ids" prompt, whatever the other records hold
  int longest_ids_line = 0; ///< its line (1-based), 0 when no record has input_ids
  int bad_line = 0;                     ///< first malformed line (1-based), 0 when none
  std::string problem;                  ///< what is wrong with bad_line or the file
  std::string fix;                      ///< how to put it right, when problem is set
};
DatasetSummary scan_dataset(const std::filesystem::path& file);
} // namespace specbench::detail
