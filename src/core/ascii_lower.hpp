#pragma once
// Case folding for protocol text (HTTP header names, server log lines, PCI bus ids), which is
// ASCII by definition: std::tolower on each byte, never the locale's multibyte rules.

#include <cctype>
#include <string>

namespace specbench::detail {

inline std::string ascii_lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

} // namespace specbench::detail
