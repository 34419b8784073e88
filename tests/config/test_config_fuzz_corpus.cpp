// Replays every input of the fuzz corpus (tests/config/fuzz_corpus/) through the loader: none may
// crash or hang, and none that is not a complete sweep may load.
#include "specbench/config.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace specbench;

TEST(ConfigFuzzCorpus, EveryInputIsHandled) {
  const auto dir = specbench::testing::source_dir() / "tests/config/fuzz_corpus";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const LoadResult r = load_sweep_text(text.str(), entry.path().filename().string());
    // Either a sweep with no errors, or no sweep and at least one located error.
    if (r.ok()) EXPECT_EQ(r.error_count(), 0) << entry.path();
    else EXPECT_GE(r.error_count(), 1) << entry.path();
    for (const auto& d : r.diagnostics) EXPECT_FALSE(d.message.empty()) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 10);
}
