// The public headers are the API users compile against: they must stand alone (the umbrella
// header compiles here) and never pull in a third-party header, so that users need none of
// specbench's private dependencies to build against it.
#include "specbench/specbench.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

TEST(PublicHeaders, IncludeNoThirdPartyHeaders) {
  const std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  const std::vector<std::string> forbidden = {"yaml-cpp/", "nlohmann/", "curl/", "spdlog/", "fmt/",
                                              "CLI/", "cuda", "cublas", "nccl", "nvml", "benchmark/",
                                              "gtest/"};
  int headers = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(
           specbench::testing::source_dir() / "include/specbench")) {
    if (e.path().extension() != ".hpp") continue;
    ++headers;
    std::ifstream in(e.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      for (const auto& f : forbidden)
        EXPECT_EQ(m[1].str().rfind(f, 0), std::string::npos)
            << e.path() << ":" << n << " includes " << m[1];
    }
  }
  EXPECT_GE(headers, 10);
}

TEST(PublicHeaders, EveryPublicHeaderIsInTheUmbrella) {
  std::ifstream in(specbench::testing::source_dir() / "include/specbench/specbench.hpp");
  const std::string umbrella((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& e :
       std::filesystem::directory_iterator(specbench::testing::source_dir() / "include/specbench")) {
    const auto name = e.path().filename().string();
    if (e.path().extension() != ".hpp" || name == "specbench.hpp") continue;
    EXPECT_NE(umbrella.find("specbench/" + name), std::string::npos) << name;
  }
}
