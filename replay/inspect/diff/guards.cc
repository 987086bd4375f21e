// diff's guard comparison: two compiles' guard lists matched by subject and kind, and what moved
// inside a changed guard (a tensor's size, a constant, global state); then the symbol tables
// (final ranges) and capture's shape guards.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <regex>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "diff/model.h"
#include "dynrep/replay/query/guard_list.h"
#include "dynrep/replay/query/json_fields.h"
#include "provenance.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

// The first guard source a check names: L['x'].size()[0], G['scale'], L['self'].fc1.weight.
std::string firstSource(const std::string& code) {
  static const std::regex kSource(R"([LG]\[['"][^'"]*['"]\](?:\.[A-Za-z_]\w*(?:\(\))?|\[[^\]]*\])*)");
  std::smatch m;
  return std::regex_search(code, m, kSource) ? m.str() : "";
}

// ___check_obj_id(L['f'], 1406...) and ___check_type_id(...): the address is the process's.
std::string maskIds(const std::string& code) {
  static const std::regex kId(R"((___check_(?:obj|type)_id\(.*?, )\d+\))");
  return std::regex_replace(code, kId, "$1<id>)");
}

// Globals Dynamo installs are numbered by install order or named by an object's address and the
// compile id (output_graph.py install_global, install_global_by_id): G['__builtins_dict___2'].
// The number says nothing about what is checked, so compiles compare them without it.
std::string maskInstalledGlobals(const std::string& code) {
  static const std::regex kInstalled(R"((G\['__[^']*?)_\d+(?:_c[\d/_]+)?('\]))");
  return std::regex_replace(code, kInstalled, "$1_#$2");
}

std::optional<std::vector<GuardEntry>> guardList(const Job& job, const Compile& c, bool mask) {
  Result<std::vector<GuardListEntry>> list = readGuardList(job, c);
  if (!list.isOk()) return std::nullopt;
  std::vector<GuardEntry> out;
  for (const GuardListEntry& g : *list) {
    GuardEntry e;
    e.kind = g.kind;
    e.source = g.source;
    e.code = g.code;
    e.userCode = g.userCode;
    e.file = g.file;
    e.line = g.line;
    e.subject = maskInstalledGlobals(e.source.empty() ? firstSource(e.code) : e.source);
    e.norm = maskInstalledGlobals(mask ? maskIds(e.code) : e.code);
    out.push_back(std::move(e));
  }
  return out;
}

// A check of a constant: "L['factor'] == 2.0" (lhs, value).
const std::regex kEquals(R"(^(.+?) == (.+)$)");

// Splits "a, f(b, c), [d, e]" at the commas outside brackets and quotes.
std::vector<std::string> splitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (char ch : s) {
    if (quote) {
      quote = ch == quote ? 0 : quote;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
    } else if (ch == '(' || ch == '[' || ch == '{') {
      ++depth;
    } else if (ch == ')' || ch == ']' || ch == '}') {
      --depth;
    } else if (ch == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
      continue;
    }
    if (!cur.empty() || ch != ' ') cur += ch;
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

// TENSOR_MATCH's check, as torch/_dynamo/guards.py get_tensor_guard_code_part writes it:
// check_tensor(S, Tensor, DispatchKeySet(...), torch.float32, device=None, requires_grad=False,
// size=[8, None], stride=[1, 8]). Fields by name, size and stride split per dimension.
struct TensorCheck {
  std::map<std::string, std::string> fields;
  std::vector<std::string> size, stride;
};

std::optional<TensorCheck> tensorCheck(const std::string& code) {
  const std::string head = "check_tensor(";
  if (code.rfind(head, 0) != 0 || code.back() != ')') return std::nullopt;
  std::vector<std::string> args = splitTopLevel(code.substr(head.size(), code.size() - head.size() - 1));
  if (args.size() < 4) return std::nullopt;
  TensorCheck t;
  t.fields["type"] = args[1];
  t.fields["dispatch keys"] = args[2];
  t.fields["dtype"] = args[3];
  for (size_t i = 4; i < args.size(); ++i) {
    size_t eq = args[i].find('=');
    if (eq == std::string::npos) continue;
    std::string key = args[i].substr(0, eq), value = args[i].substr(eq + 1);
    if ((key == "size" || key == "stride") && value.size() >= 2 && value.front() == '[') {
      (key == "size" ? t.size : t.stride) = splitTopLevel(value.substr(1, value.size() - 2));
    } else {
      t.fields[key] = value;
    }
  }
  return t;
}

void tensorDetails(const std::string& s, const TensorCheck& a, const TensorCheck& b, std::vector<Change>* out) {
  const std::map<std::string, std::string> names = {{"type", "type(" + s + ")"},
                                                    {"dispatch keys", s + " dispatch keys"},
                                                    {"dtype", s + ".dtype"},
                                                    {"device", s + ".device"},
                                                    {"requires_grad", s + ".requires_grad"}};
  for (const auto& [key, va] : a.fields) {
    auto vb = b.fields.find(key);
    std::string name = names.count(key) ? names.at(key) : s + " " + key;
    if (vb == b.fields.end() || vb->second != va) out->push_back({name, va, vb == b.fields.end() ? "" : vb->second});
  }
  for (const auto& [list, label] :
       {std::pair{&TensorCheck::size, ".size()"}, std::pair{&TensorCheck::stride, ".stride()"}}) {
    const std::vector<std::string>&da = a.*list, &db = b.*list;
    if (da.size() != db.size()) {
      if (list == &TensorCheck::size)
        out->push_back({s + ".dim()", std::to_string(da.size()), std::to_string(db.size())});
      continue;
    }
    auto shown = [](const std::string& v) {
      return v == "None" ? std::string("dynamic") : v;
    };  // not checked: symbolic
    for (size_t i = 0; i < da.size(); ++i)
      if (da[i] != db[i]) out->push_back({fmt::format("{}{}[{}]", s, label, i), shown(da[i]), shown(db[i])});
  }
}

// GLOBAL_STATE: ___check_global_state() against {"grad_mode":true,...}: the keys that moved.
bool globalStateDetails(const std::string& a, const std::string& b, std::vector<Change>* out) {
  auto state = [](const std::string& code) {
    size_t at = code.find(" against ");
    return at == std::string::npos ? json() : json::parse(code.substr(at + 9), nullptr, false);
  };
  json sa = state(a), sb = state(b);
  if (!sa.is_object() || !sb.is_object()) return false;
  for (const auto& [key, value] : sa.items())
    if (!sb.contains(key) || sb[key] != value)
      out->push_back({"global state " + key, dumpJson(value), sb.contains(key) ? dumpJson(sb[key]) : ""});
  for (const auto& [key, value] : sb.items())
    if (!sa.contains(key)) out->push_back({"global state " + key, "", dumpJson(value)});
  return true;
}

std::vector<Change> guardDetails(const GuardEntry& a, const GuardEntry& b) {
  std::vector<Change> out;
  if (auto ta = tensorCheck(a.code), tb = tensorCheck(b.code); ta && tb) {
    tensorDetails(a.subject, *ta, *tb, &out);
    if (!out.empty()) return out;
  }
  if (a.kind == "GLOBAL_STATE" && globalStateDetails(a.code, b.code, &out) && !out.empty()) return out;
  // "X == V" on both sides: a constant Dynamo specialized on.
  std::smatch ma, mb;
  if (std::regex_match(a.code, ma, kEquals) && std::regex_match(b.code, mb, kEquals) && ma[1] == mb[1])
    return {{ma[1].str(), ma[2].str(), mb[2].str()}};
  return {{"guard on " + (a.subject.empty() ? a.kind : a.subject), a.code, b.code}};
}

// The symbol table's entries by what they stand for (an input's size; an unbacked symbol by
// name), as "s77 [2, int_oo]" (+ " = s3" when replaced); the symbol's own name is not compared.
std::map<std::string, std::pair<std::string, std::string>> symbolsBySource(const Job& job, const Compile& c) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const SymbolEntry& s : symbolRows(job, c)) {
    std::string facts = rangeText(s);
    if (!s.replacedBy.empty()) facts += " = " + s.replacedBy;
    out[s.source.empty() ? s.symbol : s.source] = {s.symbol, facts};
  }
  return out;
}

}  // namespace

GuardDiff compareGuards(const Job& ja, const Compile& a, const Job& jb, const Compile& b, bool mask) {
  GuardDiff d;
  auto la = guardList(ja, a, mask), lb = guardList(jb, b, mask);
  d.recorded = la && lb;
  if (d.recorded) {
    // Identical checks first; what is left pairs up by (kind, subject) in list order.
    std::vector<bool> usedB(lb->size(), false);
    std::vector<const GuardEntry*> restA;
    for (const GuardEntry& g : *la) {
      auto same = std::find_if(lb->begin(), lb->end(), [&](const GuardEntry& h) {
        return !usedB[&h - lb->data()] && h.kind == g.kind && h.subject == g.subject && h.norm == g.norm;
      });
      if (same == lb->end())
        restA.push_back(&g);
      else
        usedB[same - lb->begin()] = true;
    }
    // A constant's guard changes kind with its value (FALSE_MATCH x == False, TRUE_MATCH x == True).
    auto sameConstant = [](const GuardEntry& x, const GuardEntry& y) {
      std::smatch mx, my;
      return std::regex_match(x.code, mx, kEquals) && std::regex_match(y.code, my, kEquals) && mx[1] == my[1];
    };
    for (const GuardEntry* g : restA) {
      auto free = [&](const GuardEntry& h) { return !usedB[&h - lb->data()] && h.subject == g->subject; };
      auto pair =
          std::find_if(lb->begin(), lb->end(), [&](const GuardEntry& h) { return free(h) && h.kind == g->kind; });
      if (pair == lb->end())
        pair =
            std::find_if(lb->begin(), lb->end(), [&](const GuardEntry& h) { return free(h) && sameConstant(*g, h); });
      if (pair == lb->end()) {
        d.removed.push_back(*g);
        continue;
      }
      usedB[pair - lb->begin()] = true;
      d.changed.push_back({*g, *pair, guardDetails(*g, *pair)});
    }
    for (size_t i = 0; i < lb->size(); ++i)
      if (!usedB[i]) d.added.push_back((*lb)[i]);
  }
  auto sa = symbolsBySource(ja, a), sb = symbolsBySource(jb, b);
  for (const auto& [key, facts] : sa) {
    auto other = sb.find(key);
    if (other == sb.end())
      d.symbols.push_back({key, facts.first + " " + facts.second, ""});
    else if (other->second.second != facts.second)
      d.symbols.push_back({key, facts.first + " " + facts.second, other->second.first + " " + other->second.second});
  }
  for (const auto& [key, facts] : sb)
    if (!sa.count(key)) d.symbols.push_back({key, "", facts.first + " " + facts.second});
  // Capture's shape guards, as a multiset of (kind, expression).
  std::map<std::pair<std::string, std::string>, int> count;
  for (const ShapeGuard& g : a.shapeGuards) count[{g.kind, g.expr}]++;
  for (const ShapeGuard& g : b.shapeGuards) count[{g.kind, g.expr}]--;
  for (const auto& [key, n] : count)
    for (int i = 0; i < std::abs(n); ++i)
      d.shapeGuards.push_back({key.first, n > 0 ? key.second : "", n < 0 ? key.second : ""});
  return d;
}

}  // namespace dynrep::replay
