// Every validation rule of a sweep, each with a test that fails without the rule.
#include "specbench/client.hpp"
#include "specbench/matrix.hpp"
#include "support/test_paths.hpp"
#include "sweep_fixture.hpp"

#include <algorithm>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace specbench;
using namespace specbench::testing;

namespace {
LoadResult load(const std::string& yaml, const std::filesystem::path& base = {}) {
  return load_sweep_text(yaml, "sweep.yaml", base);
}
} // namespace

TEST(SweepValidation, ValidSweepLoadsWithoutDiagnostics) {
  const auto r = load(kValidSweep);
  ASSERT_TRUE(r.ok()) << all_messages(r);
  EXPECT_TRUE(r.diagnostics.empty()) << all_messages(r);
  const Sweep& s = *r.sweep;
  EXPECT_EQ(s.gpus, 8);
  ASSERT_EQ(s.methods.size(), 5u); // autoregressive, linear, three tree budgets
  EXPECT_EQ(s.methods[4].budget, 64);
  EXPECT_EQ(s.methods[4].verify_width(), 65);
  EXPECT_EQ(s.methods[1].verify_width(), 16);
  EXPECT_EQ(s.phases[1].gpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(s.workloads[0].max_new_tokens, 256);
}

TEST(SweepValidation, UnknownKeySuggestsTheClosestOne) {
  const auto r = load(replace(kValidSweep, "max_new_tokens: 256", "max_new_token: 256"));
  ASSERT_FALSE(r.ok());
  const Diagnostic* d = find_error(r, "unknown key `max_new_token`");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_EQ(d->line, 27);
  EXPECT_EQ(d->column, 5);
  EXPECT_NE(d->fix.find("did you mean `max_new_tokens`"), std::string::npos) << d->fix;
}

TEST(SweepValidation, UnknownTopLevelKeyListsAllowedKeysWhenNothingIsClose) {
  const auto r = load(kValidSweep + "zzzqqq: 1\n");
  const Diagnostic* d = find_error(r, "unknown key `zzzqqq`");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_NE(d->fix.find("workloads"), std::string::npos);
}

// A key holding a control character (a "\0" escape) is shown with it, not as the key it looks like.
TEST(SweepValidation, AnUnknownKeyWithAControlCharacterShowsIt) {
  const auto r = load(replace(kValidSweep, "gpus: 8", "\"gp\\0us\": 8\ngpus: 8"));
  const Diagnostic* d = find_error(r, "unknown key `gp\\x00us`");
  ASSERT_NE(d, nullptr) << all_messages(r);
}

// A number no double holds is out of range, not "not a number".
TEST(SweepValidation, AHugeNumberIsOutOfRange) {
  for (const char* v : {"1e999", "-1e999", "1e-400"}) {
    const auto r = load(replace(kValidSweep, "  backend: sglang\n",
                                std::string("  backend: sglang\n  stop_grace_s: ") + v + "\n"));
    const Diagnostic* d = find_error(r, std::string("`server.stop_grace_s` is ") + v +
                                            ", too large or too close to 0");
    EXPECT_NE(d, nullptr) << v << "\n" << all_messages(r);
  }
}

// A number is a decimal as YAML writes one. std::stod also took C's hex floats and "infinity".
TEST(SweepValidation, ANumberIsADecimalAsYamlWritesIt) {
  const auto with_grace = [](const std::string& v) {
    return load(replace(kValidSweep, "  backend: sglang\n",
                        "  backend: sglang\n  stop_grace_s: " + v + "\n"));
  };
  for (const char* v : {"0x1p3", "0X1P-2", "infinity", "-inf", "nan", "1.5.2", "e5", "1e", ".", "+",
                        "1,5", "0x10"}) {
    const auto r = with_grace(v);
    EXPECT_NE(find_error(r, "`server.stop_grace_s` must be a number, but it is"), nullptr)
        << v << "\n"
        << all_messages(r);
  }
  const std::pair<const char*, double> accepted[] = {
      {"1.5", 1.5}, {".5", 0.5}, {"2.", 2.0}, {"+1.25", 1.25}, {"1E1", 10.0}, {"25e-1", 2.5}};
  for (const auto& [v, want] : accepted) {
    const auto r = with_grace(v);
    ASSERT_TRUE(r.ok()) << v << "\n" << all_messages(r);
    EXPECT_EQ(r.sweep->server.stop_grace_s, want) << v;
  }
}

TEST(SweepValidation, WrongTypeIsLocated) {
  const auto r = load(replace(kValidSweep, "requests: 8", "requests: many"));
  const Diagnostic* d = find_error(r, "must be a whole number");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_EQ(d->path, "workloads[0].requests");
  EXPECT_EQ(d->line, 28);
  const auto r2 = load(replace(kValidSweep, "phases:\n  - tp: 1", "phases:\n  - tp: [1]"));
  EXPECT_NE(find_error(r2, "`phases[0].tp` must be a whole number"), nullptr) << all_messages(r2);
  const auto r3 =
      load(replace(kValidSweep, "  launch: [server,", "  launch: {a: b}\n  x: [server,"));
  EXPECT_NE(find_error(r3, "`server.launch` must be a list"), nullptr) << all_messages(r3);
}

TEST(SweepValidation, MissingRequiredFields) {
  EXPECT_NE(find_error(load(replace(kValidSweep, "gpus: 8\n", "")), "missing required key `gpus`"),
            nullptr);
  EXPECT_NE(find_error(load(replace(kValidSweep, "  path: /nonexistent/model\n", "")),
                       "`model.path` is missing"),
            nullptr);
  const auto r = load(replace(kValidSweep, "  - kind: tree\n    block: 16\n", "  - kind: tree\n"));
  EXPECT_NE(find_error(r, "a tree method needs `block`"), nullptr) << all_messages(r);
  const auto r2 = load(replace(kValidSweep, "  - tp: 1\n", "  - gpus: [0]\n"));
  EXPECT_NE(find_error(r2, "has no `tp`"), nullptr) << all_messages(r2);
}

TEST(SweepValidation, DuplicateIdsAreRejected) {
  const auto r = load(replace(kValidSweep, "budgets: [8, 15, 64]", "budgets: [8, 15, 8]"));
  const Diagnostic* d = find_error(r, "method `ddtree-b8` is listed twice");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_EQ(d->line, 23);
  const auto r2 = load(kValidSweep + "  - name: chat\n    prompt_tokens: 8\n");
  EXPECT_NE(find_error(r2, "workload name `chat` is used twice"), nullptr) << all_messages(r2);
  const auto r3 = load(replace(kValidSweep, "  - tp: 1\n", "  - tp: 4\n"));
  EXPECT_NE(find_error(r3, "duplicate phase id tp4"), nullptr) << all_messages(r3);
  const auto r4 = load(replace(kValidSweep, "gpus: [4, 5, 6, 7]", "gpus: [4, 5, 5, 7]"));
  EXPECT_NE(find_error(r4, "GPU 5 is listed twice"), nullptr) << all_messages(r4);
}

TEST(SweepValidation, BudgetsMustBePositiveAndBounded) {
  const auto zero = load(replace(kValidSweep, "budgets: [8, 15, 64]", "budgets: [0]"));
  EXPECT_NE(find_error(zero, "tree budget 0 is not positive"), nullptr) << all_messages(zero);
  const auto neg = load(replace(kValidSweep, "budgets: [8, 15, 64]", "budgets: [-3]"));
  EXPECT_NE(find_error(neg, "tree budget -3 is not positive"), nullptr) << all_messages(neg);
  const auto big = load(replace(kValidSweep, "budgets: [8, 15, 64]", "budgets: [2048]"));
  EXPECT_NE(find_error(big, "tree budget 2048 is larger than 1024"), nullptr) << all_messages(big);
  const auto empty = load(replace(kValidSweep, "budgets: [8, 15, 64]", "budgets: []"));
  EXPECT_NE(find_error(empty, "`budgets` is empty"), nullptr) << all_messages(empty);
  const auto block =
      load(replace(kValidSweep, "    block: 16\n  - kind: tree", "    block: 1\n  - kind: tree"));
  EXPECT_NE(find_error(block, "block 1 is out of range"), nullptr) << all_messages(block);
}

// A dataset path that leads nowhere for another reason than "nothing there" says which: the
// preflight's look at a file, shared. These once all read "does not exist".
TEST(SweepValidation, ADatasetLinkThatLeadsNowhereIsNamedAsSuch) {
  const auto dir = make_temp_dir("dataset-links");
  std::filesystem::create_symlink("gone.jsonl", dir / "dangling.jsonl");
  std::filesystem::create_symlink("loop-b.jsonl", dir / "loop-a.jsonl");
  std::filesystem::create_symlink("loop-a.jsonl", dir / "loop-b.jsonl");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dangling.jsonl", "dangling.jsonl is a dangling symlink (to gone.jsonl, which is gone)"},
      {"loop-a.jsonl", "loop-a.jsonl is a loop of symbolic links"},
      {"nope.jsonl", "nope.jsonl does not exist"}};
  for (const auto& [name, says] : cases) {
    const auto r = load(replace(kValidSweep, "prompt_tokens: 512", "dataset: " + name), dir);
    const Diagnostic* d = find_error(r, says);
    ASSERT_NE(d, nullptr) << name << "\n" << all_messages(r);
    EXPECT_EQ(d->path, "workloads[0].dataset");
    EXPECT_EQ(dataset_file_problem(dir / name), says.substr(name.size() + 1));
  }
}

TEST(SweepValidation, TensorParallelismCannotExceedDeclaredGpus) {
  const auto r = load(replace(kValidSweep, "  - tp: 1\n", "  - tp: 16\n"));
  const Diagnostic* d = find_error(r, "tp 16 needs 16 GPUs but the sweep declares gpus: 8");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_EQ(d->line, 14);
  const auto r2 = load(replace(kValidSweep, "gpus: [4, 5, 6, 7]", "gpus: [4, 5, 6, 9]"));
  EXPECT_NE(find_error(r2, "GPU 9 does not exist"), nullptr) << all_messages(r2);
  const auto r3 = load(replace(kValidSweep, "gpus: [4, 5, 6, 7]", "gpus: [4, 5]"));
  EXPECT_NE(find_error(r3, "tp 4 but 2 GPUs listed"), nullptr) << all_messages(r3);
}

TEST(SweepValidation, SeedsContextOverflowIsRejectedWithTheLargestPromptThatFits) {
  // The campaign: 30,000-token prompts, 4,096 new tokens, DDTree b64 (width 65), 32,768 context.
  std::string y = replace(kValidSweep, "prompt_tokens: 512", "prompt_tokens: 30000");
  y = replace(y, "max_new_tokens: 256", "max_new_tokens: 4096");
  const auto r = load(y);
  ASSERT_FALSE(r.ok());
  const Diagnostic* d = find_error(r, "context overflow");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_NE(d->message.find("30000 + max_new_tokens 4096 + verify width 65 (ddtree-b64) = 34161"),
            std::string::npos)
      << d->message;
  EXPECT_NE(d->fix.find("largest prompt that fits is 28607"), std::string::npos) << d->fix;
  EXPECT_EQ(d->path, "workloads[0].prompt_tokens");
  EXPECT_EQ(d->line, 26);
  // One token less than the limit fits.
  const auto ok = load(replace(y, "prompt_tokens: 30000", "prompt_tokens: 28607"));
  EXPECT_TRUE(ok.ok()) << all_messages(ok);
}

TEST(SweepValidation, ContextComesFromLocalConfigJson) {
  const auto dir = make_temp_dir("model");
  std::ofstream(dir / "config.json")
      << R"({"architectures": ["X"], "text_config": {"max_position_embeddings": 8192}})";
  std::string y = replace(kValidSweep, "/nonexistent/model", dir.string());
  y = replace(y, "prompt_tokens: 512", "prompt_tokens: 8000");
  const auto r = load(y);
  const Diagnostic* d = find_error(r, "context overflow");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_NE(d->message.find("context 8192 (from " + (dir / "config.json").string()),
            std::string::npos)
      << d->message;
  // Without any context length the check cannot be done, and that is an error too.
  std::string none = replace(kValidSweep, "  context_length: 32768\n", "");
  EXPECT_NE(find_error(load(none), "the context length is unknown"), nullptr);
}

// model.path goes to the server as written, relative to the directory specbench runs in; a
// relative path that only makes sense next to the sweep file (as datasets are read) is warned
// about, with both places named. An absolute path, or one found here, is not.
TEST(SweepValidation, ARelativeModelPathFoundOnlyNextToTheSweepFileIsWarnedAbout) {
  const auto dir = make_temp_dir("relative-model");
  const std::string name = "specbench-relative-model-" + std::to_string(::getpid());
  ASSERT_FALSE(std::filesystem::exists(name)) << "something is at " << name << " here";
  std::filesystem::create_directories(dir / "sweeps" / name);
  std::ofstream(dir / "sweeps" / "s.yaml") << replace(kValidSweep, "/nonexistent/model", name);
  const auto r = load_sweep_file(dir / "sweeps" / "s.yaml");
  ASSERT_TRUE(r.ok()) << all_messages(r);
  const auto it = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                               [](const Diagnostic& d) { return d.path == "model.path"; });
  ASSERT_NE(it, r.diagnostics.end()) << all_messages(r);
  EXPECT_EQ(it->severity, Severity::warning);
  const std::string beside = (dir / "sweeps" / name).lexically_normal().string();
  EXPECT_NE(it->message.find("relative to the directory specbench runs in"), std::string::npos)
      << it->message;
  EXPECT_NE(it->message.find(beside), std::string::npos) << it->message;
  EXPECT_NE(it->fix.find("write the absolute path (" + beside + ")"), std::string::npos) << it->fix;

  std::ofstream(dir / "sweeps" / "abs.yaml") << replace(kValidSweep, "/nonexistent/model", beside);
  const auto a = load_sweep_file(dir / "sweeps" / "abs.yaml");
  EXPECT_TRUE(a.diagnostics.empty()) << all_messages(a);
}

// A context above the model's maximum is capped (SGLang refuses it) and said so; with SGLang's
// override in the servers' environment it is what the servers get and what requests must fit.
TEST(SweepValidation, AContextAboveTheModelsMaximumIsCappedUnlessOverridden) {
  const auto dir = make_temp_dir("model-longer");
  std::ofstream(dir / "config.json") << R"({"max_position_embeddings": 8192})";
  std::string y = replace(kValidSweep, "/nonexistent/model", dir.string());
  y = replace(y, "--tp, \"{tp}\"]", "--tp, \"{tp}\", --context-length, \"{context_length}\"]");
  const auto capped = load(y);
  ASSERT_TRUE(capped.ok()) << all_messages(capped);
  const Diagnostic* w = nullptr;
  for (const auto& d : capped.diagnostics)
    if (d.severity == Severity::warning &&
        d.message.find("model.context_length 32768 is above the model's maximum, 8192") !=
            std::string::npos)
      w = &d;
  ASSERT_NE(w, nullptr) << all_messages(capped);
  EXPECT_NE(w->fix.find("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"), std::string::npos);
  auto m = expand_matrix(*capped.sweep, PlanContext{"/bin/true"});
  ASSERT_TRUE(m) << m.status().to_string();
  const Cell& c = m->phases.at(0).cells.at(0);
  EXPECT_EQ(c.context_length, 8192);
  EXPECT_NE(std::find(c.argv.begin(), c.argv.end(), "8192"), c.argv.end());
  EXPECT_TRUE(find_error(load(replace(y, "prompt_tokens: 512", "prompt_tokens: 9000")),
                         "context overflow"));

  const std::string allowed =
      replace(y, "  backend: sglang\n",
              "  backend: sglang\n  env: {SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: \"1\"}\n");
  const auto longer = load(replace(allowed, "prompt_tokens: 512", "prompt_tokens: 9000"));
  ASSERT_TRUE(longer.ok()) << all_messages(longer);
  for (const auto& d : longer.diagnostics)
    EXPECT_EQ(d.message.find("above the model's maximum"), std::string::npos) << d.to_string();
  m = expand_matrix(*longer.sweep, PlanContext{"/bin/true"});
  ASSERT_TRUE(m) << m.status().to_string();
  EXPECT_EQ(m->phases.at(0).cells.at(0).context_length, 32768);
  const auto& argv = m->phases.at(0).cells.at(0).argv;
  EXPECT_NE(std::find(argv.begin(), argv.end(), "32768"), argv.end());
}

TEST(SweepValidation, PlaceholdersMustExistAndBelongToTheCell) {
  const auto r = load(replace(kValidSweep, "\"{port}\"", "\"{prot}\""));
  const Diagnostic* d = find_error(r, "unknown placeholder {prot}");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_NE(d->fix.find("did you mean {port}"), std::string::npos);
  EXPECT_EQ(d->path, "server.launch[4]");
  EXPECT_EQ(d->line, 9);
  const auto r2 = load(replace(kValidSweep, "--tp, \"{tp}\"]", "--tp, \"{tp}\", \"{budget}\"]"));
  EXPECT_NE(find_error(r2, "placeholder {budget} is only defined for tree cells"), nullptr)
      << all_messages(r2);
  const auto r3 = load(replace(kValidSweep, "--k, \"{block}\"", "--k, \"{budget}\""));
  EXPECT_NE(find_error(r3, "placeholder {budget} is only defined for tree cells"), nullptr);
  const auto r4 = load(replace(kValidSweep, "\"{model}\"", "\"{model\""));
  EXPECT_NE(find_error(r4, "without a closing"), nullptr) << all_messages(r4);
  const auto r5 = load(replace(kValidSweep, "  draft_path: drafter\n", ""));
  EXPECT_NE(find_error(r5, "model.draft_path is empty"), nullptr) << all_messages(r5);
  // A literal {port} (`{{port}}`) would get the port at launch like the placeholder: refused at
  // validation, and it does not count as the launch template's {port}.
  const auto r6 = load(replace(kValidSweep, "\"{port}\"", "\"{{port}}\""));
  const Diagnostic* lit = find_error(r6, "holds a literal {port}");
  ASSERT_NE(lit, nullptr) << all_messages(r6);
  EXPECT_EQ(lit->path, "server.launch[4]");
  bool no_port_warning = false;
  for (const auto& w : r6.diagnostics)
    no_port_warning |= w.message.find("the launch template has no {port}") != std::string::npos;
  EXPECT_TRUE(no_port_warning) << all_messages(r6);
  // Literal braces around the real placeholder are fine.
  const auto r7 = load(replace(kValidSweep, "\"{port}\"", "\"{{{port}}}\""));
  EXPECT_EQ(find_error(r7, "literal {port}"), nullptr) << all_messages(r7);
}

// A quoted number is text in YAML. It is refused, naming the field and the fix, rather than
// read as the number it spells: a sweep means what it says.
TEST(SweepValidation, AQuotedNumberIsRefusedNotCoerced) {
  const auto tp = load(replace(kValidSweep, "  - tp: 4\n", "  - tp: \"4\"\n"));
  EXPECT_FALSE(tp.ok());
  const Diagnostic* d =
      find_error(tp, "`phases[1].tp` must be a whole number, but it is the string \"4\"");
  ASSERT_NE(d, nullptr) << all_messages(tp);
  EXPECT_EQ(d->path, "phases[1].tp");
  EXPECT_EQ(d->line, 15);
  EXPECT_EQ(d->column, 9);
  EXPECT_NE(d->fix.find("remove the quotes"), std::string::npos) << d->fix;
  // Single quotes, and an entry of a list.
  const auto budget = load(replace(kValidSweep, "budgets: [8, 15, 64]", "budgets: [8, '15', 64]"));
  EXPECT_NE(find_error(budget, "`methods[2].budgets[1]` must be a whole number, but it is the "
                               "string \"15\""),
            nullptr)
      << all_messages(budget);
  // A float field.
  const auto grace = load(
      replace(kValidSweep, "  backend: sglang\n", "  backend: sglang\n  stop_grace_s: \"1.5\"\n"));
  const Diagnostic* g =
      find_error(grace, "`server.stop_grace_s` must be a number, but it is the string \"1.5\"");
  ASSERT_NE(g, nullptr) << all_messages(grace);
  EXPECT_NE(g->fix.find("remove the quotes"), std::string::npos) << g->fix;
  // An explicit !!str tag is text as well.
  const auto tagged = load(replace(kValidSweep, "requests: 8", "requests: !!str 8"));
  const Diagnostic* t =
      find_error(tagged, "`workloads[0].requests` must be a whole number, but it is the string");
  ASSERT_NE(t, nullptr) << all_messages(tagged);
  EXPECT_NE(t->fix.find("!!str"), std::string::npos) << t->fix;
  // Quoted text that is no number keeps the plain message.
  const auto word = load(replace(kValidSweep, "  - tp: 4\n", "  - tp: \"four\"\n"));
  EXPECT_NE(find_error(word, "`phases[1].tp` must be a whole number, but it is \"four\""), nullptr)
      << all_messages(word);
  // Unquoted numbers, and an explicit !!int or !!float tag, still read as numbers.
  const auto plain = load(replace(kValidSweep, "  backend: sglang\n",
                                  "  backend: sglang\n  stop_grace_s: 1.5\n  port: !!int 30000\n"
                                  "  request_timeout_s: !!float 60\n"));
  ASSERT_TRUE(plain.ok()) << all_messages(plain);
  EXPECT_EQ(plain.sweep->server.stop_grace_s, 1.5);
  EXPECT_EQ(plain.sweep->server.port, 30000);
  EXPECT_EQ(plain.sweep->phases[1].tp, 4);
}

TEST(SweepValidation, NumbersOutOfRange) {
  EXPECT_NE(find_error(load(replace(kValidSweep, "requests: 8", "requests: 0")),
                       "outside the allowed range 1.."),
            nullptr);
  EXPECT_NE(
      find_error(load(replace(kValidSweep, "backend: sglang", "backend: sglang\n  port: 70000")),
                 "`server.port` is 70000"),
      nullptr);
  // Too many digits for any count is out of range, not "not a number".
  EXPECT_NE(
      find_error(load(replace(kValidSweep, "requests: 8", "requests: 99999999999999999999")),
                 "`workloads[0].requests` is 99999999999999999999, outside the allowed range"),
      nullptr);
  EXPECT_NE(
      find_error(load(replace(kValidSweep, "requests: 8", "requests: 8\n    temperature: -1")),
                 "outside the allowed range"),
      nullptr);
}

TEST(SweepValidation, ChoicesSuggestTheIntendedValue) {
  const auto r = load(replace(kValidSweep, "backend: sglang", "backend: sglng"));
  const Diagnostic* d = find_error(r, "not one of: sglang, openai");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_NE(d->fix.find("did you mean `sglang`"), std::string::npos);
  const auto r2 = load(replace(kValidSweep, "backend: sglang", "backend: openai\n  api: generate"));
  EXPECT_NE(find_error(r2, "api `generate` is SGLang's native API"), nullptr) << all_messages(r2);
}

TEST(SweepValidation, WorkloadsNeedExactlyOnePromptSourceAndReadableDatasets) {
  const auto both =
      load(replace(kValidSweep, "prompt_tokens: 512", "prompt_tokens: 512\n    dataset: d.jsonl"));
  EXPECT_NE(find_error(both, "not both"), nullptr) << all_messages(both);
  const auto none = load(replace(kValidSweep, "    prompt_tokens: 512\n", ""));
  EXPECT_NE(find_error(none, "needs a dataset or prompt_tokens"), nullptr) << all_messages(none);
  const auto dir = make_temp_dir("dataset");
  const auto missing = load(replace(kValidSweep, "prompt_tokens: 512", "dataset: nope.jsonl"), dir);
  EXPECT_NE(find_error(missing, "does not exist"), nullptr) << all_messages(missing);
  std::filesystem::create_directories(dir / "folder.jsonl");
  const auto folder =
      load(replace(kValidSweep, "prompt_tokens: 512", "dataset: folder.jsonl"), dir);
  EXPECT_NE(find_error(folder, "folder.jsonl is a folder"), nullptr) << all_messages(folder);
  std::ofstream(dir / "bad.jsonl") << "{\"prompt\": \"hi\"}\nnot json\n";
  const auto bad = load(replace(kValidSweep, "prompt_tokens: 512", "dataset: bad.jsonl"), dir);
  EXPECT_NE(find_error(bad, "line 2: not a JSON object"), nullptr) << all_messages(bad);
  // Every line the run could not turn into a prompt is refused here, by the run's own rule.
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"{\"input_ids\": [1, \"a\", 3]}", "\"input_ids\" must hold token ids"},
      {"{\"input_ids\": [-5, 3]}", "\"input_ids\" must hold token ids"},
      {"{\"input_ids\": [99999999999]}", "\"input_ids\" must hold token ids"},
      {"{\"input_ids\": [1.5]}", "\"input_ids\" must hold token ids"},
      {"{\"prompt\": \"a\", \"input_ids\": \"x\"}", "\"input_ids\" must be an array"},
      {"{\"input_ids\": []}", "\"input_ids\" is empty"},
      {"{\"prompt\": \"\"}", "\"prompt\" is empty"},
      {"{\"text\": \"\"}", "\"text\" is empty"},
      {"{\"prompt\": 5}", "\"prompt\" must be a string"},
      {"{\"messages\": []}", "\"messages\" is empty"},
      {"{\"messages\": [{\"role\": \"user\"}]}", "each message needs a string \"content\""},
      {"{\"messages\": [1, 2]}", "each message needs a string \"content\""},
      // Once an "internal error" that hid every other finding.
      {"{\"messages\": [{\"role\": 1, \"content\": \"hi\"}]}",
       "a message's \"role\" must be a non-empty string"},
      {"{\"messages\": [{\"role\": null, \"content\": \"hi\"}]}", "a message's \"role\" must be"},
      {"{\"messages\": [{\"role\": [\"user\"], \"content\": \"hi\"}]}",
       "a message's \"role\" must be"}};
  for (const auto& [line, why] : lines) {
    std::ofstream(dir / "one.jsonl") << "{\"prompt\": \"fine\"}\n" << line << "\n";
    const auto r = load(replace(kValidSweep, "prompt_tokens: 512", "dataset: one.jsonl"), dir);
    EXPECT_NE(find_error(r, "line 2: " + why), nullptr) << line << "\n" << all_messages(r);
  }
  // A FIFO would block the check for ever and /dev/zero fill memory: neither is read.
  const std::string fifo = (dir / "pipe.jsonl").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    const auto r = load(replace(kValidSweep, "prompt_tokens: 512", "dataset: " + path), dir);
    const Diagnostic* d = find_error(r, path + " is not a regular file");
    ASSERT_NE(d, nullptr) << all_messages(r);
    EXPECT_EQ(r.error_count(), 1) << all_messages(r);
  }
  // input_ids give exact lengths, so the context check covers datasets too.
  {
    std::ofstream ids(dir / "ids.jsonl");
    ids << "{\"input_ids\": [1, 2, 3]}\n{\"input_ids\": [";
    for (int i = 0; i < 32600; ++i)
      ids << (i ? "," : "") << 5;
    ids << "]}\n";
  }
  const auto over = load(replace(kValidSweep, "prompt_tokens: 512", "dataset: ids.jsonl"), dir);
  const Diagnostic* d = find_error(over, "context overflow");
  ASSERT_NE(d, nullptr) << all_messages(over);
  EXPECT_NE(d->message.find("prompt 32600"), std::string::npos);
}

// A value that could not be read is reported once: no second finding computed from the default
// that stood in for it, and no finding repeated per budget.
TEST(SweepValidation, AnUnreadableValueGivesOneErrorNotEchoes) {
  const auto lots =
      load(replace(replace(kValidSweep, "max_new_tokens: 256", "max_new_tokens: lots"),
                   "context_length: 32768", "context_length: 300"));
  EXPECT_EQ(lots.error_count(), 1) << all_messages(lots);
  EXPECT_TRUE(find_error(lots, "max_new_tokens")) << all_messages(lots);
  const auto many = load(replace(kValidSweep, "prompt_tokens: 512", "prompt_tokens: many"));
  EXPECT_EQ(many.error_count(), 1) << all_messages(many);
  const auto block =
      load(replace(kValidSweep, "    block: 16\n    budgets", "    block: 300\n    budgets"));
  EXPECT_EQ(block.error_count(), 1) << all_messages(block);
}

TEST(SweepValidation, PhaseWorkloadsMustExist) {
  const auto r = load(replace(kValidSweep, "  - tp: 1\n", "  - tp: 1\n    workloads: [chta]\n"));
  const Diagnostic* d = find_error(r, "no workload is named `chta`");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_NE(d->fix.find("did you mean `chat`"), std::string::npos);
}

TEST(SweepValidation, ReportsEveryErrorAtOnce) {
  std::string y = replace(kValidSweep, "backend: sglang", "backend: sglng");
  y = replace(y, "budgets: [8, 15, 64]", "budgets: [8, x, 64]");
  y = replace(y, "requests: 8", "requests: 8\n    concurency: 2");
  const auto r = load(y);
  EXPECT_FALSE(r.ok());
  EXPECT_GE(r.error_count(), 3) << all_messages(r);
}

TEST(SweepValidation, MalformedInputGivesOneClearErrorAndNoSweep) {
  struct Case {
    std::string text, needle;
  };
  std::string deep;
  for (int i = 0; i < 200; ++i)
    deep += "[";
  const std::vector<Case> cases = {
      {"", "must be a map"},
      {"phases: [\n  - tp: 1\n", "YAML syntax error"},
      {"name: x\n  bad indent: [\n", "YAML syntax error"},
      {"- just\n- a list\n", "must be a map"},
      {std::string("name: \x01\x02\x03", 9), "binary data"},
      {std::string("gpus: 8\0\0", 9), "binary data"},
      {"a: " + deep, "nested deeper than 64"},
      // Real brackets after a plain scalar with a quote in it, and after a closed quote.
      {"a: [b'" + deep, "nested deeper than 64"},
      {"a: ['x', \"y\\\\\", " + deep, "nested deeper than 64"},
      {"a: 'it''s' " + deep, "nested deeper than 64"},
      {std::string(5 * 1024 * 1024, 'a'), "a sweep file is at most"},
      {"gpus: &a [*a]\n", ""},
      {"? [a, b]\n: c\n", "key must be plain text"},
  };
  for (const auto& c : cases) {
    const auto r = load(c.text);
    EXPECT_FALSE(r.ok()) << c.text.substr(0, 40);
    EXPECT_GE(r.error_count(), 1);
    if (!c.needle.empty()) {
      EXPECT_NE(find_error(r, c.needle), nullptr) << c.text.substr(0, 40) << "\n"
                                                  << all_messages(r);
    }
  }
}

// Brackets in comments and quoted text nest nothing: 65 comment lines each holding `[`, or
// arguments holding `[`, are a valid sweep (they were refused as nested 65 deep).
TEST(SweepValidation, BracketsInCommentsAndQuotesAreNotNesting) {
  std::string commented = kValidSweep;
  for (int i = 0; i < 70; ++i)
    commented += "# note [" + std::to_string(i) + " {\n";
  const auto r = load(commented);
  EXPECT_TRUE(r.ok()) << all_messages(r);
  std::string args;
  for (int i = 0; i < 70; ++i)
    args += ", \"--re=[\", '[x', \"\\\"[\"";
  const auto q = load(replace(kValidSweep, "--tp, \"{tp}\"]", "--tp, \"{tp}\"" + args + "]"));
  EXPECT_TRUE(q.ok()) << all_messages(q);
  // Binary bytes and bad UTF-8 are still found inside comments and quotes.
  EXPECT_TRUE(find_error(load(kValidSweep + "# caf\xe9\n"), "not UTF-8"));
  EXPECT_TRUE(find_error(load(kValidSweep + "x: \"a\x01\"\n"), "binary data"));
}

// Text that is not UTF-8 (a file saved as Latin-1) is refused where it is: the results are JSON,
// which cannot hold it, and `plan --json` used to stop with an internal error instead.
TEST(SweepValidation, TextThatIsNotUtf8IsLocated) {
  const auto r = load(replace(kValidSweep, "backend: sglang", "backend: sglang # caf\xe9"));
  ASSERT_FALSE(r.ok());
  const auto* d = find_error(r, "not UTF-8 text (byte 0xe9");
  ASSERT_NE(d, nullptr) << all_messages(r);
  const auto pos = kValidSweep.find("backend: sglang");
  EXPECT_EQ(d->line, 1 + std::count(kValidSweep.begin(), kValidSweep.begin() + pos, '\n'));
  EXPECT_EQ(d->column, static_cast<int>(pos - kValidSweep.rfind('\n', pos)) + 21);
  EXPECT_NE(d->fix.find("UTF-8"), std::string::npos);
  // UTF-8 beyond ASCII is fine, in comments and in values.
  const auto ok = load(replace(kValidSweep, "backend: sglang", "backend: sglang # caf\xc3\xa9"));
  EXPECT_TRUE(ok.ok()) << all_messages(ok);
}

TEST(SweepValidation, MissingOrUnreadableFiles) {
  auto r = load_sweep_file("/nonexistent/sweep.yaml");
  EXPECT_NE(find_error(r, "does not exist"), nullptr);
  r = load_sweep_file(make_temp_dir("dir"));
  EXPECT_NE(find_error(r, "not a regular file"), nullptr);
}

TEST(SweepValidation, ShippedSweepsAreValid) {
  for (const char* name : {"configs/demo.yaml", "configs/demo-gpu-gated.yaml",
                           "configs/qwen3.6-27b-dflash-ddtree.yaml"}) {
    const auto r = load_sweep_file(source_dir() / name);
    EXPECT_TRUE(r.ok()) << name << "\n" << all_messages(r);
    EXPECT_EQ(r.error_count(), 0) << name;
  }
}

TEST(SweepValidation, CodeBuiltSweepsGetTheSameRules) {
  Sweep s;
  s.gpus = 2;
  s.model.path = "m";
  s.model.context_length = 1000;
  s.server.launch = {"srv", "--port", "{port}"};
  s.phases = {PhaseSpec{4, {}, {}, {}}};
  s.methods = {Method{MethodKind::tree, 8, 0}};
  Workload w;
  w.prompt_tokens = 990;
  s.workloads = {w};
  const auto diags = validate_sweep(s);
  auto has = [&](const std::string& needle) {
    for (const auto& d : diags)
      if (d.message.find(needle) != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(has("tp 4 needs 4 GPUs"));
  EXPECT_TRUE(has("tree budget 0 is not positive"));
  EXPECT_TRUE(has("context overflow"));
}

TEST(SweepValidation, RelativePathsResolveAgainstTheSweepFileAndAreNormal) {
  const auto r = load_sweep_text(kValidSweep + "runner:\n  results_dir: ../results/unit\n",
                                 "sweep.yaml", "/srv/bench/configs");
  ASSERT_TRUE(r.ok()) << all_messages(r);
  EXPECT_EQ(r.sweep->runner.results_dir, std::filesystem::path("/srv/bench/results/unit"));
}

namespace {
// A small sweep with the given list sections (each a YAML flow or block list).
std::string sweep_with(const std::string& phases, const std::string& methods,
                       const std::string& workloads, const std::string& extra = "") {
  return "gpus: 8\nmodel: {path: m, context_length: 4096}\nserver: {launch: [x, \"{port}\"]}\n" +
         extra + "phases: " + phases + "\nmethods: " + methods + "\nworkloads: " + workloads + "\n";
}
const Diagnostic* find_any(const LoadResult& r, const std::string& needle) {
  for (const auto& d : r.diagnostics)
    if (d.message.find(needle) != std::string::npos)
      return &d;
  return nullptr;
}
} // namespace

// A list entry that cannot be read used to shift every later entry's index: later errors were
// dropped as echoes of it, or pointed at the wrong entry.
TEST(SweepValidation, ABadListEntryNeitherHidesNorShiftsTheOthers) {
  const std::string ar = "[{kind: autoregressive}]", wl = "[{name: a, prompt_tokens: 10}]";
  auto r = load(sweep_with("[oops, {tp: 2},\n  {tp: 16}]", ar, wl));
  EXPECT_EQ(r.error_count(), 2) << all_messages(r);
  const Diagnostic* tp16 = find_error(r, "tp 16 needs 16 GPUs");
  ASSERT_TRUE(tp16) << all_messages(r);
  EXPECT_EQ(tp16->path, "phases[2].tp");
  EXPECT_EQ(tp16->line, 5); // the third entry's line, not tp: 2's

  r = load(sweep_with("[{tp: 1}]", ar, "[oops, {name: a, prompt_tokens: 9000}]"));
  const Diagnostic* overflow = find_error(r, "context overflow in workload `a`");
  ASSERT_TRUE(overflow) << all_messages(r);
  EXPECT_EQ(overflow->path, "workloads[1].prompt_tokens");

  r = load(sweep_with("[{tp: 1}]",
                      "\n  - {kind: tree, block: 16, budgets: [8, 5000]}\n"
                      "  - {kind: autoregressive, block: 4}",
                      wl));
  const Diagnostic* budget = find_error(r, "tree budget 5000 is larger than 1024");
  ASSERT_TRUE(budget) << all_messages(r);
  EXPECT_EQ(budget->path, "methods[0].budgets[1]");
  EXPECT_TRUE(find_error(r, "an autoregressive method takes no `block`"));
  EXPECT_FALSE(find_any(r, "lower it below -")) << all_messages(r); // no budget-5000 context fix
  EXPECT_EQ(r.error_count(), 2) << all_messages(r);
}

// A value that cannot be read used to be built with its default and then judged: a phase with
// `tp: four` became a second tp1 phase, a misspelt kind left "no methods to run".
TEST(SweepValidation, AnUnreadableValueInventsNoOtherError) {
  const std::string ar = "[{kind: autoregressive}]", wl = "[{name: a, prompt_tokens: 10}]";
  for (const auto& [yaml, needle] : std::vector<std::pair<std::string, std::string>>{
           {sweep_with("[{tp: four, gpus: [4, 5, 6, 7]}, {tp: 1}]", ar, wl), "must be a whole"},
           {sweep_with("[{tp: 1}]", "[{kind: autoregresive}]", wl), "is not one of"},
           {sweep_with("[oops]", ar, wl), "must be a map"},
           {sweep_with("[{tp: 1}]", ar, "[{name: [a], prompt_tokens: 10}]"), "must be text"},
           {sweep_with("[{tp: 1}]", "[{kind: autoregressive}, {kind: tree, budgets: [8, 16, 32]}]",
                       wl, "server: {launch: [x, \"{port}\"], method_args: {tree: [t]}}\n"),
            "needs `block`"}}) {
    std::string y = yaml;
    if (y.find("method_args") != std::string::npos) // the extra server line replaces the default
      y = replace(y, "server: {launch: [x, \"{port}\"]}\n", "");
    const auto r = load(y);
    EXPECT_EQ(r.error_count(), 1) << all_messages(r);
    EXPECT_TRUE(find_error(r, needle)) << all_messages(r);
  }
}

TEST(SweepValidation, ASecondYamlDocumentIsAnErrorNotIgnored) {
  const auto r = load(kValidSweep + "---\ngpus: banana\n");
  const Diagnostic* d = find_error(r, "holds 2 YAML documents");
  ASSERT_TRUE(d) << all_messages(r);
  EXPECT_GE(d->line, 30); // at the second document, not at the top
  EXPECT_FALSE(r.ok());
  // A closing `---` (an empty document after it) or `...` is no second sweep.
  EXPECT_TRUE(load(kValidSweep + "---\n").ok()) << all_messages(load(kValidSweep + "---\n"));
  EXPECT_TRUE(load(kValidSweep + "---\n# the end\n").ok());
  EXPECT_TRUE(load("---\n" + kValidSweep + "...\n").ok());
}

// yaml-cpp's LoadAll never returns on these (it allocates without end); each is a syntax error at
// the stray character.
TEST(SweepValidation, AStrayCommaIsASyntaxErrorNotAHang) {
  struct Case {
    std::string yaml;
    int line, column;
  };
  for (const Case& c : {Case{",", 1, 1}, Case{"# c\n, x", 2, 1}, Case{"[a],", 1, 4},
                        Case{kValidSweep + "---\n,", 34, 1}}) {
    const auto r = load(c.yaml);
    const Diagnostic* d = find_error(r, "YAML syntax error");
    ASSERT_TRUE(d) << all_messages(r);
    EXPECT_EQ(r.error_count(), 1) << all_messages(r);
    if (c.line != 34)
      EXPECT_EQ(d->line, c.line) << c.yaml;
    else
      EXPECT_GE(d->line, 30);
    EXPECT_EQ(d->column, c.column) << c.yaml;
  }
}

// The name is the default results directory, results/NAME.
TEST(SweepValidation, TheSweepNameMustBeADirectoryName) {
  for (const char* bad : {"/tmp/elsewhere", "..", "a/b", "\"results dir\""}) {
    const auto r = load(replace(kValidSweep, "name: unit", std::string("name: ") + bad));
    EXPECT_TRUE(find_error(r, "cannot name a directory under results/")) << bad;
  }
  EXPECT_TRUE(load(replace(kValidSweep, "name: unit", "name: qwen3.6-27b_v2")).ok());
}

TEST(SweepValidation, EnvMapsTakeVariableNamesOnceAndLeaveTheGpusToThePhase) {
  auto r = load(replace(kValidSweep, "backend: sglang",
                        "backend: sglang\n  env: {A: \"1\", A: \"2\", \"B=C\": x, \"\": y}"));
  EXPECT_TRUE(find_error(r, "key `A` appears twice in `server.env`")) << all_messages(r);
  EXPECT_TRUE(find_error(r, "`B=C` is not an environment variable name")) << all_messages(r);
  EXPECT_TRUE(find_error(r, "`` is not an environment variable name")) << all_messages(r);

  // The fixture's second phase lists gpus [4, 5, 6, 7]: the server would see GPU 0 instead.
  r = load(replace(kValidSweep, "backend: sglang",
                   "backend: sglang\n  env: {CUDA_VISIBLE_DEVICES: \"0\"}"));
  const Diagnostic* cvd = find_error(r, "would override this phase's `gpus`");
  ASSERT_TRUE(cvd) << all_messages(r);
  EXPECT_EQ(cvd->path, "server.env");
  // Without gpus in the phase it is a warning: the preflight cannot know which GPUs it means.
  r = load(replace(replace(kValidSweep, "    gpus: [4, 5, 6, 7]\n", ""), "backend: sglang",
                   "backend: sglang\n  env: {CUDA_VISIBLE_DEVICES: \"0\"}"));
  EXPECT_FALSE(find_error(r, "CUDA_VISIBLE_DEVICES")) << all_messages(r);
  EXPECT_TRUE(find_any(r, "the preflight checks GPUs 0..0")) << all_messages(r);
}

TEST(SweepValidation, ContextCheckUsesEveryKnownPromptLength) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("specbench-ctx-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "mixed.jsonl");
    f << "{\"prompt\": \"hi\"}\n{\"input_ids\": [";
    for (int i = 0; i < 9000; ++i)
      f << (i ? "," : "") << 7;
    f << "]}\n";
  }
  const std::string ar = "[{kind: autoregressive}]";
  // Text prompts have no length here, but the 9000 input_ids already overflow 4096.
  auto r = load(sweep_with("[{tp: 1}]", ar, "[{name: a, dataset: mixed.jsonl}]"), dir);
  const Diagnostic* d = find_error(r, "context overflow in workload `a`: prompt 9000");
  ASSERT_TRUE(d) << all_messages(r);
  EXPECT_NE(d->fix.find("shorten the dataset's longest prompts to 3839"), std::string::npos)
      << d->fix;
  // A max_prompt_tokens below what the file holds would hide that overflow.
  r = load(sweep_with("[{tp: 1}]", ar, "[{name: a, dataset: mixed.jsonl, max_prompt_tokens: 100}]"),
           dir);
  EXPECT_TRUE(find_error(r, "max_prompt_tokens 100 is below the dataset's longest input_ids "
                            "prompt: 9000 tokens (line 2)"))
      << all_messages(r);
  // A verify width that fills the context on its own says so, with no negative number.
  r = load(replace(sweep_with("[{tp: 1}]", "[{kind: tree, block: 16, budgets: [64]}]",
                              "[{name: a, prompt_tokens: 1, max_new_tokens: 1}]"),
                   "context_length: 4096", "context_length: 32"));
  d = find_error(r, "context overflow");
  ASSERT_TRUE(d) << all_messages(r);
  EXPECT_NE(d->fix.find("the prompt and the verify width alone fill the context"),
            std::string::npos)
      << d->fix;
  std::filesystem::remove_all(dir);
}

TEST(SweepValidation, AnEmptyValueIsReportedAtItsKey) {
  const auto r = load(replace(kValidSweep, "name: unit", "name:"));
  const Diagnostic* d = find_error(r, "`name` must be text");
  ASSERT_TRUE(d) << all_messages(r);
  EXPECT_EQ(d->line, 1);
}

TEST(SweepValidation, BooleansInEveryYaml11Spelling) {
  for (const char* yes : {"true", "TRUE", "Yes", "ON"})
    EXPECT_TRUE(load(replace(kValidSweep, "requests: 8",
                             std::string("requests: 8\n    ignore_eos: ") + yes))
                    .ok())
        << yes;
  EXPECT_FALSE(load(replace(kValidSweep, "requests: 8", "requests: 8\n    ignore_eos: yep")).ok());
}

// A quoted truth value is text, refused like a quoted number: `ignore_eos: "false"` must not
// silently become false (or, worse, a string "no" read as true by another tool).
TEST(SweepValidation, AQuotedBooleanIsRefusedNotCoerced) {
  const auto r =
      load(replace(kValidSweep, "requests: 8", "requests: 8\n    ignore_eos: \"false\""));
  EXPECT_FALSE(r.ok());
  const Diagnostic* d = find_error(
      r, "`workloads[0].ignore_eos` must be true or false, but it is the string \"false\"");
  ASSERT_NE(d, nullptr) << all_messages(r);
  EXPECT_NE(d->fix.find("remove the quotes: write false"), std::string::npos) << d->fix;
  const auto tagged =
      load(replace(kValidSweep, "requests: 8", "requests: 8\n    ignore_eos: !!str yes"));
  EXPECT_NE(find_error(tagged, "must be true or false, but it is the string \"yes\""), nullptr)
      << all_messages(tagged);
  // Unquoted, and tagged !!bool, it is a truth value.
  const auto plain =
      load(replace(kValidSweep, "requests: 8", "requests: 8\n    ignore_eos: !!bool false"));
  ASSERT_TRUE(plain.ok()) << all_messages(plain);
}

TEST(SweepValidation, ASweepOfMoreThanTenThousandCellsIsATypo) {
  std::string budgets = "[";
  for (int b = 1; b <= 1024; ++b)
    budgets += (b > 1 ? ", " : "") + std::to_string(b);
  std::string workloads = "[";
  for (int w = 0; w < 12; ++w)
    workloads +=
        (w ? ", " : "") + std::string("{name: w") + std::to_string(w) + ", prompt_tokens: 10}";
  const auto r = load(sweep_with(
      "[{tp: 1}]", "[{kind: tree, block: 16, budgets: " + budgets + "]}]", workloads + "]"));
  EXPECT_TRUE(find_error(r, "the sweep expands to 12288 cells, more than 10000"))
      << all_messages(r);
  EXPECT_EQ(r.error_count(), 1) << all_messages(r);
}

TEST(SweepValidation, ATreeWithoutBudgetsStillHasItsBlockJudged) {
  for (const char* budgets : {"", ", budgets: []", ", budgets: 8"}) {
    const auto r = load(
        sweep_with("[{tp: 1}]",
                   std::string("[{kind: autoregressive}, {kind: tree, block: 300") + budgets + "}]",
                   "[{name: a, prompt_tokens: 10}]"));
    EXPECT_TRUE(find_error(r, "block 300 is out of range 2..256")) << budgets << "\n"
                                                                   << all_messages(r);
    EXPECT_FALSE(find_error(r, "budget 0")) << all_messages(r);
    EXPECT_EQ(r.error_count(), 2) << all_messages(r);
  }
}

TEST(SweepValidation, ValuesThatWouldBreakOnlyAtRunTimeAreRefusedByThePlan) {
  // A NUL written as a YAML escape: a program would see the argument cut short there.
  for (const std::string nul : {"\\0", "\\x00", "\\u0000"}) {
    const auto r = load(replace(kValidSweep, "--tp, \"{tp}\"]", "--tp, \"{tp}" + nul + " --x\"]"));
    const Diagnostic* d = find_error(r, "contains a NUL character");
    ASSERT_TRUE(d) << nul << ": " << all_messages(r);
    EXPECT_EQ(d->path, "server.launch[6]");
    EXPECT_EQ(d->line, 9);
  }
  const auto env =
      load(replace(kValidSweep, "  backend: sglang", "  backend: sglang\n  env: {X: \"a\\0b\"}"));
  EXPECT_TRUE(find_error(env, "`server.env.X` contains a NUL character")) << all_messages(env);
  // A value filled into the launch template before {port} must not hold {port}: reported at
  // its key, together with the other findings.
  const auto port_in_path =
      load(replace(replace(kValidSweep, "path: /nonexistent/model", "path: \"/models/{port}\""),
                   "gpus: 8", "gpus: 0"));
  const Diagnostic* pp = find_error(port_in_path, "`model.path` holds the text {port}");
  ASSERT_TRUE(pp) << all_messages(port_in_path);
  EXPECT_EQ(pp->line, 4);
  EXPECT_TRUE(find_error(port_in_path, "`gpus`")) << all_messages(port_in_path);
  // An empty results_dir would put the results next to the sweep file.
  const auto here = load(kValidSweep + "runner:\n  results_dir: \"\"\n");
  EXPECT_TRUE(find_error(here, "`runner.results_dir` is empty")) << all_messages(here);
  // No program to start, and hosts nothing can connect to.
  const auto noprog = load(replace(kValidSweep, "launch: [server,", "launch: [\"\","));
  const Diagnostic* p = find_error(noprog, "`server.launch[0]`, is empty");
  ASSERT_TRUE(p) << all_messages(noprog);
  EXPECT_EQ(p->line, 9);
  for (const std::string host : {"\"\"", "\"not a host!\"", "-x", "\"a/b\"", "\"localhost:8000\"",
                                 "\"1:2:3\"", "\"[::1]\""}) {
    const auto r =
        load(replace(kValidSweep, "  backend: sglang", "  backend: sglang\n  host: " + host));
    const Diagnostic* d = find_error(r, "is not a host name or an IP address");
    ASSERT_TRUE(d) << host << all_messages(r);
    if (host == "\"localhost:8000\"") {
      EXPECT_NE(d->fix.find("put the port in `server.port`"), std::string::npos) << d->fix;
    }
  }
  for (const std::string host :
       {"127.0.0.1", "::1", "localhost", "gpu-node-3.cluster", "fe80::1", "::ffff:127.0.0.1"}) {
    const auto r = load(
        replace(kValidSweep, "  backend: sglang", "  backend: sglang\n  host: \"" + host + "\""));
    EXPECT_TRUE(r.ok()) << host << all_messages(r);
  }
}
