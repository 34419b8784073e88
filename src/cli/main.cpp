// specbench: the command-line tool. It parses arguments, calls the library and prints; it is the
// only place where errors become exit codes.
#include "cli/command.hpp"
#include "config/did_you_mean.hpp"

#include "specbench/build_info.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string_view>
#include <unistd.h>

namespace specbench::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

bool stdout_is_tty() { return ::isatty(STDOUT_FILENO) == 1; }

} // namespace specbench::cli

int main(int argc, char** argv) {
  using namespace specbench::cli;
  CLI::App app{"specbench: honest benchmarks of speculative decoding on GPU servers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("specbench ") + specbench::build_info::version +
                                        " (commit " + specbench::build_info::git_commit + ")");
  auto& commands = registry();
  std::sort(commands.begin(), commands.end(),
            [](const Command& a, const Command& b) { return a.order < b.order; });
  std::vector<std::function<int()>> runs;
  runs.reserve(commands.size());
  for (auto& c : commands) runs.push_back(c.setup(app));
  // A misspelt command or a stray option before it: name it, not "a subcommand is required".
  if (argc >= 2) {
    const std::string first = argv[1];
    std::vector<std::string> names;
    for (const auto& c : commands)
      names.push_back(c.name);
    const bool known = std::find(names.begin(), names.end(), first) != names.end();
    const bool general = first == "-h" || first == "--help" || first == "--version";
    if (!known && !general) {
      std::string all;
      for (const auto& n : names)
        all += (all.empty() ? "" : ", ") + n;
      const std::string near = specbench::detail::closest_match(first, names);
      if (first[0] == '-')
        std::fprintf(stderr,
                     "specbench: unknown option %s before the command\n    fix: put "
                     "options after the command, e.g. specbench run --help\n",
                     first.c_str());
      else
        std::fprintf(
            stderr, "specbench: unknown command '%s'\n    fix: %s (commands: %s)\n", first.c_str(),
            near.empty() ? "use one of the commands" : ("did you mean " + near + "?").c_str(),
            all.c_str());
      return exit_could_not_run;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // With --json the caller reads stdout as JSON: a bad argument is a JSON answer there too.
    const bool json = std::any_of(argv + 1, argv + argc,
                                  [](const char* a) { return std::string_view(a) == "--json"; });
    // The fields of a command's own could-not-run answer: verdict, exit_code, error.
    std::string command;
    for (const auto& c : commands)
      if (app.got_subcommand(c.name))
        command = c.name;
    if (json && e.get_exit_code() != 0)
      std::printf(
          "%s\n",
          nlohmann::json({{"schema_version", 1},
                          {"kind", "specbench.error"},
                          {"verdict", "could-not-run"},
                          {"exit_code", exit_could_not_run},
                          {"error",
                           {{"code", "invalid_argument"},
                            {"message", e.what()},
                            {"remedy", "see `specbench " + command + (command.empty() ? "" : " ") +
                                           "--help` for the options"},
                            {"where", "command line"}}}})
              .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              .c_str());
    const int rc = app.exit(e);
    // --help and --version are successes; any other parse error means "could not run".
    return rc == 0 ? exit_ok : exit_could_not_run;
  }
  try {
    for (size_t i = 0; i < commands.size(); ++i)
      if (app.got_subcommand(commands[i].name)) return runs[i]();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specbench: internal error: %s\n", e.what());
    return exit_could_not_run;
  }
  return exit_could_not_run;
}
