// Renders a report as Markdown, CSV and JSON, and writes the report files.
#include "core/json_text.hpp"
#include "results/json_detail.hpp"
#include "specbench/detail/display_text.hpp"
#include "specbench/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include <sstream>

namespace specbench {

namespace {

// One decimal, or four significant digits for a figure too large for that to stay readable (a
// clock gone wrong must not print a 200-digit cell).
std::string one_decimal(double v) {
  return std::fabs(v) < 1e9 ? fmt::format("{:.1f}", v) : fmt::format("{:.4g}", v);
}

// A cell's figures are shown only when it completed, as in the CSV: a failed cell's few ok
// requests are not its measurement.
std::string ms3(const ReportCell& c, const Distribution& d) {
  if (d.count == 0 || c.status != CellStatus::ok)
    return "–";
  return one_decimal(d.p50 * 1e3) + " / " + one_decimal(d.p90 * 1e3) + " / " +
         one_decimal(d.p99 * 1e3);
}

std::string tps(const ReportCell& c) {
  if (c.output_tokens_per_s.count == 0 || c.status != CellStatus::ok)
    return "–";
  if (c.output_tokens_per_s.count > 1)
    return one_decimal(c.output_tokens_per_s.mean) + " ± " +
           one_decimal(c.output_tokens_per_s.stddev);
  return one_decimal(c.output_tokens_per_s.mean);
}

std::string speedup(const ReportCell& c) {
  if (!c.speedup)
    return "–";
  if (c.method.kind == MethodKind::autoregressive)
    return "1.00 (baseline)";
  if (c.runs > 1)
    return fmt::format("{:.2f}× ± {:.2f} [{:.2f}–{:.2f}]", *c.speedup, c.speedup_stddev,
                       c.speedup_min, c.speedup_max);
  return fmt::format("{:.2f}×", *c.speedup);
}

std::string acc(const ReportCell& c) {
  if (!c.acceptance_length || c.status != CellStatus::ok)
    return "–";
  return fmt::format("{:.2f}", *c.acceptance_length);
}

// The server's own figure (†): its counter deltas, else SGLang's cumulative average, marked.
std::string server_acc(const ReportCell& c) {
  if (c.status != CellStatus::ok)
    return "–";
  if (c.server_acceptance_length)
    return fmt::format("{:.2f}", *c.server_acceptance_length);
  if (c.sglang_avg_spec_accept_length)
    return fmt::format("{:.2f} (SGLang avg)", *c.sglang_avg_spec_accept_length);
  return "–";
}

std::string status_cell(const ReportCell& c) {
  std::string s = to_string(c.status);
  if (!c.stage.empty() && c.status != CellStatus::ok)
    s += " (" + c.stage + ")";
  if (c.failed_requests > 0)
    s += fmt::format(", {}/{} requests failed", c.failed_requests, c.requests);
  return s;
}

// Outside text (a server's reason, a log line) on one line of Markdown: display_line, with '<'
// and '&' written as entities, so that "<module>" or an HTML error page does not render as
// markup. Bounded: a fatal log line may be megabytes long (the result file keeps it whole).
std::string one_line(const std::string& s) {
  std::string out;
  for (char ch : detail::display_line(s, 2000)) {
    if (ch == '<')
      out += "&lt;";
    else if (ch == '&')
      out += "&amp;";
    else
      out += ch;
  }
  return out;
}

// A Markdown table cell: one_line, and a '|' does not end the cell.
std::string md_escape(const std::string& s) {
  std::string out;
  for (char ch : one_line(s)) {
    if (ch == '|')
      out += '\\';
    out += ch;
  }
  return out;
}

size_t longest_backtick_run(const std::string& s) {
  size_t longest = 0;
  for (size_t run = 0, k = 0; k < s.size(); ++k) {
    run = s[k] == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// A code fence longer than any run of backticks in `lines`, so a log line cannot close it.
std::string fence_for(const std::vector<std::string>& lines, size_t from) {
  size_t longest = 0;
  for (size_t i = from; i < lines.size(); ++i)
    longest = std::max(longest, longest_backtick_run(lines[i]));
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

// An inline code span that shows `text` (a path the user chose) as it is: its delimiters are
// longer than any run of backticks inside, and it is padded with a space on each side when it
// starts or ends with a backtick, or with a space at both ends, since Markdown takes one such
// space away. Inside a code span '<' and '&' are literal, so no entities.
std::string code_span(const std::string& text) {
  const std::string s = detail::display_line(text, 2000);
  if (s.empty())
    return "(none)";
  const std::string tick(longest_backtick_run(s) + 1, '`');
  const bool all_spaces = s.find_first_not_of(' ') == std::string::npos;
  const bool pad =
      s.front() == '`' || s.back() == '`' || (s.front() == ' ' && s.back() == ' ' && !all_spaces);
  return tick + (pad ? " " + s + " " : s) + tick;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// One CSV field. report_csv passes the free-text columns (a reason, why server-side figures are
// absent) through display_line first: one row per line, no colour codes from a server's log.
std::string csv_field(const std::string& s) {
  // Control characters but line breaks and tabs are dropped (a NUL from a crash log would end
  // the row for many readers); a field with a separator, quote or line break is quoted.
  std::string clean;
  for (char ch : s)
    if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\t' || ch == '\n' || ch == '\r')
      clean += ch;
  if (clean.find_first_of(",\"\n\r") == std::string::npos)
    return clean;
  std::string out = "\"";
  for (char ch : clean) {
    if (ch == '"')
      out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string num(double v) {
  return fmt::format("{:.6g}", v);
}
std::string opt_num(const std::optional<double>& v) {
  return v ? num(*v) : "";
}

} // namespace

std::string report_markdown(const Report& r) {
  std::ostringstream o;
  // Every text below comes from files anyone may have edited: one line each, no markup.
  o << "# specbench report" << (r.sweep_name.empty() ? "" : ": " + one_line(r.sweep_name))
    << "\n\n";
  if (r.synthetic)
    o << "> **Synthetic model.** These results come from a simulated server whose model is "
         "synthetic: speedups are relative to its stated simulated costs, not GPU figures.\n\n";
  o << "- results: " << code_span(r.results_dir);
  if (!r.state.empty())
    o << " (sweep " << one_line(r.state) << ")";
  o << "\n";
  if (!r.sweep_file.empty() || !r.sweep_hash.empty())
    o << "- sweep: " << code_span(r.sweep_file) << " (hash " << one_line(r.sweep_hash) << ")\n";
  if (!r.specbench_version.empty())
    o << "- specbench " << one_line(r.specbench_version) << " (commit "
      << one_line(r.specbench_commit) << ")\n";
  o << "- GPUs: " << (r.gpu_names.empty() ? std::string("unknown") : "");
  for (size_t i = 0; i < r.gpu_names.size(); ++i)
    o << (i ? ", " : "") << one_line(r.gpu_names[i]);
  if (!r.driver_version.empty())
    o << "; driver " << one_line(r.driver_version);
  if (!r.cuda_version.empty())
    o << "; CUDA " << one_line(r.cuda_version);
  o << "\n- generated " << r.generated_at << "\n\n";

  const int total = r.cell_count() + static_cast<int>(r.missing.size());
  o << fmt::format("**{} cells: {} ok, {} failed, {} blocked, {} skipped, {} interrupted, {} "
                   "missing.**\n\n",
                   total, r.count(CellStatus::ok), r.count(CellStatus::failed),
                   r.count(CellStatus::blocked), r.count(CellStatus::skipped),
                   r.count(CellStatus::interrupted), r.missing.size());
  if (!r.problems.empty()) // e.g. an unreadable manifest: "0 missing" above cannot be trusted
    o << fmt::format("**{} problem{} reading the results (listed at the end): the counts above may "
                     "be incomplete.**\n\n",
                     r.problems.size(), r.problems.size() == 1 ? "" : "s");

  for (const auto& p : r.phases) {
    o << "## Phase " << one_line(p.id) << " (TP" << p.tp;
    if (!p.gpus.empty())
      o << ", GPUs " << join_ints(p.gpus);
    o << ")";
    if (p.preflight == "drafter_failed") // the runner's word for it, said in full here
      o << ": preflight passed but for the drafter's checks (the cells that load it are blocked)";
    else if (!p.preflight.empty())
      o << ": preflight " << one_line(p.preflight);
    o << "\n\n";
    if (p.cells.empty()) {
      o << "No results.\n\n";
      continue;
    }
    o << "| cell | method | workload | status | output tok/s | speedup | TPOT speedup | "
         "acceptance length | server-side acceptance length † | TTFT p50/p90/p99 ms | "
         "TPOT p50/p90/p99 ms | ITL p50/p90/p99 ms |\n";
    o << "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& c : p.cells) {
      o << "| " << md_escape(c.cell_id) << " | " << c.method.id() << " | " << md_escape(c.workload)
        << " | " << md_escape(status_cell(c)) << " | " << tps(c) << " | " << speedup(c) << " | "
        << (c.tpot_speedup ? fmt::format("{:.2f}×", *c.tpot_speedup) : "–") << " | " << acc(c)
        << " | " << server_acc(c) << " | " << ms3(c, c.ttft_s) << " | " << ms3(c, c.tpot_s) << " | "
        << ms3(c, c.itl_s) << " |\n";
    }
    o << "\n";
    // Why a speculative cell has no server-side figure (autoregressive cells have none to give).
    bool listed = false;
    for (const auto& c : p.cells)
      if (!c.server_side_absent_reason.empty() && c.method.kind != MethodKind::autoregressive &&
          !c.sglang_avg_spec_accept_length) {
        o << (listed ? "; " : "† not available for ") << one_line(c.cell_id) << ": "
          << md_escape(c.server_side_absent_reason);
        listed = true;
      }
    if (listed)
      o << "\n\n";
  }

  // The cells' notes (a server killed after ignoring SIGTERM, GPU memory not back to baseline, text
  // prompts longer than the context check assumed, an earlier attempt kept in stale/): each text
  // once, with the cells it applies to. The synthetic-model note is the banner above.
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;
  for (const auto& p : r.phases)
    for (const auto& c : p.cells)
      for (const auto& n : c.notes) {
        if (r.synthetic && n.starts_with("server model is synthetic"))
          continue;
        auto it =
            std::find_if(notes.begin(), notes.end(), [&](const auto& e) { return e.first == n; });
        if (it == notes.end())
          notes.push_back({n, {c.cell_id}});
        else if (it->second.back() != c.cell_id)
          it->second.push_back(c.cell_id);
      }
  if (!notes.empty()) {
    o << "## Notes\n\n";
    for (const auto& [text, cells] : notes) {
      o << "- ";
      for (size_t i = 0; i < cells.size(); ++i)
        o << (i ? ", " : "") << "**" << one_line(cells[i]) << "**";
      o << ": " << one_line(text) << "\n";
    }
    o << "\n";
  }

  bool any_bad = !r.missing.empty();
  for (const auto& p : r.phases)
    for (const auto& c : p.cells)
      any_bad |= c.status != CellStatus::ok;
  if (any_bad) {
    o << "## Cells that did not complete\n\n";
    for (const auto& p : r.phases)
      for (const auto& c : p.cells) {
        if (c.status == CellStatus::ok)
          continue;
        o << "- **" << one_line(c.cell_id) << "**: " << to_string(c.status);
        if (!c.stage.empty())
          o << " at " << one_line(c.stage);
        o << ": " << (c.reason.empty() ? "no reason recorded" : one_line(c.reason)) << "\n";
        if (!c.diagnosis.empty())
          o << "  - diagnosis: " << one_line(c.diagnosis) << "\n";
        if (!c.log_tail.empty()) {
          // The last few lines are enough here; the result file keeps the whole tail.
          std::vector<std::string> lines;
          std::istringstream in(c.log_tail);
          for (std::string l; std::getline(in, l);)
            lines.push_back(detail::terminal_view(l)); // progress bars, colours
          const size_t from = lines.size() > 6 ? lines.size() - 6 : 0;
          const std::string fence = fence_for(lines, from);
          o << "  - log tail:\n\n    " << fence << "\n";
          for (size_t i = from; i < lines.size(); ++i)
            o << "    " << lines[i] << "\n";
          o << "    " << fence << "\n";
        }
      }
    for (const auto& m : r.missing)
      o << "- **" << one_line(m) << "**: no result\n";
    o << "\n";
  }
  if (!r.problems.empty()) {
    o << "## Problems reading the results\n\n";
    for (const auto& p : r.problems)
      o << "- " << one_line(p) << "\n";
    o << "\n";
  }
  o << "## Definitions\n\n"
       "- output tok/s: completed requests' output tokens of a run / the run's wall time (first "
       "send to last answer); mean ± standard deviation over runs.\n"
       "- speedup: mean output tok/s of the cell / mean output tok/s of the autoregressive cell "
       "of the same phase and workload; ± the runs' spread (relative standard deviations added "
       "in quadrature); [min–max] over every pair of runs. TPOT speedup: baseline mean TPOT / "
       "cell mean TPOT.\n"
       "- acceptance length: Σ output tokens / Σ verify steps over completed requests (server's "
       "per-request verify count; the bonus token included); 1 for autoregressive by definition.\n"
       "- † server-side acceptance length: the server's own figure, not measured per request: "
       "per run, the difference of its /metrics counters scraped right before the run's first "
       "request and right after its last answer (warm-up excluded), mean over runs "
       "(sim-server: Δ accepted tokens / Δ verify steps; vLLM, llama.cpp: 1 + Δ accepted / Δ "
       "drafts). Caveats: the counters include every client the server had during the run; they "
       "count verify-step tokens only, so with no other traffic they read lower than the "
       "client-side figure by about requests / verify steps (each request's first token comes "
       "from prefill). \"(SGLang avg)\": SGLang's avg_spec_accept_length where there are no "
       "counters, cumulative since the server started (warm-up included), DP rank 0 only, "
       "lagging up to 40 decode steps. – when the server gives neither (autoregressive cells, no "
       "/metrics: the reason is in report.json).\n"
       "- TTFT: time to the first token; TPOT: (latency − TTFT) / (output tokens − 1); ITL: gap "
       "between streamed chunks. Percentiles over all completed requests of all runs.\n";
  return o.str();
}

std::string report_csv(const Report& r) {
  std::ostringstream o;
  o << "phase,tp,cell,method,kind,block,budget,workload,status,stage,reason,runs,requests,"
       "failed_requests,output_tps_mean,output_tps_stddev,speedup,speedup_stddev,speedup_min,"
       "speedup_max,tpot_speedup,acceptance_length,server_acceptance_length,"
       "server_acceptance_source,sglang_avg_spec_accept_length,server_side_absent_reason,"
       "ttft_p50_ms,ttft_p90_ms,ttft_p99_ms,"
       "tpot_p50_ms,tpot_p90_ms,tpot_p99_ms,itl_p50_ms,itl_p90_ms,itl_p99_ms,baseline\n";
  for (const auto& p : r.phases)
    for (const auto& c : p.cells) {
      const bool ok = c.status == CellStatus::ok;
      auto ms = [&](const Distribution& d, double v) {
        return ok && d.count > 0 ? num(v * 1e3) : std::string();
      };
      o << csv_field(p.id) << ',' << c.tp << ',' << csv_field(c.cell_id) << ','
        << csv_field(c.method.id()) << ',' << c.method.kind_name() << ',' << c.method.block << ','
        << c.method.budget << ',' << csv_field(c.workload) << ',' << to_string(c.status) << ','
        << csv_field(c.stage) << ',' << csv_field(detail::display_line(c.reason)) << ',' << c.runs
        << ',' << c.requests << ',' << c.failed_requests << ','
        << (ok ? num(c.output_tokens_per_s.mean) : "") << ','
        << (ok ? num(c.output_tokens_per_s.stddev) : "") << ',' << opt_num(c.speedup) << ','
        << (c.speedup ? num(c.speedup_stddev) : "") << ',' << (c.speedup ? num(c.speedup_min) : "")
        << ',' << (c.speedup ? num(c.speedup_max) : "") << ',' << opt_num(c.tpot_speedup) << ','
        << (ok ? opt_num(c.acceptance_length) : "") << ','
        << (ok ? opt_num(c.server_acceptance_length) : "") << ','
        << csv_field(c.server_acceptance_source) << ','
        << (ok ? opt_num(c.sglang_avg_spec_accept_length) : "") << ','
        << csv_field(detail::display_line(c.server_side_absent_reason)) << ','
        << ms(c.ttft_s, c.ttft_s.p50) << ',' << ms(c.ttft_s, c.ttft_s.p90) << ','
        << ms(c.ttft_s, c.ttft_s.p99) << ',' << ms(c.tpot_s, c.tpot_s.p50) << ','
        << ms(c.tpot_s, c.tpot_s.p90) << ',' << ms(c.tpot_s, c.tpot_s.p99) << ','
        << ms(c.itl_s, c.itl_s.p50) << ',' << ms(c.itl_s, c.itl_s.p90) << ','
        << ms(c.itl_s, c.itl_s.p99) << ',' << csv_field(c.baseline_cell) << "\n";
    }
  return o.str();
}

std::string report_json(const Report& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  auto text = [](const std::string& t) { return t.empty() ? json(nullptr) : json(t); };
  // The server's own figures; null when no run was scraped (e.g. results of older versions).
  auto server_side = [&](const ReportCell& c) {
    if (c.server_side_runs == 0)
      return json(nullptr);
    return json{{"acceptance_length", opt(c.server_acceptance_length)},
                {"acceptance_source", text(c.server_acceptance_source)},
                {"sglang_avg_spec_accept_length", opt(c.sglang_avg_spec_accept_length)},
                {"runs", c.server_side_runs},
                {"absent_reason", text(c.server_side_absent_reason)}};
  };
  json phases = json::array();
  for (const auto& p : r.phases) {
    json cells = json::array();
    for (const auto& c : p.cells)
      cells.push_back({{"cell_id", c.cell_id},
                       {"method", detail::method_to_json(c.method)},
                       {"workload", c.workload},
                       {"tp", c.tp},
                       {"status", to_string(c.status)},
                       {"stage", c.stage.empty() ? json(nullptr) : json(c.stage)},
                       {"reason", c.reason.empty() ? json(nullptr) : json(c.reason)},
                       {"diagnosis", c.diagnosis.empty() ? json(nullptr) : json(c.diagnosis)},
                       {"runs", c.runs},
                       {"requests", c.requests},
                       {"failed_requests", c.failed_requests},
                       {"output_tokens_per_s", detail::distribution_to_json(c.output_tokens_per_s)},
                       {"ttft_s", detail::distribution_to_json(c.ttft_s)},
                       {"tpot_s", detail::distribution_to_json(c.tpot_s)},
                       {"itl_s", detail::distribution_to_json(c.itl_s)},
                       {"acceptance_length", opt(c.acceptance_length)},
                       {"server_side", server_side(c)},
                       {"speedup", opt(c.speedup)},
                       {"speedup_stddev", c.speedup ? json(c.speedup_stddev) : json(nullptr)},
                       {"speedup_min", c.speedup ? json(c.speedup_min) : json(nullptr)},
                       {"speedup_max", c.speedup ? json(c.speedup_max) : json(nullptr)},
                       {"tpot_speedup", opt(c.tpot_speedup)},
                       {"baseline_cell", c.baseline_cell},
                       {"notes", c.notes}});
    phases.push_back({{"id", p.id},
                      {"tp", p.tp},
                      {"gpus", p.gpus},
                      {"preflight", p.preflight},
                      {"cells", cells}});
  }
  json j = {{"schema_version", report_schema_version},
            {"kind", "specbench.report"},
            {"sweep", {{"name", r.sweep_name}, {"file", r.sweep_file}, {"hash", r.sweep_hash}}},
            {"results_dir", r.results_dir},
            {"specbench", {{"version", r.specbench_version}, {"git_commit", r.specbench_commit}}},
            {"generated_at", r.generated_at},
            {"state", r.state},
            {"gpu",
             {{"names", r.gpu_names},
              {"driver_version", r.driver_version},
              {"cuda_version", r.cuda_version}}},
            {"synthetic_model", r.synthetic},
            {"counts",
             {{"ok", r.count(CellStatus::ok)},
              {"failed", r.count(CellStatus::failed)},
              {"blocked", r.count(CellStatus::blocked)},
              {"skipped", r.count(CellStatus::skipped)},
              {"interrupted", r.count(CellStatus::interrupted)},
              {"missing", r.missing.size()}}},
            {"all_ok", r.all_ok()},
            {"phases", phases},
            {"missing", r.missing},
            {"problems", r.problems}};
  return detail::json_text(j, 2) + "\n";
}

ReportFiles report_files_in(const std::filesystem::path& dir) {
  return {dir / "report.md", dir / "report.csv", dir / "report.json", dir / "speedup.svg",
          dir / "acceptance.svg"};
}

Status remove_report_files(const std::filesystem::path& dir) {
  const ReportFiles f = report_files_in(dir);
  for (const auto* p : {&f.markdown, &f.csv, &f.json, &f.speedup_svg, &f.acceptance_svg}) {
    std::error_code ec;
    std::filesystem::remove(*p, ec);
    if (ec)
      return Status(StatusCode::io_error,
                    "cannot remove the old report " + p->string() + ": " + ec.message(),
                    "make " + dir.string() + " writable (the report is rebuilt from the results)",
                    "remove_report_files");
  }
  return {};
}

Expected<ReportFiles> write_report_files(const Report& report, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status(StatusCode::io_error, "cannot create " + dir.string() + ": " + ec.message(),
                  "choose a writable directory", "write_report_files");
  ReportFiles f = report_files_in(dir);
  const std::pair<const std::filesystem::path*, std::string> files[] = {
      {&f.markdown, report_markdown(report)},
      {&f.csv, report_csv(report)},
      {&f.json, report_json(report)},
      {&f.speedup_svg, report_svg(report, PlotKind::speedup)},
      {&f.acceptance_svg, report_svg(report, PlotKind::acceptance_length)}};
  for (const auto& [path, text] : files)
    if (auto st = write_file_atomic(*path, text); !st)
      return st;
  return f;
}

} // namespace specbench
