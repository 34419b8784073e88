// UTF-8 checks and repair for text from outside (server logs, HTTP bodies, sweep files).
#include "specbench/detail/utf8.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

using specbench::detail::first_invalid_utf8;
using specbench::detail::to_valid_utf8;
constexpr auto npos = std::string_view::npos;
const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Utf8, WellFormedTextPassesUnchanged) {
  for (const auto& s :
       {std::string(), std::string("plain ASCII\n\t"), std::string("caf\xC3\xA9"),
        std::string("\xE5\x86\x85\xE9\x83\xA8"),  // CJK
        std::string("\xF0\x9F\x98\x80"),          // U+1F600, four bytes
        std::string("\xEF\xBB\xBFname: x"),       // byte-order mark
        std::string("\xED\x9F\xBF \xEE\x80\x80"), // U+D7FF and U+E000 around surrogates
        std::string("\xF4\x8F\xBF\xBF"),          // U+10FFFF, the last code point
        std::string("nul \0 inside", 12)}) {
    EXPECT_EQ(first_invalid_utf8(s), npos) << s;
    EXPECT_EQ(to_valid_utf8(s), s);
  }
}

TEST(Utf8, EveryKindOfMalformedByteIsFoundWhereItIs) {
  struct Case {
    std::string text;
    size_t first_bad;
  };
  const Case cases[] = {
      {"ok \x80", 3},          // lone continuation byte
      {"\xC0\xAF", 0},         // overlong '/'
      {"\xC1\xBF", 0},         // overlong
      {"\xE0\x80\xAF", 0},     // overlong three-byte form
      {"\xF0\x80\x80\xAF", 0}, // overlong four-byte form
      {"a\xED\xA0\x80", 1},    // UTF-16 surrogate U+D800
      {"\xF4\x90\x80\x80", 0}, // above U+10FFFF
      {"\xF5\x80\x80\x80", 0}, // F5..FF never start a character
      {"\xFF\xFE", 0},         // a UTF-16 byte-order mark read as UTF-8
      {"cut \xE8\xAE", 4},     // three-byte character cut after two
      {"cut \xF0\x9F\x98", 4}, // four-byte character cut after three
      {"caf\xE9 latin-1", 3},  // Latin-1
      {"\xC3\xA9\xC3", 2},     // good, then a lead byte at the end
      {"\xE2\x28\xA1", 0},     // lead byte followed by ASCII
  };
  for (const auto& c : cases) {
    EXPECT_EQ(first_invalid_utf8(c.text), c.first_bad) << c.text;
    const std::string fixed = to_valid_utf8(c.text);
    EXPECT_EQ(first_invalid_utf8(fixed), npos) << c.text;
    EXPECT_NE(fixed.find(kReplacement), std::string::npos) << c.text;
    EXPECT_EQ(fixed.substr(0, c.first_bad), c.text.substr(0, c.first_bad)); // prefix kept
  }
  // One replacement character per byte that starts no character; good characters survive.
  EXPECT_EQ(to_valid_utf8("a\xFF"
                          "b\xE8\xAE"
                          "c\xC3\xA9"),
            "a" + kReplacement + "b" + kReplacement + kReplacement + "c\xC3\xA9");
}

TEST(Utf8, RepairedRandomBytesAreAlwaysWellFormed) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> len(0, 40), byte(0, 255), pick(0, 3);
  const std::string pieces[] = {"\xC3\xA9", "\xE5\x86\x85", "\xF0\x9F\x98\x80", "x"};
  int malformed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (int n = len(rng); n > 0; --n) {
      if (pick(rng) == 0)
        s += static_cast<char>(byte(rng));
      else
        s += pieces[pick(rng)];
    }
    const std::string fixed = to_valid_utf8(s);
    ASSERT_EQ(first_invalid_utf8(fixed), npos);
    if (first_invalid_utf8(s) == npos)
      ASSERT_EQ(fixed, s);
    else
      ++malformed;
    ASSERT_EQ(to_valid_utf8(fixed), fixed); // repairing twice changes nothing
  }
  EXPECT_GT(malformed, 1000); // the generator really produced malformed text
}
