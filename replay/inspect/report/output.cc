// The HTML report's page: one self-contained document (inline CSS, no scripts, no external
// resources): the job, its compile timeline and summary, then each compile's section
// (compile_section.cc). Everything read from the store is escaped (html::escape).
#include "report/output.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/capture/records.h"
#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "dynrep/replay/query/store_records.h"
#include "render.h"
#include "report/compile_section.h"
#include "report/html.h"
#include "timeline.h"
#include "why/model.h"
#include "why/output.h"

namespace dynrep::replay {

namespace {

using html::escape;
using nlohmann::json;
using report::anchor;
using report::statusClass;

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 4em;color:#1d1d1f}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ccc}h3{margin:0}
code,pre{font:12px/1.35 ui-monospace,monospace}pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:40em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}.compile{border:1px solid #ccc;border-radius:6px;padding:.8em 1em;margin:1.2em 0}
.status-ok{color:#17702e}.status-bad{color:#b3261e}.status-other{color:#8a6d00}
.none{color:#888}dl.kv{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:.3em 0}
dl.kv dt{font-weight:600}dl.kv dd{margin:0}.why{background:#fff8e6;border-left:4px solid #e0a800;padding:.4em .8em}
details{margin:.4em 0}.legend>span{margin-right:1em;white-space:nowrap}
.swatch{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:middle}summary{cursor:pointer;font-weight:600}svg text{font:11px system-ui,sans-serif}
)";

// The compile's bar in the timeline: green ok, yellow restarted or unfinished, red failed.
const char* barColor(const std::string& status) {
  std::string cls = statusClass(status);
  return cls == "status-ok" ? "#9ad0a8" : cls == "status-other" ? "#e6d28a" : "#e8a19b";
}

struct Header {
  std::string tool, createdAt, torch, commandLine;
};

Header readHeader(const StoreReader& reader) {
  Header h;
  std::optional<capture::Manifest> m = firstManifest(reader);
  if (!m) return h;
  h.tool = m->tool;
  h.createdAt = m->createdAt;
  if (auto it = m->environment.find("torch.version"); it != m->environment.end()) h.torch = it->second;
  for (const std::string& arg : m->commandLine) h.commandLine += (h.commandLine.empty() ? "" : " ") + arg;
  return h;
}

class ReportWriter {
 public:
  ReportWriter(const std::string& path, const StoreReader& reader, const Job& job, std::ostream& out)
      : path_(path), reader_(reader), job_(job), out_(out) {}

  void write() {
    timeline_ = buildTimeline(reader_, job_);
    why_ = whyAnswer();
    out_ << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         << "<meta name=\"viewport\" content=\"width=device-width\">"
         << "<title>dynamo-replay report: " << escape(baseName(path_)) << "</title><style>" << kStyle
         << "</style></head><body>\n";
    header();
    timelineSection();
    functionsSection();
    compileTable();
    out_ << "<h2 id=\"compiles\">Compiles</h2>\n";
    for (const Compile& c : job_.compiles()) report::writeCompileSection(out_, job_, c, why_);
    out_ << "</body></html>\n";
  }

 private:
  WhyAnswer whyAnswer() {
    try {
      return explainJob(job_);
    } catch (const std::exception& e) {
      whyError_ = e.what();
      return {};
    }
  }

  void header() {
    Header h = readHeader(reader_);
    size_t recompiles = 0;
    for (const Compile& c : job_.compiles()) recompiles += c.id.compile > 0 && c.id.attempt <= 0;
    out_ << "<h1>dynamo-replay report: " << escape(baseName(path_)) << "</h1>\n<dl class=\"kv\" id=\"job\">"
         << "<dt>store</dt><dd>" << escape(path_) << "</dd>"
         << "<dt>captured by</dt><dd>" << escape(h.tool.empty() ? "(no manifest)" : h.tool) << "</dd>"
         << "<dt>created</dt><dd>" << escape(h.createdAt) << "</dd>"
         << "<dt>torch</dt><dd>" << escape(h.torch) << "</dd>"
         << "<dt>command line</dt><dd><code>" << escape(h.commandLine) << "</code></dd>"
         << fmt::format("<dt>compiles</dt><dd>{} frames, {} compiles, {} recompiles</dd>", job_.frameCount(),
                        job_.compiles().size(), recompiles)
         << "</dl>\n";
  }

  // One row per track (a compile of a frame with its attempts): the compile's bar coloured by
  // status, its nested phases as thinner bars over it, one colour per phase name (legend
  // below), all on the job's wall clock. Titles give each bar's name and length on hover.
  void timelineSection() {
    out_ << "<h2 id=\"timeline\">Compile timeline</h2>\n";
    std::vector<const TimelineTrack*> rows;
    for (const TimelineTrack& t : timeline_.tracks)
      if (!t.slices.empty()) rows.push_back(&t);
    if (rows.empty() || !(timeline_.endUs > timeline_.beginUs)) {
      out_ << "<p class=\"none\">No timing recorded.</p>\n";
    } else {
      timelineChart(rows);
    }
    if (timeline_.notes.empty()) return;
    out_ << "<ul class=\"notes\">";
    for (const std::string& n : timeline_.notes) out_ << "<li>" << escape(n) << "</li>";
    out_ << "</ul>\n";
  }

  void timelineChart(const std::vector<const TimelineTrack*>& rows) {
    static const char* kPalette[] = {"#4a7fb5", "#e08a3c", "#6a9f58", "#a66bbe", "#d4a72c",
                                     "#4fa3a5", "#c0504d", "#8c7a5b", "#7f8fa6", "#b5651d"};
    constexpr int kDeepest = 6;  // phases nested deeper than this are in the Perfetto export only
    const double label = 230, width = 900, rowH = 22, top = 22;
    double span = timeline_.endUs - timeline_.beginUs;
    auto x = [&](double us) { return label + (us - timeline_.beginUs) / span * width; };
    std::map<std::string, const char*> colours;  // phase name -> colour, in order of first appearance
    std::vector<std::string> legend;
    out_ << fmt::format("<svg id=\"timeline-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">",
                        label + width + 10, top + rowH * double(rows.size()) + 4);
    for (int i = 0; i <= 5; ++i)
      out_ << fmt::format("<text x=\"{:.1f}\" y=\"12\">{:.2f} s</text>", label + width * i / 5 - (i == 5 ? 30 : 0),
                          span / 1e6 * i / 5);
    for (size_t r = 0; r < rows.size(); ++r) {
      const TimelineTrack& t = *rows[r];
      double y = top + rowH * double(r);
      std::string name = trackName(t) + (t.attempts.empty() ? "" : " " + t.attempts.front()->function);
      std::string href = t.attempts.empty() ? "#timeline" : "#" + anchor(t.attempts.front()->id);
      out_ << "<a href=\"" << escape(href) << "\"><text x=\"0\" y=\"" << y + 15 << "\">"
           << escape(name.size() > 34 ? name.substr(0, 33) + "…" : name) << "</text></a>";
      std::string status = t.attempts.empty() ? "ok" : t.attempts.back()->status;
      for (const TimelineSlice& s : t.slices) {
        if (s.depth > kDeepest) continue;
        bool compile = s.depth == 0 && t.frame >= 0;
        const char*& colour = colours[s.name];
        if (!colour && !compile) {
          colour = kPalette[legend.size() % std::size(kPalette)];
          legend.push_back(s.name);
        }
        double h = compile ? rowH - 4 : std::max(4.0, rowH - 6 - 2 * s.depth);
        double w = s.instant ? 1.5 : std::max(1.0, x(s.endUs) - x(s.beginUs));
        out_ << fmt::format(
                    "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\">",
                    compile ? "compile-bar" : "phase-bar", x(s.beginUs), y + (rowH - h) / 2, w, h,
                    compile ? barColor(status) : colour)
             << "<title>"
             << escape(s.instant ? s.name : fmt::format("{}: {:.3f} s", s.name, (s.endUs - s.beginUs) / 1e6))
             << "</title></rect>";
      }
    }
    out_ << "</svg>\n<p class=\"legend\">";
    for (const std::string& phase : legend)
      out_ << "<span><span class=\"swatch\" style=\"background:" << colours[phase] << "\"></span>" << escape(phase)
           << "</span> ";
    out_ << "</p>\n<p>Wall clock from the first compile event. Each row is one compile (green: ok, yellow: "
            "restarted, red: failed), with the phases PyTorch timed nested over it; "
            "<code>replay-inspect export --perfetto</code> has every one of them.</p>\n";
  }

  // The why-answer's per-function summaries (each compile's part is in its own section).
  void functionsSection() {
    out_ << "<h2 id=\"why\">Why it compiled</h2>\n";
    if (!whyError_.empty()) out_ << "<p class=\"status-bad\">The why-answer failed: " << escape(whyError_) << "</p>\n";
    if (why_.functions.empty()) {
      out_ << "<p class=\"none\">No explanation recorded for this job.</p>\n";
      return;
    }
    // As `replay-inspect why` prints them.
    out_ << "<div class=\"why\"><pre>" << escape(whyText(WhyAnswer{{}, why_.functions})) << "</pre></div>\n";
  }

  void compileTable() {
    std::vector<std::vector<std::string>> rows;
    out_ << "<h2 id=\"summary\">Summary</h2>\n<table id=\"compile-table\"><tr><th>compile</th><th>function</th>"
            "<th>location</th><th>status</th><th>reason</th><th>guards</th><th>graphs</th><th>calls</th></tr>";
    for (const Compile& c : job_.compiles()) {
      std::string graphs;
      for (const auto& [name, key] : c.graphs) graphs += (graphs.empty() ? "" : ", ") + name;
      out_ << "<tr><td><a href=\"#" << anchor(c.id) << "\">" << escape(c.id.str()) << "</a></td><td>"
           << escape(c.function) << "</td><td>" << escape(fmt::format("{}:{}", baseName(c.file), c.firstLine))
           << "</td><td class=\"" << statusClass(c.status) << "\">" << escape(firstLine(c.status)) << "</td><td>"
           << escape(firstLine(c.reason)) << "</td><td>" << c.guardCount << "</td><td>" << escape(graphs) << "</td><td>"
           << (c.calls < 0 ? std::string("") : std::to_string(c.calls)) << "</td></tr>";
    }
    out_ << "</table>\n";
  }

  const std::string& path_;
  const StoreReader& reader_;
  const Job& job_;
  std::ostream& out_;
  JobTimeline timeline_;
  WhyAnswer why_;
  std::string whyError_;
};

}  // namespace

void writeReportPage(const std::string& path, const StoreReader& reader, const Job& job, std::ostream& out) {
  ReportWriter(path, reader, job, out).write();
}

}  // namespace dynrep::replay
