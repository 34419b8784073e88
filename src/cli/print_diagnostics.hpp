#pragma once
// Prints sweep diagnostics to stderr, errors in red on a terminal.
#include "specbench/config.hpp"

#include <vector>

namespace specbench::cli {
void print_diagnostics(const std::vector<Diagnostic>& diagnostics);
} // namespace specbench::cli
