// Capture's symbolic-shape records as JSON, as `show --shapes --json`, `why --json` and the
// report print them (docs/capture-schema.md, "Capture's own events"). Private to replay/inspect.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/json_fields.h"

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

// A compile's call count, or null when capture did not count it (Compile::calls < 0).
inline nlohmann::json callsJson(const Compile& c) {
  return c.calls < 0 ? nlohmann::json(nullptr) : nlohmann::json(c.calls);
}

// The compile's symbol table with final ranges: [{symbol, unbacked, range, source, hint,
// replaced_by}], or an empty array when none was recorded or it cannot be read.
inline nlohmann::json symbolTable(const Job& job, const Compile& c) {
  if (c.symbolsKey.empty()) return nlohmann::json::array();
  nlohmann::json table = nlohmann::json::parse(job.text(c.symbolsKey), nullptr, false);
  return table.is_array() ? table : nlohmann::json::array();
}

// "[0, 8]" from a table entry's range: bounds are integers, floats or text (int_oo).
inline std::string rangeText(const nlohmann::json& entry) {
  const nlohmann::json range = arrayField(entry, "range");
  if (range.size() != 2) return "[?]";
  auto bound = [](const nlohmann::json& b) { return b.is_string() ? b.get<std::string>() : dumpJson(b); };
  return "[" + bound(range[0]) + ", " + bound(range[1]) + "]";
}

}  // namespace dynrep::replay
