// The model layer: directory, config.json, safetensors shards checked against their own headers,
// memory fit, and the "/dev/shm emptied by a reboot" diagnosis.
#include "fake_machine.hpp"

#include "support/test_paths.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <optional>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace specbench {
namespace {
using testing::check;
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

// ---- The model layer on one model folder, broken one way per row ----
//
// Each row makes a fake machine and (unless `shards` is 0) a complete model folder in it, breaks
// it (or the plan) one way, runs the preflight once, and checks what the model layer's checks say.
// A failure names its row: PreflightModel/ModelLayer.Says/<row name>.

// Which text of a check an expectation reads.
enum class Text { summary, diagnosis, remedy };

// One text of one check and what it must match: HasSubstr, Not(HasSubstr), Eq.
struct TextMatch {
  Text text;
  ::testing::Matcher<const std::string&> matcher;
};
TextMatch summary(::testing::Matcher<const std::string&> m) {
  return {Text::summary, std::move(m)};
}
TextMatch diagnosis(::testing::Matcher<const std::string&> m) {
  return {Text::diagnosis, std::move(m)};
}
TextMatch remedy(::testing::Matcher<const std::string&> m) {
  return {Text::remedy, std::move(m)};
}

// What one check must say: its status (unless left out) and its texts.
struct Says {
  std::string id;
  std::optional<CheckStatus> status;
  std::vector<TextMatch> texts;
};

// What a row breaks: the fake machine, its plan, and the model folder (empty when the row made
// none). Paths put in `remove_after` are removed when the row ends.
struct Bench {
  FakeMachine& machine;
  PreflightPlan& plan;
  fs::path dir;
  std::vector<fs::path> remove_after;
  ~Bench() {
    std::error_code ec;
    for (const auto& p : remove_after)
      fs::remove_all(p, ec);
  }
};

struct ModelCase {
  std::string name;                   // the row's test name: letters, digits and '_'
  int gpus = 1;                       // the machine's GPUs and the plan's tp
  int shards = 1;                     // make_model's shards (0: no model folder is made)
  size_t floats = 10;                 // and floats per shard
  std::string folder = "models/qwen"; // where under the machine's root
  std::function<void(Bench&)> break_it;
  std::vector<Says> says;
  std::vector<std::string> absent; // check ids the report must not hold
  // Anything else the row checks (facts, or paths known only when it runs).
  std::function<void(const PreflightReport&, const Bench&)> more;
};

void PrintTo(const ModelCase& row, std::ostream* os) {
  *os << row.name;
}

using ::testing::Eq;
using ::testing::Not;

const char* const kShard1Of2 = "model-00001-of-00002.safetensors";
const char* const kShard2Of2 = "model-00002-of-00002.safetensors";

void write_config(const fs::path& dir, const std::string& json) {
  std::ofstream(dir / "config.json") << json;
}

void write_index(const fs::path& dir, const std::string& json) {
  std::ofstream(dir / "model.safetensors.index.json") << json;
}

// /proc of a machine whose /dev/shm is a tmpfs (after `other_mounts`), up `uptime` seconds.
void dev_shm_is_tmpfs(const Bench& b, const std::string& uptime,
                      const std::string& other_mounts = "") {
  std::ofstream(b.machine.root / "proc/mounts")
      << other_mounts << "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n";
  std::ofstream(b.machine.root / "proc/uptime") << uptime;
}

// A name in /dev/shm that nothing holds.
std::string gone_from_dev_shm() {
  return "specbench-test-gone-" + std::to_string(::getpid());
}

// models/relative: a relative link that leads to /dev/shm/<gone>. Returns its path.
std::string relative_link_into_dev_shm(const Bench& b) {
  fs::create_directories(b.machine.root / "models");
  fs::create_symlink(
      fs::path("/dev/shm/" + gone_from_dev_shm()).lexically_relative(b.machine.root / "models"),
      b.machine.root / "models/relative");
  return (b.machine.root / "models/relative").string();
}

// No model folder: the model path is what `where` makes on a machine whose /dev/shm is a tmpfs,
// and model.dir's diagnosis holds `expected`.
ModelCase dev_shm_path(const std::string& name, std::string (*where)(const Bench&),
                       const std::string& expected,
                       std::function<void(const PreflightReport&, const Bench&)> more = {}) {
  return {.name = name,
          .shards = 0,
          .break_it =
              [where](Bench& b) {
                dev_shm_is_tmpfs(b, "600.0 100.0\n");
                b.plan.model_path = where(b);
              },
          .says = {{"model.dir", {}, {diagnosis(HasSubstr(expected))}}},
          .more = std::move(more)};
}

// A context of zero or fewer tokens is a broken config.json, not "context -5 tokens".
ModelCase context_not_positive(const std::string& name, const std::string& ctx) {
  return {.name = name,
          .break_it =
              [ctx](Bench& b) {
                write_config(b.dir, R"({"architectures":["Qwen3ForCausalLM"],)"
                                    R"("text_config":{"max_position_embeddings":)" +
                                        ctx + "}}");
              },
          .says = {{"model.config",
                    CheckStatus::fail,
                    {summary(HasSubstr("max_position_embeddings is " + ctx +
                                       ", not a positive number of tokens"))}}}};
}

// A damaged shard header (what a half-written or corrupted download can hold) is a damaged
// shard, named as such; reading its offsets as numbers regardless threw, and the preflight (and
// the sweep running it) stopped with "internal error".
ModelCase shard_offsets_not_safetensors(const std::string& name, const std::string& offsets,
                                        const std::string& expected) {
  return {.name = name,
          .shards = 2,
          .floats = 100,
          .break_it =
              [offsets](Bench& b) {
                write_raw_shard(
                    b.dir / kShard2Of2,
                    R"({"w":{"dtype":"F32","shape":[1],"data_offsets":)" + offsets + "}}", 4);
              },
          .says = {{"model.weights",
                    CheckStatus::fail,
                    {summary(HasSubstr("1 of 2 weight shard(s) missing or damaged")),
                     summary(HasSubstr(expected))}}},
          .absent = {"model.unexpected"}};
}

// Headers the safetensors library refuses (so the server cannot load the shard) are damaged
// shards; each of these passed as "headers and sizes consistent".
ModelCase shard_header_refused(const std::string& name, const std::string& header, size_t data,
                               const std::string& expected) {
  return {.name = name,
          .shards = 2,
          .floats = 100,
          .break_it =
              [header, data](Bench& b) {
                write_raw_shard(b.dir / kShard2Of2, header, data);
                // No total_size: the shard's smaller size must not be what fails it.
                write_index(b.dir,
                            R"({"weight_map":{"layer0.w":"model-00001-of-00002.safetensors",)"
                            R"("layer1.w":"model-00002-of-00002.safetensors"}})");
              },
          .says = {{"model.weights",
                    CheckStatus::fail,
                    {summary(HasSubstr("1 of 2 weight shard(s) missing or damaged")),
                     summary(HasSubstr(expected))}}}};
}

// The header of one tensor `name` for shard_header_refused.
std::string tensor(const char* name, const char* dtype, const char* shape, int b, int e) {
  return std::string("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(b) + "," + std::to_string(e) + "]}";
}

// The index names `name` for its one tensor, a file outside the model folder.
void index_names(const Bench& b, const std::string& name) {
  write_shard(b.machine.root / "models/outside.safetensors", 10);
  write_index(b.dir, R"({"metadata":{"total_size":40},"weight_map":{"w":")" + name + "\"}}");
}

// The file outside the model folder is not counted in bytes_on_disk.
void outside_file_not_counted(const PreflightReport& r, const std::string& name) {
  bool counted = false;
  for (const auto& [k, v] : check(r, "model.weights").facts)
    counted |= k == "bytes_on_disk" && v != "0";
  EXPECT_FALSE(counted) << name;
}

// config.json and the index replaced: the index by a folder, config.json by `make_config`.
void config_and_index_no_files(const Bench& b,
                               const std::function<void(const fs::path&)>& make_config) {
  fs::remove(b.dir / "config.json");
  fs::remove(b.dir / "model.safetensors.index.json");
  fs::create_directory(b.dir / "model.safetensors.index.json");
  make_config(b.dir / "config.json");
}

const std::string kHeadsConfigInTextConfig =
    R"({"architectures":["X"],"max_position_embeddings":4096,"num_attention_heads":16,)"
    R"("text_config":{"num_attention_heads":6,"num_key_value_heads":1}})";

std::vector<ModelCase> model_cases() {
  const std::string b1 = "pytorch_model-00001-of-00002.bin",
                    b2 = "pytorch_model-00002-of-00002.bin";
  const auto write_sharded_bin = [b1, b2](const Bench& b, bool with_second) {
    fs::remove(b.dir / "model.safetensors.index.json");
    fs::remove(b.dir / "model-00001-of-00001.safetensors");
    std::ofstream(b.dir / b1) << std::string(100, 'p');
    if (with_second)
      std::ofstream(b.dir / b2) << std::string(100, 'p');
    std::ofstream(b.dir / "pytorch_model.bin.index.json")
        << R"({"metadata":{"total_size":180},"weight_map":{"a":")" << b1 << R"(","b":")" << b2
        << R"("}})";
  };
  return {
      {.name = "complete_model",
       .shards = 3,
       .floats = 1000,
       .says = {{"model.dir", CheckStatus::pass},
                {"model.config",
                 CheckStatus::pass,
                 {summary(HasSubstr("Qwen3ForCausalLM, context 32768"))}},
                {"model.weights", CheckStatus::pass},
                {"model.memory_fit", CheckStatus::pass}}},

      context_not_positive("context_minus_5", "-5"),
      context_not_positive("context_0", "0"),

      // A config.json without architectures is named for what it lacks: the context length was
      // read, so "the context-length check cannot use the model's limit" was wrong.
      {.name = "no_architectures",
       .break_it = [](Bench& b) { write_config(b.dir, R"({"max_position_embeddings":4096})"); },
       .says = {{"model.config",
                 CheckStatus::warn,
                 {summary(Eq("config.json has no architectures")),
                  diagnosis(HasSubstr("architectures[0]")),
                  diagnosis(Not(HasSubstr("context")))}}}},
      {.name = "architectures_as_a_string",
       .break_it =
           [](Bench& b) {
             write_config(b.dir,
                          R"({"architectures":"LlamaForCausalLM","max_position_embeddings":4096})");
           },
       .says = {{"model.config",
                 {},
                 {summary(Eq("config.json has architectures as a string, not a list")),
                  remedy(HasSubstr("[\"LlamaForCausalLM\"]"))}}}},
      {.name = "no_architectures_and_no_context",
       .break_it = [](Bench& b) { write_config(b.dir, R"({"model_type":"llama"})"); },
       .says = {{"model.config",
                 {},
                 {summary(Eq("config.json has no architectures and has no "
                             "max_position_embeddings (a whole number)")),
                  remedy(HasSubstr("context length explicitly"))}}}},

      // Attention heads a tp does not divide: the servers refuse the model at that tp. Fewer KV
      // heads than tp is fine (SGLang replicates them).
      {.name = "attention_heads_tp_does_not_divide",
       .gpus = 2,
       .break_it =
           [](Bench& b) {
             write_config(b.dir,
                          R"({"architectures":["Qwen2ForCausalLM"],"max_position_embeddings":4096,)"
                          R"("num_attention_heads":7,"num_key_value_heads":7})");
           },
       .says = {{"model.config",
                 CheckStatus::fail,
                 {summary(Eq("num_attention_heads 7 is not divisible by tp 2")),
                  remedy(HasSubstr("use a tp that divides 7 (1)"))}}}},
      // In text_config (multimodal), and KV heads fewer than tp.
      {.name = "text_config_heads_tp_divides",
       .gpus = 2,
       .break_it = [](Bench& b) { write_config(b.dir, kHeadsConfigInTextConfig); },
       .says = {{"model.config", CheckStatus::pass}}},
      {.name = "text_config_heads_tp_does_not_divide",
       .gpus = 4,
       .break_it = [](Bench& b) { write_config(b.dir, kHeadsConfigInTextConfig); },
       .says = {{"model.config",
                 {},
                 {summary(Eq("num_attention_heads 6 is not divisible by tp 4"))}}}},

      // No tokenizer at all is a warning (a server may be given one elsewhere); a tokenizer.json
      // that is not JSON fails, since the server would fail to load it.
      {.name = "tokenizer_json",
       .says = {{"model.tokenizer", CheckStatus::pass, {summary(Eq("tokenizer.json"))}}}},
      {.name = "tokenizer_json_not_json",
       .break_it = [](Bench& b) { std::ofstream(b.dir / "tokenizer.json") << "{not json"; },
       .says = {{"model.tokenizer",
                 CheckStatus::fail,
                 {summary(Eq("tokenizer.json is not valid JSON")),
                  remedy(HasSubstr("download"))}}}},
      {.name = "no_tokenizer",
       .break_it = [](Bench& b) { fs::remove(b.dir / "tokenizer.json"); },
       .says = {{"model.tokenizer",
                 CheckStatus::warn,
                 {summary(HasSubstr("no tokenizer files"))}}}},
      {.name = "sentencepiece_tokenizer",
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / "tokenizer.json");
             std::ofstream(b.dir / "tokenizer.model") << "sentencepiece";
             std::ofstream(b.dir / "tokenizer_config.json") << "{}";
           },
       .says = {{"model.tokenizer",
                 CheckStatus::pass,
                 {summary(Eq("tokenizer.model, tokenizer_config.json"))}}}},

      {.name = "missing_and_truncated_shards",
       .shards = 3,
       .floats = 1000,
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / "model-00002-of-00003.safetensors");
             fs::resize_file(b.dir / "model-00003-of-00003.safetensors",
                             fs::file_size(b.dir / "model-00003-of-00003.safetensors") - 100);
           },
       .says = {{"model.weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("2 of 3 weight shard(s) missing or damaged")),
                  summary(HasSubstr("model-00002-of-00003.safetensors: missing")),
                  summary(HasSubstr("truncated"))}},
                {"model.memory_fit", CheckStatus::skipped}}},

      shard_offsets_not_safetensors("offsets_as_strings", R"(["0","4"])", "not two whole numbers"),
      shard_offsets_not_safetensors("offset_no_integer_holds", "[0,1e300]",
                                    "not two whole numbers"),
      shard_offsets_not_safetensors("offsets_begin_after_end", "[8,4]", "not two whole numbers"),
      shard_offsets_not_safetensors("one_offset", "[0]", "not two whole numbers"),
      shard_offsets_not_safetensors("negative_offset", "[0,-4]", "not two whole numbers"),
      shard_offsets_not_safetensors("offset_2_to_the_64_minus_1", "[0,18446744073709551615]",
                                    "data end at byte 18446744073709551615"),

      shard_header_refused("overlapping_tensors",
                           "{" + tensor("a", "BF16", "[4,4]", 0, 32) + "," +
                               tensor("b", "BF16", "[4,4]", 0, 32) + "}",
                           32, "tensors \"a\" and \"b\" overlap"),
      shard_header_refused("gap_before_the_first_tensor",
                           "{" + tensor("a", "BF16", "[4,4]", 16, 48) + "}", 48,
                           "data bytes 0 to 16 belong to no tensor (a gap before tensor \"a\")"),
      shard_header_refused("gap_between_tensors",
                           "{" + tensor("a", "BF16", "[4,4]", 0, 32) + "," +
                               tensor("b", "BF16", "[4,4]", 40, 72) + "}",
                           72, "data bytes 32 to 40 belong to no tensor"),
      shard_header_refused("unknown_dtype", "{" + tensor("a", "BF17", "[4,4]", 0, 32) + "}", 32,
                           "dtype \"BF17\", which is not a safetensors"),
      shard_header_refused(
          "shape_larger_than_its_data", "{" + tensor("a", "BF16", "[4,4000]", 0, 32) + "}", 32,
          "\"a\" is BF16 [4,4000], which does not fill its data_offsets' 32 bytes"),
      shard_header_refused("f4_bits_not_filling_whole_bytes", // 12 bits in 2 bytes
                           "{" + tensor("a", "F4", "[3]", 0, 2) + "}", 2, "\"a\" is F4 [3]"),
      shard_header_refused("negative_shape", "{" + tensor("a", "BF16", "[-4,4]", 0, 32) + "}", 32,
                           "shape [-4,4], not a list of whole"),
      shard_header_refused("no_data_offsets", R"({"a":{"dtype":"BF16","shape":[4,4]}})", 0,
                           "tensor \"a\" has no data_offsets"),
      shard_header_refused("tensor_not_an_object", R"({"a":5})", 0,
                           "tensor \"a\" is 5, not an object"),
      shard_header_refused("metadata_format_not_a_string",
                           R"({"__metadata__":{"format":5},)" +
                               tensor("a", "BF16", "[4,4]", 0, 32) + "}",
                           32, "__metadata__ \"format\" is 5, not a string"),
      shard_header_refused("metadata_not_an_object",
                           R"({"__metadata__":["pt"],)" + tensor("a", "BF16", "[4,4]", 0, 32) + "}",
                           32, "__metadata__ is [\"pt\"], not an object"),
      shard_header_refused("header_not_starting_with_a_brace", " " + std::string(200, 'x'), 0,
                           "header does not start with '{'"),

      // What the library accepts passes: the sub-byte and newer dtypes, zero-sized tensors,
      // metadata, and tensors listed out of offset order.
      {.name = "shard_headers_the_library_accepts",
       .break_it =
           [](Bench& b) {
             write_raw_shard(b.dir / "model-00001-of-00001.safetensors",
                             R"({"__metadata__":{"format":"pt"},)"
                             R"("b":{"dtype":"F4","shape":[2,3],"data_offsets":[4,7]},)"
                             R"("a":{"dtype":"F8_E8M0","shape":[4],"data_offsets":[0,4]},)"
                             R"("c":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[7,10]},)"
                             R"("e":{"dtype":"BF16","shape":[0,5],"data_offsets":[10,10]},)"
                             R"("d":{"dtype":"BOOL","shape":[],"data_offsets":[10,11]}})",
                             11);
             write_index(b.dir, R"({"weight_map":{"a":"model-00001-of-00001.safetensors"}})");
           },
       .says = {{"model.weights", CheckStatus::pass}}},

      // The library's header limit is 100,000,000 bytes, not 100 MiB; the file is sparse.
      {.name = "header_over_the_library_limit",
       .break_it =
           [](Bench& b) {
             const fs::path shard = b.dir / "model-00001-of-00001.safetensors";
             write_raw_shard(shard, "{", 0);
             {
               std::fstream io(shard, std::ios::in | std::ios::out | std::ios::binary);
               const uint64_t n = 100'000'001;
               for (int i = 0; i < 8; ++i)
                 io.put(static_cast<char>((n >> (8 * i)) & 0xff));
             }
             fs::resize_file(shard, 8 + 100'000'001 + 16);
           },
       .says = {{"model.weights",
                 {},
                 {summary(HasSubstr("more than the 100000000 the safetensors library accepts"))}}}},

      {.name = "dangling_hugging_face_shard_link",
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / "model-00001-of-00001.safetensors");
             fs::create_symlink("../../blobs/abc123", b.dir / "model-00001-of-00001.safetensors");
           },
       .says = {{"model.weights", {}, {summary(HasSubstr("dangling symlink"))}}}},

      {.name = "larger_than_free_memory",
       .floats = 1000,
       .break_it =
           [](Bench& b) {
             b.plan.model_memory_headroom = 1e9; // 4 KB of weights * 1e9 = 4 TB > one H200
           },
       .says = {{"model.memory_fit", CheckStatus::fail, {remedy(HasSubstr("larger --tp"))}}}},

      {.name = "in_dev_shm_gone_after_a_reboot",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             dev_shm_is_tmpfs(b, "1800.5 1000.0\n", "overlay / overlay rw 0 0\n");
             b.plan.model_path =
                 "/dev/shm/specbench-test-no-such-model-" + std::to_string(::getpid());
           },
       .says = {{"model.dir",
                 CheckStatus::fail,
                 {diagnosis(HasSubstr("/dev/shm")), diagnosis(HasSubstr("emptied at every boot")),
                  diagnosis(HasSubstr("booted 30 min ago")),
                  remedy(HasSubstr("download the model again"))}},
                {"model.weights", CheckStatus::skipped}}},

      {.name = "index_lists_nothing",
       .floats = 100,
       .folder = "models/empty-map",
       .break_it = [](Bench& b) { write_index(b.dir, R"({"weight_map":{}})"); },
       .says = {{"model.weights", CheckStatus::fail, {summary(HasSubstr("lists no weight files"))}},
                {"model.memory_fit", CheckStatus::skipped}}},
      {.name = "index_total_size_not_a_byte_count",
       .floats = 100,
       .folder = "models/empty-map",
       .break_it =
           [](Bench& b) {
             write_index(b.dir, R"({"metadata":{"total_size":4.0e12},)"
                                R"("weight_map":{"w":"model-00001-of-00001.safetensors"}})");
           },
       .says = {{"model.weights", CheckStatus::fail, {summary(HasSubstr("not a byte count"))}}}},

      // The index promises where each tensor is; a tensor its shard does not hold fails at load
      // time, so it fails here (a few named), as does an entry that names no file.
      {.name = "index_places_a_tensor_in_a_shard_without_it",
       .shards = 2,
       .break_it =
           [](Bench& b) {
             write_index(
                 b.dir, std::string(R"({"metadata":{"total_size":80},"weight_map":{"layer0.w":")") +
                            kShard1Of2 + R"(","layer1.w":")" + kShard2Of2 +
                            R"(","lm_head.weight":")" + kShard2Of2 + R"("}})");
           },
       .says = {{"model.weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("1 tensor(s) of model.safetensors.index.json are not in the "
                                    "shard it names: \"lm_head.weight\" (in " +
                                    std::string(kShard2Of2) + ")"))}}}},
      {.name = "index_places_many_tensors_in_a_shard_without_them",
       .shards = 2,
       .break_it =
           [](Bench& b) {
             std::string map;
             for (int i = 0; i < 6; ++i)
               map += ",\"extra" + std::to_string(i) + "\":\"" + kShard1Of2 + "\"";
             write_index(b.dir, std::string(R"({"weight_map":{"layer0.w":")") + kShard1Of2 +
                                    R"(","layer1.w":")" + kShard2Of2 + "\"" + map + "}}");
           },
       .says = {{"model.weights",
                 {},
                 {summary(HasSubstr("6 tensor(s)")),
                  summary(HasSubstr("\"extra2\" (in " + std::string(kShard1Of2) + "), ...")),
                  summary(Not(HasSubstr("extra3")))}}}},
      {.name = "index_entry_names_no_file",
       .shards = 2,
       .break_it =
           [](Bench& b) {
             write_index(b.dir, std::string(R"({"weight_map":{"layer0.w":")") + kShard1Of2 +
                                    R"(","layer1.w":")" + kShard2Of2 + R"(","layer2.w":5}})");
           },
       .says = {{"model.weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("weight_map gives 1 tensor(s) no file name (a string is "
                                    "needed), e.g. \"layer2.w\": 5"))}}}},

      // Weights servers load besides model.safetensors(.index.json): PyTorch .bin files (one, or
      // sharded with pytorch_model.bin.index.json; pickles, so only presence and sizes are
      // checked) and .safetensors files without an index (every one in the folder is loaded).
      {.name = "safetensors_without_an_index",
       .break_it = [](Bench& b) { fs::remove(b.dir / "model.safetensors.index.json"); },
       .says = {{"model.weights", CheckStatus::pass, {summary(HasSubstr("no index"))}},
                {"model.memory_fit", CheckStatus::pass}}},
      {.name = "damaged_safetensors_without_an_index",
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / "model.safetensors.index.json");
             write_raw_shard(b.dir / "model-00001-of-00001.safetensors", "{}x", 0);
           },
       .says = {{"model.weights", CheckStatus::fail}}},
      {.name = "pytorch_bin",
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / "model.safetensors.index.json");
             fs::remove(b.dir / "model-00001-of-00001.safetensors");
             std::ofstream(b.dir / "pytorch_model.bin") << std::string(100, 'p');
           },
       .says = {{"model.weights",
                 CheckStatus::pass,
                 {summary(HasSubstr("the pickles not read"))}}}},
      {.name = "sharded_pytorch_bin",
       .break_it = [write_sharded_bin](Bench& b) { write_sharded_bin(b, true); },
       .says = {{"model.weights", CheckStatus::pass, {summary(HasSubstr("2 shard(s)"))}}}},
      {.name = "sharded_pytorch_bin_with_a_shard_missing",
       .break_it = [write_sharded_bin](Bench& b) { write_sharded_bin(b, false); },
       .says = {{"model.weights", CheckStatus::fail, {summary(HasSubstr(b2 + ": missing"))}}}},
      {.name = "no_weights",
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / "model.safetensors.index.json");
             fs::remove(b.dir / "model-00001-of-00001.safetensors");
           },
       .says = {{"model.weights", CheckStatus::fail, {summary(HasSubstr("no weights"))}}}},

      {.name = "model_path_is_a_file",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             fs::create_directories(b.machine.root / "models");
             std::ofstream(b.machine.root / "models/weights.bin") << "x";
             b.plan.model_path = (b.machine.root / "models/weights.bin").string();
           },
       .says = {{"model.dir", {}, {summary(HasSubstr("is a file, not a model directory"))}}}},
      {.name = "model_path_is_a_link_loop",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             fs::create_directories(b.machine.root / "models");
             fs::create_symlink(b.machine.root / "models/loop-b", b.machine.root / "models/loop-a");
             fs::create_symlink(b.machine.root / "models/loop-a", b.machine.root / "models/loop-b");
             b.plan.model_path = (b.machine.root / "models/loop-a").string();
           },
       .says = {{"model.dir", {}, {summary(HasSubstr("loop of symbolic links"))}}}},
      // A link into /dev/shm whose target a reboot emptied gets the /dev/shm diagnosis.
      {.name = "model_path_links_into_an_emptied_dev_shm",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             fs::create_directories(b.machine.root / "models");
             fs::create_symlink("/dev/shm/" + gone_from_dev_shm(),
                                b.machine.root / "models/staged");
             b.plan.model_path = (b.machine.root / "models/staged").string();
           },
       .says = {{"model.dir",
                 {},
                 {summary(HasSubstr("a symbolic link to /dev/shm/")),
                  diagnosis(HasSubstr("emptied at every boot"))}}}},

      // Only a permission problem gets the chmod answer: a shard that is a folder or a link loop
      // is a damaged download.
      {.name = "shards_that_are_a_folder_and_a_link_loop",
       .shards = 2,
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / kShard1Of2);
             fs::create_directory(b.dir / kShard1Of2);
             fs::remove(b.dir / kShard2Of2);
             fs::create_symlink(kShard2Of2, b.dir / kShard2Of2);
           },
       .says = {{"model.weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("model-00001-of-00002.safetensors: a directory, not a weight "
                                    "file")),
                  summary(HasSubstr("model-00002-of-00002.safetensors: a loop of symbolic links")),
                  diagnosis(HasSubstr("incomplete")), remedy(Not(HasSubstr("chmod")))}}}},

      // The server loads the shards from the model folder: an index naming a file elsewhere
      // fails, and that file is not read (nor counted).
      {.name = "index_names_a_relative_file_outside_the_model",
       .break_it = [](Bench& b) { index_names(b, "../outside.safetensors"); },
       .says = {{"model.weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("../outside.safetensors: outside the model folder"))}}},
       .more = [](const PreflightReport& r,
                  const Bench&) { outside_file_not_counted(r, "../outside.safetensors"); }},
      {.name = "index_names_an_absolute_file_outside_the_model",
       .break_it =
           [](Bench& b) {
             index_names(b, (b.machine.root / "models/outside.safetensors").string());
           },
       .says = {{"model.weights", CheckStatus::fail}},
       .more =
           [](const PreflightReport& r, const Bench& b) {
             const std::string name = (b.machine.root / "models/outside.safetensors").string();
             EXPECT_THAT(check(r, "model.weights").summary,
                         HasSubstr(name + ": outside the model folder"));
             outside_file_not_counted(r, name);
           }},

      // Only paths inside /dev/shm get the reboot diagnosis.
      dev_shm_path(
          "beside_dev_shm_in_a_sibling_folder",
          [](const Bench&) { return "/dev/shm2/" + gone_from_dev_shm(); }, "never downloaded"),
      dev_shm_path(
          "beside_dev_shm_with_a_longer_name",
          [](const Bench&) { return "/dev/shm" + gone_from_dev_shm(); }, "never downloaded"),
      // A relative link that leads into /dev/shm is a model staged there.
      dev_shm_path("relative_link_into_dev_shm", relative_link_into_dev_shm,
                   "emptied at every boot",
                   [](const PreflightReport& r, const Bench&) {
                     bool tmpfs = false;
                     for (const auto& [k, v] : check(r, "model.dir").facts)
                       tmpfs |= k == "filesystem" && v == "tmpfs";
                     EXPECT_TRUE(tmpfs); // the filesystem of the link's target, not of the link
                   }),
      // A linked parent folder, a chain of links, and a trailing slash lead there too.
      dev_shm_path(
          "linked_parent_folder_into_dev_shm",
          [](const Bench& b) {
            fs::create_directories(b.machine.root / "models");
            fs::create_symlink("/dev/shm/" + gone_from_dev_shm(), b.machine.root / "models/parent");
            return (b.machine.root / "models/parent/qwen").string();
          },
          "emptied at every boot"),
      dev_shm_path(
          "chain_of_links_into_dev_shm",
          [](const Bench& b) {
            fs::create_symlink(relative_link_into_dev_shm(b), b.machine.root / "models/chain");
            return (b.machine.root / "models/chain").string();
          },
          "emptied at every boot"),
      dev_shm_path(
          "link_into_dev_shm_with_a_trailing_slash",
          [](const Bench& b) { return relative_link_into_dev_shm(b) + "/"; },
          "emptied at every boot"),

      {.name = "dangling_index_link",
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / "model.safetensors.index.json");
             fs::create_symlink("../../blobs/0123abcd", b.dir / "model.safetensors.index.json");
           },
       .says = {{"model.weights",
                 {},
                 {summary(HasSubstr("model.safetensors.index.json is a dangling symlink (to "
                                    "../../blobs/0123abcd"))}}}},
      {.name = "hub_id",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             b.plan.model_path = "Qwen/specbench-test-no-such-model-" + std::to_string(::getpid());
           },
       .says = {{"model.dir",
                 {},
                 {diagnosis(HasSubstr("Hugging Face hub id")),
                  remedy(HasSubstr("leave --model out"))}}}},
      // "folder/name" shaped like a hub id, but a dangling link here: a local model that is gone.
      {.name = "dangling_link_shaped_like_a_hub_id",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             const std::string folder = "sb-links-" + std::to_string(::getpid());
             fs::create_directory(folder);
             b.remove_after.push_back(folder);
             fs::create_symlink("/nonexistent/specbench-gone-model", folder + "/model");
             b.plan.model_path = folder + "/model";
           },
       .says = {{"model.dir",
                 {},
                 {summary(HasSubstr("a symbolic link to")), diagnosis(Not(HasSubstr("hub id")))}}}},

      // config.json or the index being a folder, a dangling link or a link loop is a failed check
      // that says so; a folder used to throw ("basic_filebuf::underflow"), and the layer's other
      // checks vanished behind "model.unexpected".
      {.name = "config_and_index_are_folders",
       .break_it =
           [](Bench& b) {
             config_and_index_no_files(b, [](const fs::path& p) { fs::create_directory(p); });
           },
       .says = {{"model.config",
                 CheckStatus::fail,
                 {summary(HasSubstr("config.json is a directory")),
                  remedy(HasSubstr("download the model again"))}},
                {"model.weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("model.safetensors.index.json is a directory"))}},
                {"model.memory_fit", CheckStatus::skipped}},
       .absent = {"model.unexpected"}},
      {.name = "config_is_a_dangling_link",
       .break_it =
           [](Bench& b) {
             config_and_index_no_files(
                 b, [](const fs::path& p) { fs::create_symlink("../../blobs/c0ffee", p); });
           },
       .says = {{"model.config",
                 {},
                 {summary(
                     HasSubstr("config.json is a dangling symlink (to ../../blobs/c0ffee"))}}}},
      {.name = "config_is_a_link_loop",
       .break_it =
           [](Bench& b) {
             config_and_index_no_files(
                 b, [](const fs::path& p) { fs::create_symlink("config.json", p); });
           },
       .says = {{"model.config",
                 {},
                 {summary(HasSubstr("config.json is a loop of symbolic links"))}}}},

      // A shard whose size cannot be known (a FIFO) is named, and adds nothing to bytes_on_disk:
      // the failed fs::file_size's (uintmax_t)-1 was added, 18446744073709551615 bytes.
      {.name = "shard_that_is_a_pipe",
       .shards = 2,
       .break_it =
           [](Bench& b) {
             fs::remove(b.dir / kShard2Of2);
             ASSERT_EQ(::mkfifo((b.dir / kShard2Of2).c_str(), 0644), 0);
           },
       .says = {{"model.weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("model-00002-of-00002.safetensors: a named pipe (FIFO)"))}}},
       .more =
           [](const PreflightReport& r, const Bench& b) {
             std::string bytes;
             for (const auto& [k, v] : check(r, "model.weights").facts)
               if (k == "bytes_on_disk")
                 bytes = v;
             EXPECT_EQ(bytes, std::to_string(fs::file_size(b.dir / kShard1Of2)));
           }},

      // The drafter the speculative cells load (model.draft_path; --draft-model) was checked for
      // existence only: a damaged shard or no room beside the target reached a server that died
      // loading it. It now gets the model's checks, in its own ids and words, no tokenizer check
      // (it uses the target's), and must fit beside the target. Its failures leave the target's
      // verdict alone: the cells that do not load it still run.
      {.name = "drafter_with_a_damaged_shard",
       .break_it =
           [](Bench& b) {
             const fs::path d = make_model(b.machine.root / "models/drafter", 1, 10);
             fs::resize_file(d / "model-00001-of-00001.safetensors", 20);
             b.plan.draft_model_path = d.string();
           },
       .says = {{"model.weights", CheckStatus::pass},
                {"model.draft_dir", CheckStatus::pass, {summary(Eq("drafter directory present"))}},
                {"model.draft_config", CheckStatus::pass},
                {"model.draft_weights",
                 CheckStatus::fail,
                 {summary(HasSubstr("missing or damaged")),
                  remedy(HasSubstr("download the drafter again"))}},
                {"model.draft_memory_fit",
                 CheckStatus::skipped,
                 {summary(Eq("blocked by model.draft_weights"))}}},
       .absent = {"model.draft_tokenizer"},
       .more =
           [](const PreflightReport& r, const Bench&) {
             EXPECT_FALSE(r.passed());
             EXPECT_TRUE(r.passed_without_drafter());
             ASSERT_NE(r.first_drafter_failure(), nullptr);
             EXPECT_EQ(r.first_drafter_failure()->id, "model.draft_weights");
           }},

      {.name = "drafter_gone_from_dev_shm",
       .break_it =
           [](Bench& b) {
             dev_shm_is_tmpfs(b, "600.0 100.0\n");
             b.plan.draft_model_path = "/dev/shm/" + gone_from_dev_shm() + "-drafter";
           },
       .says = {{"model.dir", CheckStatus::pass},
                {"model.draft_dir",
                 CheckStatus::fail,
                 {summary(HasSubstr("drafter directory /dev/shm/")),
                  diagnosis(HasSubstr("the drafter lived in /dev/shm")),
                  diagnosis(HasSubstr("lost in that reboot")),
                  remedy(HasSubstr("download the drafter again"))}},
                {"model.draft_config",
                 CheckStatus::skipped,
                 {summary(Eq("blocked by model.draft_dir"))}},
                {"model.draft_weights", CheckStatus::skipped},
                {"model.draft_memory_fit", CheckStatus::skipped}},
       .more =
           [](const PreflightReport& r, const Bench&) {
             EXPECT_TRUE(r.passed_without_drafter());
             ASSERT_NE(r.first_drafter_failure(), nullptr);
             EXPECT_EQ(r.first_drafter_failure()->id, "model.draft_dir");
             // The headline stays the target's first failure where it has one; here it has none.
             ASSERT_NE(r.first_failure(), nullptr);
             EXPECT_EQ(r.first_failure()->id, "model.draft_dir");
           }},

      {.name = "drafter_does_not_fit_beside_the_model",
       .floats = 1000,
       .break_it =
           [](Bench& b) {
             b.plan.draft_model_path =
                 make_model(b.machine.root / "models/drafter", 1, 10000).string();
             // 4 KB of target weights x 1e7 = 40 GB fit one H200; with the drafter's 40 KB,
             // 440 GB do not.
             b.plan.model_memory_headroom = 1e7;
           },
       .says = {{"model.memory_fit", CheckStatus::pass},
                {"model.draft_weights", CheckStatus::pass},
                {"model.draft_memory_fit",
                 CheckStatus::fail,
                 {summary(HasSubstr("target and drafter weights need")),
                  diagnosis(HasSubstr("together do not fit"))}}}},

      {.name = "drafter_beside_a_hub_model",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             b.plan.draft_model_path =
                 make_model(b.machine.root / "models/drafter", 1, 10).string();
           },
       .says = {{"model.draft_weights", CheckStatus::pass},
                {"model.draft_memory_fit",
                 CheckStatus::pass,
                 {summary(HasSubstr("drafter weights alone (the model's are not counted: the "
                                    "model is not checked here (a hub id, or no --model))"))}}},
       .absent = {"model.dir", "model.memory_fit", "model.draft_tokenizer"}},

      // Beside a model that is not counted (a hub id), a drafter too large on its own still fails.
      {.name = "drafter_too_large_on_its_own",
       .shards = 0,
       .break_it =
           [](Bench& b) {
             b.plan.draft_model_path =
                 make_model(b.machine.root / "models/drafter", 1, 1000).string();
             b.plan.model_memory_headroom = 1e9; // 4 KB x 1e9 = 4 TB
           },
       .says = {{"model.draft_memory_fit",
                 CheckStatus::fail,
                 {summary(HasSubstr("drafter weights alone")),
                  diagnosis(HasSubstr("the drafter alone does not fit")),
                  remedy(HasSubstr("a quantised drafter or model"))}}}},

      {.name = "drafter_path_is_a_fifo",
       .break_it =
           [](Bench& b) {
             const fs::path fifo = b.machine.root / "drafter-fifo";
             ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
             b.plan.draft_model_path = fifo.string();
           },
       .says = {{"model.draft_dir",
                 CheckStatus::fail,
                 {summary(HasSubstr("is a named pipe (FIFO), not a drafter directory")),
                  diagnosis(HasSubstr("--draft-model (or the sweep's model.draft_path) names a "
                                      "named pipe (FIFO)"))}}}},

      // A name longer than the system takes is no hub id, and no missing folder either.
      {.name = "drafter_name_too_long",
       .break_it = [](Bench& b) { b.plan.draft_model_path = std::string(300, 'b'); },
       .says = {{"model.draft_dir",
                 CheckStatus::fail,
                 {summary(HasSubstr("cannot be looked at: File name too long")),
                  diagnosis(Not(HasSubstr("hub id")))}}}},
  };
}

class ModelLayer : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelLayer, Says) {
  const ModelCase& row = GetParam();
  FakeMachine m("model-" + row.name);
  m.healthy(row.gpus);
  PreflightPlan plan = m.plan(row.gpus);
  Bench b{m, plan, {}, {}};
  if (row.shards > 0) {
    b.dir = make_model(m.root / row.folder, row.shards, row.floats);
    plan.model_path = b.dir.string();
  }
  if (row.break_it) {
    ASSERT_NO_FATAL_FAILURE(row.break_it(b));
  }
  const PreflightReport r = run_preflight(plan);
  ASSERT_FALSE(r.could_not_run()) << r.run_error.to_string();
  for (const Says& says : row.says) {
    SCOPED_TRACE(says.id);
    const CheckResult& c = check(r, says.id);
    if (says.status) {
      EXPECT_EQ(c.status, *says.status) << c.summary;
    }
    for (const TextMatch& t : says.texts) {
      const std::string& text = t.text == Text::summary     ? c.summary
                                : t.text == Text::diagnosis ? c.diagnosis
                                                            : c.remedy;
      EXPECT_THAT(text, t.matcher) << (t.text == Text::summary     ? "summary"
                                       : t.text == Text::diagnosis ? "diagnosis"
                                                                   : "remedy");
    }
  }
  for (const std::string& id : row.absent)
    EXPECT_EQ(r.find(id), nullptr) << r.to_table();
  if (row.more)
    row.more(r, b);
}

INSTANTIATE_TEST_SUITE_P(PreflightModel, ModelLayer, ::testing::ValuesIn(model_cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           return info.param.name;
                         });

// ---- Checks the table does not fit: a real /dev/shm, a child process, no model at all ----

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
