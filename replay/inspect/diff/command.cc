// replay-inspect diff: two compiles of one store, or two stores of the same job, compared in
// guards, graphs, settings and environment, led by one paragraph that answers "why did this
// compile again?". Exit 0 no differences, 1 differences, 2 trouble (diff(1)'s convention).
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "diff/model.h"
#include "diff/output.h"
#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "render.h"

namespace dynrep::replay {

namespace {

// One store, opened, with what diff reads beside its compiles.
struct Side {
  std::string path;
  OpenedJob opened;
  std::map<capture::CompileId, Settings> settings;
  JobFacts facts;
  const Job& job() const { return opened.job; }
};

Status trouble(const std::string& message) { return Status::invalidArgument(message); }

// Damage in what diff reads (trace events, code objects, the manifest; each compile's guard
// list, symbol table and graph IR) is trouble: the first is returned. Damage elsewhere (an
// artifact, a kernel) does not change the comparison; it is a warning on the report.
std::string damage(const StoreReader& reader, const Job& job, Report& report) {
  auto warn = [&](const std::string& what) {
    std::string where = what.find(reader.path()) == std::string::npos ? reader.path() + ": " : "";
    report.notes.push_back({ReportNote::Level::Warning, where + what + " (diff does not read it)"});
  };
  for (size_t i = 0; i < reader.recordCount(); ++i) {
    Result<std::string_view> p = reader.recordPayload(i);
    if (p.isOk()) continue;
    auto kind = capture::RecordKind(reader.recordKind(i));
    if (kind == capture::RecordKind::TraceEvent || kind == capture::RecordKind::CodeObject ||
        kind == capture::RecordKind::Manifest)
      return p.status().message();
    warn(p.status().message());
  }
  std::map<std::string, std::string> read;  // blob key -> what diff reads it as
  for (const Compile& c : job.compiles()) {
    read[c.guardListKey] = fmt::format("compile {}: guard list", c.id.str());
    read[c.symbolsKey] = fmt::format("compile {}: symbol table", c.id.str());
    for (const auto& [graph, key] : c.graphIrs)
      read[key] = fmt::format("compile {}: graph IR of {}", c.id.str(), graph);
  }
  read.erase("");
  for (const auto& [key, what] : read) {
    std::optional<BlobKey> k = BlobKey::fromHex(key);
    if (!k || !reader.findBlob(*k)) return fmt::format("{}: blob {} is missing", what, key);
  }
  for (const BlobInfo& blob : reader.blobs()) {
    Result<CheckedBlob> checked = reader.checkBlob(blob.key);
    if (checked.isOk()) continue;
    auto it = read.find(blob.key.hex());
    if (it != read.end()) return it->second + ": " + checked.status().message();
    warn(checked.status().message());
  }
  return "";
}

Result<Side> openSide(const std::string& path, Report& report) {
  Result<OpenedJob> opened = openJob(path);
  if (!opened.isOk()) {
    std::string message = opened.status().message();
    return trouble(message.find(path) == std::string::npos ? path + ": " + message : message);
  }
  Side s{path, std::move(*opened), {}, {}};
  if (std::string problem = damage(*s.opened.reader, s.job(), report); !problem.empty())
    return trouble(problem.find(path) == std::string::npos ? path + ": " + problem : problem);
  noteUnfinished(*s.opened.reader, report);
  s.settings = compileSettings(*s.opened.reader);
  s.facts = jobFacts(*s.opened.reader);
  return s;
}

Report rendered(const DiffReport& r, const InspectOptions& o, Report report) {
  std::ostringstream out;
  report.problemFound = renderDiff(r, o, out) != 0;
  report.output = out.str();
  return report;
}

bool looksLikeCompileId(const std::string& s) {
  static const std::regex kId(R"(\d+/\d+(_\d+)?)");
  return std::regex_match(s, kId);
}

// B's recompile reasons that name A's entry: PyTorch writes one line per failed entry, "0/0: ...".
std::vector<std::string> reasonsNaming(const Compile& a, const Compile& b) {
  std::vector<std::string> out;
  for (const RecompileCause& c : b.recompileCauses)
    if (c.entry == a.id.str()) out.push_back(c.text.empty() ? c.guard : c.text);
  if (!out.empty()) return out;
  std::string prefix = a.id.str() + ": ";
  size_t at = 0;
  while (at < b.reason.size()) {
    size_t end = b.reason.find('\n', at);
    std::string line = b.reason.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.rfind(prefix, 0) == 0) out.push_back(firstLine(line));
    at = end == std::string::npos ? b.reason.size() : end + 1;
  }
  return out;
}

PairDiff comparePair(const Side& sa, const Compile& a, const Side& sb, const Compile& b, bool betweenStores,
                     const std::set<std::string>& jobSettingKeys) {
  PairDiff p;
  p.a = &a;
  p.b = &b;
  if (a.function != b.function) p.compile.push_back({"function", a.function, b.function});
  if (a.file != b.file) p.compile.push_back({"file", a.file, b.file});
  if (a.firstLine != b.firstLine)
    p.compile.push_back({"first line", std::to_string(a.firstLine), std::to_string(b.firstLine)});
  if (a.status != b.status) p.compile.push_back({"status", firstLine(a.status), firstLine(b.status)});
  std::map<std::string, int> breaks;
  for (const std::string& g : a.graphBreaks) breaks[firstLine(g)]++;
  for (const std::string& g : b.graphBreaks) breaks[firstLine(g)]--;
  for (const auto& [text, n] : breaks)
    for (int i = 0; i < std::abs(n); ++i) p.compile.push_back({"graph break", n > 0 ? text : "", n < 0 ? text : ""});
  p.guards = compareGuards(sa.job(), a, sb.job(), b, betweenStores);
  p.graphs = compareGraphs(sa.job(), a, sb.job(), b);
  auto settingsA = sa.settings.find(a.id), settingsB = sb.settings.find(b.id);
  if (settingsA != sa.settings.end() && settingsB != sb.settings.end())
    for (Change& c : compareSettings(settingsA->second, settingsB->second))
      if (!jobSettingKeys.count(c.what)) p.settings.push_back(std::move(c));
  if (!betweenStores) p.pytorchReasons = reasonsNaming(a, b);
  return p;
}

// The compiles of each frame in compile order, keyed by `key`, frames in the order they first compiled.
template <typename Key>
std::vector<std::pair<std::string, std::vector<const Compile*>>> byFrame(const std::vector<const Compile*>& compiles,
                                                                         Key key) {
  std::vector<std::pair<std::string, std::vector<const Compile*>>> frames;
  for (const Compile* c : compiles) {
    std::string k = key(*c);
    auto it = std::find_if(frames.begin(), frames.end(), [&](const auto& f) { return f.first == k; });
    if (it == frames.end()) it = frames.insert(frames.end(), {k, {}});
    it->second.push_back(c);
  }
  return frames;
}

// Pairs the i-th compile of each frame of A with the i-th of the same frame of B; what has no
// partner is left in *a and *b.
template <typename Key>
std::vector<std::pair<const Compile*, const Compile*>> pairBy(std::vector<const Compile*>* a,
                                                              std::vector<const Compile*>* b, Key key) {
  std::vector<std::pair<const Compile*, const Compile*>> pairs;
  auto fa = byFrame(*a, key), fb = byFrame(*b, key);
  std::set<const Compile*> paired;
  for (const auto& [k, la] : fa) {
    auto other = std::find_if(fb.begin(), fb.end(), [&](const auto& f) { return f.first == k; });
    for (size_t i = 0; other != fb.end() && i < la.size() && i < other->second.size(); ++i) {
      pairs.push_back({la[i], other->second[i]});
      paired.insert(la[i]);
      paired.insert(other->second[i]);
    }
  }
  auto isPaired = [&](const Compile* c) { return paired.count(c) > 0; };
  a->erase(std::remove_if(a->begin(), a->end(), isPaired), a->end());
  b->erase(std::remove_if(b->begin(), b->end(), isPaired), b->end());
  return pairs;
}

// Frames pair by function, file name and first line; then, for a file edited between the two
// captures, by function and file name alone. Paths may differ: the job may have moved.
void pairStores(const Side& sa, const Side& sb, const std::string& only, DiffReport* r) {
  std::vector<const Compile*> a, b;
  for (const Compile& c : sa.job().compiles()) a.push_back(&c);
  for (const Compile& c : sb.job().compiles()) b.push_back(&c);
  auto pairs = pairBy(
      &a, &b, [](const Compile& c) { return fmt::format("{}\n{}\n{}", c.function, baseName(c.file), c.firstLine); });
  auto moved = pairBy(&a, &b, [](const Compile& c) { return fmt::format("{}\n{}", c.function, baseName(c.file)); });
  pairs.insert(pairs.end(), moved.begin(), moved.end());
  std::sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.first->id < y.first->id; });
  std::set<std::string> jobKeys;
  for (const Change& c : r->settings) jobKeys.insert(c.what);
  auto wanted = [&](const Compile* c) { return only.empty() || c->id.str() == only; };
  for (const auto& [ca, cb] : pairs)
    if (wanted(ca) || wanted(cb)) r->pairs.push_back(comparePair(sa, *ca, sb, *cb, true, jobKeys));
  std::copy_if(a.begin(), a.end(), std::back_inserter(r->onlyA), wanted);
  std::copy_if(b.begin(), b.end(), std::back_inserter(r->onlyB), wanted);
}

// The compile that `b` replaced: the latest earlier compile of the same frame.
const Compile* predecessor(const Job& job, const Compile& b) {
  const Compile* found = nullptr;
  for (const Compile& c : job.compiles())
    if (c.id.frame == b.id.frame && c.id.compile < b.id.compile) found = &c;
  return found;
}

}  // namespace

Result<Report> inspectDiff(const std::vector<std::string>& operands, const std::string& compileId,
                           const InspectOptions& o) {
  if (operands.size() < 2 || operands.size() > 3)
    return trouble("diff takes STORE A_ID B_ID, STORE B_ID, or A_STORE B_STORE");
  bool compiles = operands.size() == 3 || looksLikeCompileId(operands[1]);
  if (operands.size() == 3 && !(looksLikeCompileId(operands[1]) && looksLikeCompileId(operands[2])))
    return trouble(fmt::format("diff {} {} {}: the second and third operands must be compile ids such as 0/1",
                               operands[0], operands[1], operands[2]));
  if (compiles && !compileId.empty())
    return trouble("--compile restricts a diff of two stores; name the compiles instead");
  Report report;
  Result<Side> sa = openSide(operands[0], report);
  if (!sa.isOk()) return sa.status();
  DiffReport r;
  r.pathA = operands[0];
  if (compiles) {
    const Compile* b = sa->job().find(operands.back());
    if (!b)
      return trouble(fmt::format("{}: no compile {} (replay-inspect ls lists them)", operands[0], operands.back()));
    const Compile* a = operands.size() == 3 ? sa->job().find(operands[1]) : predecessor(sa->job(), *b);
    if (!a && operands.size() == 3)
      return trouble(fmt::format("{}: no compile {} (replay-inspect ls lists them)", operands[0], operands[1]));
    if (!a)
      return trouble(fmt::format("{}: {} is its frame's first compile: name the compile to compare it with",
                                 operands[0], operands[1]));
    r.pathB = operands[0];
    r.pairs.push_back(comparePair(*sa, *a, *sa, *b, false, {}));
    return rendered(r, o, std::move(report));
  }
  Result<Side> sb = openSide(operands[1], report);
  if (!sb.isOk()) return sb.status();
  r.pathB = operands[1];
  r.betweenStores = true;
  r.manifests = sa->facts.found && sb->facts.found;
  if (r.manifests) {
    r.environment = compareSettings(sa->facts.environment, sb->facts.environment);
    r.settings = compareSettings(sa->facts.settings, sb->facts.settings);
    r.environmentEntries = sa->facts.environment.size();
    r.settingEntries = sa->facts.settings.size();
  }
  r.commandLineA = sa->facts.commandLine;
  r.commandLineB = sb->facts.commandLine;
  pairStores(*sa, *sb, compileId, &r);
  if (!compileId.empty() && r.pairs.empty() && r.onlyA.empty() && r.onlyB.empty())
    return trouble(
        fmt::format("no compile {} in {} or {} (replay-inspect ls lists them)", compileId, operands[0], operands[1]));
  return rendered(r, o, std::move(report));
}

}  // namespace dynrep::replay
