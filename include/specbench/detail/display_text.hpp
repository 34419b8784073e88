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

/// `text` as one plain line: '\n' and '\r' and tabs become spaces, escape sequences (CSI, OSC,
/// ESC with intermediates) are removed, and so is every other control character (C0, DEL, C1);
/// bytes that are not UTF-8 become U+FFFD. Longer than `max_bytes`: the first third and the end
/// are kept, cut at character boundaries, with "…" between them, `max_bytes` in all; the end is
/// where a fatal log line's error usually stands, after a progress bar.
std::string display_line(std::string_view text, std::size_t max_bytes = std::string_view::npos);

/// One line of a log as a terminal shows it: a progress bar (tqdm, as servers print while
/// loading) redraws with '\r', so only the last redraw that shows anything is kept (one that
/// only clears the line shows nothing); then display_line.
std::string terminal_view(std::string_view line);

} // namespace specbench::detail
