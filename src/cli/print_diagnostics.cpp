#include "cli/print_diagnostics.hpp"

#include <cstdio>
#include <unistd.h>

namespace specbench::cli {
void print_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  const bool colour = ::isatty(STDERR_FILENO) == 1;
  for (const auto& d : diagnostics) {
    const char* on = !colour ? "" : d.severity == Severity::error ? "\033[31m" : "\033[33m";
    std::fprintf(stderr, "%s%s%s\n", on, d.to_string().c_str(), colour ? "\033[0m" : "");
  }
}
} // namespace specbench::cli
