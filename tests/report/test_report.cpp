// The report: baselines, speedups and their spread, failed cells listed, CSV/JSON/SVG output.
#include "specbench/report.hpp"
#include "support/test_paths.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

using namespace specbench;

namespace {

// A cell whose runs produce exactly the given throughputs: each run is one request of
// `tokens` tokens taking tokens / tps seconds.
CellResult cell(const std::string& phase, MethodKind kind, int block, int budget,
                std::vector<double> run_tps, std::optional<double> acceptance = std::nullopt,
                CellStatus status = CellStatus::ok, const std::string& workload = "default") {
  CellResult r;
  r.phase_id = phase;
  r.tp = phase == "tp4" ? 4 : 1;
  r.method.kind = kind;
  r.method.block = block;
  r.method.budget = budget;
  r.cell_id = phase + "-" + r.method.id() + (workload == "default" ? "" : "-" + workload);
  r.config_hash = "h-" + r.cell_id;
  r.workload.name = workload;
  r.status = status;
  if (status != CellStatus::ok) {
    r.failure = CellFailure{CellStage::measure,
                            "server died: illegal instruction",
                            "CUDA illegal instruction",
                            "a\nb\nFATAL illegal instruction",
                            true,
                            true};
    run_tps.clear();
  }
  const int tokens = 100;
  for (size_t i = 0; i < run_tps.size(); ++i) {
    RequestMetrics q;
    q.run = static_cast<int>(i);
    q.ok = true;
    q.output_tokens = tokens;
    q.e2e_s = tokens / run_tps[i];
    q.ttft_s = 0.01;
    q.itl_s = {q.e2e_s / tokens};
    q.verify_steps = acceptance ? static_cast<int64_t>(tokens / *acceptance) : -1;
    r.requests.push_back(q);
  }
  r.workload.runs = static_cast<int>(std::max<size_t>(run_tps.size(), 1));
  r.runs = summarize_runs(r.requests, static_cast<int>(run_tps.size()));
  r.summary = summarize_cell(r.requests, r.runs);
  r.notes = {"server model is synthetic"};
  return r;
}

std::vector<CellResult> sample() {
  return {cell("tp1", MethodKind::autoregressive, 0, 0, {100, 100}),
          cell("tp1", MethodKind::linear, 16, 0, {250, 250}, 4.0),
          cell("tp1", MethodKind::tree, 16, 32, {300, 330}, 5.0),
          cell("tp1", MethodKind::tree, 16, 16, {200, 210}, 3.5),
          cell("tp1", MethodKind::tree, 16, 8, {}, std::nullopt, CellStatus::failed),
          cell("tp4", MethodKind::autoregressive, 0, 0, {200}),
          cell("tp4", MethodKind::tree, 16, 32, {400}, 5.0)};
}

// The manifest a run writes for these results: phases tp1 and tp4, every cell listed once.
Manifest manifest_for(const std::vector<CellResult>& results) {
  Manifest m;
  m.sweep_name = "unit";
  m.state = "finished";
  ManifestPhase p1, p4;
  p1.id = "tp1";
  p4.id = "tp4";
  p4.tp = 4;
  for (const auto& r : results) {
    ManifestCell mc;
    mc.id = r.cell_id;
    mc.config_hash = r.config_hash;
    mc.status = to_string(r.status);
    (r.phase_id == "tp1" ? p1 : p4).cells.push_back(mc);
  }
  m.phases = {p1, p4};
  return m;
}

const ReportCell* find(const Report& r, const std::string& id) {
  for (const auto& p : r.phases)
    for (const auto& c : p.cells)
      if (c.cell_id == id)
        return &c;
  return nullptr;
}

} // namespace

TEST(Report, SpeedupAgainstTheAutoregressiveCellOfTheSamePhase) {
  const auto results = sample();
  const auto rep = build_report(results, nullptr);
  ASSERT_EQ(rep.phases.size(), 2u);
  const auto* lin = find(rep, "tp1-linear-k16");
  ASSERT_TRUE(lin && lin->speedup);
  EXPECT_NEAR(*lin->speedup, 2.5, 1e-9);
  EXPECT_EQ(lin->baseline_cell, "tp1-autoregressive");
  EXPECT_NEAR(lin->speedup_stddev, 0.0, 1e-9); // both cells perfectly steady
  const auto* tree = find(rep, "tp1-ddtree-b32");
  ASSERT_TRUE(tree && tree->speedup);
  EXPECT_NEAR(*tree->speedup, 3.15, 1e-9);
  // Spread: stddev of {300,330} relative to 315, baseline steady.
  EXPECT_NEAR(tree->speedup_stddev, 3.15 * (21.213203435596427 / 315.0), 1e-6);
  EXPECT_NEAR(tree->speedup_min, 3.0, 1e-9);
  EXPECT_NEAR(tree->speedup_max, 3.3, 1e-9);
  ASSERT_TRUE(tree->acceptance_length);
  EXPECT_NEAR(*tree->acceptance_length, 5.0, 1e-9);
  // TP4 is compared with TP4's own baseline, not TP1's.
  const auto* t4 = find(rep, "tp4-ddtree-b32");
  ASSERT_TRUE(t4 && t4->speedup);
  EXPECT_NEAR(*t4->speedup, 2.0, 1e-9);
  EXPECT_EQ(t4->baseline_cell, "tp4-autoregressive");
  // The autoregressive cell has acceptance 1 by definition and speedup 1.
  const auto* ar = find(rep, "tp1-autoregressive");
  ASSERT_TRUE(ar && ar->acceptance_length && ar->speedup);
  EXPECT_DOUBLE_EQ(*ar->acceptance_length, 1.0);
  EXPECT_DOUBLE_EQ(*ar->speedup, 1.0);
  // The failed cell has no speedup and keeps its reason.
  const auto* bad = find(rep, "tp1-ddtree-b8");
  ASSERT_TRUE(bad);
  EXPECT_FALSE(bad->speedup);
  EXPECT_EQ(bad->stage, "measure");
  EXPECT_EQ(rep.count(CellStatus::failed), 1);
  EXPECT_FALSE(rep.all_ok());
  EXPECT_TRUE(rep.synthetic);
}

// A figure from a clock gone wrong stays a short number in the table, not 200 digits.
TEST(Report, AHugeFigureIsPrintedShort) {
  auto results = sample();
  results[1].summary.tpot_s.p99 = 8.1e197;
  results[1].summary.output_tokens_per_s.mean = 1.4e12;
  const std::string md = report_markdown(build_report(results, nullptr));
  EXPECT_NE(md.find("8.1e+200"), std::string::npos) << md;
  EXPECT_NE(md.find("1.4e+12"), std::string::npos);
  EXPECT_EQ(md.find("0000000000000000"), std::string::npos);
}

TEST(Report, NoSpeedupWithoutAnOkBaseline) {
  std::vector<CellResult> results = {
      cell("tp1", MethodKind::autoregressive, 0, 0, {}, std::nullopt, CellStatus::failed),
      cell("tp1", MethodKind::tree, 16, 32, {300}, 5.0)};
  const auto rep = build_report(results, nullptr);
  const auto* tree = find(rep, "tp1-ddtree-b32");
  ASSERT_TRUE(tree);
  EXPECT_FALSE(tree->speedup);
  EXPECT_NE(report_markdown(rep).find("| – |"), std::string::npos);
}

TEST(Report, WorkloadsAreComparedWithTheirOwnBaseline) {
  std::vector<CellResult> results = {
      cell("tp1", MethodKind::autoregressive, 0, 0, {100}, std::nullopt, CellStatus::ok, "short"),
      cell("tp1", MethodKind::autoregressive, 0, 0, {50}, std::nullopt, CellStatus::ok, "long"),
      cell("tp1", MethodKind::tree, 16, 8, {200}, 3.0, CellStatus::ok, "short"),
      cell("tp1", MethodKind::tree, 16, 8, {200}, 3.0, CellStatus::ok, "long")};
  const auto rep = build_report(results, nullptr);
  EXPECT_NEAR(*find(rep, "tp1-ddtree-b8-short")->speedup, 2.0, 1e-9);
  EXPECT_NEAR(*find(rep, "tp1-ddtree-b8-long")->speedup, 4.0, 1e-9);
}

TEST(Report, ManifestGivesOrderMissingCellsAndRejectsStaleOnes) {
  auto results = sample();
  Manifest m;
  m.sweep_name = "demo";
  m.state = "interrupted";
  ManifestPhase p;
  p.id = "tp1";
  p.preflight = "passed";
  p.cells.push_back(
      {"tp1-autoregressive", "h-tp1-autoregressive", "autoregressive", "default", "ok", ""});
  p.cells.push_back({"tp1-linear-k16", "other-hash", "linear-k16", "default", "ok", ""});
  p.cells.push_back({"tp1-ddtree-b64", "h", "ddtree-b64", "default", "pending", ""});
  m.phases.push_back(p);
  const auto rep = build_report(results, &m);
  ASSERT_EQ(rep.phases.size(), 1u);
  ASSERT_EQ(rep.phases[0].cells.size(), 1u); // only the autoregressive cell matches
  EXPECT_EQ(rep.missing.size(), 2u);         // stale linear + pending b64
  EXPECT_FALSE(rep.problems.empty());
  EXPECT_FALSE(rep.all_ok());
  const auto md = report_markdown(rep);
  EXPECT_NE(md.find("tp1-ddtree-b64"), std::string::npos);
  EXPECT_NE(md.find("config hash"), std::string::npos);
  EXPECT_NE(md.find("## Phase tp1 (TP1): preflight passed\n"), std::string::npos) << md;
  // A phase whose drafter failed its checks says so in words, not as the manifest's token.
  m.phases[0].preflight = "drafter_failed";
  const auto drafter_md = report_markdown(build_report(results, &m));
  EXPECT_NE(
      drafter_md.find(
          "## Phase tp1 (TP1): preflight passed but for the drafter's checks (the cells that load "
          "it are blocked)\n"),
      std::string::npos)
      << drafter_md;
}

TEST(Report, MarkdownListsFailedCellsWithReasonsAndLogTail) {
  const auto rep = build_report(sample(), nullptr);
  const auto md = report_markdown(rep);
  EXPECT_NE(md.find("## Phase tp1"), std::string::npos);
  EXPECT_NE(md.find("## Phase tp4"), std::string::npos);
  EXPECT_NE(md.find("Cells that did not complete"), std::string::npos);
  EXPECT_NE(md.find("**tp1-ddtree-b8**: failed at measure: server died: illegal instruction"),
            std::string::npos);
  EXPECT_NE(md.find("FATAL illegal instruction"), std::string::npos);
  EXPECT_NE(md.find("2.50×"), std::string::npos);
  EXPECT_NE(md.find("Synthetic model"), std::string::npos);
}

// A cell's notes (a server killed after ignoring SIGTERM, memory not back to baseline, an earlier
// attempt kept aside) were only in the JSON: the Markdown a user reads hid them. Each text is
// listed once with its cells; the synthetic-model note is already the banner.
TEST(Report, MarkdownListsTheCellsNotesOnceEach) {
  auto results = sample();
  const std::string killed = "the server ignored SIGTERM for 3 s and was killed";
  results[1].notes.push_back(killed);
  results[2].notes.push_back(killed);
  results[2].notes.push_back("attempt 1 (failed) is kept in stale/x-retried/cells/<id>.json");
  const auto md = report_markdown(build_report(results, nullptr));
  const size_t at = md.find("## Notes\n\n");
  ASSERT_NE(at, std::string::npos) << md;
  const std::string section = md.substr(at, md.find("\n## ", at + 1) - at);
  EXPECT_NE(section.find("- **tp1-linear-k16**, **tp1-ddtree-b32**: " + killed + "\n"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("- **tp1-ddtree-b32**: attempt 1 (failed) is kept in "
                         "stale/x-retried/cells/&lt;id>.json\n"),
            std::string::npos)
      << section;
  EXPECT_EQ(section.find("synthetic"), std::string::npos) << section;
  // No notes but the synthetic one: no section.
  EXPECT_EQ(report_markdown(build_report(sample(), nullptr)).find("## Notes"), std::string::npos);
}

TEST(Report, CsvHasOneRowPerCellAndQuotes) {
  const auto rep = build_report(sample(), nullptr);
  const auto csv = report_csv(rep);
  std::istringstream in(csv);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  ASSERT_EQ(lines.size(), 1u + 7u);
  EXPECT_EQ(lines[0].rfind("phase,tp,cell,method", 0), 0u);
  const std::string header = lines[0];
  const auto cols = std::count(header.begin(), header.end(), ',');
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].find('"') == std::string::npos) {
      EXPECT_EQ(std::count(lines[i].begin(), lines[i].end(), ','), cols) << lines[i];
    }
  }
  EXPECT_NE(csv.find("tp1,1,tp1-linear-k16,linear-k16,linear,16,0,default,ok"), std::string::npos);
}

TEST(Report, JsonCarriesSchemaVersionAndCounts) {
  const auto rep = build_report(sample(), nullptr);
  const auto j = nlohmann::json::parse(report_json(rep));
  EXPECT_EQ(j.at("schema_version"), report_schema_version);
  EXPECT_EQ(j.at("counts").at("failed"), 1);
  EXPECT_EQ(j.at("counts").at("ok"), 6);
  EXPECT_EQ(j.at("phases").size(), 2u);
  EXPECT_TRUE(j.at("phases")[0].at("cells")[4].at("speedup").is_null());
  EXPECT_EQ(j.at("phases")[0].at("cells")[4].at("stage"), "measure");
}

// The server's own acceptance length sits next to the client's, labelled, in every format; the
// mean over runs; "–" (and null) when absent, with the reason for a speculative cell.
TEST(Report, ServerSideAcceptanceLengthNextToTheClientsInEveryFormat) {
  auto results = sample();
  auto figures = [](std::optional<double> acc, std::optional<double> sglang) {
    ServerSideFigures f;
    f.interval_s = 1;
    f.metrics_ok = acc.has_value();
    f.metrics_error = acc ? "" : "/metrics answered HTTP 404";
    f.server_info_ok = true;
    f.acceptance_length = acc;
    f.acceptance_source = acc ? "sim counters" : "";
    f.sglang_avg_spec_accept_length_after = sglang;
    return f;
  };
  for (auto& r : results) {
    if (r.cell_id == "tp1-ddtree-b32") { // counters in both runs: mean 4.25
      r.runs[0].server_side = figures(4.0, 3.9);
      r.runs[1].server_side = figures(4.5, 4.1);
    } else if (r.cell_id == "tp1-ddtree-b16") { // no /metrics, SGLang's average only
      r.runs[0].server_side = figures(std::nullopt, 3.1);
      r.runs[1].server_side = figures(std::nullopt, 3.2);
    } else if (r.cell_id == "tp1-linear-k16") { // neither
      r.runs[0].server_side = figures(std::nullopt, std::nullopt);
      r.runs[1].server_side = figures(std::nullopt, std::nullopt);
    } // the others: results written before server-side figures existed
  }
  const auto rep = build_report(results, nullptr);
  const auto* b32 = find(rep, "tp1-ddtree-b32");
  ASSERT_TRUE(b32 && b32->server_acceptance_length);
  EXPECT_NEAR(*b32->server_acceptance_length, 4.25, 1e-12);
  EXPECT_EQ(b32->server_acceptance_source, "sim counters");
  EXPECT_EQ(b32->sglang_avg_spec_accept_length, 4.1); // after the last run
  EXPECT_EQ(b32->server_side_runs, 2);
  const auto* b16 = find(rep, "tp1-ddtree-b16");
  ASSERT_TRUE(b16);
  EXPECT_FALSE(b16->server_acceptance_length);
  EXPECT_EQ(b16->server_side_absent_reason, "/metrics answered HTTP 404");
  EXPECT_EQ(find(rep, "tp4-ddtree-b32")->server_side_runs, 0);

  const auto md = report_markdown(rep);
  EXPECT_NE(md.find("| acceptance length | server-side acceptance length † |"), std::string::npos);
  EXPECT_NE(md.find("| 5.00 | 4.25 |"), std::string::npos) << md;              // b32
  EXPECT_NE(md.find("| 3.57 | 3.20 (SGLang avg) |"), std::string::npos) << md; // b16
  EXPECT_NE(md.find("| 4.00 | – |"), std::string::npos) << md;                 // linear
  EXPECT_NE(md.find("† not available for tp1-linear-k16: /metrics answered HTTP 404"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- † server-side acceptance length: the server's own figure"),
            std::string::npos);
  EXPECT_NE(md.find("every client the server had"), std::string::npos);
  EXPECT_NE(md.find("lagging up to 40 decode steps"), std::string::npos);

  const auto csv = report_csv(rep);
  EXPECT_NE(csv.find(",acceptance_length,server_acceptance_length,server_acceptance_source,"
                     "sglang_avg_spec_accept_length,server_side_absent_reason,"),
            std::string::npos);
  EXPECT_NE(csv.find(",5,4.25,sim counters,4.1,,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",3.57143,,,3.2,/metrics answered HTTP 404,"), std::string::npos) << csv;

  const auto j = nlohmann::json::parse(report_json(rep));
  const auto& cells = j.at("phases")[0].at("cells");
  for (const auto& c : cells) {
    const auto& s = c.at("server_side");
    if (c.at("cell_id") == "tp1-ddtree-b32") {
      EXPECT_DOUBLE_EQ(s.at("acceptance_length").get<double>(), 4.25);
      EXPECT_EQ(s.at("acceptance_source"), "sim counters");
      EXPECT_DOUBLE_EQ(s.at("sglang_avg_spec_accept_length").get<double>(), 4.1);
      EXPECT_EQ(s.at("runs"), 2);
      EXPECT_TRUE(s.at("absent_reason").is_null());
    } else if (c.at("cell_id") == "tp1-ddtree-b16") {
      EXPECT_TRUE(s.at("acceptance_length").is_null());
      EXPECT_EQ(s.at("absent_reason"), "/metrics answered HTTP 404");
    } else if (c.at("cell_id") == "tp1-autoregressive") {
      EXPECT_TRUE(s.is_null());
    }
  }
}

TEST(Report, SvgPlotsMarkEveryKindOfCell) {
  const auto rep = build_report(sample(), nullptr);
  const auto svg = report_svg(rep, PlotKind::speedup);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("linear k16"), std::string::npos);                // linear marked
  EXPECT_NE(svg.find("<title>tp1-autoregressive"), std::string::npos); // AR marked
  EXPECT_NE(svg.find("b8 failed"), std::string::npos);                 // failed budget marked
  EXPECT_NE(svg.find(">tp4<"), std::string::npos); // one line per phase in legend
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  const auto acc = report_svg(rep, PlotKind::acceptance_length);
  EXPECT_NE(acc.find("Acceptance length"), std::string::npos);
  EXPECT_NE(acc.find("<title>tp1-ddtree-b32: 5.000</title>"), std::string::npos);
  // Balanced tags: as many closing </text> as opening <text.
  size_t open = 0, close = 0;
  for (size_t p = 0; (p = svg.find("<text", p)) != std::string::npos; ++p)
    ++open;
  for (size_t p = 0; (p = svg.find("</text>", p)) != std::string::npos; ++p)
    ++close;
  EXPECT_EQ(open, close);
  // An empty report still renders, saying there is nothing to plot.
  EXPECT_NE(report_svg(Report{}, PlotKind::speedup).find("no completed cells"), std::string::npos);
}

TEST(Report, ACellFiledUnderAnotherPhaseIsNamedNotDropped) {
  auto results = sample();
  results[1].phase_id = "tp9"; // tp1-linear-k16, edited or written by another sweep
  Manifest m;
  ManifestPhase p;
  p.id = "tp1";
  for (const auto& r : results)
    if (r.cell_id.rfind("tp1-", 0) == 0)
      p.cells.push_back({r.cell_id, r.config_hash, r.method.id(), "default", "ok", ""});
  m.phases.push_back(p);
  const auto rep = build_report(results, &m);
  EXPECT_FALSE(find(rep, "tp1-linear-k16"));
  EXPECT_NE(std::find(rep.missing.begin(), rep.missing.end(), "tp1-linear-k16 (wrong phase)"),
            rep.missing.end());
  bool named = false;
  for (const auto& q : rep.problems)
    named |= q.find("says phase tp9 but the sweep lists it in phase tp1") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_FALSE(rep.all_ok());
}

TEST(Report, AutoregressiveAcceptanceIsOneWhateverTheServerReports) {
  std::vector<CellResult> results = {cell("tp1", MethodKind::autoregressive, 0, 0, {100}, 4.0)};
  const auto rep = build_report(results, nullptr);
  ASSERT_TRUE(find(rep, "tp1-autoregressive")->acceptance_length);
  EXPECT_EQ(*find(rep, "tp1-autoregressive")->acceptance_length, 1.0);
}

TEST(Report, FailedCellsShowNoFiguresAndTheirReasonsStayInTheirListItem) {
  auto results = sample();
  // A failed cell whose few ok requests carry figures: they are not the cell's measurement.
  CellResult& failed = results[4]; // tp1-ddtree-b8
  failed.requests = cell("tp1", MethodKind::tree, 16, 8, {200}, 3.0).requests;
  failed.runs = summarize_runs(failed.requests, 1);
  failed.summary = summarize_cell(failed.requests, failed.runs);
  failed.failure->reason = "3 of 4 requests failed;\nfirst: server_abort";
  failed.failure->log_tail = "start\nprinted ``` in a log line\nend";
  const auto rep = build_report(results, nullptr);
  const auto md = report_markdown(rep);
  const size_t row = md.find("| tp1-ddtree-b8 |");
  ASSERT_NE(row, std::string::npos);
  const std::string line = md.substr(row, md.find('\n', row) - row);
  EXPECT_EQ(line.find("3.00"), std::string::npos) << line;   // no acceptance length
  EXPECT_EQ(line.find("10.0 /"), std::string::npos) << line; // no TTFT percentiles
  EXPECT_NE(md.find("3 of 4 requests failed; first: server_abort"), std::string::npos);
  EXPECT_NE(md.find("    ````\n"), std::string::npos); // a fence the log's ``` cannot close
  const auto csv = report_csv(rep);
  const size_t csv_row = csv.find("tp1-ddtree-b8,");
  ASSERT_NE(csv_row, std::string::npos);
  EXPECT_EQ(csv.substr(csv_row, csv.find('\n', csv_row) - csv_row).find(",3,"), std::string::npos);
}

TEST(Report, AServerSideReasonStaysOnItsLineWhateverItHolds) {
  // Markdown ends a line at '\n' and at a lone '\r'; the reason may carry both, and a '|'.
  auto rep = build_report(sample(), nullptr);
  ReportCell* linear = nullptr;
  for (auto& p : rep.phases)
    for (auto& c : p.cells)
      if (c.cell_id == "tp1-linear-k16")
        linear = &c;
  ASSERT_TRUE(linear);
  linear->server_side_absent_reason = "/metrics: a | b\r\nc\rd";
  const auto md = report_markdown(rep);
  const size_t at = md.find("† not available for tp1-linear-k16: ");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_EQ(md.substr(at, md.find('\n', at) - at),
            "† not available for tp1-linear-k16: /metrics: a \\| b  c d");
}

TEST(Report, ALogTailWithProgressBarsKeepsItsFenceInTheListItem) {
  // Servers log tqdm progress bars, which redraw with '\r'; Markdown ends a line there, outside
  // the list item's indent, and the fence would break. Each line is shown as a terminal shows it.
  auto results = sample();
  results[4].failure->log_tail =
      "Loading shards:   0%|  | 0/4\rLoading shards:  50%|# | 2/4\rLoading shards: 100%|##| 4/4\r\n"
      "\r\r\n"
      "RuntimeError: CUDA error: unknown error";
  const auto md = report_markdown(build_report(results, nullptr));
  EXPECT_EQ(md.find('\r'), std::string::npos);
  EXPECT_NE(md.find("    ```\n    Loading shards: 100%|##| 4/4\n    \n"
                    "    RuntimeError: CUDA error: unknown error\n    ```\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("Loading shards:  50%"), std::string::npos) << md;
}

TEST(Report, ServerTextCannotActAsMarkupOrTerminalControlInTheReport) {
  auto results = sample();
  results[4].failure->reason =
      std::string("server died: File \"x.py\", in <module>\x1b[0m: bad\0byte", 51) + " & &lt;";
  results[4].failure->log_tail = "\x1b[1;31mRuntimeError\x1b[0m: CUDA error";
  const auto rep = build_report(results, nullptr);
  const auto md = report_markdown(rep);
  EXPECT_NE(md.find("server died: File \"x.py\", in &lt;module>: badbyte &amp; &amp;lt;"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("    RuntimeError: CUDA error\n"), std::string::npos) << md;
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find('\0'), std::string::npos);
  // CSV: the same text, unescaped for Markdown, on the cell's one row, without colour codes.
  auto rows = results;
  rows[4].failure->reason += "\n\x1b[31mnext line\x1b[0m";
  const auto csv = report_csv(build_report(rows, nullptr));
  EXPECT_EQ(csv.find('\0'), std::string::npos);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 7) << csv; // a header and 7 cells
  EXPECT_NE(csv.find("in <module>: badbyte & &lt; next line\","), std::string::npos) << csv;
  EXPECT_EQ(csv.find("[31m"), std::string::npos) << csv;
}

namespace {
// The text that the code span starting at `md[at]` shows, read as CommonMark reads one: the
// opening run of backticks, the content up to the next run of exactly that length, and one space
// taken off each end when the content both starts and ends with one (and is not all spaces).
std::string code_span_text(const std::string& md, size_t at) {
  size_t n = 0;
  while (at + n < md.size() && md[at + n] == '`')
    ++n;
  if (n == 0)
    return "<no code span>";
  for (size_t k = at + n; k < md.size() && md[k] != '\n';) {
    size_t run = 0;
    while (k + run < md.size() && md[k + run] == '`')
      ++run;
    if (run == n) {
      std::string s = md.substr(at + n, k - at - n);
      if (s.size() >= 2 && s.front() == ' ' && s.back() == ' ' &&
          s.find_first_not_of(' ') != std::string::npos)
        s = s.substr(1, s.size() - 2);
      return s;
    }
    k += run ? run : 1;
  }
  return "<unclosed code span>";
}
} // namespace

TEST(Report, ResultsAndSweepPathsShowAsTheyAreWhateverBackticksTheyHold) {
  for (const std::string path :
       {"/data/plain", "/data/run`s/``x", "`lead", "trail`", " spaced ", "/a<b&c"}) {
    auto rep = build_report(sample(), nullptr);
    rep.results_dir = path;
    rep.sweep_file = path + "/sweep.yaml";
    rep.sweep_hash = "abc";
    const auto md = report_markdown(rep);
    const size_t results = md.find("- results: ");
    ASSERT_NE(results, std::string::npos) << md;
    EXPECT_EQ(code_span_text(md, results + 11), path) << md.substr(results, 80);
    const size_t sweep = md.find("- sweep: ");
    ASSERT_NE(sweep, std::string::npos) << md;
    EXPECT_EQ(code_span_text(md, sweep + 9), path + "/sweep.yaml") << md.substr(sweep, 80);
  }
}

// Text from edited or damaged files (the manifest's sweep name, a phase id, GPU names, a failed
// cell's id) stays on its line: no heading, list item or escape sequence of its own.
TEST(Report, TextFromTheFilesCannotAddMarkdownOrTerminalCodes) {
  const std::string evil = "x\n# injected heading\x1b[2J|\r\n- item";
  auto results = sample();
  results[4].cell_id = "tp1-ddtree-b8" + evil;
  results[4].provenance.gpu_names = {"H200" + evil};
  results[4].provenance.driver_version = "580" + evil;
  auto rep = build_report(results, nullptr);
  rep.sweep_name = "demo" + evil;
  rep.state = "finished" + evil;
  rep.gpu_names = {"H200" + evil};
  rep.driver_version = "580" + evil;
  rep.cuda_version = "13.0" + evil;
  rep.phases[0].id = "tp1" + evil;
  rep.phases[0].preflight = "passed" + evil;
  rep.missing.push_back("tp9-gone" + evil + " (pending)");
  rep.problems.push_back("cells/odd.json" + evil);
  const std::string md = report_markdown(rep);
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.find("\n# injected"), std::string::npos) << md;
  EXPECT_EQ(md.find("\n- item"), std::string::npos) << md;
  EXPECT_NE(md.find("# specbench report: demox # injected heading"), std::string::npos) << md;
}

// Why the server-side figure is absent: a note about the speculative counters, never one about
// an unrelated counter of the server.
TEST(Report, TheServerSideReasonIsAboutTheSpeculativeCounters) {
  auto results = sample();
  ServerSideFigures s;
  s.metrics_ok = true;
  s.notes = {"counter http_requests_total went down (server restarted?); skipped"};
  results[1].runs[0].server_side = s;
  results[1].runs[1].server_side = s;
  auto rep = build_report(results, nullptr);
  EXPECT_EQ(find(rep, "tp1-linear-k16")->server_side_absent_reason,
            "no speculative counters in /metrics");
  s.notes.push_back("counter vllm:spec_decode_num_drafts_total is not a finite number (NaN or "
                    "Inf); skipped");
  results[1].runs[0].server_side = s;
  rep = build_report(results, nullptr);
  EXPECT_NE(find(rep, "tp1-linear-k16")->server_side_absent_reason.find("spec_decode"),
            std::string::npos);
}

// The reason the runner stored is the one shown, whatever the notes say; results written before
// it was stored fall back to the notes (above).
TEST(Report, TheStoredServerSideReasonIsShown) {
  auto results = sample();
  ServerSideFigures s;
  s.metrics_ok = true;
  s.acceptance_absent_reason = "no metrics before the run (timed out); counters not differenced";
  s.notes = {"a figure of another kind: left out"};
  results[1].runs[0].server_side = s;
  results[1].runs[1].server_side = s;
  auto rep = build_report(results, nullptr);
  EXPECT_EQ(find(rep, "tp1-linear-k16")->server_side_absent_reason, s.acceptance_absent_reason);
  // And it survives the results file.
  const auto back = cell_result_from_json(to_json(results[1]));
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->runs[0].server_side);
  EXPECT_EQ(back->runs[0].server_side->acceptance_absent_reason, s.acceptance_absent_reason);
}

// SGLang's average, when the runner left it out as impossible for the method, was said only in
// the result's per-run notes: the report showed "no server-side figure" with no word on why.
// Now the reason is a cell note (once, however many runs give it) and survives the results file.
TEST(Report, ALeftOutSglangAverageIsSaidInTheCellsNotes) {
  auto results = sample();
  const std::string why = "SGLang's avg_spec_accept_length is -1, outside 1..33, what a step of "
                          "this method commits: left out";
  ServerSideFigures s;
  s.server_info_ok = true;
  s.sglang_avg_left_out = why;
  s.notes = {why};
  results[2].runs[0].server_side = s;
  results[2].runs[1].server_side = s;
  const auto rep = build_report(results, nullptr);
  const auto* c = find(rep, results[2].cell_id);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->sglang_avg_spec_accept_length);
  EXPECT_EQ(std::count(c->notes.begin(), c->notes.end(), why), 1) << "said once";
  const auto md = report_markdown(rep);
  const size_t at = md.find("## Notes\n\n");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_NE(md.find("- **" + results[2].cell_id + "**: " + why + "\n", at), std::string::npos)
      << md.substr(at);
  const auto back = cell_result_from_json(to_json(results[2]));
  ASSERT_TRUE(back && back->runs[0].server_side);
  EXPECT_EQ(back->runs[0].server_side->sglang_avg_left_out, why);

  // The average is cumulative: the latest run's stands for the cell. An earlier run's kept value
  // is no stand-in for a latest one left out, and only the latest reason is said.
  ServerSideFigures kept;
  kept.server_info_ok = true;
  kept.sglang_avg_spec_accept_length_after = 3.0;
  ServerSideFigures other = s;
  other.sglang_avg_left_out = "SGLang's avg_spec_accept_length is 40, outside 1..33, what a step "
                              "of this method commits: left out";
  results[2].runs[0].server_side = kept;
  results[2].runs[1].server_side = other;
  auto c2 = *find(build_report(results, nullptr), results[2].cell_id);
  EXPECT_FALSE(c2.sglang_avg_spec_accept_length);
  EXPECT_EQ(std::count(c2.notes.begin(), c2.notes.end(), other.sglang_avg_left_out), 1);
  EXPECT_EQ(std::count(c2.notes.begin(), c2.notes.end(), why), 0);
  // The other way round, the kept latest value stands and no reason is listed.
  results[2].runs[0].server_side = other;
  results[2].runs[1].server_side = kept;
  c2 = *find(build_report(results, nullptr), results[2].cell_id);
  EXPECT_EQ(c2.sglang_avg_spec_accept_length, 3.0);
  EXPECT_EQ(std::count(c2.notes.begin(), c2.notes.end(), other.sglang_avg_left_out), 0);
  // A result written before sglang_avg_left_out has the reason in its notes only.
  ServerSideFigures old_file;
  old_file.server_info_ok = true;
  old_file.notes = {why};
  results[2].runs[1].server_side = old_file;
  c2 = *find(build_report(results, nullptr), results[2].cell_id);
  EXPECT_FALSE(c2.sglang_avg_spec_accept_length);
  EXPECT_EQ(std::count(c2.notes.begin(), c2.notes.end(), why), 1);
}

TEST(Report, SvgStaysXmlAndDrawsOnlyCellsThatFailedAsFailed) {
  auto results = sample();
  // A colourised log line, and U+FFFE and U+FFFF: UTF-8, but not characters XML 1.0 allows.
  results[4].failure->reason =
      "\x1b[31mERROR\x1b[0m illegal memory access \xEF\xBF\xBE \xEF\xBF\xBF";
  const auto rep = build_report(results, nullptr);
  const auto svg = report_svg(rep, PlotKind::speedup);
  for (char ch : svg)
    EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t' && ch != '\r');
  EXPECT_EQ(svg.find("\xEF\xBF\xBE"), std::string::npos);
  EXPECT_EQ(svg.find("\xEF\xBF\xBF"), std::string::npos);
  EXPECT_NE(svg.find("illegal memory access \xEF\xBF\xBD \xEF\xBF\xBD"), std::string::npos);
  EXPECT_NE(svg.find("b8 failed"), std::string::npos);

  // No baseline: the completed cells have no speedup, and are not drawn as failures.
  std::vector<CellResult> no_base = {cell("tp1", MethodKind::tree, 16, 32, {300}, 5.0),
                                     cell("tp1", MethodKind::tree, 16, 16, {200}, 3.5)};
  const auto svg2 = report_svg(build_report(no_base, nullptr), PlotKind::speedup);
  EXPECT_EQ(svg2.find("ok</title>"), std::string::npos);
  EXPECT_EQ(svg2.find("failed"), svg2.find("failed / skipped")); // the legend only
  EXPECT_NE(svg2.find("2 completed cells not drawn (no completed autoregressive cell"),
            std::string::npos);
}

// After a SIGKILL the manifest still says "running": the report told a dead run as live ("sweep
// running", cells "(running)") until the next run. The run's lock says whether one is live.
TEST(Report, ARunningManifestWithNoRunnerHoldingTheLockIsAnInterruptedRun) {
  const auto dir = specbench::testing::make_temp_dir("report-dead-run");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  for (const auto& r : sample())
    ASSERT_TRUE(store->commit(r));
  Manifest m;
  m.sweep_name = "demo";
  m.state = "running";
  ManifestPhase p;
  p.id = "tp1";
  p.cells.push_back({"tp1-gone", "h", "autoregressive", "default", "running", ""});
  m.phases.push_back(p);
  ASSERT_TRUE(store->write_manifest(m));
  auto dead = load_report(dir);
  ASSERT_TRUE(dead) << dead.status().to_string();
  EXPECT_EQ(dead->state, "interrupted");
  EXPECT_NE(
      std::find(dead->missing.begin(), dead->missing.end(), "tp1-gone (stopped with the run)"),
      dead->missing.end());
  ASSERT_FALSE(dead->problems.empty());
  EXPECT_NE(dead->problems.front().find("no runner holds"), std::string::npos)
      << dead->problems.front();
  // A live run holds .lock exclusively (as the runner does): then it is running.
  const int fd = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  auto live = load_report(dir);
  ::close(fd);
  ASSERT_TRUE(live) << live.status().to_string();
  EXPECT_EQ(live->state, "running");
  EXPECT_NE(std::find(live->missing.begin(), live->missing.end(), "tp1-gone (running)"),
            live->missing.end());
  for (const auto& p : live->problems)
    EXPECT_EQ(p.find("no runner holds"), std::string::npos) << p;
}

TEST(Report, WriteFilesAndLoadFromDirectory) {
  const auto dir = specbench::testing::make_temp_dir("report");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  for (const auto& r : sample())
    ASSERT_TRUE(store->commit(r));
  auto rep = load_report(dir);
  ASSERT_TRUE(rep) << rep.status().to_string();
  EXPECT_EQ(rep->cell_count(), 7);
  auto files = write_report_files(*rep, dir / "report");
  ASSERT_TRUE(files) << files.status().to_string();
  if (const char* keep = std::getenv("SPECBENCH_KEEP_REPORT"))
    std::filesystem::copy(dir / "report", keep,
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
  for (const auto& p :
       {files->markdown, files->csv, files->json, files->speedup_svg, files->acceptance_svg})
    EXPECT_GT(std::filesystem::file_size(p), 100u) << p;
  EXPECT_FALSE(load_report(dir / "nope"));
  // A file given for the directory is named as one.
  const auto file = load_report(files->markdown);
  ASSERT_FALSE(file);
  EXPECT_NE(file.status().message().find("report.md is a file, not a results directory"),
            std::string::npos)
      << file.status().message();
}

TEST(Report, AnUnreadableManifestMeansTheReportCannotSayAllIsWell) {
  const auto dir = specbench::testing::make_temp_dir("report-bad-manifest");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  auto results = sample();
  results.erase(results.begin() + 4); // the failed cell: every stored cell is ok
  for (const auto& r : results)
    ASSERT_TRUE(store->commit(r));
  ASSERT_TRUE(store->write_manifest(manifest_for(results)));
  ASSERT_TRUE(load_report(dir)->all_ok());
  // The manifest would have named a missing cell; cut short, it names nothing.
  std::ofstream(dir / "manifest.json") << "{\"schema_version\": 1, \"phases\": [";
  auto rep = load_report(dir);
  ASSERT_TRUE(rep);
  EXPECT_FALSE(rep->problems.empty());
  EXPECT_FALSE(rep->all_ok());
  EXPECT_NE(report_markdown(*rep).find("1 problem reading the results"), std::string::npos)
      << report_markdown(*rep);
}

// Only the manifest says which cells a sweep has: without it, or with a cell or phase listed
// twice, the report cannot vouch that nothing is missing or doubled.
TEST(Report, AMissingOrRepeatingManifestIsAProblem) {
  const auto dir = specbench::testing::make_temp_dir("report-manifest-shape");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  auto results = sample();
  results.erase(results.begin() + 4); // every stored cell is ok
  for (const auto& r : results)
    ASSERT_TRUE(store->commit(r));
  auto rep = load_report(dir);
  ASSERT_TRUE(rep);
  EXPECT_FALSE(rep->all_ok());
  ASSERT_EQ(rep->problems.size(), 1u);
  EXPECT_NE(rep->problems[0].find("no manifest.json in"), std::string::npos) << rep->problems[0];
  EXPECT_NE(rep->problems[0].find("which are missing, cannot be told"), std::string::npos);

  Manifest m = manifest_for(results);
  m.phases[0].cells.push_back(m.phases[0].cells[2]); // a cell listed twice
  m.phases[0].cells.push_back(ManifestCell{});       // and one with no id
  m.phases.push_back(m.phases[1]);                   // tp4 listed twice
  ASSERT_TRUE(store->write_manifest(m));
  rep = load_report(dir);
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->cell_count(), 6); // each cell once
  EXPECT_FALSE(rep->all_ok());
  std::string problems;
  for (const auto& p : rep->problems)
    problems += p + "\n";
  EXPECT_NE(problems.find("manifest.json lists cell " + results[2].cell_id + " twice"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("a cell with no id in phase tp1"), std::string::npos) << problems;
  EXPECT_NE(problems.find("lists phase tp4 twice"), std::string::npos) << problems;

  ASSERT_TRUE(store->write_manifest(manifest_for(results)));
  EXPECT_TRUE(load_report(dir)->all_ok());
}

TEST(Report, ACopyOfACellResultNeitherReplacesNorDoublesIt) {
  const auto dir = specbench::testing::make_temp_dir("report-copies");
  auto store = ResultStore::open(dir);
  ASSERT_TRUE(store);
  auto results = sample();
  for (const auto& r : results)
    ASSERT_TRUE(store->commit(r));
  const double real = find(*load_report(dir), "tp1-linear-k16")->output_tokens_per_s.mean;
  // An older measurement of tp1-linear-k16 kept as a backup, and one renamed to sort last.
  auto older = results[1];
  for (auto& q : older.requests)
    q.e2e_s *= 4;
  older.runs = summarize_runs(older.requests, static_cast<int>(older.runs.size()));
  older.summary = summarize_cell(older.requests, older.runs);
  const auto cells = dir / "cells";
  std::filesystem::rename(cells / "tp1-linear-k16.json", cells / "keep.json");
  ASSERT_TRUE(store->commit(older));
  std::filesystem::rename(cells / "tp1-linear-k16.json", cells / "tp1-linear-k16.old.json");
  std::filesystem::copy_file(cells / "tp1-linear-k16.old.json", cells / "zz-backup.json");
  std::filesystem::rename(cells / "keep.json", cells / "tp1-linear-k16.json");
  for (const bool with_manifest : {false, true}) {
    if (with_manifest) {
      ASSERT_TRUE(store->write_manifest(manifest_for(results)));
    }
    auto rep = load_report(dir);
    ASSERT_TRUE(rep) << rep.status().to_string();
    EXPECT_EQ(rep->cell_count(), 7) << with_manifest;
    const ReportCell* c = find(*rep, "tp1-linear-k16");
    ASSERT_TRUE(c);
    EXPECT_DOUBLE_EQ(c->output_tokens_per_s.mean, real) << with_manifest;
    std::string problems;
    for (const auto& p : rep->problems)
      problems += p + "\n";
    for (const char* f : {"tp1-linear-k16.old.json", "zz-backup.json"})
      EXPECT_NE(problems.find(std::string(f) + " holds the result of cell tp1-linear-k16"),
                std::string::npos)
          << problems;
  }
}
