#include "specbench/detail/display_text.hpp"

#include "specbench/detail/utf8.hpp"

namespace specbench::detail {
namespace {

// The length of the escape sequence that starts at text[i] (an ESC): CSI (ESC '[' parameters,
// intermediates, one final byte), OSC (ESC ']' up to BEL or ESC '\'), or ESC and one byte.
std::size_t escape_length(std::string_view text, std::size_t i) {
  std::size_t k = i + 1;
  if (k >= text.size())
    return 1;
  if (text[k] == '[') {
    for (++k; k < text.size(); ++k) {
      const auto c = static_cast<unsigned char>(text[k]);
      if (c >= 0x40 && c <= 0x7E)
        return k + 1 - i;
      if (c < 0x20 || c > 0x3F) // not a parameter or intermediate byte: a broken sequence
        return k - i;
    }
    return k - i;
  }
  if (text[k] == ']') {
    for (++k; k < text.size(); ++k) {
      if (text[k] == '\a')
        return k + 1 - i;
      if (text[k] == '\x1B')
        return (k + 1 < text.size() && text[k + 1] == '\\' ? k + 2 : k) - i;
    }
    return k - i;
  }
  return 2;
}

} // namespace

std::string display_line(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(text.size() < 4096 ? text.size() : 4096);
  for (std::size_t i = 0; i < text.size() && out.size() <= max_bytes;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1B) {
      i += escape_length(text, i);
      continue;
    }
    if (c == '\n' || c == '\r' || c == '\t')
      out += ' ';
    else if (c >= 0x20 && c != 0x7F)
      out += static_cast<char>(c);
    ++i;
  }
  out = to_valid_utf8(out);
  if (out.size() > max_bytes) {
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
      --cut; // the start of the character that would be split
    out.resize(cut);
    out += "\xE2\x80\xA6"; // …
  }
  return out;
}

std::string terminal_view(std::string_view line) {
  std::size_t end = line.size();
  while (end > 0 && line[end - 1] == '\r')
    --end;
  line = line.substr(0, end);
  const std::size_t cr = line.rfind('\r');
  return display_line(cr == std::string_view::npos ? line : line.substr(cr + 1));
}

} // namespace specbench::detail
