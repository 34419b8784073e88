#include "cli/print_diagnostics.hpp"

#include "specbench/detail/display_text.hpp"

#include <cstdio>
#include <unistd.h>

namespace specbench::cli {
void print_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  const bool colour = ::isatty(STDERR_FILENO) == 1;
  for (const auto& d : diagnostics) {
    // A message quotes the sweep's own text: shown as one plain line each, an escape sequence
    // or a control byte in a value cannot clear or recolour the terminal.
    Diagnostic shown = d;
    for (std::string* s : {&shown.file, &shown.path, &shown.message, &shown.fix})
      *s = detail::display_line(*s);
    const char* on = !colour ? "" : d.severity == Severity::error ? "\033[31m" : "\033[33m";
    std::fprintf(stderr, "%s%s%s\n", on, shown.to_string().c_str(), colour ? "\033[0m" : "");
  }
}
} // namespace specbench::cli
