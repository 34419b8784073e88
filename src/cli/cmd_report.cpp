// `specbench report DIR [--format md|csv|json] [--plot FILE.svg]`: what a results directory shows.
#include "cli/command.hpp"

#include "specbench/report.hpp"
#include "specbench/results.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

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

namespace fs = std::filesystem;

// Whether `inner` is `outer` or lies below it, once both are made absolute and normal.
bool within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path i = fs::weakly_canonical(fs::absolute(inner, ec), ec);
  const fs::path o = fs::weakly_canonical(fs::absolute(outer, ec), ec);
  auto [oe, ie] = std::mismatch(o.begin(), o.end(), i.begin(), i.end());
  return oe == o.end();
}

// Whether the file at `p` is an SVG drawing (what a plot may replace): its first bytes, after
// white space and an XML declaration, open an <svg> element.
bool is_svg_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string head(512, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t at = head.find_first_not_of(" \t\r\n");
  if (at != std::string::npos && head.compare(at, 5, "<?xml") == 0) {
    const std::size_t end = head.find("?>", at);
    at = end == std::string::npos ? end : head.find_first_not_of(" \t\r\n", end + 2);
  }
  return at != std::string::npos && head.compare(at, 4, "<svg") == 0;
}

// Where the report would write something that is not its own: a results cell folder (a file
// there would be read as a cell, or replace one) or, for a plot, an existing file that is not an
// SVG (a result, a sweep). Empty when every output path is safe.
std::string unsafe_output(const ReportArgs& a) {
  const fs::path cells = fs::path(a.dir) / "cells";
  if (!a.no_write && !a.out.empty() && within(a.out, cells))
    return "--out " + a.out +
           " is inside the results' cells folder, where a report file would be "
           "read as a cell result; choose a folder outside " +
           cells.string();
  for (const auto& [flag, path] : {std::pair<std::string, std::string>{"--plot", a.plot},
                                   {"--plot-acceptance", a.plot_acceptance}}) {
    if (path.empty())
      continue;
    if (within(path, cells))
      return flag + " " + path + " is inside the results' cells folder; write the plot elsewhere";
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (fs::is_directory(st))
      return flag + " " + path + " is a folder; give a file name such as " +
             (fs::path(path) / "plot.svg").string();
    if (fs::exists(st) && !is_svg_file(path))
      return flag + " " + path +
             " exists and is not an SVG plot; the report will not replace "
             "it (choose another file name, or remove the file first)";
    // Found now, before the report is printed and its files written, not after.
    const fs::path parent =
        fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    if (fs::is_directory(parent, ec) && ::access(parent.c_str(), W_OK) != 0)
      return flag + " " + path + ": the folder " + parent.string() +
             " cannot be written to; write the plot elsewhere";
  }
  if (!a.plot.empty() && !a.plot_acceptance.empty()) {
    std::error_code ec1, ec2;
    const fs::path p1 = fs::weakly_canonical(a.plot, ec1);
    const fs::path p2 = fs::weakly_canonical(a.plot_acceptance, ec2);
    if (ec1 || ec2 ? a.plot == a.plot_acceptance : p1 == p2)
      return "--plot and --plot-acceptance both name " + a.plot +
             ": the second plot would replace the first; give each its own file";
  }
  return {};
}

int run_report(const ReportArgs& a) {
  if (const std::string why = unsafe_output(a); !why.empty()) {
    std::fprintf(stderr, "specbench report: %s\n", why.c_str());
    return exit_could_not_run;
  }
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
      std::fprintf(stderr,
                   "specbench report: cannot write the plot %s: %s\n    fix: choose a "
                   "writable place for the plot\n",
                   path.c_str(), st.message().c_str());
      return exit_could_not_run;
    }
  }
  return rep->all_ok() ? exit_ok : exit_check_failed;
}

const Registrar register_report_command{
    {"report", 40, [](CLI::App& app) {
       auto* sub =
           app.add_subcommand("report", "Summarize a results directory: tables, CSV, JSON, plots");
       auto a = std::make_shared<ReportArgs>();
       sub->add_option("dir", a->dir, "the results directory of a sweep")->required();
       sub->add_option("--format", a->format, "what to print: md, csv or json")
           ->check(CLI::IsMember({"md", "csv", "json"}))
           ->capture_default_str();
       sub->add_option("--plot", a->plot, "also write the speedup-vs-budget SVG plot to this file")
           ->check(non_empty);
       sub->add_option("--plot-acceptance", a->plot_acceptance,
                       "also write the acceptance-vs-budget SVG plot here")
           ->check(non_empty);
       auto* out =
           sub->add_option("--out", a->out, "directory for the report files (default DIR/report)")
               ->check(non_empty);
       sub->add_flag("--no-write", a->no_write,
                     "only print; write no report files (--plot still "
                     "writes its plot)")
           ->excludes(out);
       return std::function<int()>([a] { return run_report(*a); });
     }}};

} // namespace
} // namespace specbench::cli
