#include "config/placeholders.hpp"

#include "specbench/matrix.hpp"

#include <algorithm>
#include <map>

namespace specbench {
namespace detail {

bool placeholder_names(const std::string& arg, std::vector<std::string>& names,
                       std::string& problem) {
  for (size_t i = 0; i < arg.size(); ++i) {
    const char c = arg[i];
    if (c == '{') {
      if (i + 1 < arg.size() && arg[i + 1] == '{') {
        ++i;
        continue;
      }
      const size_t close = arg.find('}', i + 1);
      if (close == std::string::npos) {
        problem = "`{` without a closing `}`";
        return false;
      }
      const std::string name = arg.substr(i + 1, close - i - 1);
      const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
      });
      if (!word) {
        problem = "`{" + name + "}` is not a placeholder name (lower-case letters, digits, _)";
        return false;
      }
      names.push_back(name);
      i = close;
    } else if (c == '}') {
      if (i + 1 < arg.size() && arg[i + 1] == '}') {
        ++i;
        continue;
      }
      problem = "`}` without an opening `{` (write `}}` for a literal brace)";
      return false;
    }
  }
  return true;
}

std::string placeholder_restriction(const std::string& name) {
  if (name == "budget") return "tree";
  if (name == "block" || name == "draft_model") return "linear and tree";
  return {};
}

} // namespace detail

const std::vector<std::string>& known_placeholders() {
  static const std::vector<std::string> names = {
      "port",  "host",         "tp",          "gpus",           "model",     "model_name",
      "draft_model", "block",  "budget",      "verify_width",   "context_length",
      "specbench",   "cell_id", "phase"};
  return names;
}

Expected<std::vector<std::string>> substitute_placeholders(
    const std::vector<std::string>& argv_template, const std::map<std::string, std::string>& values,
    const std::vector<std::string>& keep) {
  std::vector<std::string> out;
  out.reserve(argv_template.size());
  for (const auto& arg : argv_template) {
    std::string result;
    std::map<std::string, int> kept; // placeholders left for later, by name
    for (size_t i = 0; i < arg.size(); ++i) {
      const char c = arg[i];
      if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
        result += c;
        ++i;
        continue;
      }
      if (c != '{') {
        if (c == '}')
          return Status(StatusCode::invalid_argument, "unmatched `}` in argument \"" + arg + "\"",
                        "write `}}` for a literal brace");
        result += c;
        continue;
      }
      const size_t close = arg.find('}', i + 1);
      if (close == std::string::npos)
        return Status(StatusCode::invalid_argument, "unmatched `{` in argument \"" + arg + "\"",
                      "close the placeholder with `}` or write `{{` for a literal brace");
      const std::string name = arg.substr(i + 1, close - i - 1);
      if (auto it = values.find(name); it != values.end()) {
        result += it->second;
      } else if (std::find(keep.begin(), keep.end(), name) != keep.end()) {
        result += "{" + name + "}";
        ++kept[name];
      } else {
        return Status(StatusCode::invalid_argument,
                      "placeholder {" + name + "} in argument \"" + arg + "\" has no value",
                      "use one of the placeholders documented in docs/sweep_format.md");
      }
      i = close;
    }
    // A kept placeholder is filled in later by plain text replacement, which cannot tell it from
    // the same text written literally (`{{port}}`) or brought in by a value: that text would
    // become the port too.
    for (const auto& name : keep) {
      const std::string text = "{" + name + "}";
      int seen = 0;
      for (size_t at = result.find(text); at != std::string::npos; at = result.find(text, at + 1))
        ++seen;
      if (seen > kept[name])
        return Status(StatusCode::invalid_argument,
                      "argument \"" + arg + "\" would hold the text " + text +
                          " that is not the placeholder (a literal `{{" + name +
                          "}}` or a value containing it); at launch it would be replaced too",
                      "write it differently (e.g. split the argument), or rename the value");
    }
    out.push_back(std::move(result));
  }
  return out;
}

} // namespace specbench
