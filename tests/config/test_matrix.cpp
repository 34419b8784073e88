// Matrix expansion: ids, argv substitution, environment, config hashes, JSON.
#include "specbench/matrix.hpp"
#include "sweep_fixture.hpp"

#include <nlohmann/json.hpp>

using namespace specbench;
using namespace specbench::testing;

namespace {
Sweep load_ok(const std::string& yaml) {
  auto r = load_sweep_text(yaml, "sweep.yaml");
  EXPECT_TRUE(r.ok()) << all_messages(r);
  return r.ok() ? *r.sweep : Sweep{};
}
Matrix expand(const Sweep& s) {
  auto m = expand_matrix(s, PlanContext{"/opt/specbench"});
  EXPECT_TRUE(m) << m.status().to_string();
  return m ? *m : Matrix{};
}
} // namespace

TEST(Matrix, PhasesCellsAndReadableIds) {
  const Matrix m = expand(load_ok(kValidSweep));
  ASSERT_EQ(m.phases.size(), 2u);
  EXPECT_EQ(m.cell_count(), 10u);
  EXPECT_EQ(m.phases[0].id, "tp1");
  EXPECT_EQ(m.phases[0].gpus, (std::vector<int>{0}));
  EXPECT_EQ(m.phases[1].gpus, (std::vector<int>{4, 5, 6, 7}));
  std::vector<std::string> ids;
  for (const auto& c : m.phases[1].cells) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"tp4-autoregressive", "tp4-linear-k16", "tp4-ddtree-b8",
                                           "tp4-ddtree-b15", "tp4-ddtree-b64"}));
  ASSERT_NE(m.find("tp1-ddtree-b15"), nullptr);
  EXPECT_EQ(m.find("tp1-ddtree-b15")->method.verify_width(), 16);
  EXPECT_EQ(m.find("nope"), nullptr);
}

TEST(Matrix, ArgvIsSubstitutedPerArgumentWithPortLeftForLaunch) {
  const Matrix m = expand(load_ok(kValidSweep));
  const Cell* tree = m.find("tp4-ddtree-b64");
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(tree->argv, (std::vector<std::string>{"server", "--model", "/nonexistent/model",
                                                  "--port", "{port}", "--tp", "4", "--algo",
                                                  "DDTREE", "--draft", "drafter", "--budget",
                                                  "64"}));
  const Cell* ar = m.find("tp1-autoregressive");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->argv.size(), 7u); // no method args for autoregressive
  // Explicit GPUs become CUDA_VISIBLE_DEVICES for the server; implicit ones leave it alone.
  EXPECT_EQ(tree->env.at("CUDA_VISIBLE_DEVICES"), "4,5,6,7");
  EXPECT_EQ(ar->env.count("CUDA_VISIBLE_DEVICES"), 0u);
}

// Which servers load the drafter decides which cells a failed drafter check blocks. The template's
// {draft_model} says so wherever it stands (a JSON --speculative-config included); a hard-coded
// path counts as a whole word only; a drafter path equal to the model's is the target.
TEST(Matrix, ACellLoadsTheDrafterWhenItsTemplateOrArgvNamesIt) {
  const auto loads = [](const std::string& yaml) {
    std::map<std::string, bool> out;
    for (const auto& p : expand(load_ok(yaml)).phases)
      for (const auto& c : p.cells)
        if (c.phase_id == "tp1")
          out[c.id] = c.loads_drafter;
    return out;
  };
  auto m = loads(kValidSweep);
  EXPECT_FALSE(m.at("tp1-autoregressive"));
  EXPECT_TRUE(m.at("tp1-linear-k16"));
  EXPECT_TRUE(m.at("tp1-ddtree-b8"));

  // vLLM's way: the drafter inside a JSON argument.
  const std::string json_arg = replace(
      kValidSweep, R"(tree: [--algo, DDTREE, --draft, "{draft_model}", --budget, "{budget}"])",
      R"(tree: [--speculative-config, '{{"model": "{draft_model}", "n": {budget}}}'])");
  m = loads(json_arg);
  EXPECT_TRUE(m.at("tp1-ddtree-b8"));
  EXPECT_FALSE(m.at("tp1-autoregressive"));
  // "{{draft_model}}" is the literal text, not the placeholder.
  m = loads(replace(kValidSweep, R"(--draft, "{draft_model}", --budget)",
                    R"(--draft-note, "{{draft_model}}", --budget)"));
  EXPECT_FALSE(m.at("tp1-ddtree-b8"));
  // An escaped brace right before the placeholder: "{{{draft_model}}}" is "{<drafter>}".
  m = loads(replace(kValidSweep, R"(--draft, "{draft_model}", --budget)",
                    R"(--draft, "{{{draft_model}}}", --budget)"));
  EXPECT_TRUE(m.at("tp1-ddtree-b8"));

  // A hard-coded path: as an argument, an option's value or a quoted word it counts; as the
  // start of a longer path it does not.
  const std::string hard = replace(kValidSweep, "draft_path: drafter", "draft_path: /m/d");
  m = loads(replace(hard, R"(launch: [server, --model, "{model}",)",
                    R"(launch: [server, --log-dir=/m/d-logs, --model, "{model}",)"));
  EXPECT_FALSE(m.at("tp1-autoregressive"));
  m = loads(replace(hard, R"(launch: [server, --model, "{model}",)",
                    R"(launch: [server, --draft-model-path=/m/d, --model, "{model}",)"));
  EXPECT_TRUE(m.at("tp1-autoregressive"));
  m = loads(replace(hard, R"(launch: [server, --model, "{model}",)",
                    R"(launch: [server, '--spec={{"model": "/m/d"}}', --model, "{model}",)"));
  EXPECT_TRUE(m.at("tp1-autoregressive"));

  // The drafter's path equal to the model's: the autoregressive cell's --model is the target.
  m = loads(replace(kValidSweep, "draft_path: drafter", "draft_path: /nonexistent/model"));
  EXPECT_FALSE(m.at("tp1-autoregressive"));
  EXPECT_TRUE(m.at("tp1-ddtree-b8"));
  EXPECT_NE(matrix_to_json(expand(load_ok(kValidSweep)), load_ok(kValidSweep))
                .find("\"loads_drafter\": true"),
            std::string::npos);
}

TEST(Matrix, ConfigHashChangesWithWhatChangesResultsOnly) {
  const Matrix a = expand(load_ok(kValidSweep));
  const Matrix b = expand(load_ok(kValidSweep));
  EXPECT_EQ(a.find("tp1-linear-k16")->config_hash, b.find("tp1-linear-k16")->config_hash);
  EXPECT_NE(a.find("tp1-linear-k16")->config_hash, a.find("tp4-linear-k16")->config_hash);
  const Matrix c = expand(load_ok(replace(kValidSweep, "max_new_tokens: 256", "max_new_tokens: 255")));
  EXPECT_NE(a.find("tp1-linear-k16")->config_hash, c.find("tp1-linear-k16")->config_hash);
  // A comment or reordering outside the cell does not make results stale; where specbench is
  // installed does not either.
  const Matrix d = expand(load_ok("# comment\n" + kValidSweep));
  EXPECT_EQ(a.find("tp1-linear-k16")->config_hash, d.find("tp1-linear-k16")->config_hash);
  auto e = expand_matrix(load_ok(kValidSweep), PlanContext{"/elsewhere/specbench"});
  ASSERT_TRUE(e);
  EXPECT_EQ(a.find("tp1-linear-k16")->config_hash, e->find("tp1-linear-k16")->config_hash);
  // The model name the requests ask for changes what is measured on a server of several models.
  const auto named = [&](const std::string& name) {
    return expand(load_ok(replace(kValidSweep, "  path: /nonexistent/model",
                                  "  path: /nonexistent/model\n  name: " + name)))
        .find("tp1-linear-k16")
        ->config_hash;
  };
  EXPECT_NE(named("qwen-a"), named("qwen-b"));
  EXPECT_NE(named("qwen-a"), a.find("tp1-linear-k16")->config_hash);
}

TEST(Matrix, InheritedVisibleDevicesAreWrittenOutForPhasesWithoutGpus) {
  const Sweep sweep = load_ok(kValidSweep);
  const auto with = [&](std::optional<std::string> visible) {
    PlanContext context{"/opt/specbench"};
    context.inherited_visible_devices = std::move(visible);
    auto m = expand_matrix(sweep, context);
    EXPECT_TRUE(m) << m.status().to_string();
    return m ? *m : Matrix{};
  };
  const Matrix unset = with(std::nullopt);
  const Matrix first = with("0");
  const Matrix other = with("3");
  // tp1 lists no GPUs: its server sees the runner's, so the value is part of what is measured.
  const Cell* ar = first.find("tp1-autoregressive");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_NE(ar->config_hash, other.find("tp1-autoregressive")->config_hash);
  EXPECT_NE(ar->config_hash, unset.find("tp1-autoregressive")->config_hash);
  // Unset, nothing is added and the hash is what it always was (same as a plain expand).
  EXPECT_EQ(unset.find("tp1-autoregressive")->env.count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(unset.find("tp1-autoregressive")->config_hash,
            expand(sweep).find("tp1-autoregressive")->config_hash);
  // A phase that lists its GPUs sets the variable itself, whatever the runner has.
  EXPECT_EQ(other.find("tp4-autoregressive")->env.at("CUDA_VISIBLE_DEVICES"), "4,5,6,7");
  EXPECT_EQ(other.find("tp4-autoregressive")->config_hash,
            unset.find("tp4-autoregressive")->config_hash);
  // So does a phase env that names it (a warning at validation, but the user's choice).
  const Sweep pinned = load_ok(
      replace(kValidSweep, "  - tp: 1\n", "  - tp: 1\n    env: {CUDA_VISIBLE_DEVICES: \"2\"}\n"));
  PlanContext context{"/opt/specbench"};
  context.inherited_visible_devices = "0";
  auto m = expand_matrix(pinned, context);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->find("tp1-autoregressive")->env.at("CUDA_VISIBLE_DEVICES"), "2");
}

TEST(Matrix, SeveralWorkloadsSuffixIdsAndPhasesCanSelectWorkloads) {
  std::string y = kValidSweep + "  - name: long\n    prompt_tokens: 20000\n    max_new_tokens: 64\n";
  y = replace(y, "  - tp: 1\n", "  - tp: 1\n    workloads: [long]\n");
  const Matrix m = expand(load_ok(y));
  EXPECT_EQ(m.phases[0].cells.size(), 5u);
  EXPECT_EQ(m.phases[1].cells.size(), 10u);
  EXPECT_NE(m.find("tp1-ddtree-b8-long"), nullptr);
  EXPECT_EQ(m.find("tp1-ddtree-b8-chat"), nullptr);
  EXPECT_NE(m.find("tp4-ddtree-b8-chat"), nullptr);
}

TEST(Matrix, SubstitutionRules) {
  auto ok = substitute_placeholders({"a{x}b", "{{literal}}", "{y}"}, {{"x", "1"}}, {"y"});
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, (std::vector<std::string>{"a1b", "{literal}", "{y}"}));
  // Values with spaces stay one argument: nothing is split or interpreted by a shell.
  auto spaced = substitute_placeholders({"--model={m}"}, {{"m", "/a b/$(rm -rf)"}});
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->at(0), "--model=/a b/$(rm -rf)");
  auto unknown = substitute_placeholders({"{nope}"}, {});
  EXPECT_FALSE(unknown);
  EXPECT_EQ(unknown.status().code(), StatusCode::invalid_argument);
  EXPECT_FALSE(substitute_placeholders({"{open"}, {}));
  EXPECT_FALSE(substitute_placeholders({"close}"}, {}));
  // A kept placeholder is replaced at launch by plain text replacement: a literal {port} (from
  // `{{port}}`) or a value holding that text would be replaced too, so both are refused.
  auto literal = substitute_placeholders({"--x={{port}}-{port}"}, {}, {"port"});
  ASSERT_FALSE(literal);
  EXPECT_NE(literal.status().message().find("{port}"), std::string::npos);
  auto via_value = substitute_placeholders({"{m}"}, {{"m", "/models/{port}"}}, {"port"});
  EXPECT_FALSE(via_value);
  auto braced = substitute_placeholders({"{{{port}}}"}, {}, {"port"});
  ASSERT_TRUE(braced); // a literal brace on each side of the real placeholder
  EXPECT_EQ(braced->at(0), "{{port}}");
  // With a fixed port the value is known, but {port} stays kept (the matrix always keeps it), so
  // the literal is still refused.
  EXPECT_FALSE(substitute_placeholders({"--x={{port}}"}, {{"port", "8000"}}, {"port"}));
}

TEST(Matrix, JsonCarriesSchemaVersionAndEveryCell) {
  const Sweep s = load_ok(kValidSweep);
  const Matrix m = expand(s);
  const auto j = nlohmann::json::parse(matrix_to_json(m, s));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["cell_count"], 10);
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][1]["cells"][4]["id"], "tp4-ddtree-b64");
  EXPECT_EQ(j["phases"][1]["cells"][4]["method"]["verify_width"], 65);
  EXPECT_EQ(j["phases"][1]["cells"][4]["config_hash"].get<std::string>().size(), 16u);
}

TEST(Matrix, StableHashIsDeterministic) {
  EXPECT_EQ(stable_hash(""), "cbf29ce484222325"); // FNV-1a 64 offset basis
  EXPECT_EQ(stable_hash("a"), "af63dc4c8601ec8c");
  EXPECT_NE(stable_hash("ab"), stable_hash("ba"));
}
