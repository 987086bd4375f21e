// diff's rendering: the answer paragraph (what moved, most telling first: a guarded value, a
// symbol, a guard, the compile's status, a setting, the environment, then the graphs), then
// one section per comparison, as text or JSON.
#include "diff/output.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "dynrep/replay/query/json_fields.h"
#include "render.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

constexpr size_t kCausesShown = 5;  // per compile in the answer; the sections list every one
constexpr size_t kPairsShown = 3;   // compiles the answer names between stores

std::string shown(const std::string& v) { return v.empty() ? "(none)" : v; }

// "L['x'].size()[0] was 8, now 16"; a whole guard's check is quoted.
std::string wasNow(const std::string& what, const std::string& a, const std::string& b) {
  auto value = [&](const std::string& v) {
    if (v.empty()) return std::string("unset");
    return what.rfind("guard on ", 0) == 0 ? "`" + v + "`" : v;
  };
  return fmt::format("{} was {}, now {}", what, value(a), value(b));
}

// A guard in one phrase: its check, or its kind and subject when the check is long.
std::string brief(const GuardEntry& g) {
  return g.code.size() <= 80 ? g.code : fmt::format("{} on {}", g.kind, g.subject.empty() ? "(root)" : g.subject);
}

// Guards the answer counts together: those on one submodule (L['self']._modules['fc'] and all
// below it, its parameters included), else those on one subject.
std::string guardGroup(const std::string& subject) {
  const std::string modules = "._modules[";
  size_t at = subject.find(modules);
  size_t end = at == std::string::npos ? std::string::npos : subject.find(']', at + modules.size());
  return end == std::string::npos ? subject : subject.substr(0, end + 1);
}

// What moved between the two compiles, as phrases, most telling first.
std::vector<std::string> causes(const PairDiff& p) {
  std::vector<std::string> out;
  std::map<std::string, std::string> gained, lost;  // source -> symbol one side has for it: "s77 [2, int_oo]"
  for (const Change& s : p.guards.symbols) {
    if (s.a.empty()) gained[s.what] = s.b;
    if (s.b.empty()) lost[s.what] = s.a;
  }
  std::set<std::string> told;  // subjects a phrase already covers
  auto nowDynamic = [&](const std::string& what, const std::string& was) {
    auto symbol = gained.find(what);
    out.push_back(
        fmt::format("{} was {}, now dynamic{}", what, was, symbol == gained.end() ? "" : " (" + symbol->second + ")"));
    told.insert(what);
  };
  for (const GuardChange& g : p.guards.changed) {
    // A tensor's strides follow its sizes: when a size moved, the strides add nothing.
    bool sizeMoved = std::any_of(g.details.begin(), g.details.end(),
                                 [](const Change& d) { return d.what.find(".size()[") != std::string::npos; });
    for (const Change& d : g.details) {
      if (sizeMoved && d.what.find(".stride()[") != std::string::npos) continue;
      if (d.b == "dynamic")
        nowDynamic(d.what, d.a);
      else if (d.a == "dynamic") {
        auto symbol = lost.find(d.what);
        out.push_back(fmt::format("{} was dynamic{}, now {}", d.what,
                                  symbol == lost.end() ? "" : " (" + symbol->second + ")", d.b));
        told.insert(d.what);
      } else
        out.push_back(wasNow(d.what, d.a, d.b));
    }
    told.insert(g.a.subject);
  }
  // A constant Dynamo had specialized on (L['factor'] == 2.0) that B traces as a symbol.
  static const std::regex kEquals(R"(^(.+?) == (.+)$)");
  for (const GuardEntry& g : p.guards.removed) {
    std::smatch m;
    if (std::regex_match(g.code, m, kEquals) && gained.count(m[1].str()) && !told.count(m[1].str()))
      nowDynamic(m[1].str(), m[2].str());
  }
  for (const Change& s : p.guards.symbols) {
    if (told.count(s.what)) continue;
    if (s.a.empty())
      out.push_back(fmt::format("{} is now symbolic ({})", s.what, s.b));
    else if (s.b.empty())
      out.push_back(fmt::format("{} is no longer symbolic (was {})", s.what, s.a));
    else
      out.push_back(wasNow(s.what, s.a, s.b));
    told.insert(s.what);
  }
  // Guards on a subject a phrase names (a size that went dynamic gains a range guard) add nothing.
  auto toldOf = [&](const GuardEntry& g) {
    return std::any_of(told.begin(), told.end(),
                       [&](const std::string& t) { return !t.empty() && g.subject.rfind(t, 0) == 0; });
  };
  for (const auto& [list, single, many] :
       {std::tuple{&p.guards.removed, "guard `{}` is gone", "{} guards on {} are gone"},
        std::tuple{&p.guards.added, "new guard `{}`", "{} new guards on {}"}}) {
    std::vector<std::pair<std::string, std::vector<const GuardEntry*>>> groups;
    for (const GuardEntry& g : *list) {
      if (toldOf(g)) continue;
      std::string key = guardGroup(g.subject);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == key; });
      if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
      it->second.push_back(&g);
    }
    for (const auto& [key, members] : groups)
      out.push_back(members.size() == 1 || key.empty() ? fmt::format(fmt::runtime(single), brief(*members[0]))
                                                       : fmt::format(fmt::runtime(many), members.size(), key));
  }
  if (out.empty())
    for (const Change& s : p.guards.shapeGuards)
      out.push_back(s.a.empty() ? fmt::format("new {} `{}`", s.what, s.b)
                                : fmt::format("{} `{}` is gone", s.what, s.a));
  for (const Change& c : p.compile)
    out.push_back(c.what == "graph break"
                      ? fmt::format("graph break {}: {}", c.a.empty() ? "new" : "gone", shown(c.a + c.b))
                      : wasNow(c.what, c.a, c.b));
  for (const Change& c : p.settings) out.push_back("setting " + wasNow(c.what, c.a, c.b));
  if (out.empty())
    for (const GraphDiff& g : p.graphs) {
      if (!g.onlyIn.empty()) out.push_back(fmt::format("graph {} only in {}", g.graph, g.onlyIn == "a" ? "A" : "B"));
      for (const auto* list : {&g.inputs, &g.operators, &g.outputs})
        for (const Change& c : *list)
          out.push_back(fmt::format("{} {} was {}, now {}", g.graph, c.what, shown(c.a), shown(c.b)));
    }
  return out;
}

std::string joinCauses(const std::vector<std::string>& list) {
  std::string text;
  for (size_t i = 0; i < list.size() && i < kCausesShown; ++i) text += (i ? "; " : "") + list[i];
  if (list.size() > kCausesShown) text += fmt::format("; and {} more (below)", list.size() - kCausesShown);
  return text;
}

std::string where(const Compile& c) {
  return fmt::format("{} {} ({}:{})", c.function, c.id.str(), baseName(c.file), c.firstLine);
}

std::string answerForCompiles(const PairDiff& p) {
  const Compile &a = *p.a, &b = *p.b;
  bool again = a.id.frame == b.id.frame && a.id < b.id;
  std::vector<std::string> list = causes(p);
  std::string text =
      list.empty() ? fmt::format("{} and {} do not differ in guards, graphs or settings", b.id.str(), a.id.str())
                   : fmt::format("{} {}: {}", b.id.str(),
                                 again ? "compiled again because" : "differs from " + a.id.str(), joinCauses(list));
  std::string reasons;
  for (const std::string& r : p.pytorchReasons) reasons += (reasons.empty() ? "" : "; ") + r;
  return text + (reasons.empty() ? "" : ". PyTorch's reason: " + reasons) + ".";
}

// A rank's side store is STORE.rank-K beside rank 0's STORE (python/dynamo_replay/ranks.py): the
// rank K it belongs to, or "" for two stores of any other names.
std::string sideStoreRank(const DiffReport& r) {
  static const std::regex kSide(R"(\.rank-(\d+)$)");
  std::smatch m;
  if (!std::regex_search(r.pathB, m, kSide) || r.pathB.substr(0, m.position(0)) != r.pathA) return "";
  return m[1].str();
}

std::string answerForStores(const DiffReport& r) {
  if (r.same())
    return fmt::format("No differences: every compile in {} pairs with one in {} with the same guards, graphs and "
                       "settings, and the environments match.",
                       r.pathB, r.pathA);
  std::vector<std::string> sentences, job;
  for (const Change& c : r.settings) job.push_back("setting " + wasNow(c.what, c.a, c.b));
  for (const Change& c : r.environment) job.push_back(wasNow(c.what, c.a, c.b));
  if (!job.empty())
    sentences.push_back(fmt::format("{} was captured in another setting or environment: {}", r.pathB, joinCauses(job)));
  size_t named = 0;
  std::string rank = sideStoreRank(r);
  // A side store is said as its rank; "was" is then rank 0's value and "now" rank K's.
  std::string lead =
      rank.empty() ? "In " + r.pathB + ", "
                   : fmt::format("Rank {0} compiles differently from rank 0 (was: rank 0, now: rank {0}): ", rank);
  for (const PairDiff& p : r.pairs) {
    std::vector<std::string> list = causes(p);
    if (list.empty() || ++named > kPairsShown) continue;
    sentences.push_back(fmt::format("{}{}{}: {}", named == 1 ? lead : "", where(*p.b),
                                    rank.empty() ? " compiled again because" : "", joinCauses(list)));
  }
  if (named > kPairsShown) sentences.push_back(fmt::format("{} more compiles differ (below)", named - kPairsShown));
  for (const auto& [list, self, other] :
       {std::tuple{&r.onlyB, r.pathB, r.pathA}, std::tuple{&r.onlyA, r.pathA, r.pathB}}) {
    if (list->empty()) continue;
    std::string names;
    for (const Compile* c : *list) names += (names.empty() ? "" : ", ") + where(*c);
    sentences.push_back(fmt::format("Only in {} ({} has no partner): {}", self, other, names));
  }
  std::string text;
  for (const std::string& s : sentences) text += (text.empty() ? "" : " ") + s + ".";
  return text;
}

// --- text ---

void printChanges(std::ostream& out, const std::string& indent, const std::vector<Change>& list) {
  for (const Change& c : list) fmt::print(out, "{}{}: {} -> {}\n", indent, c.what, shown(c.a), shown(c.b));
}

void printGuard(std::ostream& out, const InspectOptions& o, const char* mark, const char* ansi, const GuardEntry& g) {
  std::string at = g.file.empty() ? "" : fmt::format("  ({}:{})", g.file, g.line);
  fmt::print(out, "    {} {} {}{}\n", paint(o, ansi, mark), g.kind, g.code, at);
}

void printPair(const PairDiff& p, const DiffReport& r, const InspectOptions& o, std::ostream& out) {
  const Compile &a = *p.a, &b = *p.b;
  fmt::print(out, "\n{}\n",
             paint(o, "1",
                   fmt::format("compile {} -> {}: {} at {}:{}{}", a.id.str(), b.id.str(), b.function, b.file,
                               b.firstLine, p.empty() ? ": same" : "")));
  for (const std::string& reason : p.pytorchReasons) fmt::print(out, "  PyTorch's reason: {}\n", reason);
  if (!p.compile.empty()) {
    fmt::print(out, "  compile:\n");
    printChanges(out, "    ", p.compile);
  }
  const GuardDiff& g = p.guards;
  if (!g.recorded) fmt::print(out, "  guards: not recorded (a store from before capture kept guard lists)\n");
  if (g.recorded && (g.added.size() + g.removed.size() + g.changed.size()))
    fmt::print(out, "  guards: {} changed, {} added, {} removed\n", g.changed.size(), g.added.size(), g.removed.size());
  for (const GuardChange& c : g.changed) {
    std::string at = c.b.file.empty() ? "" : fmt::format("  ({}:{})", c.b.file, c.b.line);
    fmt::print(out, "    {} {} {}{}\n", paint(o, "33", "changed"), c.a.kind,
               c.a.subject.empty() ? "(root)" : c.a.subject, at);
    printChanges(out, "      ", c.details);
  }
  for (const GuardEntry& e : g.added) printGuard(out, o, "added  ", "32", e);
  for (const GuardEntry& e : g.removed) printGuard(out, o, "removed", "31", e);
  if (!g.symbols.empty()) {
    fmt::print(out, "  symbols (final ranges):\n");
    printChanges(out, "    ", g.symbols);
  }
  if (!g.shapeGuards.empty()) {
    fmt::print(out, "  shape guards and asserts in one compile only:\n");
    for (const Change& c : g.shapeGuards)
      fmt::print(out, "    {} {} {}\n", c.a.empty() ? "added  " : "removed", c.what, c.a + c.b);
  }
  for (const GraphDiff& d : p.graphs) {
    if (!d.onlyIn.empty()) {
      fmt::print(out, "  graph {}: only in {}\n", d.graph,
                 d.onlyIn == "a" ? r.pathA + " " + a.id.str() : r.pathB + " " + b.id.str());
      continue;
    }
    fmt::print(out, "  graph {}:\n", d.graph);
    if (!d.nodes.what.empty()) printChanges(out, "    ", {d.nodes});
    for (const Change& c : d.operators) fmt::print(out, "    operator {}: {} -> {}\n", c.what, c.a, c.b);
    for (const Change& c : d.inputs) fmt::print(out, "    input {}: {} -> {}\n", c.what, shown(c.a), shown(c.b));
    printChanges(out, "    ", d.outputs);
    for (const Change& c : d.scopes)
      fmt::print(out, "    module scope {}: {}\n", c.what, c.a.empty() ? "only in B" : "only in A");
  }
  if (!p.settings.empty()) {
    fmt::print(out, "  settings at compile time:\n");
    printChanges(out, "    ", p.settings);
  }
}

std::string words(const std::vector<std::string>& list) {
  std::string text;
  for (const std::string& w : list) text += (text.empty() ? "" : " ") + w;
  return text;
}

void printText(const DiffReport& r, const InspectOptions& o, std::ostream& out) {
  fmt::print(out, "{}\n\n", r.betweenStores ? answerForStores(r) : answerForCompiles(r.pairs[0]));
  if (!r.betweenStores) {
    fmt::print(out, "A: {} {}\nB: {} {}\n", r.pathA, where(*r.pairs[0].a), r.pathB, where(*r.pairs[0].b));
  } else {
    fmt::print(out, "A: {}\nB: {}\n", r.pathA, r.pathB);
    if (!r.manifests) fmt::print(out, "environment and settings: not compared (a store has no manifest)\n");
    for (const auto& [label, list, n] : {std::tuple{"environment", &r.environment, r.environmentEntries},
                                         std::tuple{"settings", &r.settings, r.settingEntries}}) {
      if (!r.manifests) break;
      if (list->empty())
        fmt::print(out, "{}: same ({} entries)\n", label, n);
      else
        fmt::print(out, "{}: {} differ\n", label, list->size());
      printChanges(out, "  ", *list);
    }
    if (r.commandLineA != r.commandLineB)
      fmt::print(out, "command line (not compared): {} -> {}\n", words(r.commandLineA), words(r.commandLineB));
    size_t same = std::count_if(r.pairs.begin(), r.pairs.end(), [](const PairDiff& p) { return p.empty(); });
    fmt::print(out, "compiles: {} paired ({} same), {} only in A, {} only in B\n", r.pairs.size(), same, r.onlyA.size(),
               r.onlyB.size());
    for (const Compile* c : r.onlyA) fmt::print(out, "  only in A: {}\n", where(*c));
    for (const Compile* c : r.onlyB) fmt::print(out, "  only in B: {}\n", where(*c));
  }
  for (const PairDiff& p : r.pairs) printPair(p, r, o, out);
}

// --- JSON ---

json text(const std::string& s) { return s.empty() ? json() : json(s); }

json changes(const std::vector<Change>& list) {
  json rows = json::array();
  for (const Change& c : list) rows.push_back({{"what", c.what}, {"a", text(c.a)}, {"b", text(c.b)}});
  return rows;
}

json guardJson(const GuardEntry& g) {
  return {{"kind", g.kind},          {"source", g.source}, {"subject", g.subject}, {"code", g.code},
          {"user_code", g.userCode}, {"file", g.file},     {"line", g.line}};
}

json compileJson(const Compile& c) {
  return {{"compile_id", c.id.str()}, {"function", c.function}, {"file", c.file},
          {"line", c.firstLine},      {"status", c.status},     {"reason", c.reason}};
}

json pairJson(const PairDiff& p) {
  const GuardDiff& g = p.guards;
  json added = json::array(), removed = json::array(), changed = json::array(), graphs = json::array();
  for (const GuardEntry& e : g.added) added.push_back(guardJson(e));
  for (const GuardEntry& e : g.removed) removed.push_back(guardJson(e));
  for (const GuardChange& c : g.changed)
    changed.push_back({{"kind", c.a.kind},
                       {"subject", c.a.subject},
                       {"a", guardJson(c.a)},
                       {"b", guardJson(c.b)},
                       {"details", changes(c.details)}});
  for (const GraphDiff& d : p.graphs)
    graphs.push_back({{"graph", d.graph},
                      {"only_in", text(d.onlyIn)},
                      {"nodes", d.nodes.what.empty() ? json() : changes({d.nodes})[0]},
                      {"operators", changes(d.operators)},
                      {"inputs", changes(d.inputs)},
                      {"outputs", changes(d.outputs)},
                      {"scopes", changes(d.scopes)}});
  return {{"a", compileJson(*p.a)},
          {"b", compileJson(*p.b)},
          {"same", p.empty()},
          {"causes", causes(p)},
          {"pytorch_reasons", p.pytorchReasons},
          {"compile", changes(p.compile)},
          {"guards",
           {{"recorded", g.recorded},
            {"added", added},
            {"removed", removed},
            {"changed", changed},
            {"symbols", changes(g.symbols)},
            {"shape_guards", changes(g.shapeGuards)}}},
          {"graphs", graphs},
          {"settings", changes(p.settings)}};
}

void printJson(const DiffReport& r, std::ostream& out) {
  json pairs = json::array(), onlyA = json::array(), onlyB = json::array();
  for (const PairDiff& p : r.pairs) pairs.push_back(pairJson(p));
  for (const Compile* c : r.onlyA) onlyA.push_back(compileJson(*c));
  for (const Compile* c : r.onlyB) onlyB.push_back(compileJson(*c));
  json j = {{"a", r.pathA},
            {"b", r.pathB},
            {"between_stores", r.betweenStores},
            {"same", r.same()},
            {"answer", r.betweenStores ? answerForStores(r) : answerForCompiles(r.pairs[0])},
            {"pairs", pairs}};
  if (r.betweenStores) {
    j["environment"] = {
        {"compared", r.manifests}, {"entries", r.environmentEntries}, {"changes", changes(r.environment)}};
    j["settings"] = {{"compared", r.manifests}, {"entries", r.settingEntries}, {"changes", changes(r.settings)}};
    j["command_line"] = {{"a", r.commandLineA}, {"b", r.commandLineB}};
    j["only_in_a"] = onlyA;
    j["only_in_b"] = onlyB;
  }
  out << dumpJson(j, 2) << "\n";
}

}  // namespace

int renderDiff(const DiffReport& r, const InspectOptions& o, std::ostream& out) {
  if (o.json)
    printJson(r, out);
  else
    printText(r, o, out);
  return r.same() ? 0 : 1;
}

}  // namespace dynrep::replay
