#pragma once
/// \file display_text.hpp
/// Text from outside (a server's log, an HTTP body) shown where its bytes would act instead of
/// being read: on a terminal, ESC sequences recolour or move the cursor, '\r' returns to the start
/// of the line and overwrites the cell id before it, and a NUL ends a C string that is printed;
/// in Markdown, '\r' and '\n' end the line (outside a list item's indent they end the item). These
/// helpers make such text one plain line, and keep the rest of it.

#include <cstddef>
#include <string>
#include <string_view>

namespace specbench::detail {

/// `text` as one plain line: '\n' and '\r' and tabs become spaces, ANSI escape sequences (CSI,
/// OSC and two-byte ones) are removed, and so is every other control character; the result is
/// well-formed UTF-8. Longer than `max_bytes`: cut at a character boundary and "…" appended.
std::string display_line(std::string_view text, std::size_t max_bytes = std::string_view::npos);

/// One line of a log as a terminal shows it: a progress bar (tqdm, as servers print while
/// loading) redraws with '\r', so only the text after the last '\r' that has text after it is
/// kept; then display_line.
std::string terminal_view(std::string_view line);

} // namespace specbench::detail
