// The MLIR commands as library calls: a Report (the module, the notes a tool prints, whether
// something did not lower) or the Status that says why they could not run; lower-check's stages
// by the words it prints; the symbol ranges and constants a check needs, or the error that stops it.
#include "dynrep/replay/mlir/commands.h"

#include <fstream>

#include <gtest/gtest.h>

#include "dynrep/capture/events.h"
#include "dynrep/replay/mlir/check.h"
#include "replay/query/testing/store_builder.h"
#include "store/testing/temp_dir.h"

namespace dynrep::replay::lowering {
namespace {

const std::string kKept = std::string(DYNREP_SOURCE_DIR) + "/tests/data/capture-1.5/every-record.dynrep";

// x: [4] -> mylib::mystery(x): an operator no lowering knows.
const char* kMysteryIr = R"IR({
  "format": 2, "graph": "aot_inference_graph",
  "nodes": [
    {"name": "x", "op": "placeholder", "outputs": [{"dtype": "float32", "shape": [4]}]},
    {"name": "m", "op": "call_function", "target": "mylib::mystery.default", "args": [{"ref": "x"}], "kwargs": {},
     "outputs": [{"dtype": "float32", "shape": [4]}]},
    {"name": "output", "op": "output", "args": [{"tuple": [{"ref": "m"}]}]}],
  "schemas": {"mylib::mystery.default": {"text": "mylib::mystery(Tensor self) -> Tensor",
                                         "arguments": [{"name": "self", "type": "Tensor"}]}}})IR";

TEST(MlirCommands, LowerIrGivesTheModule) {
  MlirRequest r;
  r.store = std::string(DYNREP_SOURCE_DIR) + "/replay/mlir/test/elementwise.json";
  r.dialect = "torch";
  Result<Report> report = lowerIrCommand(r);
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  EXPECT_FALSE(report->problemFound);
  EXPECT_TRUE(report->notes.empty());
  EXPECT_NE(report->output.find("func.func"), std::string::npos);
}

TEST(MlirCommands, AnUnreadableIrIsAnErrorNamingIt) {
  MlirRequest r;
  r.store = "/nonexistent/graph.json";
  Result<Report> report = lowerIrCommand(r);
  ASSERT_FALSE(report.isOk());
  EXPECT_EQ(report.status().code(), Status::Code::IOError);
  EXPECT_EQ(report.status().message(), "/nonexistent/graph.json is not a readable graph IR (JSON)");
}

TEST(MlirCommands, NodesNotLoweredAreNotesAndAProblem) {
  dynrep::testing::TempDir dir;
  MlirRequest r;
  r.store = dir.file("mystery.json");
  std::ofstream(r.store) << kMysteryIr;
  r.dialect = "linalg";
  Result<Report> linalg = lowerIrCommand(r);
  ASSERT_TRUE(linalg.isOk()) << linalg.status().toString();
  EXPECT_TRUE(linalg->problemFound);
  EXPECT_FALSE(linalg->output.empty());  // still written, the node stood in for by a call
  ASSERT_EQ(linalg->notes.size(), 2u);
  EXPECT_EQ(linalg->notes[0].text,
            "aot_inference_graph: 1 of 1 nodes not lowered (stood in for by calls to external functions)");
  EXPECT_EQ(linalg->notes[1].text, "  not lowered: m = mylib::mystery.default: no lowering for mylib::mystery.default");

  r.dialect = "torch";  // the torch dialect spells any operator (torch.operator): nothing to report
  Result<Report> torch = lowerIrCommand(r);
  ASSERT_TRUE(torch.isOk()) << torch.status().toString();
  EXPECT_FALSE(torch->problemFound);
  EXPECT_NE(torch->output.find("torch.mylib.mystery"), std::string::npos);

  r.dialect = "llvm";  // an LLVM module needs every node: nothing to write
  Result<Report> llvm = lowerIrCommand(r);
  ASSERT_TRUE(llvm.isOk()) << llvm.status().toString();
  EXPECT_TRUE(llvm->problemFound);
  EXPECT_TRUE(llvm->output.empty());
  EXPECT_EQ(llvm->notes.back().text, "replay-inspect mlir: --dialect llvm needs every node lowered");
}

TEST(MlirCommands, AnUnknownCompileOrBadSizesAreErrors) {
  Result<OpenedJob> opened = openJob(kKept);
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  MlirRequest m;
  m.store = kKept;
  m.compile = "9/9";
  Result<Report> mlir = mlirCommand(opened->job, m);
  ASSERT_FALSE(mlir.isOk());
  EXPECT_EQ(mlir.status().code(), Status::Code::NotFound);
  EXPECT_EQ(mlir.status().message(), "no compile 9/9 in " + kKept);

  LowerCheckRequest c;
  c.store = kKept;
  c.sizes = "s0";
  Result<Report> check = lowerCheckCommand(opened->job, c);
  ASSERT_FALSE(check.isOk());
  EXPECT_EQ(check.status().code(), Status::Code::InvalidArgument);
  EXPECT_NE(check.status().message().find("'s0'"), std::string::npos) << check.status().message();
}

TEST(MlirCommands, WithoutIreeBothIreeCommandsSayHowToGetIt) {
  Result<OpenedJob> opened = openJob(kKept);
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  MlirRequest m;
  m.store = kKept;
  m.compile = "0/0";
  m.iree.compile = "/usr/bin/true";  // found; the runtime's tools are not
  Result<IreeModuleFile> module = ireeCommand(opened->job, m);
  ASSERT_FALSE(module.isOk());
  EXPECT_EQ(module.status().code(), Status::Code::NotFound);
  EXPECT_NE(module.status().message().find("iree-run-module, iree-benchmark-module not found"), std::string::npos)
      << module.status().message();
  EXPECT_NE(module.status().message().find(kIreeInstall), std::string::npos);

  LowerCheckRequest c;
  c.store = kKept;
  c.runtime = "iree";
  Result<Report> check = lowerCheckCommand(opened->job, c);
  ASSERT_FALSE(check.isOk());
  EXPECT_EQ(check.status().code(), Status::Code::NotFound);
  EXPECT_NE(check.status().message().find("iree-compile, iree-run-module"), std::string::npos)
      << check.status().message();
}

TEST(CheckStage, EachStageHasTheWordLowerCheckPrints) {
  const std::vector<std::pair<CheckStage, std::string>> names = {
      {CheckStage::Lowered, "lowered"},
      {CheckStage::NotLowered, "not lowered"},
      {CheckStage::UnsupportedValue, "unsupported value"},
      {CheckStage::NotVerified, "not verified"},
      {CheckStage::NotCompiled, "not compiled"},
      {CheckStage::Static, "static"},
      {CheckStage::Executed, "executed"},
      {CheckStage::Differs, "differs"},
      {CheckStage::Matched, "matched"},
  };
  for (const auto& [stage, name] : names) EXPECT_EQ(stageName(stage), name);
}

// A job of one compile whose symbol table is `symbols`, with one stored payload "abcd" (the
// Dynamo graph's code) to stand for a constant's bytes.
class CheckInputs : public ::testing::Test {
 protected:
  void load(const std::string& symbols) {
    std::string path = dir_.file("job.dynrep");
    dynrep::testing::StoreBuilder b(path);
    b.event("dynamo_start", id_, R"({"stack": []})");
    b.event("dynamo_output_graph", id_, "{}", "abcd");
    b.event(capture::events::kSymbols, id_, "{}", symbols);
    b.close();
    Result<OpenedJob> opened = openJob(path);
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    opened_ = std::move(*opened);
    ASSERT_EQ(opened_.job.compiles().size(), 1u);
  }
  const Compile& compile() const { return opened_.job.compiles()[0]; }

  dynrep::testing::TempDir dir_;
  const capture::CompileId id_{0, 0, 0};
  OpenedJob opened_;
};

TEST_F(CheckInputs, RangesAreTheTablesIntegerBounds) {
  load(R"([{"symbol": "s0", "unbacked": false, "range": [2, "int_oo"]}, {"symbol": "s1"}])");
  Result<SymbolRanges> ranges = symbolRanges(opened_.job, compile());
  ASSERT_TRUE(ranges.isOk()) << ranges.status().toString();
  EXPECT_EQ(*ranges, (SymbolRanges{{"s0", {2, INT64_MAX}}}));  // s1 has no range
}

TEST_F(CheckInputs, AnUnreadableSymbolTableStopsTheCheck) {
  load("not JSON");
  Result<SymbolRanges> ranges = symbolRanges(opened_.job, compile());
  ASSERT_FALSE(ranges.isOk());
  EXPECT_EQ(ranges.status().code(), Status::Code::Corruption);
  EXPECT_NE(ranges.status().message().find("symbol table of compile 0/0"), std::string::npos);
  GraphCheck g = checkGraph(opened_.job, compile(), "aot_forward_graph", CheckOptions());
  EXPECT_EQ(g.stage, CheckStage::Lowered);
  EXPECT_EQ(g.error.message(), ranges.status().message());
  EXPECT_FALSE(g.matched());
}

TEST_F(CheckInputs, ConstantsAreTheirBytesOrTheErrorNamingThem) {
  load("[]");
  Graph ir;
  Constant stored;
  stored.blob = compile().graphs.at("dynamo_output_graph");
  stored.bytes = 4;
  ir.constants["w"] = stored;
  Result<std::map<std::string, std::string>> bytes = constantBytes(opened_.job, ir);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  EXPECT_EQ(bytes->at("w"), "abcd");

  ir.constants["w"].bytes = 5;
  bytes = constantBytes(opened_.job, ir);
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().code(), Status::Code::Corruption);
  EXPECT_EQ(bytes.status().message(), "constant w: 4 bytes where the graph says 5");

  ir.constants["w"].blob = BlobKey::of("never stored").hex();
  bytes = constantBytes(opened_.job, ir);
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().message().rfind("constant w: ", 0), 0u) << bytes.status().message();
}

}  // namespace
}  // namespace dynrep::replay::lowering
