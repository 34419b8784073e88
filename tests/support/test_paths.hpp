#pragma once
// Paths the tests need: the source tree (configs, fixtures), the build tree and the CLI binary.
#include <filesystem>
#include <string>

namespace specbench::testing {
std::filesystem::path source_dir();
std::filesystem::path binary_dir();
std::filesystem::path cli_path();
/// A fresh, empty directory under the build tree, removed by the caller if wanted.
std::filesystem::path make_temp_dir(const std::string& prefix);
} // namespace specbench::testing
