#pragma once
// "Did you mean" suggestions for misspelt keys and values.
#include <string>
#include <string_view>
#include <vector>

namespace specbench::detail {
/// Edit distance (insert, delete, substitute, transpose adjacent) between two short strings.
int edit_distance(std::string_view a, std::string_view b);
/// The closest candidate within a distance that scales with the word's length, or "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
} // namespace specbench::detail
