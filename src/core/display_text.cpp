#include "specbench/detail/display_text.hpp"

#include "specbench/detail/utf8.hpp"

namespace specbench::detail {
namespace {

// The length of the escape sequence that starts at text[i] (an ESC), after ECMA-48: CSI (ESC '['
// parameters, intermediates, one final byte), OSC (ESC ']' up to BEL or ESC '\'), or ESC,
// intermediates (0x20-0x2F) and one final byte (ESC '(' 'B' of `tput sgr0`). A sequence that is
// broken off counts as the ESC alone (or ESC '[' and its parameters), so no text after it is lost.
std::size_t escape_length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  std::size_t k = i + 1;
  if (k >= text.size())
    return 1;
  if (text[k] == '[') {
    for (++k; k < text.size() && at(k) >= 0x20 && at(k) <= 0x3F; ++k) {
    }
    for (; k < text.size() && at(k) >= 0x20 && at(k) <= 0x2F; ++k) {
    }
    return k < text.size() && at(k) >= 0x40 && at(k) <= 0x7E ? k + 1 - i : k - i;
  }
  if (text[k] == ']') {
    for (++k; k < text.size(); ++k) {
      if (text[k] == '\a')
        return k + 1 - i;
      if (text[k] == '\x1B' && k + 1 < text.size() && text[k + 1] == '\\')
        return k + 2 - i;
    }
    return 1; // never ended: only the ESC goes
  }
  for (; k < text.size() && at(k) >= 0x20 && at(k) <= 0x2F; ++k) {
  }
  return k < text.size() && at(k) >= 0x30 && at(k) <= 0x7E ? k + 1 - i : 1;
}

// The largest n <= want such that text[0, n) ends on a character boundary.
std::size_t head_boundary(const std::string& text, std::size_t want) {
  while (want > 0 && want < text.size() && (static_cast<unsigned char>(text[want]) & 0xC0) == 0x80)
    --want;
  return want;
}

} // namespace

std::string display_line(std::string_view raw, std::size_t max_bytes) {
  const std::string text = to_valid_utf8(raw);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1B) {
      i += escape_length(text, i);
      continue;
    }
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      i += 2; // a C1 control character (U+0080 to U+009F)
      continue;
    }
    if (c == '\n' || c == '\r' || c == '\t')
      out += ' ';
    else if (c >= 0x20 && c != 0x7F)
      out += static_cast<char>(c);
    ++i;
  }
  if (out.size() <= max_bytes)
    return out;
  // Too long: keep the start and the end, where an error usually is (a fatal line's message
  // after a progress bar), with "…" between them.
  constexpr std::string_view kGap = "\xE2\x80\xA6"; // …
  const std::size_t keep = max_bytes > kGap.size() ? max_bytes - kGap.size() : 0;
  const std::size_t head = head_boundary(out, keep / 3);
  std::size_t tail_from = out.size() - (keep - head);
  while (tail_from < out.size() && (static_cast<unsigned char>(out[tail_from]) & 0xC0) == 0x80)
    ++tail_from;
  return out.substr(0, head) + std::string(kGap) + out.substr(tail_from);
}

std::string terminal_view(std::string_view line) {
  // The last redraw that shows anything (one that only clears the line, "\r\x1b[2K", does not).
  std::size_t end = line.size();
  while (true) {
    const std::size_t cr = end == 0 ? std::string_view::npos : line.rfind('\r', end - 1);
    const std::size_t from = cr == std::string_view::npos ? 0 : cr + 1;
    std::string shown = display_line(line.substr(from, end - from));
    if (!shown.empty() || cr == std::string_view::npos)
      return shown;
    end = cr;
  }
}

} // namespace specbench::detail
