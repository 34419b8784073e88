// YAML -> Sweep. Reads every field with its type and location, collects every problem, then runs
// the semantic validation and points its findings at the right line.
#include "config/yaml_reader.hpp"
#include "specbench/config.hpp"
#include "specbench/detail/utf8.hpp"
#include "specbench/matrix.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace specbench {
namespace {

using detail::YamlReader;

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

template <class T, class F> void set_if(std::optional<T> v, F&& assign) {
  if (v) assign(*v);
}

// Where each built list entry came from: "phases[1]" -> "phases[2]" when the YAML's phases[1]
// could not be read, "methods[3]" -> "methods[1]" and "methods[3].budgets" ->
// "methods[1].budgets[2]" for a tree method built once per budget. Validation numbers the built
// lists; its findings are moved to these YAML paths so that they point at the right entry and are
// told apart from the read errors of other entries.
using Origins = std::map<std::string, std::string>;

std::string yaml_path(const Origins& origins, const std::string& path) {
  for (std::string p = path;;) {
    if (auto it = origins.find(p); it != origins.end())
      return it->second + path.substr(p.size());
    const auto cut = p.find_last_of(".[");
    if (cut == std::string::npos || cut == 0)
      return path;
    p.resize(cut);
  }
}

// `env:` maps: variable names a process can have, each once.
std::optional<std::map<std::string, std::string>> read_env(YamlReader& r, const YAML::Node& n,
                                                           const std::string& path) {
  auto env = r.read_string_map(n, path);
  bool ok = env.has_value();
  if (n.IsMap())
    for (const auto& kv : n) {
      if (!kv.first.IsScalar())
        continue;
      const std::string& k = kv.first.Scalar();
      const bool valid = !k.empty() && !(k[0] >= '0' && k[0] <= '9') &&
                         std::all_of(k.begin(), k.end(), [](char c) {
                           return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                  (c >= '0' && c <= '9');
                         });
      if (!valid) {
        r.error(kv.first, path + "." + k, "`" + k + "` is not an environment variable name",
                "use letters, digits and '_', not starting with a digit (e.g. NCCL_DEBUG)");
        ok = false;
      }
    }
  if (!ok)
    return std::nullopt;
  return env;
}

void read_model(YamlReader& r, const YAML::Node& n, ModelSpec& m) {
  const std::string p = "model";
  r.mark(n, p);
  if (!r.expect_map(n, p)) return;
  r.check_keys(n, p, {"name", "path", "draft_path", "context_length"});
  if (n["name"]) set_if(r.read_string(n["name"], p + ".name"), [&](auto v) { m.name = v; });
  if (n["path"]) set_if(r.read_string(n["path"], p + ".path"), [&](auto v) { m.path = v; });
  if (n["draft_path"])
    set_if(r.read_string(n["draft_path"], p + ".draft_path"), [&](auto v) { m.draft_path = v; });
  if (n["context_length"])
    set_if(r.read_int(n["context_length"], p + ".context_length", 1, Limits::max_tokens),
           [&](auto v) { m.context_length = static_cast<int>(v); });
}

void read_server(YamlReader& r, const YAML::Node& n, ServerSpec& s) {
  const std::string p = "server";
  r.mark(n, p);
  if (!r.expect_map(n, p)) return;
  r.check_keys(n, p,
               {"backend", "api", "launch", "method_args", "env", "host", "port",
                "readiness_timeout_s", "stop_grace_s", "request_timeout_s"});
  if (n["backend"])
    set_if(r.read_choice(n["backend"], p + ".backend", {"sglang", "openai"}),
           [&](auto v) { s.backend = v == "sglang" ? Backend::sglang : Backend::openai; });
  if (n["api"])
    set_if(r.read_choice(n["api"], p + ".api", {"generate", "completions", "chat"}), [&](auto v) {
      s.api = v == "generate" ? ApiKind::generate
                              : (v == "completions" ? ApiKind::completions : ApiKind::chat);
    });
  else if (s.backend == Backend::openai)
    s.api = ApiKind::completions;
  if (n["launch"])
    set_if(r.read_string_list(n["launch"], p + ".launch"), [&](auto v) { s.launch = v; });
  if (n["method_args"] && r.expect_map(n["method_args"], p + ".method_args")) {
    const auto& ma = n["method_args"];
    r.mark(ma, p + ".method_args");
    r.check_keys(ma, p + ".method_args", {"autoregressive", "linear", "tree"});
    for (const char* k : {"autoregressive", "linear", "tree"})
      if (ma[k])
        set_if(r.read_string_list(ma[k], p + ".method_args." + k),
               [&](auto v) { s.method_args[k] = v; });
  }
  if (n["env"])
    set_if(read_env(r, n["env"], p + ".env"), [&](auto v) { s.env = v; });
  if (n["host"]) set_if(r.read_string(n["host"], p + ".host"), [&](auto v) { s.host = v; });
  if (n["port"])
    set_if(r.read_int(n["port"], p + ".port", 0, 65535), [&](auto v) { s.port = int(v); });
  if (n["readiness_timeout_s"])
    set_if(r.read_double(n["readiness_timeout_s"], p + ".readiness_timeout_s", 0.1, 86400),
           [&](auto v) { s.readiness_timeout_s = v; });
  if (n["stop_grace_s"])
    set_if(r.read_double(n["stop_grace_s"], p + ".stop_grace_s", 0, 3600),
           [&](auto v) { s.stop_grace_s = v; });
  if (n["request_timeout_s"])
    set_if(r.read_double(n["request_timeout_s"], p + ".request_timeout_s", 0.1, 86400),
           [&](auto v) { s.request_timeout_s = v; });
}

void read_phases(YamlReader& r, const YAML::Node& n, std::vector<PhaseSpec>& phases,
                 Origins& origins) {
  const std::string p = "phases";
  r.mark(n, p);
  if (!r.expect_sequence(n, p)) return;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string pp = at(p, i);
    const YAML::Node e = n[i];
    r.mark(e, pp);
    if (!r.expect_map(e, pp)) continue;
    r.check_keys(e, pp, {"tp", "gpus", "workloads", "env"});
    PhaseSpec ph;
    bool has_tp = false; // a phase without a readable tp is not built: it would be a made-up tp1
    if (e["tp"])
      set_if(r.read_int(e["tp"], pp + ".tp", 1, Limits::max_tp),
             [&](auto v) { ph.tp = int(v), has_tp = true; });
    else
      r.error(e, pp + ".tp", "phase " + std::to_string(i) + " has no `tp`",
              "add `tp: 1` (or 4, 8: the tensor-parallel size of this phase)");
    if (e["gpus"] && r.expect_sequence(e["gpus"], pp + ".gpus")) {
      r.mark(e["gpus"], pp + ".gpus");
      for (size_t g = 0; g < e["gpus"].size(); ++g)
        set_if(r.read_int(e["gpus"][g], at(pp + ".gpus", g), 0, Limits::max_tp - 1),
               [&](auto v) { ph.gpus.push_back(int(v)); });
    }
    if (e["workloads"])
      set_if(r.read_string_list(e["workloads"], pp + ".workloads"),
             [&](auto v) { ph.workloads = v; });
    if (e["env"])
      set_if(read_env(r, e["env"], pp + ".env"), [&](auto v) { ph.env = v; });
    if (!has_tp)
      continue;
    origins[at(p, phases.size())] = pp;
    phases.push_back(std::move(ph));
  }
}

void read_methods(YamlReader& r, const YAML::Node& n, std::vector<Method>& methods,
                  Origins& origins) {
  const std::string p = "methods";
  r.mark(n, p);
  if (!r.expect_sequence(n, p))
    return;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string mp = at(p, i);
    const YAML::Node e = n[i];
    r.mark(e, mp);
    if (!r.expect_map(e, mp)) continue;
    r.check_keys(e, mp, {"kind", "block", "budgets"});
    if (!e["kind"]) {
      r.error(e, mp + ".kind", "method " + std::to_string(i) + " has no `kind`",
              "add `kind: autoregressive`, `kind: linear` or `kind: tree`");
      continue;
    }
    auto kind = r.read_choice(e["kind"], mp + ".kind", {"autoregressive", "linear", "tree"});
    if (!kind) continue;
    Method m;
    m.kind = *kind == "autoregressive" ? MethodKind::autoregressive
             : *kind == "linear"       ? MethodKind::linear
                                       : MethodKind::tree;
    // Block and budget ranges are checked by validation so sweeps built in code get them too.
    if (e["block"])
      set_if(r.read_int(e["block"], mp + ".block", -1'000'000, 1'000'000),
             [&](auto v) { m.block = int(v); });
    if (m.kind == MethodKind::autoregressive) {
      if (e["block"] || e["budgets"])
        r.error(e, mp, "an autoregressive method takes no `block` or `budgets`",
                "remove them, or use `kind: linear` / `kind: tree`");
      origins[at(p, methods.size())] = mp;
      methods.push_back(m);
    } else if (m.kind == MethodKind::linear) {
      if (e["budgets"])
        r.error(e["budgets"], mp + ".budgets", "a linear method has no tree budgets",
                "remove `budgets`, or use `kind: tree`");
      if (!e["block"])
        r.error(e, mp + ".block", "a linear method needs `block` (the verify width)",
                "add `block: 16` for a b16 DFlash drafter");
      origins[at(p, methods.size())] = mp;
      methods.push_back(m);
    } else {
      if (!e["block"])
        r.error(e, mp + ".block", "a tree method needs `block` (the drafter's block size)",
                "add `block: 16` for a b16 DFlash drafter");
      // Without budgets the method is still built once (budget 0, whose finding is an echo of
      // this error), so that the rest of it, its block, is judged too.
      const auto without_budgets = [&] {
        origins[at(p, methods.size())] = mp;
        methods.push_back(m);
      };
      if (!e["budgets"]) {
        r.error(e, mp + ".budgets", "a tree method needs `budgets` (node budgets to sweep)",
                "add `budgets: [8, 16, 32, 64]`");
        without_budgets();
        continue;
      }
      const YAML::Node b = e["budgets"];
      r.mark(b, mp + ".budgets");
      if (!r.expect_sequence(b, mp + ".budgets")) {
        without_budgets();
        continue;
      }
      if (b.size() == 0) {
        r.error(b, mp + ".budgets", "`budgets` is empty", "list at least one node budget");
        without_budgets();
      }
      for (size_t j = 0; j < b.size(); ++j) {
        auto v = r.read_int(b[j], at(mp + ".budgets", j), -1'000'000, 1'000'000);
        if (!v) continue;
        Method t = m;
        t.budget = int(*v);
        // Validation's per-budget findings ("methods[k].budgets") belong to this budget's node.
        origins[at(p, methods.size())] = mp;
        origins[at(p, methods.size()) + ".budgets"] = at(mp + ".budgets", j);
        methods.push_back(t);
      }
    }
  }
}

void read_workloads(YamlReader& r, const YAML::Node& n, const std::filesystem::path& base,
                    std::vector<Workload>& workloads, Origins& origins) {
  const std::string p = "workloads";
  r.mark(n, p);
  if (!r.expect_sequence(n, p)) return;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string wp = at(p, i);
    const YAML::Node e = n[i];
    r.mark(e, wp);
    if (!r.expect_map(e, wp)) continue;
    r.check_keys(e, wp,
                 {"name", "dataset", "prompt_tokens", "max_prompt_tokens", "max_new_tokens",
                  "concurrency", "requests", "warmup", "runs", "temperature", "seed",
                  "ignore_eos"});
    Workload w;
    bool name_ok = true; // an unreadable name is not built as "default": it would clash
    if (e["name"]) {
      name_ok = false;
      set_if(r.read_string(e["name"], wp + ".name"), [&](auto v) { w.name = v, name_ok = true; });
    }
    if (e["dataset"])
      set_if(r.read_string(e["dataset"], wp + ".dataset"), [&](auto v) {
        std::filesystem::path d(v);
        w.dataset = (d.is_absolute() || base.empty() ? d : base / d).lexically_normal();
      });
    auto read_count = [&](const char* key, int min, int max, int& out) {
      if (e[key])
        set_if(r.read_int(e[key], wp + "." + key, min, max), [&](auto v) { out = int(v); });
    };
    read_count("prompt_tokens", 1, Limits::max_tokens, w.prompt_tokens);
    read_count("max_prompt_tokens", 1, Limits::max_tokens, w.max_prompt_tokens);
    read_count("max_new_tokens", 1, Limits::max_tokens, w.max_new_tokens);
    read_count("concurrency", 1, Limits::max_concurrency, w.concurrency);
    read_count("requests", 1, Limits::max_requests, w.requests);
    read_count("warmup", 0, Limits::max_requests, w.warmup);
    read_count("runs", 1, 1000, w.runs);
    if (e["temperature"])
      set_if(r.read_double(e["temperature"], wp + ".temperature", 0, 100),
             [&](auto v) { w.temperature = v; });
    if (e["seed"])
      set_if(r.read_int(e["seed"], wp + ".seed", 0, (1LL << 62)),
             [&](auto v) { w.seed = static_cast<uint64_t>(v); });
    if (e["ignore_eos"])
      set_if(r.read_bool(e["ignore_eos"], wp + ".ignore_eos"), [&](auto v) { w.ignore_eos = v; });
    if (!name_ok)
      continue;
    origins[at(p, workloads.size())] = wp;
    workloads.push_back(std::move(w));
  }
}

void read_runner(YamlReader& r, const YAML::Node& n, const std::filesystem::path& base,
                 RunnerSpec& rs) {
  const std::string p = "runner";
  r.mark(n, p);
  if (!r.expect_map(n, p)) return;
  r.check_keys(n, p,
               {"preflight", "skip_smaller_budgets_after_crash", "gpu_memory_tolerance_mib",
                "results_dir"});
  if (n["preflight"])
    set_if(r.read_bool(n["preflight"], p + ".preflight"), [&](auto v) { rs.preflight = v; });
  if (n["skip_smaller_budgets_after_crash"])
    set_if(r.read_bool(n["skip_smaller_budgets_after_crash"], p + ".skip_smaller_budgets_after_crash"),
           [&](auto v) { rs.skip_smaller_budgets_after_crash = v; });
  if (n["gpu_memory_tolerance_mib"])
    set_if(r.read_double(n["gpu_memory_tolerance_mib"], p + ".gpu_memory_tolerance_mib", 0, 1e7),
           [&](auto v) { rs.gpu_memory_tolerance_mib = v; });
  if (n["results_dir"])
    set_if(r.read_string(n["results_dir"], p + ".results_dir"), [&](auto v) {
      if (v.empty()) { // "" would put the results next to the sweep file
        r.error(n["results_dir"], p + ".results_dir", "`" + p + ".results_dir` is empty",
                "name a folder, or remove the key to use results/NAME");
        return;
      }
      std::filesystem::path d(v);
      rs.results_dir = (d.is_absolute() || base.empty() ? d : base / d).lexically_normal();
    });
}

// "0x" and two hex digits, for a byte named in a message.
std::string hex_byte(unsigned char u) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[u >> 4] + digits[u & 15];
}

// Quick structural screen before yaml-cpp sees the text: binary data and absurd nesting get a
// clear message instead of a parser error deep inside.
std::optional<Diagnostic> screen_text(std::string_view text, const std::string& file) {
  if (text.size() > Limits::max_file_bytes)
    return Diagnostic{Severity::error, file, 0, 0, "",
                      "the file is " + std::to_string(text.size()) +
                          " bytes; a sweep file is at most " +
                          std::to_string(Limits::max_file_bytes) + " bytes",
                      "check that this is the sweep YAML and not a dataset or a binary"};
  // Text that is not UTF-8 would reach the results' JSON, which cannot hold it.
  const size_t bad_utf8 = detail::first_invalid_utf8(text);
  int line = 1, col = 0, depth = 0;
  // Brackets in comments and quoted text nest nothing. A quote or comment starts only where a
  // token can (`a'[[[` inside a flow list is a plain scalar and then real brackets).
  enum class In { yaml, comment, single_quoted, double_quoted } in = In::yaml;
  char prev = '\n';
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++col;
    const auto u = static_cast<unsigned char>(c);
    if (i == bad_utf8) {
      return Diagnostic{Severity::error, file, line, col, "",
                        "the file is not UTF-8 text (byte " + hex_byte(u) +
                            " starts no UTF-8 character)",
                        "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"};
    }
    if (c == '\n') {
      ++line;
      col = 0;
      if (in == In::comment)
        in = In::yaml;
      prev = c;
      continue;
    }
    if (u == 0 || (u < 0x20 && c != '\t' && c != '\r'))
      return Diagnostic{Severity::error, file, line, col, "",
                        "the file contains binary data (byte " + hex_byte(u) + ")",
                        "give the path of a YAML text file"};
    // (Not after a bare ':': brackets counted too often are safe, too seldom are not.)
    const bool token_start = prev == '\n' || prev == ' ' || prev == '\t' || prev == '\r' ||
                             prev == '[' || prev == '{' || prev == ',';
    const bool escaped = in == In::double_quoted && prev == '\\';
    prev = escaped ? '\0' : c; // "\\" escapes a backslash: the next quote ends the scalar
    switch (in) {
    case In::comment:
      continue;
    case In::single_quoted:
      if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i, ++col; // '' is a quote inside the scalar
        prev = '\'';
      } else if (c == '\'') {
        in = In::yaml;
      }
      continue;
    case In::double_quoted:
      if (c == '"' && !escaped)
        in = In::yaml;
      continue;
    case In::yaml:
      break;
    }
    if (c == '#' && (col == 1 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      in = In::comment;
    } else if (token_start && (c == '\'' || c == '"')) {
      in = c == '"' ? In::double_quoted : In::single_quoted;
    } else if (c == '[' || c == '{') {
      if (++depth > Limits::max_nesting)
        return Diagnostic{Severity::error, file, line, col, "",
                          "lists or maps nested deeper than " +
                              std::to_string(Limits::max_nesting) + " levels",
                          "a sweep needs only a few levels; check the file's brackets"};
    } else if (c == ']' || c == '}') {
      if (depth > 0)
        --depth;
    }
  }
  return std::nullopt;
}

// The documents of a YAML text, each with where it starts and where its first content is (none
// for an empty document). Counted from parser events because yaml-cpp's LoadAll loops forever,
// allocating, on text its parser cannot move past (a stray `,` at the top: every call returns
// the same empty document again); a document that starts where the one before did ends it.
struct DocumentScan : YAML::EventHandler {
  struct Document {
    YAML::Mark start;
    std::optional<YAML::Mark> content;
  };
  std::vector<Document> documents;
  bool stuck = false;

  void OnDocumentStart(const YAML::Mark& mark) override { documents.push_back({mark, {}}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { seen(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    seen(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    seen(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    seen(mark);
  }
  void OnMapEnd() override {}

  void seen(const YAML::Mark& mark) {
    if (!documents.empty() && !documents.back().content)
      documents.back().content = mark;
  }
  /// Reads documents until the end or until the parser makes no progress (`stuck`).
  void read(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(*this)) {
      const size_t n = documents.size();
      if (n >= 2 && documents[n - 1].start.pos == documents[n - 2].start.pos) {
        stuck = true;
        return;
      }
    }
  }
  /// The documents that count: the first, and every later one with content (a closing `---`
  /// opens an empty one).
  size_t count() const {
    size_t n = documents.empty() ? 0 : 1;
    for (size_t i = 1; i < documents.size(); ++i)
      n += documents[i].content ? 1 : 0;
    return n;
  }
  /// The first document after the first that has content, or null.
  const Document* second_with_content() const {
    for (size_t i = 1; i < documents.size(); ++i)
      if (documents[i].content)
        return &documents[i];
    return nullptr;
  }
};

} // namespace

int LoadResult::error_count() const noexcept {
  int n = 0;
  for (const auto& d : diagnostics) n += d.severity == Severity::error;
  return n;
}

std::string Diagnostic::to_string() const {
  std::ostringstream os;
  os << (file.empty() ? "<sweep>" : file);
  if (line > 0) os << ':' << line << ':' << column;
  os << ": " << (severity == Severity::error ? "error" : "warning") << ": " << message;
  if (!path.empty()) os << " [" << path << "]";
  if (!fix.empty()) os << "\n    fix: " << fix;
  return os.str();
}

LoadResult load_sweep_text(std::string_view yaml, const std::string& file_name,
                           const std::filesystem::path& base_dir) {
  LoadResult result;
  if (auto bad = screen_text(yaml, file_name)) {
    result.diagnostics.push_back(*bad);
    return result;
  }
  YAML::Node root;
  try {
    // YAML::Load would read the first document and silently drop any after a `---`.
    const std::string text(yaml);
    DocumentScan scan;
    scan.read(text);
    if (scan.stuck) {
      const YAML::Mark m = scan.documents.back().start;
      result.diagnostics.push_back(
          {Severity::error, file_name, m.line + 1, m.column + 1, "",
           "YAML syntax error: the text here cannot start a value (a stray `,`, `]` or `}` "
           "outside any list or map?)",
           "fix the YAML syntax here (indentation, quotes, brackets)"});
      return result;
    }
    // A closing `---` opens an empty document: only documents with content count.
    if (const auto* second = scan.second_with_content()) {
      const YAML::Mark m = *second->content;
      result.diagnostics.push_back(
          {Severity::error, file_name, m.line + 1, m.column + 1, "",
           "the file holds " + std::to_string(scan.count()) +
               " YAML documents (separated by `---`); a sweep is one document",
           "merge them into one, or put each sweep in its own file"});
      return result;
    }
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    const int col = e.mark.is_null() ? 0 : e.mark.column + 1;
    result.diagnostics.push_back({Severity::error, file_name, line, col, "",
                                  "YAML syntax error: " + e.msg,
                                  "fix the YAML syntax here (indentation, quotes, brackets)"});
    return result;
  } catch (const std::exception& e) {
    result.diagnostics.push_back({Severity::error, file_name, 0, 0, "",
                                  std::string("could not parse the YAML: ") + e.what(),
                                  "check that the file is a YAML sweep"});
    return result;
  }

  YamlReader r(file_name);
  Origins origins;
  Sweep sweep;
  sweep.source_hash = stable_hash(yaml);
  if (!root.IsMap()) {
    r.error(root, "", "the sweep must be a map of keys at the top level, but it is " +
                          detail::describe(root),
            "start from configs/demo.yaml: `name:`, `gpus:`, `model:`, `server:`, `phases:`, "
            "`methods:`, `workloads:`");
    result.diagnostics = std::move(r.diagnostics());
    return result;
  }
  try {
    r.check_keys(root, "",
                 {"name", "description", "gpus", "model", "server", "phases", "methods",
                  "workloads", "runner"});
    auto require = [&](const char* key, const char* fix) {
      if (root[key]) return true;
      r.error(root, key, std::string("missing required key `") + key + "`", fix);
      return false;
    };
    if (root["name"]) set_if(r.read_string(root["name"], "name"), [&](auto v) { sweep.name = v; });
    if (root["description"])
      set_if(r.read_string(root["description"], "description"),
             [&](auto v) { sweep.description = v; });
    if (require("gpus", "add `gpus: 8` (how many GPUs the machine for this sweep has)"))
      set_if(r.read_int(root["gpus"], "gpus", 1, Limits::max_tp),
             [&](auto v) { sweep.gpus = int(v); });
    if (require("model", "add `model:` with `path:` (and `draft_path:` for linear/tree)"))
      read_model(r, root["model"], sweep.model);
    if (require("server", "add `server:` with `backend:` and `launch:` (the argv template)"))
      read_server(r, root["server"], sweep.server);
    if (require("phases", "add `phases:` with at least `- tp: 1`"))
      read_phases(r, root["phases"], sweep.phases, origins);
    if (require("methods", "add `methods:` with at least `- kind: autoregressive`"))
      read_methods(r, root["methods"], sweep.methods, origins);
    if (require("workloads", "add `workloads:` with at least one workload"))
      read_workloads(r, root["workloads"], base_dir, sweep.workloads, origins);
    if (root["runner"]) read_runner(r, root["runner"], base_dir, sweep.runner);
  } catch (const YAML::Exception& e) {
    // yaml-cpp may still throw on odd trees (e.g. a key that is itself a complex node).
    r.diagnostics().push_back({Severity::error, file_name, e.mark.is_null() ? 0 : e.mark.line + 1,
                               e.mark.is_null() ? 0 : e.mark.column + 1, "",
                               "could not read the sweep: " + e.msg,
                               "check the structure against configs/demo.yaml"});
  }
  sweep.source = file_name;

  result.diagnostics = std::move(r.diagnostics());
  // Semantic rules run even when some keys could not be read, so that every problem is reported
  // at once. A finding is only an echo of a read error, and dropped, when it is under a key that
  // has one (`gpus: x` must not also say "gpus must be declared"), or when it is about a whole
  // list some entry of which could not be read ("no phases", "server.launch is empty").
  std::vector<std::string> unreadable;
  for (const auto& d : result.diagnostics)
    if (d.severity == Severity::error) unreadable.push_back(d.path);
  auto under = [](const std::string& path, const std::string& u) {
    return !u.empty() && path.compare(0, u.size(), u) == 0 &&
           (path.size() == u.size() || path[u.size()] == '.' || path[u.size()] == '[');
  };
  auto echoes = [&](const std::string& path) {
    return std::any_of(unreadable.begin(), unreadable.end(), [&](const std::string& u) {
      return under(path, u) ||
             (!path.empty() && u.size() > path.size() && under(u, path) && u[path.size()] == '[');
    });
  };
  // A context overflow is computed from the workload's prompt and output lengths, the context
  // and the methods: with any of them unreadable its numbers would be defaults nobody wrote.
  auto overflow_echoes = [&](const Diagnostic& d) {
    if (d.message.find("context overflow") == std::string::npos)
      return false;
    const std::string workload = d.path.substr(0, d.path.find('.'));
    return std::any_of(unreadable.begin(), unreadable.end(), [&](const std::string& u) {
      return under(u, workload) || under(u, "methods") || under(u, "model.context_length");
    });
  };
  // A finding about a map says what its keys mean together ("needs a dataset or
  // prompt_tokens"): with one of them unreadable it is an echo too.
  auto child_unreadable = [&](const std::string& path) {
    return std::any_of(unreadable.begin(), unreadable.end(), [&](const std::string& u) {
      return !path.empty() && u.size() > path.size() && under(u, path) && u[path.size()] == '.';
    });
  };
  for (auto d : validate_sweep(sweep)) {
    d.path = yaml_path(origins, d.path);
    if (echoes(d.path) || child_unreadable(d.path) || overflow_echoes(d))
      continue;
    // The same finding once (a method's block error is found once per budget).
    if (std::any_of(result.diagnostics.begin(), result.diagnostics.end(), [&](const Diagnostic& e) {
          return e.severity == d.severity && e.path == d.path && e.message == d.message;
        }))
      continue;
    d.file = file_name;
    std::tie(d.line, d.column) = r.location_of(d.path);
    result.diagnostics.push_back(std::move(d));
  }
  if (result.error_count() == 0) result.sweep = std::move(sweep);
  return result;
}

LoadResult load_sweep_file(const std::filesystem::path& file) {
  LoadResult result;
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status)) {
    result.diagnostics.push_back({Severity::error, file.string(), 0, 0, "",
                                  "the sweep file does not exist",
                                  "check the path; example sweeps are in configs/"});
    return result;
  }
  if (!std::filesystem::is_regular_file(status)) {
    result.diagnostics.push_back({Severity::error, file.string(), 0, 0, "",
                                  "the sweep path is not a regular file",
                                  "give the path of a YAML file"});
    return result;
  }
  const auto size = std::filesystem::file_size(file, ec);
  if (!ec && size > Limits::max_file_bytes) {
    result.diagnostics.push_back({Severity::error, file.string(), 0, 0, "",
                                  "the file is " + std::to_string(size) +
                                      " bytes; a sweep file is at most " +
                                      std::to_string(Limits::max_file_bytes) + " bytes",
                                  "check that this is the sweep YAML"});
    return result;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    result.diagnostics.push_back({Severity::error, file.string(), 0, 0, "",
                                  "the sweep file cannot be read (permission?)",
                                  "check the file's permissions"});
    return result;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_sweep_text(text.str(), file.string(), file.parent_path());
}

} // namespace specbench
