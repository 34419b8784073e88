#pragma once
// Placeholder syntax shared by validation and expansion: {name} inside one argv element;
// "{{" and "}}" stand for literal braces.
#include <string>
#include <vector>

namespace specbench::detail {
/// The placeholder names used in `arg`, in order. On a malformed brace, returns false and sets
/// `problem`.
bool placeholder_names(const std::string& arg, std::vector<std::string>& names,
                       std::string& problem);
/// Placeholders defined only for some method kinds: "" when `name` is valid for every cell, else
/// the kinds that define it, e.g. "tree".
std::string placeholder_restriction(const std::string& name);
} // namespace specbench::detail
