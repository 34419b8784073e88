#pragma once
// How subcommands plug into the `specbench` executable: each src/cli/cmd_*.cpp registers itself
// with a static Registrar, so adding a subcommand never touches main.cpp.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace specbench::cli {

/// Exit codes, the same for every subcommand.
enum ExitCode : int { exit_ok = 0, exit_check_failed = 1, exit_could_not_run = 2 };

/// A subcommand: `setup` adds it to the app and returns the function run when it is chosen.
struct Command {
  std::string name;
  int order; // position in --help
  std::function<std::function<int()>(CLI::App& app)> setup;
};

std::vector<Command>& registry();

struct Registrar {
  explicit Registrar(Command c) { registry().push_back(std::move(c)); }
};

/// True when stdout is a terminal (colour and live progress only then).
bool stdout_is_tty();

/// Refuses an empty value (`--model ''`), which would otherwise read as the option not given.
inline const CLI::Validator non_empty{
    [](std::string& value) {
      return value.empty() ? std::string("the value is empty: give one, or leave the option out")
                           : std::string();
    },
    "NOT EMPTY", "non_empty"};

} // namespace specbench::cli
