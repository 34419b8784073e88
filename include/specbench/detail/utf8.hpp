#pragma once
/// \file utf8.hpp
/// Text that comes from outside (a server's log, an HTTP body, a sweep file) may hold bytes that
/// are not UTF-8: a binary dump in a crash trace, a line cut in the middle of a character. JSON
/// cannot carry them, so specbench checks or repairs such text where it enters.

#include <cstddef>
#include <string>
#include <string_view>

namespace specbench::detail {

/// The offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629: no
/// overlong forms, no surrogates, nothing above U+10FFFF), or std::string_view::npos when the
/// whole text is well formed.
std::size_t first_invalid_utf8(std::string_view text) noexcept;

/// The text with every byte that is not part of a well-formed sequence replaced by U+FFFD (the
/// replacement character), so that it can be stored and shown; well-formed text comes back
/// unchanged.
std::string to_valid_utf8(std::string_view text);

} // namespace specbench::detail
