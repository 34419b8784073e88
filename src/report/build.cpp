// Builds a report from cell results and the manifest: order, baselines, speedups.
#include "specbench/report.hpp"

#include "results/run_lock.hpp"
#include "results/sorting_lock.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace specbench {

namespace {

int kind_rank(MethodKind k) {
  switch (k) {
  case MethodKind::autoregressive:
    return 0;
  case MethodKind::linear:
    return 1;
  case MethodKind::tree:
    return 2;
  }
  return 3;
}

// Why a run has no counter acceptance length, for results written before the runner stored the
// reason: counters that were there but unusable say why in a note (implausible, not finite,
// went down); only notes about the speculative counters count.
std::string absent_reason_from_notes(const ServerSideFigures& s) {
  if (!s.metrics_ok)
    return s.metrics_error;
  for (const auto& note : s.notes)
    if (note.find("left out") != std::string::npos ||
        (note.find("skipped") != std::string::npos && note.find("spec_") != std::string::npos))
      return note;
  return "no speculative counters in /metrics";
}

ReportCell make_cell(const CellResult& r) {
  ReportCell c;
  c.phase_id = r.phase_id;
  c.cell_id = r.cell_id;
  c.method = r.method;
  c.workload = r.workload.name;
  c.tp = r.tp;
  c.status = r.status;
  if (r.failure) {
    c.stage = to_string(r.failure->stage);
    c.reason = r.failure->reason;
    c.diagnosis = r.failure->diagnosis;
    c.log_tail = r.failure->log_tail;
  }
  c.runs = r.summary.runs;
  c.requests = r.summary.requests;
  c.failed_requests = r.summary.failed;
  c.output_tokens_per_s = r.summary.output_tokens_per_s;
  c.ttft_s = r.summary.ttft_s;
  c.tpot_s = r.summary.tpot_s;
  c.itl_s = r.summary.itl_s;
  c.acceptance_length = r.summary.acceptance_length;
  if (r.status == CellStatus::ok && r.method.kind == MethodKind::autoregressive)
    c.acceptance_length = 1.0; // one token per target pass, by definition (whatever it reports)
  // The server's own view, kept apart from the client's: mean over the runs that have it.
  double sum = 0;
  int with_figure = 0;
  std::string left_out; // why the latest average the server gave is not shown
  for (const auto& run : r.runs) {
    if (!run.server_side)
      continue;
    const ServerSideFigures& s = *run.server_side;
    ++c.server_side_runs;
    if (s.acceptance_length) {
      sum += *s.acceptance_length;
      ++with_figure;
      if (c.server_acceptance_source.empty())
        c.server_acceptance_source = s.acceptance_source;
    } else if (c.server_side_absent_reason.empty()) {
      c.server_side_absent_reason = !s.acceptance_absent_reason.empty()
                                        ? s.acceptance_absent_reason
                                        : absent_reason_from_notes(s);
    }
    // SGLang's average is cumulative: the latest run's stands for the cell. When that one was
    // left out, an earlier run's is no stand-in; the report says why there is none instead (not
    // only in the result's per-run notes). Results written before sglang_avg_left_out have the
    // reason in their notes only.
    std::string why = s.sglang_avg_left_out;
    for (const auto& n : s.notes)
      if (why.empty() && n.starts_with("SGLang's avg_spec_accept_length is ") &&
          n.find("left out") != std::string::npos)
        why = n;
    if (s.sglang_avg_spec_accept_length_after) {
      c.sglang_avg_spec_accept_length = s.sglang_avg_spec_accept_length_after;
      left_out.clear();
    } else if (!why.empty()) {
      c.sglang_avg_spec_accept_length.reset();
      left_out = why;
    }
  }
  if (with_figure > 0) {
    c.server_acceptance_length = sum / with_figure;
    c.server_side_absent_reason.clear();
  }
  c.notes = r.notes;
  if (!left_out.empty())
    c.notes.push_back(left_out);
  return c;
}

// Ratio of means, with the spread of both cells' per-run throughput added in quadrature.
void compare(ReportCell& cell, const ReportCell& base, const CellResult& cell_r,
             const CellResult& base_r) {
  cell.baseline_cell = base.cell_id;
  const double m = cell.output_tokens_per_s.mean, a = base.output_tokens_per_s.mean;
  if (cell.status != CellStatus::ok || base.status != CellStatus::ok || m <= 0 || a <= 0)
    return;
  const double s = m / a;
  cell.speedup = s;
  const double rm = cell.output_tokens_per_s.count > 1 ? cell.output_tokens_per_s.stddev / m : 0;
  const double ra = base.output_tokens_per_s.count > 1 ? base.output_tokens_per_s.stddev / a : 0;
  cell.speedup_stddev = s * std::sqrt(rm * rm + ra * ra);
  double lo = s, hi = s;
  for (const auto& x : cell_r.runs)
    for (const auto& y : base_r.runs)
      if (x.output_tokens_per_s > 0 && y.output_tokens_per_s > 0) {
        const double q = x.output_tokens_per_s / y.output_tokens_per_s;
        lo = std::min(lo, q);
        hi = std::max(hi, q);
      }
  cell.speedup_min = lo;
  cell.speedup_max = hi;
  if (cell.tpot_s.mean > 0 && base.tpot_s.mean > 0)
    cell.tpot_speedup = base.tpot_s.mean / cell.tpot_s.mean;
}

} // namespace

int Report::count(CellStatus s) const noexcept {
  int n = 0;
  for (const auto& p : phases)
    for (const auto& c : p.cells)
      n += c.status == s ? 1 : 0;
  return n;
}

int Report::cell_count() const noexcept {
  int n = 0;
  for (const auto& p : phases)
    n += static_cast<int>(p.cells.size());
  return n;
}

bool Report::all_ok() const noexcept {
  return missing.empty() && problems.empty() && count(CellStatus::ok) == cell_count() &&
         cell_count() > 0;
}

Report build_report(const std::vector<CellResult>& results, const Manifest* manifest) {
  Report rep;
  rep.generated_at = utc_now_iso8601();
  std::map<std::string, const CellResult*> by_id;
  for (const auto& r : results)
    by_id[r.cell_id] = &r;

  std::vector<const CellResult*> ordered;
  if (manifest) {
    rep.sweep_name = manifest->sweep_name;
    rep.sweep_file = manifest->sweep_file;
    rep.sweep_hash = manifest->sweep_hash;
    rep.specbench_version = manifest->specbench_version;
    rep.specbench_commit = manifest->specbench_commit;
    rep.state = manifest->state;
    std::set<std::string> listed, phase_ids;
    for (const auto& mp : manifest->phases) {
      // A manifest the runner wrote lists each phase and cell once: a repeat (an edit, a merge
      // of two manifests) would show and count a cell twice.
      if (!phase_ids.insert(mp.id).second) {
        rep.problems.push_back("manifest.json lists phase " + mp.id +
                               " twice; its second listing is left out");
        continue;
      }
      ReportPhase p;
      p.id = mp.id;
      p.tp = mp.tp;
      p.gpus = mp.gpus;
      p.preflight = mp.preflight;
      rep.phases.push_back(p);
      for (const auto& mc : mp.cells) {
        if (mc.id.empty()) {
          rep.problems.push_back("manifest.json lists a cell with no id in phase " + mp.id +
                                 "; left out");
          continue;
        }
        if (!listed.insert(mc.id).second) {
          rep.problems.push_back("manifest.json lists cell " + mc.id + " twice; counted once");
          continue;
        }
        auto it = by_id.find(mc.id);
        if (it == by_id.end()) {
          rep.missing.push_back(mc.id + " (" + (mc.status.empty() ? "pending" : mc.status) + ")");
          continue;
        }
        if (it->second->phase_id != mp.id) {
          // Placed by its own phase_id it would land in no phase, or in the wrong one.
          rep.problems.push_back("cells/" + mc.id + ".json says phase " +
                                 (it->second->phase_id.empty() ? "(none)" : it->second->phase_id) +
                                 " but the sweep lists it in phase " + mp.id +
                                 "; left out (re-run the cell: specbench run SWEEP.yaml --only " +
                                 mc.id + " --fresh)");
          rep.missing.push_back(mc.id + " (wrong phase)");
          continue;
        }
        if (!mc.config_hash.empty() && it->second->config_hash != mc.config_hash) {
          rep.problems.push_back("cells/" + mc.id + ".json has config hash " +
                                 it->second->config_hash + " but the sweep expects " +
                                 mc.config_hash + "; left out (re-run the sweep to redo it)");
          rep.missing.push_back(mc.id + " (stale result)");
          continue;
        }
        ordered.push_back(it->second);
      }
    }
    for (const auto& r : results)
      if (!listed.count(r.cell_id))
        rep.problems.push_back("cells/" + r.cell_id +
                               ".json is not a cell of the sweep in manifest.json; left out");
  } else {
    for (const auto& r : results)
      ordered.push_back(&r);
    std::stable_sort(ordered.begin(), ordered.end(), [](const CellResult* a, const CellResult* b) {
      if (a->tp != b->tp)
        return a->tp < b->tp;
      if (a->phase_id != b->phase_id)
        return a->phase_id < b->phase_id;
      if (a->workload.name != b->workload.name)
        return a->workload.name < b->workload.name;
      if (a->method.kind != b->method.kind)
        return kind_rank(a->method.kind) < kind_rank(b->method.kind);
      return a->method.budget + a->method.block > b->method.budget + b->method.block;
    });
    for (const auto* r : ordered) {
      if (rep.phases.empty() || rep.phases.back().id != r->phase_id) {
        ReportPhase p;
        p.id = r->phase_id;
        p.tp = r->tp;
        p.gpus = r->gpus;
        rep.phases.push_back(p);
      }
    }
  }

  std::map<std::string, const CellResult*> result_of;
  for (const auto* r : ordered) {
    for (auto& p : rep.phases)
      if (p.id == r->phase_id) {
        p.cells.push_back(make_cell(*r));
        break;
      }
    result_of[r->cell_id] = r;
    if (rep.sweep_name.empty())
      rep.sweep_name = r->provenance.sweep_name;
    if (rep.sweep_hash.empty())
      rep.sweep_hash = r->provenance.sweep_hash;
    if (rep.sweep_file.empty())
      rep.sweep_file = r->provenance.sweep_file;
    for (const auto& g : r->provenance.gpu_names)
      if (std::find(rep.gpu_names.begin(), rep.gpu_names.end(), g) == rep.gpu_names.end())
        rep.gpu_names.push_back(g);
    if (rep.driver_version.empty())
      rep.driver_version = r->provenance.driver_version;
    if (rep.cuda_version.empty())
      rep.cuda_version = r->provenance.cuda_version;
    for (const auto& n : r->notes)
      if (n.find("synthetic") != std::string::npos)
        rep.synthetic = true;
  }

  // Speedup against the autoregressive cell of the same phase and workload.
  for (auto& p : rep.phases) {
    for (auto& c : p.cells) {
      if (c.method.kind == MethodKind::autoregressive)
        continue;
      for (const auto& b : p.cells) {
        if (b.method.kind != MethodKind::autoregressive || b.workload != c.workload)
          continue;
        compare(c, b, *result_of[c.cell_id], *result_of[b.cell_id]);
        break;
      }
    }
    for (auto& c : p.cells)
      if (c.method.kind == MethodKind::autoregressive && c.status == CellStatus::ok) {
        c.speedup = 1.0;
        c.speedup_min = c.speedup_max = 1.0;
        c.baseline_cell = c.cell_id;
        if (c.tpot_s.mean > 0)
          c.tpot_speedup = 1.0;
      }
  }
  return rep;
}

Expected<Report> load_report(const std::filesystem::path& results_dir) {
  // To read only: a report taken while a run writes here must not touch the run's files. (It
  // also says what a path that is no results directory is.)
  auto store = ResultStore::open_to_read(results_dir);
  if (!store)
    return store.status();
  std::vector<std::string> problems;
  // A run that is sorting the directory (moving stale results aside, rewriting the manifest)
  // would be seen half done: wait for it, while reading.
  const auto sorting = detail::SortingLock::for_reading(results_dir, 30);
  if (!sorting.note().empty())
    problems.push_back(sorting.note());
  auto results = store->load_all(&problems);
  auto manifest = store->load_manifest();
  if (!manifest && manifest.status().code() != StatusCode::not_found)
    problems.push_back(manifest.status().to_string());
  else if (!manifest && !results.empty())
    // Only the manifest says which cells the sweep has: without it a missing cell goes unseen.
    problems.push_back("no manifest.json in " + results_dir.string() +
                       ": which cells the sweep has, and so which are missing, cannot be told "
                       "(run the sweep again to rewrite it: finished cells are kept)");
  if (!manifest && results.empty())
    return Status(StatusCode::not_found,
                  "no manifest.json and no cell results in " + results_dir.string(),
                  "run a sweep first: specbench run SWEEP.yaml --results " + results_dir.string(),
                  "load_report");
  Report rep = build_report(results, manifest ? &*manifest : nullptr);
  rep.results_dir = results_dir.string();
  // "running" with nobody holding the run's lock: the run was killed (the kernel lets go of the
  // lock when its process dies), and is not live.
  if (rep.state == "running" && !detail::run_lock_held(results_dir)) {
    rep.state = "interrupted";
    for (auto& m : rep.missing) // the cell it was measuring was stopped with it
      if (m.ends_with(" (running)"))
        m.replace(m.size() - 9, 9, "(stopped with the run)");
    problems.push_back("manifest.json says a run is in progress, but no runner holds " +
                       (results_dir / ".lock").string() +
                       ": the run was stopped without finishing (killed, a crash or a reboot); "
                       "run the sweep again to resume (finished cells are kept)");
  }
  rep.problems.insert(rep.problems.begin(), problems.begin(), problems.end());
  return rep;
}

} // namespace specbench
