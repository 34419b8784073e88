// `specbench plan` as users run it: exit codes, table, JSON, errors.
#include "support/test_paths.hpp"
#include "support/test_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace specbench::testing;

namespace {
ProcessResult run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), cli_path().string());
  return run_process(args);
}
std::string config(const char* name) { return (source_dir() / "configs" / name).string(); }
} // namespace

TEST(PlanCli, QwenSweepListsThreePhasesAndEveryCell) {
  const auto r = run_cli({"plan", config("qwen3.6-27b-dflash-ddtree.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"phase tp1", "phase tp4", "phase tp8", "tp1-autoregressive-chat",
                        "tp4-linear-k16-chat", "tp1-ddtree-b15-long-context", "tp8-ddtree-b64-chat",
                        "--speculative-algorithm DFLASH", "48 cells"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(PlanCli, JsonOutput) {
  const auto r = run_cli({"plan", config("qwen3.6-27b-dflash-ddtree.yaml"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  ASSERT_EQ(j["phases"].size(), 3u);
  EXPECT_EQ(j["phases"][2]["tp"], 8);
  EXPECT_EQ(j["phases"][2]["cells"].size(), 16u);
}

TEST(PlanCli, CellsOfPhasesWithoutGpusCarryTheRunnersVisibleDevices) {
  // demo.yaml's phases list no GPUs, so its servers see the GPUs the runner sees.
  const auto cell_env = [](const ProcessResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["phases"][0]["cells"][0];
  };
  const std::vector<std::string> plan = {cli_path().string(), "plan", config("demo.yaml"),
                                         "--json"};
  const auto two =
      cell_env(run_process(plan, std::chrono::seconds(60), {{"CUDA_VISIBLE_DEVICES", "2"}}));
  const auto three =
      cell_env(run_process(plan, std::chrono::seconds(60), {{"CUDA_VISIBLE_DEVICES", "3"}}));
  EXPECT_EQ(two["env"]["CUDA_VISIBLE_DEVICES"], "2");
  EXPECT_NE(two["config_hash"], three["config_hash"]);
}

TEST(PlanCli, InvalidSweepExitsTwoWithEveryError) {
  const auto dir = make_temp_dir("plan-cli");
  std::ifstream in(config("qwen3.6-27b-dflash-ddtree.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The seeds' campaign: 30,000-token prompts into a 32,768 context; and a typo.
  text.replace(text.find("prompt_tokens: 25000"), 20, "prompt_tokens: 30000");
  text.replace(text.find("concurrency: 1"), 14, "concurency: 1");
  std::ofstream(dir / "bad.yaml") << text;
  const auto r = run_cli({"plan", (dir / "bad.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << "no partial plan on stdout: " << r.out;
  EXPECT_NE(r.err.find("bad.yaml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean `concurrency`"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("context overflow"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("largest prompt that fits is 28607"), std::string::npos) << r.err;
}

TEST(PlanCli, ArgumentsAndVersion) {
  EXPECT_EQ(run_cli({"plan", "/nonexistent.yaml"}).exit_code, 2);
  EXPECT_EQ(run_cli({}).exit_code, 2);
  EXPECT_EQ(run_cli({"frobnicate"}).exit_code, 2);
  const auto help = run_cli({"plan", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--json"), std::string::npos);
  const auto v = run_cli({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("specbench 0.1.0"), std::string::npos) << v.out;
}

TEST(PlanCli, SaysWhereTheResultsWillGoAsRunWill) {
  const auto dir = make_temp_dir("plan-cli-results");
  std::ifstream in(config("demo.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto named = run_cli({"plan", config("demo.yaml")});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.out.find("results in " + (source_dir() / "results" / "demo").string() + " ("),
            std::string::npos)
      << named.out;
  // Without a name, run writes results/sweep: the plan says so, not the file's name.
  text.erase(text.find("name: demo\n"), 11);
  text.erase(text.find("  results_dir: ../results/demo\n"), 31);
  std::ofstream(dir / "unnamed.yaml") << text;
  const auto unnamed = run_cli({"plan", (dir / "unnamed.yaml").string()});
  ASSERT_EQ(unnamed.exit_code, 0) << unnamed.err;
  EXPECT_NE(unnamed.out.find("sweep (no name):"), std::string::npos) << unnamed.out;
  EXPECT_NE(unnamed.out.find("results in results/sweep "), std::string::npos) << unnamed.out;
}

TEST(PlanCli, MessagesAreOnePlainLineEachAndNameWhatIsWrong) {
  const auto dir = make_temp_dir("plan-cli-messages");
  // A value with an escape sequence that would clear the terminal: never printed raw.
  std::ofstream(dir / "esc.yaml") << "name: \"\\e[2Jx\"\ngpus: 2\n";
  const auto esc = run_cli({"plan", (dir / "esc.yaml").string()});
  EXPECT_EQ(esc.exit_code, 2);
  EXPECT_EQ(esc.err.find('\x1b'), std::string::npos) << esc.err;
  // A merge key is named as such, not as an unknown key.
  std::ofstream(dir / "merge.yaml") << "name: a\n<<: {gpus: 2}\n";
  const auto merge = run_cli({"plan", (dir / "merge.yaml").string()});
  EXPECT_NE(merge.err.find("YAML merge keys (`<<: *anchor`) are not supported"), std::string::npos)
      << merge.err;
  // Numbers in ranges as they would be written, and one GPU in the singular.
  std::ifstream in(config("demo.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("  - tp: 1"), 9, "  - tp: 2\n    gpus: [0]");
  text.replace(text.find("  preflight: false"), 18,
               "  preflight: false\n  gpu_memory_tolerance_mib: -1");
  std::ofstream(dir / "demo-bad.yaml") << text;
  const auto bad = run_cli({"plan", (dir / "demo-bad.yaml").string()});
  EXPECT_NE(bad.err.find("tp 2 but 1 GPU listed"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("outside the allowed range 0..1e+07"), std::string::npos) << bad.err;
  // An empty --results is refused, not taken as the default.
  const auto empty = run_cli({"run", config("demo.yaml"), "--results", ""});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--results is empty"), std::string::npos) << empty.err;
}
