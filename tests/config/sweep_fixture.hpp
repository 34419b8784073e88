#pragma once
// A valid sweep in YAML, and small helpers to break it one rule at a time.
#include "specbench/config.hpp"

#include <gtest/gtest.h>

#include <string>

namespace specbench::testing {

inline const std::string kValidSweep = R"(name: unit
gpus: 8
model:
  path: /nonexistent/model
  draft_path: drafter
  context_length: 32768
server:
  backend: sglang
  launch: [server, --model, "{model}", --port, "{port}", --tp, "{tp}"]
  method_args:
    linear: [--algo, DFLASH, --draft, "{draft_model}", --k, "{block}"]
    tree: [--algo, DDTREE, --draft, "{draft_model}", --budget, "{budget}"]
phases:
  - tp: 1
  - tp: 4
    gpus: [4, 5, 6, 7]
methods:
  - kind: autoregressive
  - kind: linear
    block: 16
  - kind: tree
    block: 16
    budgets: [8, 15, 64]
workloads:
  - name: chat
    prompt_tokens: 512
    max_new_tokens: 256
    requests: 8
)";

/// Replaces the first occurrence of `from` in `text` (the test fails if it is absent).
inline std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture lacks: " << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

/// The first error whose message contains `needle`, or nullptr.
inline const Diagnostic* find_error(const LoadResult& r, const std::string& needle) {
  for (const auto& d : r.diagnostics)
    if (d.severity == Severity::error && d.message.find(needle) != std::string::npos) return &d;
  return nullptr;
}

inline std::string all_messages(const LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.to_string() + "\n";
  return s;
}

} // namespace specbench::testing
