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
  // `tput sgr0`: ESC '(' 'B' then a CSI. C1 controls written in UTF-8 (U+009B).
  EXPECT_EQ(display_line("\x1B(B\x1B[mplain"), "plain");
  const std::string nbsp = "\xC2\xA0"; // U+00A0 is text
  EXPECT_EQ(display_line("a\xC2\x9B" + std::string("b") + nbsp + "c"), "ab" + nbsp + "c");
  // Cut short: an ESC at the end, a CSI without its final byte; an OSC that never ends takes
  // only its ESC, so no text after it is lost; ESC before a letter of another script.
  EXPECT_EQ(display_line("x\x1B"), "x");
  EXPECT_EQ(display_line("x\x1B[12;"), "x");
  EXPECT_EQ(display_line("x\x1B]8;;http://a\x1B[0m link"), "x]8;;http://a link");
  EXPECT_EQ(display_line("x\x1B\xC3\xA9"), "x\xC3\xA9");
  // A CSI broken by a byte that cannot be in it ends there; the rest is text.
  EXPECT_EQ(display_line("x\x1B[1\xC3\xA9y"), "x\xC3\xA9y");
}

TEST(DisplayText, BytesThatAreNotUtf8AreReplaced) {
  EXPECT_EQ(display_line("a\xFF"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(DisplayText, ALongLineKeepsItsStartAndItsEndWithinTheBound) {
  const std::string gap = "\xE2\x80\xA6"; // …, three bytes
  EXPECT_EQ(display_line("abcdef", 6), "abcdef");
  EXPECT_EQ(display_line("abcdefghijklm", 12), "abc" + gap + "hijklm"); // 3 + 3 + 6 bytes
  // Cuts on character boundaries: 'é' is two bytes, and no half of one is kept.
  const std::string e = "\xC3\xA9";
  std::string es;
  for (int i = 0; i < 10; ++i)
    es += e;
  // 10 bytes to keep: a third rounds down to one whole 'é' (2 bytes), the end takes the other 8.
  const std::string cut = display_line(es, 13);
  EXPECT_EQ(cut, e + gap + e + e + e + e);
  // A fatal line after a long progress bar: the error at its end stays.
  std::string bar;
  for (int i = 0; i < 200; ++i)
    bar += "Loading shards: " + std::to_string(i % 100) + "% |####     |\r";
  const std::string shown =
      display_line("log: \"" + bar + "RuntimeError: CUDA out of memory\"", 1000);
  EXPECT_LE(shown.size(), 1000u);
  EXPECT_EQ(shown.rfind("RuntimeError: CUDA out of memory\""), shown.size() - 33);
  EXPECT_EQ(shown.find("log: \"Loading"), 0u);
  EXPECT_EQ(display_line(std::string(5'000'000, 'x'), 1000).size(), 1000u);
  // Nothing is cut when only the repair of a bad byte makes the text longer than the bound.
  EXPECT_EQ(display_line("ab\xFF", 5), "ab\xEF\xBF\xBD");
}

TEST(DisplayText, ALogLineShowsWhatATerminalShows) {
  EXPECT_EQ(terminal_view("Loading:  10%\rLoading:  50%\rLoading: 100%"), "Loading: 100%");
  EXPECT_EQ(terminal_view("Loading: 100%\r\r"), "Loading: 100%"); // trailing redraws
  EXPECT_EQ(terminal_view("\rdone"), "done");
  EXPECT_EQ(terminal_view("\r\r"), "");
  EXPECT_EQ(terminal_view("plain \x1B[32mline\x1B[0m"), "plain line");
  EXPECT_EQ(terminal_view("ERROR x\r\x1B[2K"), "ERROR x"); // a redraw that only clears
}
