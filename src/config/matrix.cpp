// Sweep -> Matrix: phases of cells with stable ids, substituted argv and config hashes.
#include "specbench/matrix.hpp"
#include "core/json_text.hpp"

#include "config/placeholders.hpp"
#include "config/workload_json.hpp"

#include <nlohmann/json.hpp>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace specbench {

std::string stable_hash(std::string_view text) {
  uint64_t h = 14695981039346656037ULL; // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[i] = hex[h & 15];
  return out;
}

size_t Matrix::cell_count() const noexcept {
  size_t n = 0;
  for (const auto& p : phases) n += p.cells.size();
  return n;
}

const Cell* Matrix::find(const std::string& id) const noexcept {
  for (const auto& p : phases)
    for (const auto& c : p.cells)
      if (c.id == id) return &c;
  return nullptr;
}

namespace {

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("specbench");
}

std::string join(const std::vector<int>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

// Whether `word` stands in `arg` as a whole word: the argument itself, an option's "=value", or
// a word inside one bounded by quotes, spaces or commas (a JSON --speculative-config, a
// "bash -c" line). Not a longer path that starts with it ("/models/d-logs" for "/models/d").
bool holds_word(const std::string& arg, const std::string& word) {
  const auto edge = [](char c) {
    return c == '=' || c == '"' || c == '\'' || c == ' ' || c == ',';
  };
  for (size_t at = arg.find(word); at != std::string::npos; at = arg.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || edge(arg[at - 1])) && (end == arg.size() || edge(arg[end])))
      return true;
  }
  return false;
}

// Cell::loads_drafter: the template asks for {draft_model}, or the argv names the drafter.
bool uses_drafter(const std::vector<std::string>& tmpl, const std::vector<std::string>& argv,
                  const ModelSpec& model) {
  const std::string& draft = model.draft_path;
  if (draft.empty())
    return false;
  // The placeholders as substitution reads them ("{{draft_model}}" is literal text).
  for (const auto& t : tmpl) {
    std::vector<std::string> names;
    std::string problem;
    if (detail::placeholder_names(t, names, problem) &&
        std::find(names.begin(), names.end(), "draft_model") != names.end())
      return true;
  }
  return draft != model.path && std::any_of(argv.begin(), argv.end(), [&](const std::string& a) {
           return holds_word(a, draft);
         });
}

nlohmann::json method_json(const Method& m) {
  return {{"kind", m.kind_name()},
          {"id", m.id()},
          {"block", m.block},
          {"budget", m.budget},
          {"verify_width", m.verify_width()}};
}

} // namespace

std::string dataset_file_hash(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "unreadable";
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return stable_hash(data);
}

PlanContext plan_context_from_environment() {
  PlanContext context;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
    context.inherited_visible_devices = visible;
  return context;
}

Expected<Matrix> expand_matrix(const Sweep& sweep, const PlanContext& context) {
  Matrix matrix;
  const std::string exe =
      context.specbench_executable.empty() ? self_executable() : context.specbench_executable;
  const auto ctx = resolve_context_length(sweep.model, allows_longer_context(sweep));
  std::map<std::string, std::string> dataset_hashes;
  for (const auto& w : sweep.workloads)
    if (!w.dataset.empty())
      dataset_hashes[w.name] = dataset_file_hash(w.dataset);

  for (const auto& ps : sweep.phases) {
    Phase phase;
    phase.tp = ps.tp;
    phase.id = "tp" + std::to_string(ps.tp);
    phase.gpus = ps.gpus;
    if (phase.gpus.empty())
      for (int g = 0; g < ps.tp; ++g) phase.gpus.push_back(g);
    for (const auto& m : sweep.methods) {
      for (const auto& w : sweep.workloads) {
        if (!ps.workloads.empty() &&
            std::find(ps.workloads.begin(), ps.workloads.end(), w.name) == ps.workloads.end())
          continue;
        Cell c;
        c.phase_id = phase.id;
        c.tp = ps.tp;
        c.gpus = phase.gpus;
        c.method = m;
        c.workload = w;
        c.context_length = ctx ? ctx->tokens : 0;
        c.id = phase.id + "-" + m.id() + (sweep.workloads.size() > 1 ? "-" + w.name : "");

        std::map<std::string, std::string> values = {
            {"host", sweep.server.host},
            {"tp", std::to_string(ps.tp)},
            {"gpus", join(phase.gpus, ",")},
            {"model", sweep.model.path},
            {"model_name", sweep.model.name.empty() ? sweep.model.path : sweep.model.name},
            {"verify_width", std::to_string(m.verify_width())},
            {"context_length", std::to_string(c.context_length)},
            {"specbench", exe},
            {"cell_id", c.id},
            {"phase", phase.id}};
        if (m.kind != MethodKind::autoregressive) {
          values["block"] = std::to_string(m.block);
          values["draft_model"] = sweep.model.draft_path;
        }
        if (m.kind == MethodKind::tree) values["budget"] = std::to_string(m.budget);
        if (sweep.server.port != 0) values["port"] = std::to_string(sweep.server.port);

        std::vector<std::string> tmpl = sweep.server.launch;
        if (auto it = sweep.server.method_args.find(m.kind_name());
            it != sweep.server.method_args.end())
          tmpl.insert(tmpl.end(), it->second.begin(), it->second.end());
        auto argv = substitute_placeholders(tmpl, values, {"port"});
        if (!argv) return argv.status();
        c.argv = std::move(*argv);
        c.loads_drafter = uses_drafter(tmpl, c.argv, sweep.model);

        c.env = sweep.server.env;
        for (const auto& [k, v] : ps.env) c.env[k] = v;
        if (!ps.gpus.empty() && !c.env.count("CUDA_VISIBLE_DEVICES"))
          c.env["CUDA_VISIBLE_DEVICES"] = join(ps.gpus, ",");
        // Without `gpus` the server inherits the runner's GPUs: written out, so that a run
        // under another CUDA_VISIBLE_DEVICES (other GPUs) never reuses these results.
        if (!c.env.count("CUDA_VISIBLE_DEVICES") && context.inherited_visible_devices)
          c.env["CUDA_VISIBLE_DEVICES"] = *context.inherited_visible_devices;

        // The hash ignores where specbench itself lives, so moving the build keeps results.
        values["specbench"] = "{specbench}";
        auto hashed_argv = substitute_placeholders(tmpl, values, {"port"});
        nlohmann::json h = {{"argv", hashed_argv ? *hashed_argv : c.argv},
                            {"env", c.env},
                            {"method", method_json(m)},
                            {"workload", detail::workload_json(w)},
                            {"dataset_hash", dataset_hashes[w.name]},
                            {"model", sweep.model.path},
                            {"draft_model", sweep.model.draft_path},
                            {"backend", to_string(sweep.server.backend)},
                            {"api", to_string(sweep.server.api)},
                            {"context_length", c.context_length},
                            {"gpus", phase.gpus}};
        // The model name the requests ask for (a server may serve several, or adapters), when
        // it is not the path; left out otherwise, so that sweeps without one keep their hashes.
        if (!sweep.model.name.empty())
          h["served_model"] = sweep.model.name;
        // Same text as dump() for UTF-8 (so the same hash); replace: never throw on other bytes.
        c.config_hash = stable_hash(detail::json_text(h));
        c.dataset_hash = dataset_hashes[w.name];
        phase.cells.push_back(std::move(c));
      }
    }
    matrix.phases.push_back(std::move(phase));
  }
  return matrix;
}

std::string matrix_to_json(const Matrix& matrix, const Sweep& sweep) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["kind"] = "specbench.plan";
  j["sweep"] = {{"name", sweep.name},
                {"source", sweep.source.string()},
                {"source_hash", sweep.source_hash},
                {"gpus", sweep.gpus},
                {"model", sweep.model.path},
                {"draft_model", sweep.model.draft_path},
                {"backend", to_string(sweep.server.backend)},
                {"api", to_string(sweep.server.api)}};
  j["cell_count"] = matrix.cell_count();
  j["phases"] = nlohmann::json::array();
  for (const auto& p : matrix.phases) {
    nlohmann::json pj = {{"id", p.id}, {"tp", p.tp}, {"gpus", p.gpus}};
    pj["cells"] = nlohmann::json::array();
    for (const auto& c : p.cells)
      pj["cells"].push_back({{"id", c.id},
                             {"method", method_json(c.method)},
                             {"workload", detail::workload_json(c.workload)},
                             {"context_length", c.context_length},
                             {"argv", c.argv},
                             {"loads_drafter", c.loads_drafter},
                             {"env", c.env},
                             {"config_hash", c.config_hash}});
    j["phases"].push_back(std::move(pj));
  }
  return detail::json_text(j, 2);
}

} // namespace specbench

namespace specbench::detail {
nlohmann::json workload_json(const Workload& w) {
  return {{"name", w.name},
          {"dataset", w.dataset.string()},
          {"prompt_tokens", w.prompt_tokens},
          {"max_prompt_tokens", w.max_prompt_tokens},
          {"max_new_tokens", w.max_new_tokens},
          {"concurrency", w.concurrency},
          {"requests", w.requests},
          {"warmup", w.warmup},
          {"runs", w.runs},
          {"temperature", w.temperature},
          {"seed", w.seed},
          {"ignore_eos", w.ignore_eos}};
}
} // namespace specbench::detail
