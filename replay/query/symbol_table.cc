// readSymbols: the symbol table's JSON list into typed rows.
#include "dynrep/replay/query/symbol_table.h"

#include <nlohmann/json.hpp>

#include "dynrep/replay/query/json_fields.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

std::optional<SymbolNumber> number(const json& j) {
  SymbolNumber n;
  if (std::optional<int64_t> integer = as<int64_t>(j)) {
    n.integer = *integer;
    return n;
  }
  if (j.is_number_float()) {
    n.kind = SymbolNumber::Kind::Real, n.real = j.get<double>();
    return n;
  }
  if (j.is_string()) {
    n.kind = SymbolNumber::Kind::Text, n.text = j.get<std::string>();
    return n;
  }
  return std::nullopt;
}

SymbolEntry entry(const json& row) {
  SymbolEntry e;
  e.symbol = field(row, "symbol", "");
  e.unbacked = field(row, "unbacked", false);
  json range = arrayField(row, "range");
  std::optional<SymbolNumber> low = range.size() == 2 ? number(range[0]) : std::nullopt;
  std::optional<SymbolNumber> high = range.size() == 2 ? number(range[1]) : std::nullopt;
  if (low && high) e.range = std::pair(*low, *high);
  e.source = field(row, "source", "");
  if (auto hint = row.find("hint"); hint != row.end()) e.hint = number(*hint);
  e.replacedBy = field(row, "replaced_by", "");
  return e;
}

}  // namespace

Result<std::vector<SymbolEntry>> readSymbols(const Job& job, const Compile& compile) {
  std::vector<SymbolEntry> out;
  if (compile.symbolsKey.empty()) return out;
  Result<std::string> text = job.blob(compile.symbolsKey);
  if (!text.isOk())
    return Status::corruption("symbol table of compile " + compile.id.str() + ": " + text.status().message());
  json table = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!table.is_array()) return Status::corruption("symbol table of compile " + compile.id.str() + ": not a JSON list");
  for (const json& row : table)
    if (row.is_object() && row.contains("symbol") && row["symbol"].is_string()) out.push_back(entry(row));
  return out;
}

}  // namespace dynrep::replay
