// Capture's symbolic-shape records as JSON, as `show --shapes --json`, `why --json` and the
// report print them (docs/capture-schema.md, "Capture's own events"). Private to replay/inspect.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/json_fields.h"
#include "dynrep/replay/query/symbol_table.h"

namespace dynrep::replay {

// A user frame, or null when none was recorded.
inline nlohmann::json frameJson(const UserFrame& f) {
  if (f.file.empty()) return nullptr;
  return {{"file", f.file}, {"line", f.line}, {"function", f.function}, {"code", f.code}};
}

inline nlohmann::json originJson(const SymbolOrigin& o) {
  return {{"symbol", o.symbol},
          {"unbacked", o.unbacked},
          {"phase", o.phase},
          {"op", o.op},
          {"node", o.node},
          {"source", o.source},
          {"value", o.value},
          {"user_frame", frameJson(o.userFrame)},
          {"attributed", o.attributed}};
}

inline nlohmann::json shapeGuardJson(const ShapeGuard& g) {
  return {{"expr", g.expr}, {"kind", g.kind}, {"symbols", g.symbols}, {"user_frame", frameJson(g.userFrame)}};
}

inline nlohmann::json failureJson(const Compile& c) {
  if (!c.failed) return nullptr;
  const CompileFailure& f = c.failure;
  return {{"type", f.type},      {"chain", f.chain},     {"kind", f.kind},
          {"expr", f.expr},      {"symbols", f.symbols}, {"user_frame", frameJson(f.userFrame)},
          {"message", f.message}};
}

inline nlohmann::json causeJson(const RecompileCause& r) {
  return {{"entry", r.entry}, {"guard", r.guard}, {"source", r.source}, {"expected", r.expected},
          {"seen", r.seen},   {"text", r.text},   {"from", r.from}};
}

// A value as capture wrote it (a symbol's value on a run): its JSON, or the text itself when it
// is no JSON.
inline nlohmann::json recordedValue(const std::string& text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? nlohmann::json(text) : value;
}

// A compile's call count, or null when capture did not count it (Compile::calls < 0).
inline nlohmann::json callsJson(const Compile& c) {
  return c.calls < 0 ? nlohmann::json(nullptr) : nlohmann::json(c.calls);
}

// A bound or hint as the symbol table holds it: a number, or text (int_oo).
inline nlohmann::json numberJson(const SymbolNumber& n) {
  switch (n.kind) {
    case SymbolNumber::Kind::Integer: return n.integer;
    case SymbolNumber::Kind::Real: return n.real;
    case SymbolNumber::Kind::Text: return n.text;
  }
  return nullptr;  // not reached: every kind is handled above
}

// "8", "2.5", "int_oo": a number as JSON prints it, text as it is.
inline std::string numberText(const SymbolNumber& n) {
  return n.kind == SymbolNumber::Kind::Text ? n.text : dumpJson(numberJson(n));
}

// A row of the symbol table as capture wrote it: {symbol, unbacked, range, source, hint,
// replaced_by}, the last four where recorded.
inline nlohmann::json symbolEntryJson(const SymbolEntry& e) {
  nlohmann::json row = {{"symbol", e.symbol}, {"unbacked", e.unbacked}};
  if (e.range) row["range"] = {numberJson(e.range->first), numberJson(e.range->second)};
  if (!e.source.empty()) row["source"] = e.source;
  if (e.hint) row["hint"] = numberJson(*e.hint);
  if (!e.replacedBy.empty()) row["replaced_by"] = e.replacedBy;
  return row;
}

// "[0, 8]", or "[?]" when the table recorded no range.
inline std::string rangeText(const SymbolEntry& e) {
  return e.range ? "[" + numberText(e.range->first) + ", " + numberText(e.range->second) + "]" : "[?]";
}

// The compile's symbol table for the reports that show it beside other facts (why, diff, the
// HTML report): empty when none was recorded, and when it cannot be read, which `show --shapes`
// says.
inline std::vector<SymbolEntry> symbolRows(const Job& job, const Compile& c) {
  Result<std::vector<SymbolEntry>> table = readSymbols(job, c);
  return table.isOk() ? std::move(*table) : std::vector<SymbolEntry>{};
}

// "[0, 8]" from a symbol's range in why's JSON: bounds are integers, floats or text (int_oo).
inline std::string rangeText(const nlohmann::json& entry) {
  const nlohmann::json range = arrayField(entry, "range");
  if (range.size() != 2) return "[?]";
  auto bound = [](const nlohmann::json& b) { return b.is_string() ? b.get<std::string>() : dumpJson(b); };
  return "[" + bound(range[0]) + ", " + bound(range[1]) + "]";
}

}  // namespace dynrep::replay
