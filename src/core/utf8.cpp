#include "specbench/detail/utf8.hpp"

namespace specbench::detail {
namespace {

// Length of the well-formed sequence starting at text[i], or 0 when text[i] starts none.
std::size_t sequence_length(std::string_view text, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80)
    return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF; // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0)
      lo = 0xA0; // overlong
    else if (b0 == 0xED)
      hi = 0x9F; // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0)
      lo = 0x90; // overlong
    else if (b0 == 0xF4)
      hi = 0x8F; // above U+10FFFF
  } else {
    return 0; // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (i + n > text.size())
    return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi)
    return 0;
  for (std::size_t k = 2; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
  return n;
}

} // namespace

std::size_t first_invalid_utf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0)
      return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string to_valid_utf8(std::string_view text) {
  const std::size_t first = first_invalid_utf8(text);
  if (first == std::string_view::npos)
    return std::string(text);
  std::string out(text.substr(0, first));
  out.reserve(text.size() + 8);
  for (std::size_t i = first; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD"; // U+FFFD, one per byte that starts no sequence
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

} // namespace specbench::detail
