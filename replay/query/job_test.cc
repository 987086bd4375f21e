// Job::load: each trace event reaches the handler for its name, and metadata of an unexpected
// type is counted as unreadable instead of shown as if it had been recorded.
#include "dynrep/replay/query/job.h"

#include <tuple>

#include <gtest/gtest.h>

#include "dynrep/replay/query/guard_list.h"
#include "dynrep/replay/query/symbol_table.h"

#include "dynrep/capture/events.h"
#include "replay/query/testing/store_builder.h"
#include "store/testing/temp_dir.h"

namespace dynrep::replay {
namespace {

using testing::StoreBuilder;

TEST(JobTest, EachEventReachesItsHandler) {
  testing::TempDir dir;
  StoreBuilder b(dir.file("job.dynrep"));
  const capture::CompileId first{0, 0, 0}, second{0, 1, 0};
  b.event("str", {}, R"(["/src/train.py", 7])");
  b.event("dynamo_start", first, R"({"stack": [{"line": 12, "name": "step", "filename": 7}]})");
  b.event("dynamo_output_graph", first, "{}", "def forward(self, x): ...");
  b.event("artifact", second, R"({"name": "recompile_reasons"})", R"(["size mismatch at index 0"])");
  b.event("create_unbacked_symbol", second, R"({"symbol": "u0", "vr": "[0, oo]", "user_stack": []})");
  b.event(capture::events::kDroppedGuard, second, R"({"kind": "ID_MATCH", "source": "G['act']", "risky": false})");
  b.event(capture::events::kNotPackaged, second, R"({"frame": "step", "reason": "closure"})");
  b.event("an_event_no_handler_reads", second, "not even JSON");
  b.close();

  auto reader = StoreReader::open(dir.file("job.dynrep"));
  ASSERT_TRUE(reader.isOk()) << reader.status().toString();
  Result<Job> job = Job::load(**reader);
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  ASSERT_EQ(job->compiles().size(), 2u);

  const Compile& c0 = job->compiles()[0];
  EXPECT_EQ(c0.function, "step");
  EXPECT_EQ(c0.file, "/src/train.py");  // the interned name, not its index
  EXPECT_EQ(c0.firstLine, 12);
  EXPECT_EQ(*job->text(c0.graphs.at("dynamo_output_graph")), "def forward(self, x): ...");
  EXPECT_EQ(c0.reason, "first compile");

  const Compile& c1 = job->compiles()[1];
  EXPECT_EQ(c1.reason, "size mismatch at index 0");
  ASSERT_EQ(c1.shapes.size(), 1u);
  EXPECT_EQ(c1.shapes[0].symbol, "u0");
  ASSERT_EQ(c1.dropped.size(), 1u);
  EXPECT_EQ(c1.dropped[0].source, "G['act']");
  EXPECT_FALSE(c1.dropped[0].risky);
  EXPECT_EQ(c1.notSaved, "closure");
  EXPECT_TRUE(c1.unreadable.empty());  // an event no handler reads is never judged
}

TEST(JobTest, OddMetadataIsCountedAsUnreadable) {
  testing::TempDir dir;
  StoreBuilder b(dir.file("job.dynrep"));
  const capture::CompileId id{0, 0, 0};
  b.event("compilation_metrics", id, R"({"co_name": "f", "guard_count": "many"})");
  b.event(capture::events::kGraphIr, id, "[1, 2]");
  b.event(capture::events::kGraphIr, id, "not JSON");
  b.close();

  auto reader = StoreReader::open(dir.file("job.dynrep"));
  ASSERT_TRUE(reader.isOk()) << reader.status().toString();
  Result<Job> job = Job::load(**reader);
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  const Compile& c = job->compiles().at(0);
  EXPECT_EQ(c.function, "f");
  EXPECT_EQ(c.guardCount, 0u);  // the fallback, and the event marked
  EXPECT_TRUE(c.graphIrs.empty());
  EXPECT_EQ(c.unreadable, (std::map<std::string, int>{{"compilation_metrics", 1}, {"dynamo_replay.graph_ir", 2}}));
}

// readGuardList, one line per shape of the blob: (metadata payload, status code, kinds read).
struct GuardListCase {
  const char* name;
  const char* payload;  // "" records no guard list for the compile
  Status::Code code;
  std::vector<std::string> kinds;
};

TEST(JobTest, TextIsABlobsTextOrWhyItCannotBeRead) {
  testing::TempDir dir;
  StoreBuilder b(dir.file("job.dynrep"));
  const capture::CompileId id{0, 0, 0};
  b.event("dynamo_output_graph", id, "{}", "def forward(self, x): ...");
  b.close();
  auto reader = StoreReader::open(dir.file("job.dynrep"));
  ASSERT_TRUE(reader.isOk()) << reader.status().toString();
  Result<Job> job = Job::load(**reader);
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  EXPECT_EQ(*job->text(""), "");  // no key: no text, and no error
  Result<std::string> bad = job->text("not-a-key");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), Status::Code::InvalidArgument);
  EXPECT_NE(bad.status().message().find("bad blob key 'not-a-key'"), std::string::npos) << bad.status().message();
  EXPECT_EQ(shownText(bad), "[" + bad.status().message() + "]");
  Result<std::string> absent = job->text(BlobKey::of("never stored").hex());
  EXPECT_EQ(absent.status().code(), Status::Code::NotFound) << absent.status().toString();
  EXPECT_EQ(shownText(std::string("text")), "text");
}

TEST(GuardListTest, ReadsTheListOnceOrSaysWhyNot) {
  const std::vector<GuardListCase> cases = {
      {"typed",
       R"json([{"kind": "TENSOR_MATCH", "source": "L['x']", "code": "check(x)", "line": 3, "file": "a.py"}])json",
       Status::Code::Ok,
       {"TENSOR_MATCH"}},
      {"odd fields read as defaults",
       R"json([{"kind": 7, "line": "three"}, {"kind": "ID_MATCH"}])json",
       Status::Code::Ok,
       {"?", "ID_MATCH"}},
      {"none recorded", "", Status::Code::NotFound, {}},
      {"not a list", R"json({"kind": "TENSOR_MATCH"})json", Status::Code::Corruption, {}},
      {"not JSON", "[{", Status::Code::Corruption, {}},
  };
  for (const GuardListCase& t : cases) {
    SCOPED_TRACE(t.name);
    testing::TempDir dir;
    StoreBuilder b(dir.file("job.dynrep"));
    const capture::CompileId id{0, 0, 0};
    b.event("dynamo_start", id, R"({"stack": []})");
    if (*t.payload) b.event(capture::events::kGuards, id, "{}", t.payload);
    b.close();
    auto reader = StoreReader::open(dir.file("job.dynrep"));
    ASSERT_TRUE(reader.isOk()) << reader.status().toString();
    Result<Job> job = Job::load(**reader);
    ASSERT_TRUE(job.isOk()) << job.status().toString();
    ASSERT_EQ(job->compiles().size(), 1u);
    Result<std::vector<GuardListEntry>> list = readGuardList(*job, job->compiles()[0]);
    EXPECT_EQ(list.status().code(), t.code) << list.status().toString();
    if (t.code != Status::Code::Ok) {
      EXPECT_NE(list.status().message().find("compile 0/0"), std::string::npos) << list.status().message();
      continue;
    }
    std::vector<std::string> kinds;
    for (const GuardListEntry& g : *list) kinds.push_back(g.kind);
    EXPECT_EQ(kinds, t.kinds);
    if (std::string(t.name) == "typed") {
      EXPECT_EQ((*list)[0].source, "L['x']");
      EXPECT_EQ((*list)[0].line, 3);
      EXPECT_EQ((*list)[0].file, "a.py");
    }
    if (std::string(t.name) == "odd fields read as defaults") {
      EXPECT_EQ((*list)[0].line, 0);
    }
  }
}

// A job of one compile whose symbol table is `table` ("" for none written).
Result<std::vector<SymbolEntry>> symbolsOf(const testing::TempDir& dir, const std::string& table) {
  StoreBuilder b(dir.file("job.dynrep"));
  const capture::CompileId id{0, 0, 0};
  b.event("dynamo_start", id, R"({"stack": []})");
  if (!table.empty()) b.event(capture::events::kSymbols, id, "{}", table);
  b.close();
  auto reader = StoreReader::open(dir.file("job.dynrep"));
  if (!reader.isOk()) return reader.status();
  Result<Job> job = Job::load(**reader);
  if (!job.isOk()) return job.status();
  return readSymbols(*job, job->compiles().at(0));
}

TEST(SymbolTableTest, RowsAreTypedAsCaptureWroteThem) {
  testing::TempDir dir;
  Result<std::vector<SymbolEntry>> rows = symbolsOf(dir, R"json([
      {"symbol": "s0", "unbacked": false, "range": [2, "int_oo"], "source": "L['x'].size()[0]", "hint": 8},
      {"symbol": "zf0", "unbacked": false, "range": ["-oo", 2.5], "hint": 1.5},
      {"symbol": "u0", "unbacked": true, "range": [0, 9], "replaced_by": "s0"},
      {"symbol": "s1", "range": "odd", "hint": null},
      {"no": "symbol"}, 7])json");
  ASSERT_TRUE(rows.isOk()) << rows.status().toString();
  ASSERT_EQ(rows->size(), 4u);  // rows nothing can name are skipped
  const SymbolEntry& s0 = (*rows)[0];
  EXPECT_EQ(s0.symbol, "s0");
  EXPECT_FALSE(s0.unbacked);
  ASSERT_TRUE(s0.range);
  EXPECT_EQ(s0.range->first.asInteger(), 2);
  EXPECT_EQ(s0.range->second.kind, SymbolNumber::Kind::Text);
  EXPECT_EQ(s0.range->second.text, "int_oo");
  EXPECT_FALSE(s0.range->second.asInteger());
  EXPECT_EQ(s0.source, "L['x'].size()[0]");
  ASSERT_TRUE(s0.hint);
  EXPECT_EQ(s0.hint->asInteger(), 8);
  const SymbolEntry& zf0 = (*rows)[1];
  ASSERT_TRUE(zf0.range);
  EXPECT_EQ(zf0.range->second.kind, SymbolNumber::Kind::Real);
  EXPECT_EQ(zf0.range->second.real, 2.5);
  EXPECT_EQ(zf0.hint->kind, SymbolNumber::Kind::Real);
  const SymbolEntry& u0 = (*rows)[2];
  EXPECT_TRUE(u0.unbacked);
  EXPECT_EQ(u0.replacedBy, "s0");
  EXPECT_EQ(u0.source, "");
  const SymbolEntry& s1 = (*rows)[3];  // fields of another type are left unset
  EXPECT_FALSE(s1.range);
  EXPECT_FALSE(s1.hint);
}

TEST(SymbolTableTest, NoneWrittenIsEmptyAndAnUnreadableOneIsAnError) {
  const std::vector<std::tuple<const char*, const char*, Status::Code>> cases = {
      {"none written", "", Status::Code::Ok},
      {"not a list", R"({"symbol": "s0"})", Status::Code::Corruption},
      {"not JSON", "[{", Status::Code::Corruption},
  };
  for (const auto& [name, table, code] : cases) {
    SCOPED_TRACE(name);
    testing::TempDir dir;
    Result<std::vector<SymbolEntry>> rows = symbolsOf(dir, table);
    EXPECT_EQ(rows.status().code(), code) << rows.status().toString();
    if (code == Status::Code::Ok) {
      EXPECT_TRUE(rows->empty());
    } else {
      EXPECT_NE(rows.status().message().find("symbol table of compile 0/0"), std::string::npos)
          << rows.status().message();
    }
  }
}

}  // namespace
}  // namespace dynrep::replay
