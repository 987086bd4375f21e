// One compile's section of the HTML report (output.cc writes the page around it): its facts,
// its part of the why-answer, failure, recompile causes, graph breaks, guards, graphs and
// symbols. Everything read from the store is escaped (html::escape).
#include "report/compile_section.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dynrep/replay/query/guard_list.h"
#include "dynrep/replay/query/json_fields.h"
#include "provenance.h"
#include "render.h"
#include "report/html.h"
#include "why/output.h"

namespace dynrep::replay::report {

using html::escape;
using nlohmann::json;

std::string anchor(const capture::CompileId& id) { return fmt::format("c-{}-{}-{}", id.frame, id.compile, id.attempt); }

const char* statusClass(const std::string& status) {
  if (status == "ok") return "status-ok";
  if (status == "restarted" || status == "unfinished") return "status-other";
  return "status-bad";
}

namespace {

constexpr size_t kGraphTextLimit = 256 * 1024;  // per graph: a page stays quick to open

std::string userLine(const UserFrame& f) {
  if (f.file.empty()) return "";
  return fmt::format("{}:{}{}{}", f.file, f.line, f.function.empty() ? "" : " in " + f.function,
                     f.code.empty() ? "" : ": " + f.code);
}

// A table from rows of cells that are all store text (escaped here).
void table(std::ostream& out, const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
           const char* cls = "") {
  out << "<table class=\"" << cls << "\"><tr>";
  for (const std::string& h : head) out << "<th>" << escape(h) << "</th>";
  out << "</tr>";
  for (const auto& row : rows) {
    out << "<tr>";
    for (const std::string& cell : row) out << "<td>" << escape(cell) << "</td>";
    out << "</tr>";
  }
  out << "</table>";
}

class CompileSection {
 public:
  CompileSection(std::ostream& out, const Job& job, const WhyAnswer& why) : out_(out), job_(job), why_(why) {}

  void write(const Compile& c) {
    out_ << "<section class=\"compile\" id=\"" << anchor(c.id) << "\" data-compile=\"" << escape(c.id.str())
         << "\">\n<h3>" << escape(c.id.str()) << " " << escape(c.function) << "</h3>\n<dl class=\"kv\">"
         << "<dt>location</dt><dd>" << escape(fmt::format("{}:{}", c.file, c.firstLine)) << "</dd>"
         << "<dt>status</dt><dd class=\"" << statusClass(c.status) << "\">" << escape(c.status) << "</dd>"
         << "<dt>reason</dt><dd>" << escape(c.reason) << "</dd>"
         << "<dt>guards</dt><dd>" << c.guardCount << "</dd>";
    if (c.calls >= 0) out_ << "<dt>calls</dt><dd>" << c.calls << "</dd>";
    if (!c.phaseSeconds.empty()) {
      std::string phases;
      for (const auto& [phase, s] : c.phaseSeconds)
        phases += fmt::format("{}{} {:.3f} s", phases.empty() ? "" : ", ", phase, s);
      out_ << "<dt>phases</dt><dd>" << escape(phases) << "</dd>";
    }
    if (!c.notSaved.empty()) out_ << "<dt>not saved</dt><dd>" << escape(c.notSaved) << "</dd>";
    if (!c.unreadable.empty()) out_ << "<dt>unreadable</dt><dd>" << escape(unreadableText(c)) << "</dd>";
    out_ << "</dl>\n";
    whyOf(c);
    failure(c);
    recompileCauses(c);
    graphBreaks(c);
    guards(c);
    graphs(c);
    symbols(c);
    out_ << "</section>\n";
  }

  void whyOf(const Compile& c) {
    for (const CompileAnswer& entry : why_.compiles) {
      if (entry.compileId != c.id.str()) continue;
      out_ << "<div class=\"why\"><h4>Why</h4><pre>" << escape(whyText(WhyAnswer{{entry}, {}})) << "</pre>";
      out_ << "</div>\n";
    }
  }

  void failure(const Compile& c) {
    if (!c.failed) return;
    const CompileFailure& f = c.failure;
    std::string chain;
    for (const std::string& t : f.chain) chain += (chain.empty() ? "" : " ← ") + t;
    out_ << "<h4>Failure</h4><dl class=\"kv failure\"><dt>type</dt><dd>" << escape(f.type) << "</dd><dt>chain</dt><dd>"
         << escape(chain) << "</dd><dt>expression</dt><dd><code>" << escape(f.expr)
         << "</code></dd><dt>symbols</dt><dd>" << escape(fmt::format("{}", fmt::join(f.symbols, ", ")))
         << "</dd><dt>user line</dt><dd>" << escape(userLine(f.userFrame)) << "</dd><dt>message</dt><dd>"
         << escape(f.message) << "</dd></dl>\n";
  }

  void recompileCauses(const Compile& c) {
    if (c.recompileCauses.empty()) return;
    std::vector<std::vector<std::string>> rows;
    for (const RecompileCause& r : c.recompileCauses)
      rows.push_back({r.entry, r.guard, r.source, r.expected, r.seen, r.text});
    out_ << "<h4>Recompile causes</h4>";
    table(out_, {"entry", "failed guard", "source", "expected", "seen", "PyTorch's reason"}, rows, "causes");
  }

  void graphBreaks(const Compile& c) {
    if (c.graphBreaks.empty()) return;
    out_ << "<details class=\"graph-breaks\" open><summary>Graph breaks (" << c.graphBreaks.size() << ")</summary>";
    for (const std::string& b : c.graphBreaks) out_ << "<pre>" << escape(b) << "</pre>";
    out_ << "</details>\n";
  }

  void guards(const Compile& c) {
    Result<std::vector<GuardListEntry>> list = readGuardList(job_, c);
    out_ << "<details class=\"guards\"><summary>Guards (" << c.guardCount << ")</summary>";
    if (list.isOk()) {
      std::vector<std::vector<std::string>> rows;
      for (const GuardListEntry& g : *list) {
        std::string where = g.file;
        if (g.line) where += fmt::format(":{}", g.line);
        if (!g.function.empty()) where += " in " + g.function;
        rows.push_back({g.kind, g.source, g.code, where});
      }
      table(out_, {"kind", "source", "guard", "added at"}, rows, "guard-list");
    } else if (!c.guardTreeKey.empty()) {
      out_ << "<pre>" << escape(shownText(job_.text(c.guardTreeKey))) << "</pre>";
    } else {
      out_ << "<p class=\"none\">No guards recorded.</p>";
    }
    if (!c.dropped.empty()) {
      std::vector<std::vector<std::string>> rows;
      for (const DroppedGuard& d : c.dropped)
        rows.push_back({d.kind, d.source, d.value, d.line, d.risky ? "yes" : "no"});
      out_ << "<details><summary>Left out of PyTorch's saved frame (" << c.dropped.size() << ")</summary>";
      table(out_, {"kind", "source", "value", "line", "re-checked by replay"}, rows, "dropped");
      out_ << "</details>";
    }
    out_ << "</details>\n";
  }

  void graphs(const Compile& c) {
    if (c.graphs.empty()) return;
    out_ << "<details class=\"graphs\"><summary>Graphs (" << c.graphs.size() << ")</summary>";
    for (const auto& [name, key] : c.graphs) {
      std::string text = shownText(job_.text(key));
      size_t more = text.size() > kGraphTextLimit ? text.size() - kGraphTextLimit : 0;
      if (more) text.resize(kGraphTextLimit);
      out_ << "<details class=\"graph\" data-graph=\"" << escape(name) << "\"><summary>" << escape(name)
           << "</summary><pre>" << escape(text) << "</pre>";
      if (more)
        out_ << "<p class=\"none\">" << more << " more bytes: <code>replay-inspect show --graph " << escape(c.id.str())
             << "</code></p>";
      out_ << "</details>";
    }
    out_ << "</details>\n";
  }

  // Final ranges with each symbol's origin, then the guards and asserts on symbols, then
  // PyTorch's own shape events.
  void symbols(const Compile& c) {
    std::vector<SymbolEntry> finalRanges = symbolRows(job_, c);
    if (finalRanges.empty() && c.origins.empty() && c.shapeGuards.empty() && c.shapes.empty()) return;
    out_ << "<details class=\"symbols\" open><summary>Symbols (" << finalRanges.size() << ")</summary>";
    std::vector<std::vector<std::string>> rows;
    for (const SymbolEntry& entry : finalRanges) {
      const std::string& symbol = entry.symbol;
      std::vector<std::string> row = {symbol,
                                      entry.unbacked ? "unbacked" : "backed",
                                      rangeText(entry),
                                      entry.source,
                                      entry.hint ? numberText(*entry.hint) : "",
                                      entry.replacedBy,
                                      "",
                                      ""};
      for (const SymbolOrigin& o : c.origins)
        if (o.symbol == symbol) {
          row[6] = o.op.empty() ? o.phase : o.op + " (" + o.phase + ")";
          row[7] = userLine(o.userFrame);
          break;
        }
      if (row[7].empty())  // no origin event: PyTorch's creation event and its innermost user frame
        for (const ShapeEvent& e : c.shapes)
          if (e.symbol == symbol && e.event.rfind("create_", 0) == 0 && !e.userStack.empty()) {
            row[7] = userLine(e.userStack.back());
            break;
          }
      rows.push_back(std::move(row));
    }
    if (!rows.empty())
      table(out_, {"symbol", "kind", "final range", "source", "hint", "replaced by", "made by", "user line"}, rows,
            "symbol-table");
    if (!c.origins.empty()) {
      rows.clear();
      for (const SymbolOrigin& o : c.origins)
        rows.push_back({o.symbol, o.phase, o.op, o.node, o.source, o.value, userLine(o.userFrame), o.attributed});
      out_ << "<h4>Where each symbol was made</h4>";
      table(out_, {"symbol", "phase", "operator", "node", "source", "value", "user line", "line from"}, rows,
            "origins");
    }
    if (!c.shapeGuards.empty()) {
      rows.clear();
      for (const ShapeGuard& g : c.shapeGuards)
        rows.push_back({g.expr, g.kind, fmt::format("{}", fmt::join(g.symbols, ", ")), userLine(g.userFrame)});
      out_ << "<h4>Guards and asserts on symbols, in order</h4>";
      table(out_, {"expression", "kind", "symbols", "user line"}, rows, "shape-guards");
    }
    if (!c.shapes.empty()) {
      rows.clear();
      for (const ShapeEvent& e : c.shapes)
        rows.push_back({e.event, e.symbol, e.valueRange, e.source, e.expr, e.value,
                        e.userStack.empty() ? "" : userLine(e.userStack.back())});
      out_ << "<details><summary>PyTorch's shape events (" << c.shapes.size() << ")</summary>";
      table(out_, {"event", "symbol", "range", "source", "expression", "value", "user line"}, rows, "shape-events");
      out_ << "</details>";
    }
    out_ << "</details>\n";
  }

  std::ostream& out_;
  const Job& job_;
  const WhyAnswer& why_;
};

}  // namespace

void writeCompileSection(std::ostream& out, const Job& job, const Compile& c, const WhyAnswer& why) {
  CompileSection(out, job, why).write(c);
}

}  // namespace dynrep::replay::report
