// Outside text (server logs, HTTP bodies) made one plain line for a terminal or Markdown.
#include "specbench/detail/display_text.hpp"

#include <gtest/gtest.h>

#include <string>

using specbench::detail::display_line;
using specbench::detail::terminal_view;

TEST(DisplayText, LineBreaksAndTabsBecomeSpacesAndPlainTextStays) {
  EXPECT_EQ(display_line("a\nb\r\nc\rd\te"), "a b  c d e");
  EXPECT_EQ(display_line("caf\xC3\xA9 \xE2\x9C\x93 | <ok> \"q\""),
            "caf\xC3\xA9 \xE2\x9C\x93 | <ok> \"q\"");
  EXPECT_EQ(display_line(""), "");
}

TEST(DisplayText, EscapeSequencesAndControlCharactersAreRemoved) {
  // Colours (CSI), a window title (OSC, ended by BEL or by ESC '\'), a two-byte ESC, a NUL, DEL.
  EXPECT_EQ(display_line("\x1B[1;31mERROR\x1B[0m: x"), "ERROR: x");
  EXPECT_EQ(display_line("\x1B]0;title\x07text"), "text");
  EXPECT_EQ(display_line("\x1B]0;title\x1B\\text"), "text");
  EXPECT_EQ(display_line("a\x1B"
                         "7b\x1B"
                         "8c"),
            "abc");
  EXPECT_EQ(display_line(std::string("bin\0ary\x7F!", 9)), "binary!");
  EXPECT_EQ(display_line("\x01\x02\x1F"
                         "x"),
            "x");
  // Cut short: an ESC at the end, a CSI without its final byte, an OSC without its end.
  EXPECT_EQ(display_line("x\x1B"), "x");
  EXPECT_EQ(display_line("x\x1B[12;"), "x");
  EXPECT_EQ(display_line("x\x1B]0;never ended"), "x");
  // A CSI broken by a byte that cannot be in it ends there; the rest is text.
  EXPECT_EQ(display_line("x\x1B[1\xC3\xA9y"), "x\xC3\xA9y");
}

TEST(DisplayText, BytesThatAreNotUtf8AreReplaced) {
  EXPECT_EQ(display_line("a\xFF"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(DisplayText, ALongLineIsCutAtACharacterBoundaryAndMarked) {
  const std::string e = "\xC3\xA9"; // two bytes
  EXPECT_EQ(display_line("abcdef", 6), "abcdef");
  EXPECT_EQ(display_line("abcdefg", 6), "abcdef\xE2\x80\xA6");
  // The 6-byte limit falls inside the fourth 'é': three whole ones stay.
  EXPECT_EQ(display_line(e + e + e + e + e, 7), e + e + e + "\xE2\x80\xA6");
  EXPECT_EQ(display_line(std::string(5'000'000, 'x'), 1000).size(), 1000u + 3u);
}

TEST(DisplayText, ALogLineShowsWhatATerminalShows) {
  EXPECT_EQ(terminal_view("Loading:  10%\rLoading:  50%\rLoading: 100%"), "Loading: 100%");
  EXPECT_EQ(terminal_view("Loading: 100%\r\r"), "Loading: 100%"); // trailing redraws
  EXPECT_EQ(terminal_view("\rdone"), "done");
  EXPECT_EQ(terminal_view("\r\r"), "");
  EXPECT_EQ(terminal_view("plain \x1B[32mline\x1B[0m"), "plain line");
}
