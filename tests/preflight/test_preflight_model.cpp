// The model layer: directory, config.json, safetensors shards checked against their own headers,
// memory fit, and the "/dev/shm emptied by a reboot" diagnosis.
#include "fake_machine.hpp"

#include "support/test_paths.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace specbench {
namespace {
using testing::FakeMachine;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Writes a valid safetensors file holding one F32 tensor of `floats` elements named `name`.
void write_shard(const fs::path& p, size_t floats, const std::string& name = "w") {
  const std::string header = "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" +
                             std::to_string(floats) + "],\"data_offsets\":[0," +
                             std::to_string(floats * 4) + "]}}";
  std::ofstream out(p, std::ios::binary);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header;
  out << std::string(floats * 4, '\0');
}

// Writes a .safetensors file from a raw header and `data` bytes of zeros after it.
void write_raw_shard(const fs::path& p, const std::string& header, size_t data) {
  std::ofstream out(p, std::ios::binary);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << std::string(data, '\0');
}

fs::path make_model(const fs::path& dir, int shards, size_t floats_per_shard) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json")
      << R"({"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3",)"
      << R"("text_config":{"max_position_embeddings":32768}})";
  std::ofstream(dir / "tokenizer.json") << R"({"version":"1.0","model":{"type":"BPE"}})";
  std::string map;
  size_t total = 0;
  for (int s = 0; s < shards; ++s) {
    const std::string name =
        "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
    write_shard(dir / name, floats_per_shard, "layer" + std::to_string(s) + ".w");
    total += floats_per_shard * 4;
    map += std::string(map.empty() ? "" : ",") + "\"layer" + std::to_string(s) + ".w\":\"" + name +
           "\"";
  }
  std::ofstream(dir / "model.safetensors.index.json")
      << "{\"metadata\":{\"total_size\":" << total << "},\"weight_map\":{" << map << "}}";
  return dir;
}

const CheckResult& check(const PreflightReport& r, const std::string& id) {
  const CheckResult* c = r.find(id);
  if (!c) {
    ADD_FAILURE() << "missing " << id << "\n" << r.to_table();
    static CheckResult none;
    return none;
  }
  return *c;
}

// One preflight run in a forked child, killed after `seconds` (a check that blocks, such as a FIFO
// opened for reading, then fails the test instead of hanging it), and with `as_nobody` dropped to
// uid and gid 65534 first when run as root (root reads everything). Returns what `describe` makes
// of the report, or why the child gave nothing.
std::string preflight_in_child(const PreflightPlan& plan,
                               const std::function<std::string(const PreflightReport&)>& describe,
                               bool as_nobody = false, unsigned seconds = 20) {
  int fds[2];
  if (::pipe(fds) != 0)
    return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    ::alarm(seconds);
    if (as_nobody && ::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
      ::_exit(3);
    const std::string text = describe(run_preflight(plan));
    [[maybe_unused]] ssize_t w = ::write(fds[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int st = 0;
  ::waitpid(child, &st, 0);
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
    return "the preflight hung for " + std::to_string(seconds) + " s";
  if (as_nobody && WIFEXITED(st) && WEXITSTATUS(st) == 3)
    return "the child could not drop to nobody";
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return "the preflight's child ended abnormally (wait status " + std::to_string(st) + ")";
  return text;
}

// The model checks' "id: status: summary" lines, from a preflight run in a child process.
std::string model_checks_in_child(const PreflightPlan& plan, unsigned seconds = 20) {
  return preflight_in_child(
      plan,
      [](const PreflightReport& r) {
        std::string text;
        for (const auto& c : r.checks)
          if (c.layer == PreflightLayer::model)
            text += c.id + ": " + std::string(to_string(c.status)) + ": " + c.summary + "\n";
        return text;
      },
      false, seconds);
}

// One check's summary, diagnosis and remedy, from a preflight run as nobody (see above).
std::string check_as_nobody(const PreflightPlan& plan, const std::string& id) {
  return preflight_in_child(
      plan,
      [&](const PreflightReport& r) {
        const CheckResult* c = r.find(id);
        return c ? c->summary + "\n" + c->diagnosis + "\n" + c->remedy : std::string("none");
      },
      true);
}

TEST(PreflightModel, CompleteModelPassesAndFits) {
  FakeMachine m("model-ok");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  plan.model_path = make_model(m.root / "models/qwen", 3, 1000).string();
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.dir").status, CheckStatus::pass);
  EXPECT_EQ(check(r, "model.config").status, CheckStatus::pass);
  EXPECT_THAT(check(r, "model.config").summary, HasSubstr("Qwen3ForCausalLM, context 32768"));
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::pass)
      << check(r, "model.weights").summary;
  EXPECT_EQ(check(r, "model.memory_fit").status, CheckStatus::pass);
}

// A context of zero or fewer tokens is a broken config.json, not "context -5 tokens".
TEST(PreflightModel, AContextThatIsNotPositiveIsABrokenConfig) {
  FakeMachine m("model-ctx");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  plan.model_path = dir.string();
  for (const char* ctx : {"-5", "0"}) {
    SCOPED_TRACE(ctx);
    std::ofstream(dir / "config.json")
        << R"({"architectures":["Qwen3ForCausalLM"],)"
        << R"("text_config":{"max_position_embeddings":)" << ctx << "}}";
    const PreflightReport r = run_preflight(plan);
    EXPECT_EQ(check(r, "model.config").status, CheckStatus::fail);
    EXPECT_THAT(check(r, "model.config").summary,
                HasSubstr(std::string("max_position_embeddings is ") + ctx +
                          ", not a positive number of tokens"));
  }
}

// A config.json without architectures is named for what it lacks: the context length was read,
// so "the context-length check cannot use the model's limit" was wrong.
TEST(PreflightModel, AMissingArchitecturesIsNotBlamedOnTheContextLength) {
  FakeMachine m("model-arch");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  plan.model_path = dir.string();
  std::ofstream(dir / "config.json") << R"({"max_position_embeddings":4096})";
  PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.config").status, CheckStatus::warn);
  EXPECT_EQ(check(r, "model.config").summary, "config.json has no architectures");
  EXPECT_THAT(check(r, "model.config").diagnosis, HasSubstr("architectures[0]"));
  EXPECT_THAT(check(r, "model.config").diagnosis, ::testing::Not(HasSubstr("context")));
  std::ofstream(dir / "config.json")
      << R"({"architectures":"LlamaForCausalLM","max_position_embeddings":4096})";
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.config").summary,
            "config.json has architectures as a string, not a list");
  EXPECT_THAT(check(r, "model.config").remedy, HasSubstr("[\"LlamaForCausalLM\"]"));
  std::ofstream(dir / "config.json") << R"({"model_type":"llama"})";
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.config").summary,
            "config.json has no architectures and has no max_position_embeddings (a whole "
            "number)");
  EXPECT_THAT(check(r, "model.config").remedy, HasSubstr("context length explicitly"));
}

// Attention heads a tp does not divide: the servers refuse the model at that tp. Fewer KV heads
// than tp is fine (SGLang replicates them).
TEST(PreflightModel, AttentionHeadsTheTpDoesNotDivideFail) {
  FakeMachine m("model-heads");
  m.healthy(2);
  PreflightPlan plan = m.plan(2);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  plan.model_path = dir.string();
  std::ofstream(dir / "config.json")
      << R"({"architectures":["Qwen2ForCausalLM"],"max_position_embeddings":4096,)"
      << R"("num_attention_heads":7,"num_key_value_heads":7})";
  PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.config").status, CheckStatus::fail);
  EXPECT_EQ(check(r, "model.config").summary, "num_attention_heads 7 is not divisible by tp 2");
  EXPECT_THAT(check(r, "model.config").remedy, HasSubstr("use a tp that divides 7 (1)"));
  // In text_config (multimodal), and KV heads fewer than tp.
  std::ofstream(dir / "config.json")
      << R"({"architectures":["X"],"max_position_embeddings":4096,"num_attention_heads":16,)"
      << R"("text_config":{"num_attention_heads":6,"num_key_value_heads":1}})";
  plan = m.plan(2);
  plan.model_path = dir.string();
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.config").status, CheckStatus::pass) << check(r, "model.config").summary;
  FakeMachine m4("model-heads-4");
  m4.healthy(4);
  plan = m4.plan(4);
  plan.model_path = dir.string();
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.config").summary, "num_attention_heads 6 is not divisible by tp 4");
}

// No tokenizer at all is a warning (a server may be given one elsewhere); a tokenizer.json that
// is not JSON fails, since the server would fail to load it.
TEST(PreflightModel, AMissingOrBrokenTokenizerIsNamed) {
  FakeMachine m("model-tokenizer");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  plan.model_path = dir.string();
  PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.tokenizer").status, CheckStatus::pass);
  EXPECT_EQ(check(r, "model.tokenizer").summary, "tokenizer.json");

  std::ofstream(dir / "tokenizer.json") << "{not json";
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.tokenizer").status, CheckStatus::fail);
  EXPECT_EQ(check(r, "model.tokenizer").summary, "tokenizer.json is not valid JSON");
  EXPECT_THAT(check(r, "model.tokenizer").remedy, HasSubstr("download"));

  fs::remove(dir / "tokenizer.json");
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.tokenizer").status, CheckStatus::warn);
  EXPECT_THAT(check(r, "model.tokenizer").summary, HasSubstr("no tokenizer files"));

  std::ofstream(dir / "tokenizer.model") << "sentencepiece";
  std::ofstream(dir / "tokenizer_config.json") << "{}";
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.tokenizer").status, CheckStatus::pass);
  EXPECT_EQ(check(r, "model.tokenizer").summary, "tokenizer.model, tokenizer_config.json");
}

TEST(PreflightModel, MissingAndTruncatedShardsFail) {
  FakeMachine m("model-bad");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 3, 1000);
  fs::remove(dir / "model-00002-of-00003.safetensors");
  fs::resize_file(dir / "model-00003-of-00003.safetensors",
                  fs::file_size(dir / "model-00003-of-00003.safetensors") - 100);
  plan.model_path = dir.string();
  const PreflightReport r = run_preflight(plan);
  const CheckResult& w = check(r, "model.weights");
  EXPECT_EQ(w.status, CheckStatus::fail);
  EXPECT_THAT(w.summary, HasSubstr("2 of 3 weight shard(s) missing or damaged"));
  EXPECT_THAT(w.summary, HasSubstr("model-00002-of-00003.safetensors: missing"));
  EXPECT_THAT(w.summary, HasSubstr("truncated"));
  EXPECT_EQ(check(r, "model.memory_fit").status, CheckStatus::skipped);
}

// A damaged shard header (what a half-written or corrupted download can hold) is a damaged shard,
// named as such; reading its offsets as numbers regardless threw, and the preflight (and the
// sweep running it) stopped with "internal error".
TEST(PreflightModel, ShardHeadersThatAreNotSafetensorsAreDamagedShards) {
  const std::pair<const char*, const char*> cases[] = {
      {R"(["0","4"])", "not two whole numbers"}, // strings
      {"[0,1e300]", "not two whole numbers"},    // a float no integer holds
      {"[8,4]", "not two whole numbers"},        // begin after end
      {"[0]", "not two whole numbers"},          // one offset
      {"[0,-4]", "not two whole numbers"},       // negative
      {"[0,18446744073709551615]", "data end at byte 18446744073709551615"}, // 2^64 - 1
  };
  int i = 0;
  for (const auto& [offsets, expected] : cases) {
    SCOPED_TRACE(offsets);
    FakeMachine m("model-bad-header-" + std::to_string(i++));
    m.healthy(1);
    PreflightPlan plan = m.plan(1);
    const fs::path dir = make_model(m.root / "models/qwen", 2, 100);
    {
      const std::string header =
          std::string(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":)") + offsets + "}}";
      std::ofstream out(dir / "model-00002-of-00002.safetensors", std::ios::binary);
      const uint64_t n = header.size();
      for (int b = 0; b < 8; ++b)
        out.put(static_cast<char>((n >> (8 * b)) & 0xff));
      out << header << std::string(4, '\0');
    }
    plan.model_path = dir.string();
    const PreflightReport r = run_preflight(plan);
    ASSERT_FALSE(r.could_not_run()) << r.run_error.to_string();
    const CheckResult& w = check(r, "model.weights");
    EXPECT_EQ(w.status, CheckStatus::fail);
    EXPECT_THAT(w.summary, HasSubstr("1 of 2 weight shard(s) missing or damaged"));
    EXPECT_THAT(w.summary, HasSubstr(expected));
    EXPECT_EQ(r.find("model.unexpected"), nullptr) << r.to_table();
  }
}

// Headers the safetensors library refuses (so the server cannot load the shard) are damaged
// shards; each of these passed as "headers and sizes consistent".
TEST(PreflightModel, ShardHeadersTheSafetensorsLibraryRefusesAreDamagedShards) {
  const auto t = [](const char* name, const char* dtype, const char* shape, int b, int e) {
    return std::string("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":[" + std::to_string(b) + "," + std::to_string(e) + "]}";
  };
  const struct {
    std::string header;
    size_t data;
    const char* expected;
  } cases[] = {
      {"{" + t("a", "BF16", "[4,4]", 0, 32) + "," + t("b", "BF16", "[4,4]", 0, 32) + "}", 32,
       "tensors \"a\" and \"b\" overlap"},
      {"{" + t("a", "BF16", "[4,4]", 16, 48) + "}", 48,
       "data bytes 0 to 16 belong to no tensor (a gap before tensor \"a\")"},
      {"{" + t("a", "BF16", "[4,4]", 0, 32) + "," + t("b", "BF16", "[4,4]", 40, 72) + "}", 72,
       "data bytes 32 to 40 belong to no tensor"},
      {"{" + t("a", "BF17", "[4,4]", 0, 32) + "}", 32,
       "dtype \"BF17\", which is not a safetensors"},
      {"{" + t("a", "BF16", "[4,4000]", 0, 32) + "}", 32,
       "\"a\" is BF16 [4,4000], which does not fill its data_offsets' 32 bytes"},
      {"{" + t("a", "F4", "[3]", 0, 2) + "}", 2, "\"a\" is F4 [3]"}, // 12 bits in 2 bytes
      {"{" + t("a", "BF16", "[-4,4]", 0, 32) + "}", 32, "shape [-4,4], not a list of whole"},
      {R"({"a":{"dtype":"BF16","shape":[4,4]}})", 0, "tensor \"a\" has no data_offsets"},
      {R"({"a":5})", 0, "tensor \"a\" is 5, not an object"},
      {R"({"__metadata__":{"format":5},)" + t("a", "BF16", "[4,4]", 0, 32) + "}", 32,
       "__metadata__ \"format\" is 5, not a string"},
      {R"({"__metadata__":["pt"],)" + t("a", "BF16", "[4,4]", 0, 32) + "}", 32,
       "__metadata__ is [\"pt\"], not an object"},
      {" " + std::string(200, 'x'), 0, "header does not start with '{'"},
  };
  int i = 0;
  for (const auto& [header, data, expected] : cases) {
    SCOPED_TRACE(header);
    FakeMachine m("model-refused-header-" + std::to_string(i++));
    m.healthy(1);
    PreflightPlan plan = m.plan(1);
    const fs::path dir = make_model(m.root / "models/qwen", 2, 100);
    write_raw_shard(dir / "model-00002-of-00002.safetensors", header, data);
    // No total_size: the shard's smaller size must not be what fails it.
    std::ofstream(dir / "model.safetensors.index.json")
        << R"({"weight_map":{"layer0.w":"model-00001-of-00002.safetensors",)"
        << R"("layer1.w":"model-00002-of-00002.safetensors"}})";
    plan.model_path = dir.string();
    const PreflightReport r = run_preflight(plan);
    const CheckResult& w = check(r, "model.weights");
    EXPECT_EQ(w.status, CheckStatus::fail);
    EXPECT_THAT(w.summary, HasSubstr("1 of 2 weight shard(s) missing or damaged"));
    EXPECT_THAT(w.summary, HasSubstr(expected));
  }
}

// What the library accepts passes: the sub-byte and newer dtypes, zero-sized tensors, metadata,
// and tensors listed out of offset order.
TEST(PreflightModel, ShardHeadersTheSafetensorsLibraryAcceptsPass) {
  FakeMachine m("model-accepted-headers");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  write_raw_shard(dir / "model-00001-of-00001.safetensors",
                  R"({"__metadata__":{"format":"pt"},)"
                  R"("b":{"dtype":"F4","shape":[2,3],"data_offsets":[4,7]},)"
                  R"("a":{"dtype":"F8_E8M0","shape":[4],"data_offsets":[0,4]},)"
                  R"("c":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[7,10]},)"
                  R"("e":{"dtype":"BF16","shape":[0,5],"data_offsets":[10,10]},)"
                  R"("d":{"dtype":"BOOL","shape":[],"data_offsets":[10,11]}})",
                  11);
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map":{"a":"model-00001-of-00001.safetensors"}})";
  plan.model_path = dir.string();
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::pass)
      << check(r, "model.weights").summary;
}

// The library's header limit is 100,000,000 bytes, not 100 MiB; the file is sparse.
TEST(PreflightModel, AHeaderOverTheLibrarysLimitIsRefused) {
  FakeMachine m("model-huge-header");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  const fs::path shard = dir / "model-00001-of-00001.safetensors";
  write_raw_shard(shard, "{", 0);
  {
    std::fstream io(shard, std::ios::in | std::ios::out | std::ios::binary);
    const uint64_t n = 100'000'001;
    for (int i = 0; i < 8; ++i)
      io.put(static_cast<char>((n >> (8 * i)) & 0xff));
  }
  fs::resize_file(shard, 8 + 100'000'001 + 16);
  plan.model_path = dir.string();
  const PreflightReport r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.weights").summary,
              HasSubstr("more than the 100000000 the safetensors library accepts"));
}

TEST(PreflightModel, DanglingHuggingFaceSymlinksAreNamed) {
  FakeMachine m("model-dangling");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  fs::remove(dir / "model-00001-of-00001.safetensors");
  fs::create_symlink("../../blobs/abc123", dir / "model-00001-of-00001.safetensors");
  plan.model_path = dir.string();
  const PreflightReport r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("dangling symlink"));
}

TEST(PreflightModel, ModelLargerThanFreeMemoryFails) {
  FakeMachine m("model-big");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  plan.model_path = make_model(m.root / "models/qwen", 1, 1000).string();
  plan.model_memory_headroom = 1e9; // 4 KB of weights * 1e9 = 4 TB > one H200
  const PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.memory_fit").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.memory_fit").remedy, HasSubstr("larger --tp"));
}

TEST(PreflightModel, ModelInDevShmGoneAfterRebootHasItsOwnDiagnosis) {
  FakeMachine m("model-shm");
  m.healthy(1);
  std::ofstream(m.root / "proc/mounts") << "overlay / overlay rw 0 0\n"
                                        << "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n";
  std::ofstream(m.root / "proc/uptime") << "1800.5 1000.0\n";
  PreflightPlan plan = m.plan(1);
  plan.model_path = "/dev/shm/specbench-test-no-such-model-" + std::to_string(::getpid());
  const PreflightReport r = run_preflight(plan);
  const CheckResult& d = check(r, "model.dir");
  EXPECT_EQ(d.status, CheckStatus::fail);
  EXPECT_THAT(d.diagnosis, HasSubstr("/dev/shm"));
  EXPECT_THAT(d.diagnosis, HasSubstr("emptied at every boot"));
  EXPECT_THAT(d.diagnosis, HasSubstr("booted 30 min ago"));
  EXPECT_THAT(d.remedy, HasSubstr("download the model again"));
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::skipped);
}

TEST(PreflightModel, AnIndexThatListsNothingOrACountThatIsNotOneFails) {
  FakeMachine m("model-index");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/empty-map", 1, 100);
  std::ofstream(dir / "model.safetensors.index.json") << R"({"weight_map":{}})";
  plan.model_path = dir.string();
  PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("lists no weight files"));
  EXPECT_EQ(check(r, "model.memory_fit").status, CheckStatus::skipped);

  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"metadata":{"total_size":4.0e12},"weight_map":{"w":"model-00001-of-00001.safetensors"}})";
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("not a byte count"));
}

// The index promises where each tensor is; a tensor its shard does not hold fails at load time,
// so it fails here (a few named), as does an entry that names no file.
TEST(PreflightModel, AnIndexPlacingATensorInAShardWithoutItFails) {
  FakeMachine m("model-index-tensors");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 2, 10);
  const std::string s1 = "model-00001-of-00002.safetensors",
                    s2 = "model-00002-of-00002.safetensors";
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"metadata":{"total_size":80},"weight_map":{"layer0.w":")" << s1 << R"(","layer1.w":")"
      << s2 << R"(","lm_head.weight":")" << s2 << R"("}})";
  plan.model_path = dir.string();
  PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.weights").summary,
              HasSubstr("1 tensor(s) of model.safetensors.index.json are not in the shard it "
                        "names: \"lm_head.weight\" (in " +
                        s2 + ")"));

  std::string map;
  for (int i = 0; i < 6; ++i)
    map += ",\"extra" + std::to_string(i) + "\":\"" + s1 + "\"";
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map":{"layer0.w":")" << s1 << R"(","layer1.w":")" << s2 << "\"" << map << "}}";
  r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("6 tensor(s)"));
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("\"extra2\" (in " + s1 + "), ..."));
  EXPECT_THAT(check(r, "model.weights").summary, ::testing::Not(HasSubstr("extra3")));

  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map":{"layer0.w":")" << s1 << R"(","layer1.w":")" << s2
      << R"(","layer2.w":5}})";
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.weights").summary,
              HasSubstr("weight_map gives 1 tensor(s) no file name (a string is needed), e.g. "
                        "\"layer2.w\": 5"));
}

// Weights servers load besides model.safetensors(.index.json): PyTorch .bin files (one, or
// sharded with pytorch_model.bin.index.json; pickles, so only presence and sizes are checked)
// and .safetensors files without an index (every one in the folder is loaded).
TEST(PreflightModel, PytorchBinWeightsAndShardsWithoutAnIndexAreWeights) {
  FakeMachine m("model-other-weights");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  fs::remove(dir / "model.safetensors.index.json");
  plan.model_path = dir.string();
  PreflightReport r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::pass)
      << check(r, "model.weights").summary;
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("no index"));
  EXPECT_EQ(check(r, "model.memory_fit").status, CheckStatus::pass);
  write_raw_shard(dir / "model-00001-of-00001.safetensors", "{}x", 0); // damaged
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);

  fs::remove(dir / "model-00001-of-00001.safetensors");
  std::ofstream(dir / "pytorch_model.bin") << std::string(100, 'p');
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::pass)
      << check(r, "model.weights").summary;
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("the pickles not read"));

  fs::remove(dir / "pytorch_model.bin");
  const std::string b1 = "pytorch_model-00001-of-00002.bin",
                    b2 = "pytorch_model-00002-of-00002.bin";
  std::ofstream(dir / b1) << std::string(100, 'p');
  std::ofstream(dir / b2) << std::string(100, 'p');
  std::ofstream(dir / "pytorch_model.bin.index.json")
      << R"({"metadata":{"total_size":180},"weight_map":{"a":")" << b1 << R"(","b":")" << b2
      << R"("}})";
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::pass)
      << check(r, "model.weights").summary;
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("2 shard(s)"));
  fs::remove(dir / b2);
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr(b2 + ": missing"));

  fs::remove(dir / b1);
  fs::remove(dir / "pytorch_model.bin.index.json");
  r = run_preflight(plan);
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.weights").summary, HasSubstr("no weights"));
}

TEST(PreflightModel, AFileOrALinkLoopIsNamedForWhatItIs) {
  FakeMachine m("model-odd-paths");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  fs::create_directories(m.root / "models");
  std::ofstream(m.root / "models/weights.bin") << "x";
  plan.model_path = (m.root / "models/weights.bin").string();
  PreflightReport r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.dir").summary, HasSubstr("is a file, not a model directory"));
  fs::create_symlink(m.root / "models/loop-b", m.root / "models/loop-a");
  fs::create_symlink(m.root / "models/loop-a", m.root / "models/loop-b");
  plan.model_path = (m.root / "models/loop-a").string();
  r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.dir").summary, HasSubstr("loop of symbolic links"));
  // A link into /dev/shm whose target a reboot emptied gets the /dev/shm diagnosis.
  fs::create_symlink("/dev/shm/specbench-test-gone-" + std::to_string(::getpid()),
                     m.root / "models/staged");
  plan.model_path = (m.root / "models/staged").string();
  r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.dir").summary, HasSubstr("a symbolic link to /dev/shm/"));
  EXPECT_THAT(check(r, "model.dir").diagnosis, HasSubstr("emptied at every boot"));
}

// Only a permission problem gets the chmod answer: a shard that is a folder or a link loop is a
// damaged download.
TEST(PreflightModel, AShardThatIsAFolderOrALinkLoopIsDamageNotPermission) {
  FakeMachine m("model-odd-shards");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 2, 10);
  fs::remove(dir / "model-00001-of-00002.safetensors");
  fs::create_directory(dir / "model-00001-of-00002.safetensors");
  fs::remove(dir / "model-00002-of-00002.safetensors");
  fs::create_symlink("model-00002-of-00002.safetensors", dir / "model-00002-of-00002.safetensors");
  plan.model_path = dir.string();
  const PreflightReport r = run_preflight(plan);
  const CheckResult& w = check(r, "model.weights");
  EXPECT_EQ(w.status, CheckStatus::fail);
  EXPECT_THAT(w.summary,
              HasSubstr("model-00001-of-00002.safetensors: a directory, not a weight file"));
  EXPECT_THAT(w.summary, HasSubstr("model-00002-of-00002.safetensors: a loop of symbolic links"));
  EXPECT_THAT(w.diagnosis, HasSubstr("incomplete"));
  EXPECT_THAT(w.remedy, ::testing::Not(HasSubstr("chmod")));
}

// The server loads the shards from the model folder: an index naming a file elsewhere fails,
// and that file is not read (nor counted).
TEST(PreflightModel, AnIndexNamingAFileOutsideTheModelFails) {
  FakeMachine m("model-escape");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  write_shard(m.root / "models/outside.safetensors", 10);
  plan.model_path = dir.string();
  for (const std::string& name :
       {std::string("../outside.safetensors"), (m.root / "models/outside.safetensors").string()}) {
    std::ofstream(dir / "model.safetensors.index.json")
        << R"({"metadata":{"total_size":40},"weight_map":{"w":")" << name << "\"}}";
    const PreflightReport r = run_preflight(plan);
    const CheckResult& w = check(r, "model.weights");
    EXPECT_EQ(w.status, CheckStatus::fail) << name;
    EXPECT_THAT(w.summary, HasSubstr(name + ": outside the model folder"));
    bool counted = false;
    for (const auto& [k, v] : w.facts)
      counted |= k == "bytes_on_disk" && v != "0";
    EXPECT_FALSE(counted) << name;
  }
}

// A model in /dev/shm with one shard missing and everything else there was not emptied by a
// reboot (that empties everything): it is a copy that stopped short, and the tmpfs's free space
// is reported.
TEST(PreflightModel, APartialCopyInDevShmIsNotBlamedOnAReboot) {
  if (!fs::is_directory("/dev/shm"))
    GTEST_SKIP() << "no /dev/shm here";
  FakeMachine m("model-shm-partial");
  m.healthy(1);
  std::ofstream(m.root / "proc/mounts") << "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n";
  std::ofstream(m.root / "proc/uptime") << "600.0 100.0\n";
  PreflightPlan plan = m.plan(1);
  const fs::path dir = "/dev/shm/specbench-test-partial-" + std::to_string(::getpid());
  fs::remove_all(dir);
  make_model(dir, 2, 10);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  plan.model_path = dir.string();
  const PreflightReport r = run_preflight(plan);
  fs::remove_all(dir);
  const CheckResult& w = check(r, "model.weights");
  EXPECT_EQ(w.status, CheckStatus::fail);
  EXPECT_THAT(w.diagnosis, HasSubstr("incomplete or was interrupted"));
  EXPECT_THAT(w.diagnosis, HasSubstr("free of"));
  EXPECT_THAT(w.diagnosis, ::testing::Not(HasSubstr("lost in that reboot")));
  EXPECT_THAT(w.remedy, HasSubstr("df -h /dev/shm"));
  bool free_fact = false;
  for (const auto& [k, v] : w.facts)
    free_fact |= k == "filesystem_free";
  EXPECT_TRUE(free_fact);
}

TEST(PreflightModel, OnlyPathsInsideDevShmGetTheRebootDiagnosis) {
  FakeMachine m("model-shm-paths");
  m.healthy(1);
  std::ofstream(m.root / "proc/mounts") << "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n";
  std::ofstream(m.root / "proc/uptime") << "600.0 100.0\n";
  PreflightPlan plan = m.plan(1);
  const std::string gone = "specbench-test-gone-" + std::to_string(::getpid());
  for (const std::string& near : {"/dev/shm2/" + gone, "/dev/shm" + gone}) {
    plan.model_path = near;
    const PreflightReport r = run_preflight(plan);
    EXPECT_THAT(check(r, "model.dir").diagnosis, HasSubstr("never downloaded")) << near;
  }
  // A relative link that leads into /dev/shm is a model staged there.
  fs::create_directories(m.root / "models");
  fs::create_symlink(fs::path("/dev/shm/" + gone).lexically_relative(m.root / "models"),
                     m.root / "models/relative");
  plan.model_path = (m.root / "models/relative").string();
  const PreflightReport r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.dir").diagnosis, HasSubstr("emptied at every boot"));
  bool tmpfs = false;
  for (const auto& [k, v] : check(r, "model.dir").facts)
    tmpfs |= k == "filesystem" && v == "tmpfs";
  EXPECT_TRUE(tmpfs); // the filesystem of the link's target, not of the link
  // A linked parent folder, a chain of links, and a trailing slash lead there too.
  fs::create_symlink("/dev/shm/" + gone, m.root / "models/parent");
  fs::create_symlink(m.root / "models/relative", m.root / "models/chain");
  for (const fs::path& p : {m.root / "models/parent/qwen", m.root / "models/chain",
                            fs::path((m.root / "models/relative").string() + "/")}) {
    plan.model_path = p.string();
    const PreflightReport again = run_preflight(plan);
    EXPECT_THAT(check(again, "model.dir").diagnosis, HasSubstr("emptied at every boot")) << p;
  }
}

TEST(PreflightModel, ADanglingIndexLinkAndAHubIdAreNamed) {
  FakeMachine m("model-index-link");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  fs::remove(dir / "model.safetensors.index.json");
  fs::create_symlink("../../blobs/0123abcd", dir / "model.safetensors.index.json");
  plan.model_path = dir.string();
  PreflightReport r = run_preflight(plan);
  EXPECT_THAT(
      check(r, "model.weights").summary,
      HasSubstr("model.safetensors.index.json is a dangling symlink (to ../../blobs/0123abcd"));
  plan.model_path = "Qwen/specbench-test-no-such-model-" + std::to_string(::getpid());
  r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.dir").diagnosis, HasSubstr("Hugging Face hub id"));
  EXPECT_THAT(check(r, "model.dir").remedy, HasSubstr("leave --model out"));

  // "folder/name" shaped like a hub id, but a dangling link here: a local model that is gone.
  const std::string folder = "sb-links-" + std::to_string(::getpid());
  fs::create_directory(folder);
  struct RemoveFolder {
    std::string path;
    ~RemoveFolder() { fs::remove_all(path); }
  } remove_folder{folder};
  fs::create_symlink("/nonexistent/specbench-gone-model", folder + "/model");
  plan.model_path = folder + "/model";
  r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.dir").summary, HasSubstr("a symbolic link to"));
  EXPECT_THAT(check(r, "model.dir").diagnosis, ::testing::Not(HasSubstr("hub id")));
}

// Files the user may not read are a permission problem, not a broken download. As root (CI) the
// check runs in a child that drops to nobody, since root reads everything.
TEST(PreflightModel, UnreadableFilesAreAPermissionProblem) {
  FakeMachine m("model-perm");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  // Under /tmp, which everyone may traverse (a build tree may sit under a 0700 directory, and
  // then nobody could not reach the model at all).
  const fs::path base = "/tmp/specbench-perm-" + std::to_string(::getpid());
  fs::remove_all(base);
  const fs::path dir = make_model(base / "private", 2, 100);
  fs::permissions(base, fs::perms::all);
  fs::permissions(dir, fs::perms::all);
  for (const auto& f : fs::directory_iterator(dir))
    fs::permissions(f.path(), fs::perms::all);
  fs::permissions(dir / "model-00001-of-00002.safetensors",
                  fs::perms::owner_read | fs::perms::owner_write);
  plan.model_path = dir.string();
  const std::string text = check_as_nobody(plan, "model.weights");
  fs::remove_all(base);
  ASSERT_NE(text, "the child could not drop to nobody");
  EXPECT_THAT(text, HasSubstr("model-00001-of-00002.safetensors: cannot be read"));
  EXPECT_THAT(text, HasSubstr("may not read the model's files"));
  EXPECT_THAT(text, HasSubstr("chmod -R a+rX"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("download")));
}

// A FIFO where config.json or the index should be is refused without being opened: opening it
// for reading waited for a writer, forever.
TEST(PreflightModel, AFifoAsConfigOrIndexIsRefusedNotWaitedOn) {
  FakeMachine m("model-fifo");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 2, 10);
  fs::remove(dir / "config.json");
  fs::remove(dir / "model.safetensors.index.json");
  ASSERT_EQ(::mkfifo((dir / "config.json").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((dir / "model.safetensors.index.json").c_str(), 0644), 0);
  plan.model_path = dir.string();
  const std::string text = model_checks_in_child(plan);
  EXPECT_THAT(text, HasSubstr("model.config: fail: config.json is a named pipe (FIFO)"));
  EXPECT_THAT(
      text, HasSubstr("model.weights: fail: model.safetensors.index.json is a named pipe (FIFO)"));
}

// config.json or the index being a folder, a dangling link or a link loop is a failed check that
// says so; a folder used to throw ("basic_filebuf::underflow"), and the layer's other checks
// vanished behind "model.unexpected".
TEST(PreflightModel, AConfigOrIndexThatIsNoFileIsNamedForWhatItIs) {
  FakeMachine m("model-cfg-odd");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 1, 10);
  fs::remove(dir / "config.json");
  fs::remove(dir / "model.safetensors.index.json");
  fs::create_directory(dir / "config.json");
  fs::create_directory(dir / "model.safetensors.index.json");
  plan.model_path = dir.string();
  PreflightReport r = run_preflight(plan);
  EXPECT_EQ(r.find("model.unexpected"), nullptr) << r.to_table();
  EXPECT_EQ(check(r, "model.config").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.config").summary, HasSubstr("config.json is a directory"));
  EXPECT_THAT(check(r, "model.config").remedy, HasSubstr("download the model again"));
  EXPECT_EQ(check(r, "model.weights").status, CheckStatus::fail);
  EXPECT_THAT(check(r, "model.weights").summary,
              HasSubstr("model.safetensors.index.json is a directory"));
  EXPECT_EQ(check(r, "model.memory_fit").status, CheckStatus::skipped);

  fs::remove(dir / "config.json");
  fs::create_symlink("../../blobs/c0ffee", dir / "config.json");
  r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.config").summary,
              HasSubstr("config.json is a dangling symlink (to ../../blobs/c0ffee"));
  fs::remove(dir / "config.json");
  fs::create_symlink("config.json", dir / "config.json");
  r = run_preflight(plan);
  EXPECT_THAT(check(r, "model.config").summary,
              HasSubstr("config.json is a loop of symbolic links"));
}

// A shard whose size cannot be known (a FIFO) is named, and adds nothing to bytes_on_disk: the
// failed fs::file_size's (uintmax_t)-1 was added, 18446744073709551615 bytes.
TEST(PreflightModel, AShardThatIsAPipeIsNamedAndNotCounted) {
  FakeMachine m("model-fifo-shard");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path dir = make_model(m.root / "models/qwen", 2, 10);
  const auto first = fs::file_size(dir / "model-00001-of-00002.safetensors");
  fs::remove(dir / "model-00002-of-00002.safetensors");
  ASSERT_EQ(::mkfifo((dir / "model-00002-of-00002.safetensors").c_str(), 0644), 0);
  plan.model_path = dir.string();
  const PreflightReport r = run_preflight(plan);
  const CheckResult& w = check(r, "model.weights");
  EXPECT_EQ(w.status, CheckStatus::fail);
  EXPECT_THAT(w.summary, HasSubstr("model-00002-of-00002.safetensors: a named pipe (FIFO)"));
  std::string bytes;
  for (const auto& [k, v] : w.facts)
    if (k == "bytes_on_disk")
      bytes = v;
  EXPECT_EQ(bytes, std::to_string(first));
}

// A folder above the model that may not be entered is named: "chmod -R a+rX <model>" cannot
// help there. As root the check runs in a child that drops to nobody.
TEST(PreflightModel, AParentFolderThatMayNotBeEnteredIsNamed) {
  FakeMachine m("model-parent-perm");
  m.healthy(1);
  PreflightPlan plan = m.plan(1);
  const fs::path base = "/tmp/specbench-parent-perm-" + std::to_string(::getpid());
  fs::remove_all(base);
  const fs::path dir = make_model(base / "locked/qwen", 1, 10);
  fs::permissions(base, fs::perms::all);
  fs::permissions(base / "locked", fs::perms::none); // not even its owner may enter
  plan.model_path = dir.string();
  const std::string text = check_as_nobody(plan, "model.dir");
  fs::permissions(base / "locked", fs::perms::all);
  fs::remove_all(base);
  ASSERT_NE(text, "the child could not drop to nobody");
  const std::string locked = (base / "locked").string();
  EXPECT_THAT(text, HasSubstr("cannot be reached: " + locked + " may not be entered"));
  EXPECT_THAT(text, HasSubstr("chmod a+x " + locked));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("chmod -R")));
}

TEST(PreflightModel, NoModelPathNoModelLayer) {
  FakeMachine m("model-none");
  m.healthy(1);
  const PreflightReport r = run_preflight(m.plan(1));
  EXPECT_TRUE(r.checks_of(PreflightLayer::model).empty());
  EXPECT_EQ(r.layer(PreflightLayer::model).status, CheckStatus::skipped);
}

} // namespace
} // namespace specbench
