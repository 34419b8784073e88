// `specbench report DIR [--format md|csv|json] [--plot FILE.svg]`: what a results directory shows.
#include "cli/command.hpp"

#include "specbench/report.hpp"
#include "specbench/results.hpp"

#include <cstdio>
#include <memory>
#include <string>

namespace specbench::cli {
namespace {

struct ReportArgs {
  std::string dir;
  std::string format = "md";
  std::string plot;
  std::string plot_acceptance;
  std::string out;
  bool no_write = false;
};

int run_report(const ReportArgs& a) {
  auto rep = load_report(a.dir);
  if (!rep) {
    std::fprintf(stderr, "specbench report: %s\n", rep.status().to_string().c_str());
    return exit_could_not_run;
  }
  const std::string text = a.format == "md"    ? report_markdown(*rep)
                           : a.format == "csv" ? report_csv(*rep)
                                               : report_json(*rep);
  std::fwrite(text.data(), 1, text.size(), stdout); // all of it, whatever bytes it holds
  std::fflush(stdout);
  if (!a.no_write) {
    const std::filesystem::path out =
        a.out.empty() ? std::filesystem::path(a.dir) / "report" : std::filesystem::path(a.out);
    auto files = write_report_files(*rep, out);
    if (!files) {
      std::fprintf(stderr, "specbench report: %s\n", files.status().to_string().c_str());
      return exit_could_not_run;
    }
    std::fprintf(stderr,
                 "report files: %s/{report.md,report.csv,report.json,speedup.svg,acceptance.svg}\n",
                 out.string().c_str());
  }
  for (const auto& [path, kind] : {std::pair{a.plot, PlotKind::speedup},
                                   std::pair{a.plot_acceptance, PlotKind::acceptance_length}}) {
    if (path.empty())
      continue;
    std::error_code ec; // like --out, a plot's folder is made when missing
    if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
      std::filesystem::create_directories(parent, ec);
    if (auto st = write_file_atomic(path, report_svg(*rep, kind)); !st) {
      std::fprintf(stderr, "specbench report: %s\n", st.to_string().c_str());
      return exit_could_not_run;
    }
  }
  return rep->all_ok() ? exit_ok : exit_check_failed;
}

const Registrar reg{
    {"report", 40, [](CLI::App& app) {
       auto* sub =
           app.add_subcommand("report", "Summarize a results directory: tables, CSV, JSON, plots");
       auto a = std::make_shared<ReportArgs>();
       sub->add_option("dir", a->dir, "the results directory of a sweep")->required();
       sub->add_option("--format", a->format, "what to print: md, csv or json")
           ->check(CLI::IsMember({"md", "csv", "json"}))
           ->capture_default_str();
       sub->add_option("--plot", a->plot, "also write the speedup-vs-budget SVG plot to this file");
       sub->add_option("--plot-acceptance", a->plot_acceptance,
                       "also write the acceptance-vs-budget SVG plot here");
       auto* out =
           sub->add_option("--out", a->out, "directory for the report files (default DIR/report)");
       sub->add_flag("--no-write", a->no_write,
                     "only print; write no report files (--plot still "
                     "writes its plot)")
           ->excludes(out);
       return std::function<int()>([a] { return run_report(*a); });
     }}};

} // namespace
} // namespace specbench::cli
