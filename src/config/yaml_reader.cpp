#include "config/yaml_reader.hpp"

#include "config/did_you_mean.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <set>
#include <string_view>

namespace specbench::detail {
namespace {
std::pair<int, int> position(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return {0, 0};
  return {m.line + 1, m.column + 1};
}

// At most 40 characters, control characters written as \xNN: a key "gp\0us" must not read
// as "gpus" in a message that says it is unknown.
std::string clip(const std::string& raw) {
  std::string s;
  for (char c : raw) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      s += fmt::format("\\x{:02x}", u);
    else
      s += c;
  }
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// A quoted scalar, or one tagged !!str, is text in YAML whatever it spells: `tp: "4"` is the
// string "4". yaml-cpp hands it over as the characters 4 all the same; its tag tells ("!" for a
// quoted scalar, "?" for a plain one). It is refused rather than coerced: a number written as
// text (a template that quotes everything, a hand edit) is worth a clear error, not a guess.
bool is_text(const YAML::Node& node) {
  return node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str";
}

// The error for a number or a truth value written as text; `kind` is "a whole number", "a
// number" or "true or false".
void refuse_quoted_value(YamlReader& r, const YAML::Node& node, const std::string& path,
                         const char* kind) {
  const bool tagged = node.Tag() != "!";
  const std::string s = clip(node.Scalar());
  r.error(node, path,
          "`" + path + "` must be " + kind + ", but it is the string \"" + s + "\" (" +
              (tagged ? "tagged !!str" : "in quotes") + ": YAML reads it as text)",
          tagged ? "remove the !!str tag: write " + s
                 : "remove the quotes: write " + s + ", not \"" + s + "\"");
}
} // namespace

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
  case YAML::NodeType::Null: return "nothing (null)";
  case YAML::NodeType::Sequence: return "a list";
  case YAML::NodeType::Map: return "a map";
  case YAML::NodeType::Scalar: return "\"" + clip(node.Scalar()) + "\"";
  default: return "an undefined value";
  }
}

void YamlReader::report(Severity sev, const YAML::Node& node, const std::string& path,
                        std::string message, std::string fix) {
  // An empty value's own mark is the next token (often the next line): use its key's, which
  // check_keys recorded.
  auto [line, col] = node.IsDefined() && !node.IsNull() ? position(node) : location_of(path);
  if (line == 0)
    std::tie(line, col) = position(node);
  diags_.push_back({sev, file_, line, col, path, std::move(message), std::move(fix)});
}

void YamlReader::mark(const YAML::Node& node, const std::string& path) {
  if (node.IsDefined() && node.IsNull() && marks_.count(path))
    return; // keep its key's mark
  const auto pos = position(node);
  if (pos.first > 0) marks_[path] = pos;
}

std::pair<int, int> YamlReader::location_of(std::string path) const {
  for (;;) {
    if (auto it = marks_.find(path); it != marks_.end()) return it->second;
    const auto cut = path.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) return {0, 0};
    path.resize(cut);
  }
}

void YamlReader::check_keys(const YAML::Node& map, const std::string& path,
                            const std::vector<std::string>& allowed) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    const std::string where = path.empty() ? key : path + "." + key;
    if (!kv.first.IsScalar()) {
      error(kv.first, path, "a key must be plain text, not " + describe(kv.first),
            "write the key as a word, e.g. `name:`");
      continue;
    }
    if (kv.second.IsNull())
      mark(kv.first, where); // see report()
    if (!seen.insert(key).second)
      error(kv.first, where, "key `" + key + "` appears twice", "keep one of them");
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    if (key == "<<") { // yaml-cpp reads a merge key as a plain key named "<<"
      error(kv.first, where, "YAML merge keys (`<<: *anchor`) are not supported",
            "write the keys out (an alias of a whole value, `key: *anchor`, works)");
      continue;
    }
    std::string fix;
    if (auto near = closest_match(key, allowed); !near.empty())
      fix = "did you mean `" + near + "`?";
    else {
      fix = "allowed keys here:";
      for (const auto& a : allowed) fix += " " + a;
    }
    error(kv.first, where, "unknown key `" + clip(key) + "`" + (path.empty() ? "" : " in " + path),
          fix);
  }
}

bool YamlReader::expect_map(const YAML::Node& node, const std::string& path) {
  if (node.IsMap()) return true;
  error(node, path, "`" + path + "` must be a map of keys, but it is " + describe(node),
        "indent `key: value` lines under `" + path + ":`");
  return false;
}

bool YamlReader::expect_sequence(const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) return true;
  error(node, path, "`" + path + "` must be a list, but it is " + describe(node),
        "write it as `[a, b]` or as lines starting with `- `");
  return false;
}

std::optional<long long> YamlReader::read_int(const YAML::Node& node, const std::string& path,
                                              long long min, long long max) {
  mark(node, path);
  long long v = 0;
  bool parsed = false;
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    try {
      size_t used = 0;
      v = std::stoll(s, &used, 10);
      parsed = used == s.size();
    } catch (...) {
      parsed = false;
    }
    if (!parsed) {
      // Digits too many for any count: out of range, not "not a number".
      const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
      const bool digits =
          s.size() > sign && s.find_first_not_of("0123456789", sign) == std::string::npos;
      if (digits)
        error(node, path,
              "`" + path + "` is " + clip(s) + ", outside the allowed range " +
                  std::to_string(min) + ".." + std::to_string(max),
              "use a value from " + std::to_string(min) + " to " + std::to_string(max));
      else
        error(node, path, "`" + path + "` must be a whole number, but it is " + describe(node),
              "write a number such as " + std::to_string(std::max(min, 1LL)));
      return std::nullopt;
    }
  } else {
    error(node, path, "`" + path + "` must be a whole number, but it is " + describe(node),
          "write a number such as " + std::to_string(std::max(min, 1LL)));
    return std::nullopt;
  }
  if (is_text(node)) {
    refuse_quoted_value(*this, node, path, "a whole number");
    return std::nullopt;
  }
  if (v < min || v > max) {
    error(node, path,
          "`" + path + "` is " + std::to_string(v) + ", outside the allowed range " +
              std::to_string(min) + ".." + std::to_string(max),
          "use a value from " + std::to_string(min) + " to " + std::to_string(max));
    return std::nullopt;
  }
  return v;
}

namespace {
/// Whether `s` is a decimal number as YAML writes one: an optional sign, digits with an optional
/// point (or a point and digits), and an optional exponent. std::stod took more: hex floats
/// (`0x1p3`), `infinity`, leading spaces.
bool is_decimal_number(std::string_view s) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      ++i;
    return i > from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-'))
    ++i;
  bool mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa = digits() || mantissa;
  }
  if (!mantissa)
    return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      ++i;
    if (!digits())
      return false;
  }
  return i == s.size();
}
} // namespace

std::optional<double> YamlReader::read_double(const YAML::Node& node, const std::string& path,
                                              double min, double max) {
  mark(node, path);
  if (node.IsScalar() && is_decimal_number(node.Scalar())) {
    const std::string& s = node.Scalar();
    // from_chars reads the same in every locale; it takes no leading '+'.
    const size_t plus = s[0] == '+' ? 1 : 0;
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data() + plus, s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) { // 1e999, 1e-400: numbers no double holds
      error(node, path,
            "`" + path + "` is " + clip(s) +
                ", too large or too close to 0 for a number (a double) to hold",
            "use a value in the allowed range " + fmt::format("{:g}..{:g}", min, max));
      return std::nullopt;
    }
    if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(v)) {
      if (is_text(node)) {
        refuse_quoted_value(*this, node, path, "a number");
        return std::nullopt;
      }
      if (v < min || v > max) {
        error(node, path,
              "`" + path + "` is " + s + ", outside the allowed range " +
                  fmt::format("{:g}..{:g}", min, max),
              "use a value in that range");
        return std::nullopt;
      }
      return v;
    }
  }
  error(node, path, "`" + path + "` must be a number, but it is " + describe(node),
        "write a number such as 1.5");
  return std::nullopt;
}

std::optional<bool> YamlReader::read_bool(const YAML::Node& node, const std::string& path) {
  mark(node, path);
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    // YAML 1.1's spellings, in each of its three cases; quoted, they are text, refused as a
    // quoted number is.
    std::optional<bool> v;
    for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
      if (s == t)
        v = true;
    for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
      if (s == f)
        v = false;
    if (v && is_text(node)) {
      refuse_quoted_value(*this, node, path, "true or false");
      return std::nullopt;
    }
    if (v)
      return v;
  }
  error(node, path, "`" + path + "` must be true or false, but it is " + describe(node),
        "write `true` or `false`");
  return std::nullopt;
}

std::optional<std::string> YamlReader::read_string(const YAML::Node& node,
                                                   const std::string& path) {
  mark(node, path);
  if (node.IsScalar()) {
    // A YAML escape (\0, \x00, \u0000) can put a NUL into a value. No argument, path or
    // environment value can hold one: a program would see the text cut short there, while the
    // recorded configuration kept all of it.
    if (node.Scalar().find('\0') == std::string::npos)
      return node.Scalar();
    error(node, path,
          "`" + path + "` contains a NUL character (written `\\0`, `\\x00` or `\\u0000`)",
          "remove it: no program argument, path or environment value can hold one");
    return std::nullopt;
  }
  error(node, path, "`" + path + "` must be text, but it is " + describe(node),
        "write a single value, quoted if it contains `:` or `#`");
  return std::nullopt;
}

std::optional<std::string> YamlReader::read_choice(const YAML::Node& node, const std::string& path,
                                                   const std::vector<std::string>& choices) {
  auto s = read_string(node, path);
  if (!s) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), *s) != choices.end()) return s;
  std::string all;
  for (const auto& c : choices) all += (all.empty() ? "" : ", ") + c;
  const std::string near = closest_match(*s, choices);
  error(node, path, "`" + path + "` is \"" + clip(*s) + "\", which is not one of: " + all,
        near.empty() ? "use one of: " + all : "did you mean `" + near + "`?");
  return std::nullopt;
}

std::optional<std::vector<std::string>> YamlReader::read_string_list(const YAML::Node& node,
                                                                     const std::string& path) {
  mark(node, path);
  if (!expect_sequence(node, path)) return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto s = read_string(node[i], path + "[" + std::to_string(i) + "]");
    if (s) out.push_back(*s);
    else ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::map<std::string, std::string>> YamlReader::read_string_map(
    const YAML::Node& node, const std::string& path) {
  mark(node, path);
  if (!expect_map(node, path)) return std::nullopt;
  std::map<std::string, std::string> out;
  bool ok = true;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      error(kv.first, path, "keys of `" + path + "` must be text", "use NAME: value");
      ok = false;
      continue;
    }
    auto v = read_string(kv.second, path + "." + kv.first.Scalar());
    if (!v) {
      ok = false;
    } else if (!out.emplace(kv.first.Scalar(), *v).second) {
      error(kv.first, path + "." + kv.first.Scalar(),
            "key `" + kv.first.Scalar() + "` appears twice in `" + path + "`",
            "keep one of them (YAML would silently keep only one value)");
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

} // namespace specbench::detail
