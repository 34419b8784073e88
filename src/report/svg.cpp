// SVG plots of speedup and acceptance length against tree budget, drawn by hand (no plotting
// library): one line per phase (and workload), linear and autoregressive cells marked.
#include "specbench/detail/display_text.hpp"
#include "specbench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace specbench {

namespace {

constexpr double kW = 820, kH = 470;
constexpr double kLeft = 78, kRight = 200, kTop = 72, kBottom = 74;
const char* const kColours[] = {"#1f77b4", "#d95f02", "#1b9e77", "#7570b3",
                                "#e7298a", "#66a61e", "#a6761d", "#666666"};
const char* const kDashes[] = {"", "6,4", "2,3", "10,3,2,3"};

std::string esc(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are UTF-8 but not XML 1.0 characters: one in a
    // server's error text made the whole plot unreadable. They become U+FFFD.
    if (c == '\xEF' && i + 2 < s.size() && s[i + 1] == '\xBF' &&
        (s[i + 2] == '\xBE' || s[i + 2] == '\xBF')) {
      o += "\xEF\xBF\xBD";
      i += 2;
      continue;
    }
    switch (c) {
    case '&':
      o += "&amp;";
      break;
    case '<':
      o += "&lt;";
      break;
    case '>':
      o += "&gt;";
      break;
    case '"':
      o += "&quot;";
      break;
    default:
      // XML 1.0 allows no control character but tab, newline and carriage return (a server's
      // colourised log line in a failure reason carries ESC).
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
        o += ' ';
      else
        o += c;
    }
  }
  return o;
}

// x position of a method: the draft nodes the target verifies per step.
double x_of(const Method& m) {
  switch (m.kind) {
  case MethodKind::autoregressive:
    return 0;
  case MethodKind::linear:
    return std::max(0, m.block - 1);
  case MethodKind::tree:
    return m.budget;
  }
  return 0;
}

// A "nice" tick step covering `range` with about `n` ticks.
double nice_step(double range, int n) {
  if (range <= 0)
    return 1;
  const double raw = range / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag)
      return m * mag;
  return 10 * mag;
}

struct Point {
  double x, y, err;
  const ReportCell* cell;
};

struct Series {
  std::string label;
  int colour = 0, dash = 0;
  std::vector<Point> tree, linear, ar;
  std::vector<const ReportCell*> failed; // tree/linear cells that did not complete
};

std::optional<double> value_of(const ReportCell& c, PlotKind kind, double* err) {
  if (c.status != CellStatus::ok)
    return std::nullopt;
  if (kind == PlotKind::speedup) {
    *err = c.speedup_stddev;
    return c.speedup;
  }
  *err = 0;
  return c.acceptance_length;
}

} // namespace

std::string report_svg(const Report& report, PlotKind kind) {
  // Series: one per phase and workload, in report order.
  std::vector<Series> series;
  std::map<std::string, int> phase_colour, workload_dash;
  bool several_workloads = false;
  int no_value = 0; // completed cells with nothing to draw (no baseline, no verify steps)
  for (const auto& p : report.phases)
    for (const auto& c : p.cells)
      if (!workload_dash.count(c.workload))
        workload_dash[c.workload] = static_cast<int>(workload_dash.size());
  several_workloads = workload_dash.size() > 1;
  for (const auto& p : report.phases) {
    if (!phase_colour.count(p.id))
      phase_colour[p.id] = static_cast<int>(phase_colour.size());
    std::map<std::string, size_t> index;
    for (const auto& c : p.cells) {
      if (!index.count(c.workload)) {
        index[c.workload] = series.size();
        Series s;
        s.label = several_workloads ? p.id + " · " + c.workload : p.id;
        s.colour = phase_colour[p.id] % 8;
        s.dash = workload_dash[c.workload] % 4;
        series.push_back(s);
      }
      auto& s = series[index[c.workload]];
      double err = 0;
      const auto v = value_of(c, kind, &err);
      if (!v) {
        if (c.status != CellStatus::ok && c.method.kind != MethodKind::autoregressive)
          s.failed.push_back(&c);
        else if (c.status == CellStatus::ok)
          ++no_value;
        continue;
      }
      const Point pt{x_of(c.method), *v, err, &c};
      if (c.method.kind == MethodKind::tree)
        s.tree.push_back(pt);
      else if (c.method.kind == MethodKind::linear)
        s.linear.push_back(pt);
      else
        s.ar.push_back(pt);
    }
  }
  for (auto& s : series)
    std::sort(s.tree.begin(), s.tree.end(),
              [](const Point& a, const Point& b) { return a.x < b.x; });

  double xmax = 1, ymax = kind == PlotKind::speedup ? 1.2 : 1.5;
  bool any = false;
  for (const auto& s : series) {
    for (const auto* v : {&s.tree, &s.linear, &s.ar})
      for (const auto& p : *v) {
        xmax = std::max(xmax, p.x);
        ymax = std::max(ymax, p.y + p.err);
        any = true;
      }
    for (const auto* c : s.failed)
      xmax = std::max(xmax, x_of(c->method));
  }
  const double xstep = nice_step(xmax, 8);
  xmax = std::ceil(xmax * 1.04 / xstep) * xstep;
  const double ystep = nice_step(ymax * 1.1, 6);
  ymax = std::ceil(ymax * 1.1 / ystep) * ystep;

  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double x) { return kLeft + x / xmax * pw; };
  auto Y = [&](double y) { return kTop + ph - y / ymax * ph; };

  std::ostringstream o;
  o << fmt::format(
           R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">)",
           kW, kH, kW, kH)
    << "\n";
  o << R"(<rect x="0" y="0" width="100%" height="100%" fill="white"/>)"
    << "\n";
  const std::string what = kind == PlotKind::speedup ? "Speedup" : "Acceptance length";
  o << fmt::format(
           R"(<text x="{}" y="24" font-size="16" font-weight="bold">{} vs tree budget{}</text>)",
           kLeft, what, report.sweep_name.empty() ? "" : " — " + esc(report.sweep_name))
    << "\n";
  std::string sub = kind == PlotKind::speedup
                        ? "output tok/s relative to the autoregressive cell of the same phase and "
                          "workload; bars: ± spread over runs"
                        : "output tokens per target verify step (bonus token included)";
  if (no_value > 0)
    sub += "; " + std::to_string(no_value) + " completed cell" + (no_value > 1 ? "s" : "") +
           " not drawn (" +
           (kind == PlotKind::speedup ? "no completed autoregressive cell to compare with"
                                      : "the server reported no verify steps") +
           ")";
  o << fmt::format(R"(<text x="{}" y="42" font-size="11" fill="#444">{}</text>)", kLeft, esc(sub))
    << "\n";
  if (report.synthetic)
    o << fmt::format(
             R"(<text x="{}" y="58" font-size="11" fill="#a33">SYNTHETIC model (simulated server): relative figures under its stated cost model, not GPU measurements</text>)",
             kLeft)
      << "\n";

  // Grid and ticks.
  for (double y = 0; y <= ymax + 1e-9; y += ystep) {
    o << fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#e3e3e3"/>)",
                     X(0), Y(y), X(xmax), Y(y))
      << "\n";
    o << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end" fill="#333">{:g}</text>)",
                     X(0) - 6, Y(y) + 4, std::round(y * 1000) / 1000)
      << "\n";
  }
  for (double x = 0; x <= xmax + 1e-9; x += xstep) {
    o << fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#f0f0f0"/>)",
                     X(x), Y(0), X(x), Y(ymax))
      << "\n";
    o << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="#333">{:g}</text>)",
                     X(x), Y(0) + 17, x)
      << "\n";
  }
  o << fmt::format(
           R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#555"/>)",
           kLeft, kTop, pw, ph)
    << "\n";
  o << fmt::format(
           R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">draft nodes verified per step (tree budget B; linear: block − 1; autoregressive: 0)</text>)",
           kLeft + pw / 2, kH - 30)
    << "\n";
  o << fmt::format(
           R"~(<text transform="translate(20,{:.1f}) rotate(-90)" text-anchor="middle">{}</text>)~",
           kTop + ph / 2,
           kind == PlotKind::speedup ? "speedup over autoregressive (×)"
                                     : "acceptance length (tokens / step)")
    << "\n";
  // Reference: 1 = autoregressive.
  o << fmt::format(
           R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#888" stroke-dasharray="4,4"/>)",
           X(0), Y(1), X(xmax), Y(1))
    << "\n";

  if (!any)
    o << fmt::format(
             R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-size="14" fill="#a00">no completed cells to plot</text>)",
             kLeft + pw / 2, kTop + ph / 2)
      << "\n";

  for (const auto& s : series) {
    const char* col = kColours[s.colour];
    const std::string dash =
        kDashes[s.dash][0] ? fmt::format(R"( stroke-dasharray="{}")", kDashes[s.dash]) : "";
    if (s.tree.size() > 1) {
      o << R"(<polyline fill="none" stroke=")" << col << R"(" stroke-width="2")" << dash
        << R"( points=")";
      for (const auto& p : s.tree)
        o << fmt::format("{:.1f},{:.1f} ", X(p.x), Y(p.y));
      o << "\"/>\n";
    }
    auto error_bar = [&](const Point& p) {
      if (p.err <= 0)
        return;
      o << fmt::format(
               R"(<path d="M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}M{3:.1f},{2:.1f}H{4:.1f}" stroke="{5}" fill="none"/>)",
               X(p.x), Y(p.y - p.err), Y(p.y + p.err), X(p.x) - 4, X(p.x) + 4, col)
        << "\n";
    };
    for (const auto& p : s.tree) {
      error_bar(p);
      o << fmt::format(
               R"(<circle cx="{:.1f}" cy="{:.1f}" r="4.5" fill="{}" stroke="white"><title>{}: {:.3f}</title></circle>)",
               X(p.x), Y(p.y), col, esc(p.cell->cell_id), p.y)
        << "\n";
    }
    for (const auto& p : s.linear) {
      error_bar(p);
      const double cx = X(p.x), cy = Y(p.y);
      o << fmt::format(
               R"(<path d="M{:.1f},{:.1f}l7,7l-7,7l-7,-7z" fill="white" stroke="{}" stroke-width="2.5"><title>{}: {:.3f}</title></path>)",
               cx, cy - 7, col, esc(p.cell->cell_id), p.y)
        << "\n";
      o << fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="11" fill="{}">linear k{}</text>)",
                       cx + 9, cy - 8, col, p.cell->method.block)
        << "\n";
    }
    for (const auto& p : s.ar) {
      o << fmt::format(
               R"(<rect x="{:.1f}" y="{:.1f}" width="11" height="11" fill="{}" stroke="white"><title>{}: {:.3f}</title></rect>)",
               X(p.x) - 5.5, Y(p.y) - 5.5, col, esc(p.cell->cell_id), p.y)
        << "\n";
    }
  }

  // Cells that did not complete: red crosses on the x axis, labels stacked where they would
  // overlap (e.g. linear k8 at x=7 next to budget 8).
  std::vector<std::pair<double, int>> placed; // label x, level
  for (const auto& s : series)
    for (const auto* c : s.failed) {
      const double cx = X(x_of(c->method));
      int level = 0;
      for (bool clash = true; clash && level < 6;) {
        clash = false;
        for (const auto& [px, pl] : placed)
          if (pl == level && std::abs(px - cx) < 62)
            clash = true;
        if (clash)
          ++level;
      }
      placed.emplace_back(cx, level);
      const double cy = Y(0) - 9;
      o << fmt::format(
               R"~(<path d="M{0:.1f},{1:.1f}l10,10M{0:.1f},{2:.1f}l10,-10" transform="translate(-5,-5)" stroke="#c00" stroke-width="2.5"><title>{3}: {4}</title></path>)~",
               cx, cy, cy + 10, esc(c->cell_id),
               esc(std::string(to_string(c->status)) +
                   (c->reason.empty() ? "" : ": " + detail::display_line(c->reason, 300))))
        << "\n";
      const std::string tag = c->method.kind == MethodKind::tree
                                  ? "b" + std::to_string(c->method.budget)
                                  : "k" + std::to_string(c->method.block);
      o << fmt::format(
               R"(<text x="{:.1f}" y="{:.1f}" font-size="10" fill="#c00" text-anchor="middle">{} {}</text>)",
               cx, cy - 9 - 12.0 * level, tag, to_string(c->status))
        << "\n";
    }

  // Legend.
  double ly = kTop + 8;
  const double lx = kW - kRight + 18;
  for (const auto& s : series) {
    const std::string dash =
        kDashes[s.dash][0] ? fmt::format(R"( stroke-dasharray="{}")", kDashes[s.dash]) : "";
    o << fmt::format(
             R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"{}/>)",
             lx, ly, lx + 26, ly, kColours[s.colour], dash)
      << "\n";
    o << fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"/>)", lx + 13, ly,
                     kColours[s.colour])
      << "\n";
    o << fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)", lx + 34, ly + 4, esc(s.label))
      << "\n";
    ly += 20;
  }
  ly += 8;
  o << fmt::format(
           R"(<circle cx="{:.1f}" cy="{:.1f}" r="4.5" fill="#555"/><text x="{:.1f}" y="{:.1f}">tree (DDTree)</text>)",
           lx + 13, ly, lx + 34, ly + 4)
    << "\n";
  ly += 20;
  o << fmt::format(
           R"(<path d="M{:.1f},{:.1f}l7,7l-7,7l-7,-7z" fill="white" stroke="#555" stroke-width="2.5"/><text x="{:.1f}" y="{:.1f}">linear (DFlash)</text>)",
           lx + 13, ly - 7, lx + 34, ly + 4)
    << "\n";
  ly += 20;
  o << fmt::format(
           R"(<rect x="{:.1f}" y="{:.1f}" width="11" height="11" fill="#555"/><text x="{:.1f}" y="{:.1f}">autoregressive</text>)",
           lx + 7.5, ly - 5.5, lx + 34, ly + 4)
    << "\n";
  ly += 20;
  o << fmt::format(
           R"(<path d="M{:.1f},{:.1f}l10,10M{:.1f},{:.1f}l10,-10" stroke="#c00" stroke-width="2.5"/><text x="{:.1f}" y="{:.1f}">failed / skipped</text>)",
           lx + 8, ly - 5, lx + 8, ly + 5, lx + 34, ly + 4)
    << "\n";
  ly += 20;
  o << fmt::format(
           R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#888" stroke-dasharray="4,4"/><text x="{:.1f}" y="{:.1f}">1 = autoregressive</text>)",
           lx, ly, lx + 26, ly, lx + 34, ly + 4)
    << "\n";
  o << "</svg>\n";
  return o.str();
}

} // namespace specbench
