#pragma once
// Typed, located reads from a yaml-cpp tree. Every problem becomes a Diagnostic with the node's
// line and column; reading never throws and never stops at the first error.
#include "specbench/config.hpp"

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace specbench::detail {

class YamlReader {
public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  /// Records an error (or warning) located at `node`.
  void report(Severity sev, const YAML::Node& node, const std::string& path, std::string message,
              std::string fix);
  void error(const YAML::Node& node, const std::string& path, std::string message, std::string fix) {
    report(Severity::error, node, path, std::move(message), std::move(fix));
  }

  /// Reports keys of `map` that are not in `allowed`, with a "did you mean" when one is close.
  void check_keys(const YAML::Node& map, const std::string& path,
                  const std::vector<std::string>& allowed);
  /// True when `node` is a map; otherwise reports what it is instead.
  bool expect_map(const YAML::Node& node, const std::string& path);
  /// True when `node` is a sequence; otherwise reports.
  bool expect_sequence(const YAML::Node& node, const std::string& path);

  std::optional<long long> read_int(const YAML::Node& node, const std::string& path, long long min,
                                    long long max);
  std::optional<double> read_double(const YAML::Node& node, const std::string& path, double min,
                                    double max);
  std::optional<bool> read_bool(const YAML::Node& node, const std::string& path);
  std::optional<std::string> read_string(const YAML::Node& node, const std::string& path);
  /// One of `choices` (case-sensitive), with a suggestion when the value is close to one.
  std::optional<std::string> read_choice(const YAML::Node& node, const std::string& path,
                                         const std::vector<std::string>& choices);
  std::optional<std::vector<std::string>> read_string_list(const YAML::Node& node,
                                                           const std::string& path);
  std::optional<std::map<std::string, std::string>> read_string_map(const YAML::Node& node,
                                                                   const std::string& path);

  /// Remembers where `path` is in the file so later (semantic) diagnostics can point at it.
  void mark(const YAML::Node& node, const std::string& path);
  /// Line/column for a path (or its closest recorded parent).
  std::pair<int, int> location_of(std::string path) const;

  std::vector<Diagnostic>& diagnostics() { return diags_; }
  const std::string& file() const { return file_; }

private:
  std::string file_;
  std::vector<Diagnostic> diags_;
  std::map<std::string, std::pair<int, int>> marks_;
};

/// A short description of a node's kind for messages: "a list", "a map", "the text \"abc\"".
std::string describe(const YAML::Node& node);

} // namespace specbench::detail
