// Replays the results readers' fuzz corpus (tests/results/fuzz_corpus/; the first byte of each
// input picks the reader: odd = manifest, even = cell result) with the fuzz target's properties:
// every input loads or fails with a message, and what loads reads back from its own JSON as the
// same text.
#include "specbench/results.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace specbench;

namespace {
template <class Load>
void check_round_trip(const std::string& text, Load load, int& loaded, const std::string& name) {
  auto first = load(text);
  if (!first) {
    EXPECT_FALSE(first.status().message().empty()) << name;
    return;
  }
  ++loaded;
  const std::string once = to_json(*first);
  auto again = load(once);
  ASSERT_TRUE(again) << name << ": " << again.status().to_string();
  EXPECT_EQ(to_json(*again), once) << name;
}
} // namespace

TEST(ResultsFuzzCorpus, EveryInputLoadsOrFailsAndWhatLoadsRoundTrips) {
  const auto dir = specbench::testing::source_dir() / "tests/results/fuzz_corpus";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int files = 0, loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string all = bytes.str();
    if (all.empty())
      continue;
    const std::string text = all.substr(1), name = entry.path().filename().string();
    if (static_cast<unsigned char>(all[0]) & 1)
      check_round_trip(text, manifest_from_json, loaded, name);
    else
      check_round_trip(text, cell_result_from_json, loaded, name);
    ++files;
  }
  EXPECT_GE(files, 40);
  EXPECT_GE(loaded, 5); // the corpus holds real results too, not only rejected bytes
}
