// Semantic rules of a sweep, shared by YAML files and sweeps built in code. Each finding names
// the key path so the loader can point at its line.
#include "config/dataset_scan.hpp"
#include "config/did_you_mean.hpp"
#include "config/placeholders.hpp"
#include "specbench/client.hpp"
#include "specbench/config.hpp"
#include "specbench/matrix.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>

namespace specbench {

const char* to_string(Backend b) noexcept { return b == Backend::sglang ? "sglang" : "openai"; }

const char* to_string(ApiKind a) noexcept {
  switch (a) {
  case ApiKind::generate: return "generate";
  case ApiKind::completions: return "completions";
  case ApiKind::chat: return "chat";
  }
  return "?";
}

int Method::verify_width() const noexcept {
  switch (kind) {
  case MethodKind::autoregressive: return 1;
  case MethodKind::linear: return block;
  case MethodKind::tree: return budget + 1;
  }
  return 1;
}

const char* Method::kind_name() const noexcept {
  switch (kind) {
  case MethodKind::autoregressive: return "autoregressive";
  case MethodKind::linear: return "linear";
  case MethodKind::tree: return "tree";
  }
  return "?";
}

std::string Method::id() const {
  switch (kind) {
  case MethodKind::autoregressive: return "autoregressive";
  case MethodKind::linear: return "linear-k" + std::to_string(block);
  case MethodKind::tree: return "ddtree-b" + std::to_string(budget);
  }
  return "?";
}

std::optional<ContextLength> resolve_context_length(const ModelSpec& model, bool allow_longer) {
  std::optional<ContextLength> from_model;
  std::error_code ec;
  const std::filesystem::path config = std::filesystem::path(model.path) / "config.json";
  if (!model.path.empty() && std::filesystem::is_regular_file(config, ec)) {
    std::ifstream in(config);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      auto read = [](const nlohmann::json& o) -> int {
        for (const char* key : {"max_position_embeddings", "max_sequence_length", "seq_length",
                                "n_positions"})
          if (o.contains(key) && o[key].is_number_integer() && o[key].get<long long>() > 0)
            return static_cast<int>(std::min<long long>(o[key].get<long long>(), 1LL << 30));
        return 0;
      };
      int n = read(j);
      if (n == 0 && j.contains("text_config") && j["text_config"].is_object())
        n = read(j["text_config"]);
      if (n > 0) from_model = ContextLength{n, config.string()};
    }
  }
  // The sweep's context_length is what the server is launched with; the model's config.json is
  // its maximum, which SGLang refuses to exceed unless told it may.
  if (model.context_length > 0 &&
      (!from_model || model.context_length <= from_model->tokens || allow_longer))
    return ContextLength{model.context_length, "model.context_length in the sweep"};
  if (from_model && model.context_length > 0)
    from_model->capped_from = model.context_length;
  return from_model;
}

bool allows_longer_context(const Sweep& sweep) {
  constexpr const char* key = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN";
  auto allows = [&](const std::map<std::string, std::string>& env) {
    auto it = env.find(key);
    return it != env.end() && (it->second == "1" || it->second == "true" || it->second == "True");
  };
  if (allows(sweep.server.env))
    return true;
  if (sweep.phases.empty())
    return false;
  for (const auto& p : sweep.phases)
    if (!allows(p.env))
      return false;
  return true;
}

namespace {

struct Findings {
  std::vector<Diagnostic> out;
  void error(std::string path, std::string message, std::string fix) {
    out.push_back({Severity::error, "<sweep>", 0, 0, std::move(path), std::move(message),
                   std::move(fix)});
  }
  void warning(std::string path, std::string message, std::string fix) {
    out.push_back({Severity::warning, "<sweep>", 0, 0, std::move(path), std::move(message),
                   std::move(fix)});
  }
};

std::string idx(const std::string& p, size_t i) { return p + "[" + std::to_string(i) + "]"; }

bool id_safe(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           (c >= 'A' && c <= 'Z') || c == '.';
  });
}

// Checks placeholders of one argv template; `kind` is the method kind the template belongs to,
// or "" for the launch template shared by every cell.
void check_template(Findings& f, const Sweep& s, const std::vector<std::string>& argv,
                    const std::string& path, const std::string& kind, bool& uses_draft,
                    bool& uses_port) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::vector<std::string> names;
    std::string problem;
    if (!detail::placeholder_names(argv[i], names, problem)) {
      f.error(idx(path, i), problem + " in \"" + argv[i] + "\"",
              "write placeholders as {name}; `{{` and `}}` are literal braces");
      continue;
    }
    // The launch fills {port} by replacing that text, so a literal one would get the port too:
    // substitution with {port} kept refuses it (the other names get a value that joins nothing).
    std::map<std::string, std::string> stand_ins;
    for (const auto& n : names)
      if (n != "port")
        stand_ins[n] = "\x1f";
    if (!substitute_placeholders({argv[i]}, stand_ins, {"port"}))
      f.error(idx(path, i),
              "\"" + argv[i] +
                  "\" holds a literal {port} (written `{{port}}`), which the launch "
                  "would replace with the port like the placeholder",
              "write it differently (e.g. split the argument), or use the placeholder {port}");
    for (const auto& n : names) {
      const auto& known = known_placeholders();
      if (std::find(known.begin(), known.end(), n) == known.end()) {
        const std::string near = detail::closest_match(n, known);
        std::string all;
        for (const auto& k : known) all += " {" + k + "}";
        f.error(idx(path, i), "unknown placeholder {" + n + "}",
                near.empty() ? "known placeholders:" + all : "did you mean {" + near + "}?");
        continue;
      }
      if (n == "draft_model") uses_draft = true;
      if (n == "port")
        uses_port = true;
      const std::string only = detail::placeholder_restriction(n);
      if (only.empty()) continue;
      if (kind.empty() || only.find(kind) == std::string::npos)
        f.error(idx(path, i),
                "placeholder {" + n + "} is only defined for " + only + " cells, but " +
                    (kind.empty() ? "server.launch is shared by every cell"
                                  : "this is the " + kind + " template"),
                "move it to server.method_args." +
                    std::string(only.find("linear") == 0 ? "linear / tree" : "tree"));
    }
  }
  (void)s;
}

// A host the client can connect to: a name of letters, digits, '-' and '.' (an IPv4 address
// too), at most 253 characters, or an IPv6 address (colons only there: "localhost:8000" is a
// host and a port, and the port goes in server.port).
bool host_name_ok(const std::string& h) {
  if (h.find(':') != std::string::npos) {
    in6_addr a{};
    return ::inet_pton(AF_INET6, h.c_str(), &a) == 1;
  }
  if (h.empty() || h.size() > 253 || h.front() == '-' || h.front() == '.')
    return false;
  return std::all_of(h.begin(), h.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  });
}

} // namespace

std::vector<Diagnostic> validate_sweep(const Sweep& s) {
  Findings f;
  // Each dataset is read and parsed once, however many checks or workloads look at it.
  std::map<std::filesystem::path, detail::DatasetSummary> scans;
  const auto scan = [&](const std::filesystem::path& file) -> const detail::DatasetSummary& {
    auto it = scans.find(file);
    if (it == scans.end())
      it = scans.emplace(file, detail::scan_dataset(file)).first;
    return it->second;
  };
  // The name is the default results directory (results/NAME): a path there would write elsewhere.
  if (!s.name.empty() && (!id_safe(s.name) || s.name.find_first_not_of('.') == std::string::npos))
    f.error("name", "the sweep name \"" + s.name + "\" cannot name a directory under results/",
            "use letters, digits, '-', '_' and '.' (not only dots), at most 64 characters; "
            "set runner.results_dir to choose where results go");
  if (s.gpus < 1 || s.gpus > Limits::max_tp)
    f.error("gpus", "`gpus` must be declared (1.." + std::to_string(Limits::max_tp) + ")",
            "set `gpus:` to the number of GPUs of the machine this sweep is for");
  if (s.model.path.empty())
    f.error("model.path", "`model.path` is missing",
            "set it to the model directory (e.g. /models/Qwen3.6-27B) or hub id");
  // These values are filled into the launch templates before {port}, which is replaced by plain
  // text at launch: a value holding the text {port} would get the port too.
  for (const auto& [key, value] :
       {std::pair<const char*, const std::string*>{"model.path", &s.model.path},
        {"model.name", &s.model.name},
        {"model.draft_path", &s.model.draft_path}})
    if (value->find("{port}") != std::string::npos)
      f.error(key,
              std::string("`") + key +
                  "` holds the text {port}, which the launch would replace "
                  "with the server's port like the placeholder",
              std::string("rename it so that it does not contain {port}"));
  // The model paths go to the server as written, so a relative one is relative to the directory
  // specbench (and the server) runs in, unlike datasets, which are relative to the sweep file. A
  // relative path that leads nowhere here but to a folder next to the sweep file is that mix-up.
  for (const auto& [key, value] :
       {std::pair<const char*, const std::string*>{"model.path", &s.model.path},
        {"model.draft_path", &s.model.draft_path}}) {
    namespace fs = std::filesystem;
    const fs::path path(*value);
    const fs::path beside = s.source.parent_path() / path;
    std::error_code ec;
    if (path.empty() || path.is_absolute() || (*value)[0] == '~' ||
        s.source.parent_path().empty() || fs::equivalent(s.source.parent_path(), ".", ec) ||
        fs::symlink_status(path, ec).type() != fs::file_type::not_found ||
        !fs::is_directory(beside, ec))
      continue;
    const std::string where = fs::absolute(beside, ec).lexically_normal().string();
    f.warning(key,
              std::string("`") + key + "` " + *value +
                  " is relative to the directory specbench runs in (the server's), where "
                  "nothing is at that path; a folder of that name is next to the sweep file, at " +
                  where,
              "write the absolute path (" + where + ") or run specbench from " +
                  fs::absolute(s.source.parent_path(), ec).lexically_normal().string());
  }

  // ---- server ----
  if (s.server.launch.empty())
    f.error("server.launch", "`server.launch` (the argv template) is missing or empty",
            "e.g. [python3, -m, sglang.launch_server, --model-path, \"{model}\", --port, "
            "\"{port}\", --tp-size, \"{tp}\"]");
  else if (s.server.launch[0].find_first_not_of(" \t") == std::string::npos)
    f.error("server.launch[0]", "the program to start, `server.launch[0]`, is empty",
            "name the server's executable first, e.g. python3 or /usr/local/bin/vllm");
  if (!host_name_ok(s.server.host))
    f.error("server.host",
            "`server.host` \"" + s.server.host + "\" is not a host name or an IP address",
            std::string(s.server.host.find(':') != std::string::npos &&
                                s.server.host.find("::") == std::string::npos
                            ? "put the port in `server.port`, not in the host; "
                            : "") +
                "use e.g. 127.0.0.1, ::1 or localhost (where the server listens; the runner "
                "connects there)");
  if (s.server.api == ApiKind::generate && s.server.backend != Backend::sglang)
    f.error("server.api", "api `generate` is SGLang's native API, but the backend is openai",
            "use `api: completions` or `api: chat` with an OpenAI-compatible server");
  bool uses_draft = false;
  bool port_used = false;
  check_template(f, s, s.server.launch, "server.launch", "", uses_draft, port_used);
  for (const auto& [kind, argv] : s.server.method_args) {
    if (kind != "autoregressive" && kind != "linear" && kind != "tree") {
      f.error("server.method_args." + kind, "unknown method kind `" + kind + "`",
              "use autoregressive, linear or tree");
      continue;
    }
    bool port_in_method_args = false; // only the shared template's {port} reaches every cell
    check_template(f, s, argv, "server.method_args." + kind, kind, uses_draft, port_in_method_args);
  }
  if (!s.server.launch.empty() && !port_used && s.server.port == 0)
    f.warning("server.launch",
              "the launch template has no {port}, so the server cannot be told which free port "
              "to use",
              "add e.g. `--port`, `\"{port}\"`, or fix `server.port`");
  if (s.server.port < 0 || s.server.port > 65535)
    f.error("server.port", "port " + std::to_string(s.server.port) + " is not a TCP port",
            "use 0 (choose a free port per cell) or 1..65535");

  // ---- methods ----
  if (s.methods.empty())
    f.error("methods", "no methods to run", "add at least `- kind: autoregressive`");
  std::set<std::string> method_ids;
  bool any_spec = false, any_ar = false;
  std::set<std::string> warned_kinds; // one warning per kind, not per tree budget
  for (size_t i = 0; i < s.methods.size(); ++i) {
    const Method& m = s.methods[i];
    const std::string p = idx("methods", i);
    any_ar |= m.kind == MethodKind::autoregressive;
    if (m.kind != MethodKind::autoregressive) {
      any_spec = true;
      if (m.block < 2 || m.block > Limits::max_block)
        f.error(p + ".block",
                "block " + std::to_string(m.block) + " is out of range 2.." +
                    std::to_string(Limits::max_block),
                "use the drafter's block size, e.g. 16 for a b16 DFlash drafter");
      if (!s.server.method_args.count(m.kind_name()) && warned_kinds.insert(m.kind_name()).second)
        f.warning("server.method_args",
                  std::string("no server.method_args.") + m.kind_name() + ", so " +
                      m.kind_name() + " cells launch the same server as autoregressive ones",
                  std::string("add server.method_args.") + m.kind_name() +
                      " with the speculative-decoding flags");
    }
    if (m.kind == MethodKind::tree) {
      if (m.budget < 1)
        f.error(p + ".budgets",
                "tree budget " + std::to_string(m.budget) + " is not positive",
                "a budget is the number of draft nodes per step: use 1.." +
                    std::to_string(Limits::max_budget));
      else if (m.budget > Limits::max_budget)
        f.error(p + ".budgets",
                "tree budget " + std::to_string(m.budget) + " is larger than " +
                    std::to_string(Limits::max_budget),
                "DDTree's own sweeps stop at 1024 nodes; use a budget up to " +
                    std::to_string(Limits::max_budget));
    }
    if (!method_ids.insert(m.id()).second)
      f.error(m.kind == MethodKind::tree ? p + ".budgets" : p, "method `" + m.id() + "` is listed twice (duplicate cell ids)",
              "remove the repeated method or budget");
  }
  if (any_spec && !any_ar)
    f.warning("methods", "no autoregressive method, so no speedup can be computed",
              "add `- kind: autoregressive` as the baseline");
  if (uses_draft && any_spec && s.model.draft_path.empty())
    f.error("model.draft_path", "the launch templates use {draft_model} but model.draft_path is empty",
            "set model.draft_path to the DFlash drafter (directory or hub id)");

  // ---- workloads ----
  if (s.workloads.empty())
    f.error("workloads", "no workloads", "add a workload with prompt_tokens or a dataset");
  std::set<std::string> workload_names;
  for (size_t i = 0; i < s.workloads.size(); ++i) {
    const Workload& w = s.workloads[i];
    const std::string p = idx("workloads", i);
    if (!id_safe(w.name))
      f.error(p + ".name", "workload name \"" + w.name + "\" cannot be part of a cell id",
              "use letters, digits, '-', '_' or '.', at most 64 characters");
    else if (!workload_names.insert(w.name).second)
      f.error(p + ".name", "workload name `" + w.name + "` is used twice (duplicate cell ids)",
              "give each workload its own name");
    const bool has_dataset = !w.dataset.empty();
    if (has_dataset == (w.prompt_tokens > 0))
      f.error(p, has_dataset ? "a workload takes a dataset or prompt_tokens, not both"
                             : "a workload needs a dataset or prompt_tokens",
              "set `prompt_tokens: N` for synthetic prompts of exactly N tokens, or "
              "`dataset: prompts.jsonl`");
    if (has_dataset) {
      if (std::string why = dataset_file_problem(w.dataset); !why.empty()) {
        f.error(p + ".dataset", "dataset " + w.dataset.string() + " " + why,
                "give a JSONL file (one {\"prompt\": ...} or {\"input_ids\": [...]} per line); "
                "relative paths are relative to the sweep file");
      } else {
        const auto& sum = scan(w.dataset);
        if (!sum.problem.empty())
          f.error(p + ".dataset", "dataset " + w.dataset.string() + ": " + sum.problem, sum.fix);
      }
    }
    auto range = [&](const char* key, long long v, long long lo, long long hi) {
      if (v < lo || v > hi)
        f.error(p + "." + key,
                std::string("`") + key + "` is " + std::to_string(v) + ", outside " +
                    std::to_string(lo) + ".." + std::to_string(hi),
                "use a value in that range");
    };
    range("max_new_tokens", w.max_new_tokens, 1, Limits::max_tokens);
    range("concurrency", w.concurrency, 1, Limits::max_concurrency);
    range("requests", w.requests, 1, Limits::max_requests);
    range("warmup", w.warmup, 0, Limits::max_requests);
    range("runs", w.runs, 1, 1000);
    if (w.temperature < 0 || w.temperature > 100)
      f.error(p + ".temperature", "temperature must be in 0..100", "use 0 for greedy decoding");
    if (w.concurrency > w.requests)
      f.warning(p + ".concurrency",
                "concurrency " + std::to_string(w.concurrency) + " exceeds requests " +
                    std::to_string(w.requests) + ", so it is never reached",
                "raise requests to at least the concurrency");
  }

  // ---- phases ----
  if (s.phases.empty()) f.error("phases", "no phases", "add `phases: [{tp: 1}]`");
  std::set<std::string> phase_ids;
  for (size_t i = 0; i < s.phases.size(); ++i) {
    const PhaseSpec& ph = s.phases[i];
    const std::string p = idx("phases", i);
    if (ph.tp < 1 || ph.tp > Limits::max_tp) {
      f.error(p + ".tp", "tp " + std::to_string(ph.tp) + " is out of range", "use 1, 2, 4, 8, ...");
      continue;
    }
    if (s.gpus >= 1 && ph.tp > s.gpus)
      f.error(p + ".tp",
              "tp " + std::to_string(ph.tp) + " needs " + std::to_string(ph.tp) +
                  " GPUs but the sweep declares gpus: " + std::to_string(s.gpus),
              "lower tp to at most " + std::to_string(s.gpus) +
                  ", or raise `gpus` if the machine really has more");
    if (!ph.gpus.empty()) {
      if (static_cast<int>(ph.gpus.size()) != ph.tp)
        f.error(p + ".gpus",
                "tp " + std::to_string(ph.tp) + " but " + std::to_string(ph.gpus.size()) +
                    (ph.gpus.size() == 1 ? " GPU listed" : " GPUs listed"),
                "list exactly tp GPU ordinals, or drop `gpus` to use 0..tp-1");
      std::set<int> seen;
      for (size_t g = 0; g < ph.gpus.size(); ++g) {
        if (!seen.insert(ph.gpus[g]).second)
          f.error(idx(p + ".gpus", g), "GPU " + std::to_string(ph.gpus[g]) + " is listed twice",
                  "list each GPU once");
        if (s.gpus >= 1 && ph.gpus[g] >= s.gpus)
          f.error(idx(p + ".gpus", g),
                  "GPU " + std::to_string(ph.gpus[g]) + " does not exist: the sweep declares " +
                      std::to_string(s.gpus) + " GPUs (ordinals 0.." +
                      std::to_string(s.gpus - 1) + ")",
                  "use an ordinal below " + std::to_string(s.gpus));
      }
    }
    // The runner sets CUDA_VISIBLE_DEVICES from `gpus` and the preflight checks those GPUs; an
    // env entry of its own would give the server other GPUs than the ones checked.
    const bool env_sets = ph.env.count("CUDA_VISIBLE_DEVICES") > 0;
    const bool server_env_sets = s.server.env.count("CUDA_VISIBLE_DEVICES") > 0;
    if (env_sets || server_env_sets) {
      const std::string where = env_sets ? p + ".env" : "server.env";
      if (!ph.gpus.empty())
        f.error(where,
                where + " sets CUDA_VISIBLE_DEVICES, which would override this phase's `gpus` "
                        "(the GPUs the preflight checks)",
                "remove CUDA_VISIBLE_DEVICES: `gpus` sets it for the server");
      else
        f.warning(where,
                  where + " sets CUDA_VISIBLE_DEVICES, but the preflight checks GPUs 0.." +
                      std::to_string(ph.tp - 1) + ", which may not be the ones it names",
                  "list the phase's GPUs in `gpus:` instead (it sets CUDA_VISIBLE_DEVICES)");
    }
    if (!phase_ids.insert("tp" + std::to_string(ph.tp)).second)
      f.error(p + ".tp",
              "a second phase with tp " + std::to_string(ph.tp) + " (duplicate phase id tp" +
                  std::to_string(ph.tp) + ")",
              "merge the two phases, or split the work with `workloads:` in one phase");
    for (size_t k = 0; k < ph.workloads.size(); ++k)
      if (!workload_names.count(ph.workloads[k])) {
        std::vector<std::string> names(workload_names.begin(), workload_names.end());
        const std::string near = detail::closest_match(ph.workloads[k], names);
        f.error(idx(p + ".workloads", k), "no workload is named `" + ph.workloads[k] + "`",
                near.empty() ? "use a name from `workloads:`" : "did you mean `" + near + "`?");
      }
  }

  // ---- size: phases x methods x workloads ----
  long long cells = 0;
  for (const auto& ph : s.phases)
    cells +=
        static_cast<long long>(s.methods.size()) *
        static_cast<long long>(ph.workloads.empty() ? s.workloads.size() : ph.workloads.size());
  if (cells > Limits::max_cells)
    f.error("methods",
            "the sweep expands to " + std::to_string(cells) + " cells, more than " +
                std::to_string(Limits::max_cells) + " (each starts a server)",
            "check the budgets, phases and workloads lists for a typo, or split the sweep");

  // ---- context overflow: prompt + max_new_tokens + verify width must fit the context ----
  const auto ctx = resolve_context_length(s.model, allows_longer_context(s));
  if (ctx && ctx->capped_from > 0)
    f.warning("model.context_length",
              "model.context_length " + std::to_string(ctx->capped_from) +
                  " is above the model's maximum, " + std::to_string(ctx->tokens) + " (" +
                  ctx->source + "): servers are launched with " + std::to_string(ctx->tokens) +
                  " ({context_length}) and requests are checked against it",
              "lower model.context_length to " + std::to_string(ctx->tokens) +
                  ", or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: \"1\" in server.env to "
                  "launch SGLang with the longer context");
  if (!ctx) {
    if (!s.model.path.empty())
      f.error("model.context_length",
              "the context length is unknown: " + s.model.path +
                  "/config.json is not readable here and the sweep sets no model.context_length",
              "set model.context_length to the server's context (e.g. 32768) so prompts that "
              "overflow it are caught before any server starts");
  } else {
    for (size_t i = 0; i < s.workloads.size(); ++i) {
      const Workload& w = s.workloads[i];
      const std::string p = idx("workloads", i);
      int prompt = w.longest_prompt();
      std::string prompt_key = w.prompt_tokens > 0 ? ".prompt_tokens" : ".max_prompt_tokens";
      if (!w.dataset.empty()) {
        const auto& sum = scan(w.dataset);
        if (w.max_prompt_tokens > 0 && sum.longest_ids > w.max_prompt_tokens)
          f.error(p + ".max_prompt_tokens",
                  "max_prompt_tokens " + std::to_string(w.max_prompt_tokens) +
                      " is below the dataset's longest input_ids prompt: " +
                      std::to_string(sum.longest_ids) + " tokens (line " +
                      std::to_string(sum.longest_ids_line) + ")",
                  "raise max_prompt_tokens to at least " + std::to_string(sum.longest_ids) +
                      ", or drop it: the input_ids are counted here");
        if (prompt == 0 && sum.max_prompt_tokens) {
          prompt = *sum.max_prompt_tokens;
          prompt_key = ".dataset";
        } else if (prompt == 0 && sum.problem.empty()) {
          // Text prompts have no length here; prompts given as input_ids still bound it.
          prompt = sum.longest_ids;
          prompt_key = ".dataset";
          f.warning(p + ".dataset",
                    "the dataset's text prompts have no token length here, so the context check "
                    "covers only its input_ids prompts and max_new_tokens",
                    "set max_prompt_tokens to the longest prompt in tokens, or store input_ids");
        }
      }
      // The widest method decides; report it once per workload. A method already reported out
      // of range above would only give a second, nonsensical finding here.
      // With no method in range, one verify token still needs room: the narrowest method.
      static const Method narrowest{};
      const Method* widest = &narrowest;
      for (const auto& m : s.methods) {
        const bool in_range =
            m.kind == MethodKind::autoregressive ||
            (m.block >= 2 && m.block <= Limits::max_block &&
             (m.kind == MethodKind::linear || (m.budget >= 1 && m.budget <= Limits::max_budget)));
        if (in_range && m.verify_width() > widest->verify_width())
          widest = &m;
      }
      const long long need = static_cast<long long>(prompt) + w.max_new_tokens +
                             widest->verify_width();
      if (need > ctx->tokens) {
        const long long fits = static_cast<long long>(ctx->tokens) - w.max_new_tokens -
                               widest->verify_width();
        std::string msg = "context overflow in workload `" + w.name + "`: prompt " +
                          std::to_string(prompt) + " + max_new_tokens " +
                          std::to_string(w.max_new_tokens) + " + verify width " +
                          std::to_string(widest->verify_width()) + " (" + widest->id() +
                          ") = " + std::to_string(need) + " tokens > context " +
                          std::to_string(ctx->tokens) + " (from " + ctx->source +
                          "); the server would answer HTTP 400";
        const long long output_room =
            static_cast<long long>(ctx->tokens) - widest->verify_width() - prompt;
        std::string fix =
            fits > 0 ? "the largest prompt that fits is " + std::to_string(fits) + " tokens: " +
                           (prompt_key == ".dataset"
                                ? "shorten the dataset's longest prompts to " + std::to_string(fits)
                                : "lower " + prompt_key.substr(1) + " to " + std::to_string(fits)) +
                           ", or lower max_new_tokens, or raise the context"
            : output_room >= 1
                ? "max_new_tokens leaves no room for the prompt: lower it to at most " +
                      std::to_string(output_room) + ", or raise the context"
                : "the prompt and the verify width alone fill the context: use a smaller tree "
                  "budget or block, a shorter prompt, or a larger context";
        f.error(p + prompt_key, msg, fix);
      }
    }
  }
  return std::move(f.out);
}

} // namespace specbench
