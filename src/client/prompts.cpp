// Prompts of a workload: synthetic token ids of an exact length, or a JSONL dataset.
#include "specbench/client.hpp"

#include "core/file_problem.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

namespace specbench {
namespace {

using json = nlohmann::json;

// A whole number from 0 to 2^31 - 1 (a token id or count): outside int32 it would be cut to
// another, valid-looking value.
bool is_int32_count(const json& x) {
  return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= INT32_MAX;
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

} // namespace

Expected<Prompt> parse_prompt_line(const std::string& line) {
  const auto bad = [](const std::string& what) {
    return Status(StatusCode::invalid_argument, what,
                  "each line must be a JSON object with \"prompt\"/\"text\" (a string), "
                  "\"input_ids\" (an array of token ids) or \"messages\" (chat)",
                  "parse_prompt_line");
  };
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return bad("not a JSON object");
  Prompt p;
  for (const char* key : {"prompt", "text"}) {
    if (auto it = j.find(key); it != j.end()) {
      if (!it->is_string())
        return bad(std::string("\"") + key + "\" must be a string (got " + it->dump() + ")");
      if (it->get_ref<const std::string&>().empty())
        return bad(std::string("\"") + key + "\" is empty");
      p.text = it->get<std::string>();
      break;
    }
  }
  if (auto it = j.find("input_ids"); it != j.end()) {
    if (!it->is_array())
      return bad("\"input_ids\" must be an array");
    if (it->empty())
      return bad("\"input_ids\" is empty");
    for (const auto& x : *it) {
      if (!is_int32_count(x))
        return bad("\"input_ids\" must hold token ids, whole numbers from 0 to 2^31 - 1 (got " +
                   x.dump() + ")");
      p.input_ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
    }
    p.tokens = static_cast<int>(p.input_ids.size());
  }
  if (auto it = j.find("messages"); it != j.end()) {
    if (!it->is_array())
      return bad("\"messages\" must be an array");
    if (it->empty())
      return bad("\"messages\" is empty");
    for (const auto& m : *it) {
      if (!m.is_object() || !m.contains("content") || !m["content"].is_string())
        return bad("each message needs a string \"content\"");
      std::string role = "user";
      if (auto r = m.find("role"); r != m.end()) {
        if (!r->is_string() || r->get_ref<const std::string&>().empty())
          return bad("a message's \"role\" must be a non-empty string such as \"user\" (got " +
                     r->dump() + ")");
        role = r->get<std::string>();
      }
      p.messages.push_back({std::move(role), m["content"].get<std::string>()});
    }
    if (p.text.empty())
      p.text = p.messages.back().content;
  }
  if (auto it = j.find("prompt_tokens"); it != j.end() && p.tokens == 0) {
    if (!is_int32_count(*it))
      return bad("\"prompt_tokens\" must be a whole number from 0 to 2^31 - 1 (got " + it->dump() +
                 ")");
    p.tokens = static_cast<int>(it->get<int64_t>());
  }
  if (p.text.empty() && p.input_ids.empty() && p.messages.empty())
    return bad("no \"prompt\", \"text\", \"input_ids\" or \"messages\"");
  return p;
}

std::string dataset_file_problem(const std::filesystem::path& path) {
  using detail::FileTrouble;
  // The preflight's look at a file, so that a dangling link, a link loop or a folder that may
  // not be entered is named as such rather than "does not exist". The kinds below keep the
  // wording plan and run have always given a dataset (the noun shows only in those).
  const detail::FileCheck c = detail::check_file(path, "dataset file");
  switch (c.trouble) {
  case FileTrouble::none:
    return {};
  case FileTrouble::missing:
    return "does not exist";
  case FileTrouble::directory:
    return "is a folder";
  case FileTrouble::fifo:
    return "is not a regular file (a FIFO: reading it would wait for a writer)";
  case FileTrouble::device:
    return "is not a regular file (a device)";
  case FileTrouble::socket:
    return "is not a regular file (a socket)";
  default:
    return detail::file_predicate(c.words);
  }
}

Expected<std::vector<Prompt>> load_prompt_dataset(const std::filesystem::path& path) {
  if (std::string why = dataset_file_problem(path); !why.empty())
    return Status(StatusCode::invalid_argument, "prompt dataset " + path.string() + " " + why,
                  "give a JSONL file (one {\"prompt\": ...} or {\"input_ids\": [...]} per line)",
                  "load_prompt_dataset");
  std::ifstream in(path);
  if (!in)
    return Status(StatusCode::not_found, "cannot open prompt dataset " + path.string(),
                  "check the workload's dataset path", "load_prompt_dataset");
  std::vector<Prompt> prompts;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto p = parse_prompt_line(line);
    if (!p)
      return Status(StatusCode::invalid_argument,
                    path.string() + ":" + std::to_string(line_no) + ": " + p.status().message(),
                    p.status().remedy(), "load_prompt_dataset");
    prompts.push_back(std::move(*p));
  }
  if (prompts.empty())
    return Status(StatusCode::invalid_argument, "prompt dataset " + path.string() + " is empty",
                  "add JSONL lines", "load_prompt_dataset");
  return prompts;
}

Expected<std::vector<Prompt>> make_prompts(const Workload& workload, int count,
                                           const PromptOptions& options) {
  if (count < 0)
    return Status(StatusCode::invalid_argument, "negative prompt count");
  if (!workload.dataset.empty()) {
    auto all = load_prompt_dataset(workload.dataset);
    if (!all)
      return all.status();
    if (count == 0 || static_cast<size_t>(count) == all->size())
      return all;
    std::vector<Prompt> out;
    out.reserve(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
      out.push_back((*all)[static_cast<size_t>(i) % all->size()]);
    return out;
  }
  if (workload.prompt_tokens <= 0)
    return Status(StatusCode::invalid_argument,
                  "workload '" + workload.name + "' has neither a dataset nor prompt_tokens",
                  "set prompt_tokens: N or dataset: FILE.jsonl");
  if (options.max_token_id < options.min_token_id || options.min_token_id < 0)
    return Status(StatusCode::invalid_argument, "bad synthetic token id range");
  const uint64_t span = static_cast<uint64_t>(options.max_token_id - options.min_token_id) + 1;
  std::vector<Prompt> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    uint64_t s = workload.seed * 0x100000001b3ULL + static_cast<uint64_t>(i) + 1;
    Prompt p;
    p.input_ids.resize(static_cast<size_t>(workload.prompt_tokens));
    for (auto& id : p.input_ids)
      id = options.min_token_id + static_cast<int32_t>(splitmix(s) % span);
    p.tokens = workload.prompt_tokens;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<RequestSpec> make_requests(const Workload& workload, const std::vector<Prompt>& prompts,
                                       int count, int offset) {
  std::vector<RequestSpec> out;
  if (prompts.empty() || count <= 0)
    return out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    RequestSpec r;
    const size_t k = static_cast<size_t>(offset + i) % prompts.size();
    r.prompt = prompts[k];
    r.max_new_tokens = workload.max_new_tokens;
    r.temperature = workload.temperature;
    r.seed = workload.seed + static_cast<uint64_t>(offset + i);
    r.ignore_eos = workload.ignore_eos;
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace specbench
