#pragma once
// JSON as text for every file and line specbench writes.

#include <nlohmann/json.hpp>

#include <string>

namespace specbench::detail {

/// `j` as text, `indent` as nlohmann's dump (-1: one line). Bytes that are not UTF-8 (a server's
/// log line, an error body) become U+FFFD instead of throwing: a record must never be lost for a
/// byte. For UTF-8 text the bytes are those of a plain dump, so config hashes do not change.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}
/// json_text for a document whose keys keep the order they were added in (the preflight report,
/// whose schema and facts are documented in that order): converting it to nlohmann::json would
/// sort them.
inline std::string ordered_json_text(const nlohmann::ordered_json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace specbench::detail
