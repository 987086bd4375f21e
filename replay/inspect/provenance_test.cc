// The symbol table as the reports print it: rows read by the one typed reader (readSymbols) and
// written back as JSON are the rows capture wrote, and their ranges read as `show` prints them.
#include "provenance.h"

#include <gtest/gtest.h>

#include "dynrep/capture/events.h"
#include "replay/query/testing/store_builder.h"
#include "store/testing/temp_dir.h"

namespace dynrep::replay {
namespace {

TEST(SymbolRows, JsonIsTheTableCaptureWrote) {
  const nlohmann::json table = nlohmann::json::parse(R"json([
      {"symbol": "s0", "unbacked": false, "range": [2, "int_oo"], "source": "L['x'].size()[0]", "hint": 8},
      {"symbol": "zf0", "unbacked": false, "range": ["-oo", 2.5], "hint": 1.5},
      {"symbol": "u0", "unbacked": true, "range": [-3, 9], "replaced_by": "s0"}])json");
  testing::TempDir dir;
  testing::StoreBuilder b(dir.file("job.dynrep"));
  const capture::CompileId id{0, 0, 0};
  b.event("dynamo_start", id, R"({"stack": []})");
  b.event(capture::events::kSymbols, id, "{}", table.dump());
  b.close();
  Result<OpenedJob> opened = openJob(dir.file("job.dynrep"));
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  std::vector<SymbolEntry> rows = symbolRows(opened->job, opened->job.compiles().at(0));
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(symbolEntryJson(rows[i]), table[i]) << i;
  EXPECT_EQ(dumpJson(symbolEntryJson(rows[1])), dumpJson(table[1]));  // a float prints as it was read
  EXPECT_EQ(rangeText(rows[0]), "[2, int_oo]");
  EXPECT_EQ(rangeText(rows[1]), "[-oo, 2.5]");
  EXPECT_EQ(rangeText(rows[2]), "[-3, 9]");
  EXPECT_EQ(numberText(*rows[1].hint), "1.5");
  EXPECT_EQ(rangeText(SymbolEntry{}), "[?]");
}

TEST(SymbolRows, AnUnreadableTableShowsAsNone) {
  testing::TempDir dir;
  testing::StoreBuilder b(dir.file("job.dynrep"));
  const capture::CompileId id{0, 0, 0};
  b.event("dynamo_start", id, R"({"stack": []})");
  b.event(capture::events::kSymbols, id, "{}", "not JSON");
  b.close();
  Result<OpenedJob> opened = openJob(dir.file("job.dynrep"));
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  EXPECT_TRUE(symbolRows(opened->job, opened->job.compiles().at(0)).empty());
}

}  // namespace
}  // namespace dynrep::replay
