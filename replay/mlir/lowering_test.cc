// The lowering on graph IRs written by hand: what a malformed or unlowerable graph gets (a
// clear refusal, or a report per node with the rest still lowered and verified), and the
// entry checks of a dynamic graph.
#include <gtest/gtest.h>

#include <stdexcept>

#include "dynrep/replay/mlir/lower.h"
#include "dynrep/replay/query/graph_ir.h"
#include "replay/mlir/engine.h"

namespace dynrep::replay::lowering {
namespace {

using nlohmann::json;

// The document, parsed as every reader gets it (parseGraph).
Graph parsed(const json& document) {
  Result<Graph> g = parseGraph(document);
  if (!g.isOk()) throw std::invalid_argument(g.status().message());
  return std::move(*g);
}

// relu(x) + y over x: [s0, 4] and y: [4], with the schemas capture stores.
json graphDocument(const std::string& reluTarget) {
  return json::parse(R"IR({
    "format": 2, "graph": "aot_inference_graph",
    "nodes": [
      {"name": "x", "op": "placeholder", "outputs": [{"dtype": "float32", "shape": ["s0", 4]}]},
      {"name": "y", "op": "placeholder", "outputs": [{"dtype": "float32", "shape": [4]}]},
      {"name": "r", "op": "call_function", "target": ")IR" +
                     reluTarget + R"IR(", "args": [{"ref": "x"}], "kwargs": {},
       "outputs": [{"dtype": "float32", "shape": ["s0", 4]}],
       "location": {"file": "model.py", "line": 7, "code": "torch.relu(x)"}},
      {"name": "a", "op": "call_function", "target": "aten::add.Tensor", "args": [{"ref": "r"}, {"ref": "y"}], "kwargs": {},
       "outputs": [{"dtype": "float32", "shape": ["s0", 4]}]},
      {"name": "output", "op": "output", "args": [{"tuple": [{"ref": "a"}]}]}],
    "schemas": {
      "aten::relu.default": {"text": "aten::relu(Tensor self) -> Tensor", "arguments": [{"name": "self", "type": "Tensor"}]},
      "mylib::mystery.default": {"text": "mylib::mystery(Tensor self) -> Tensor", "arguments": [{"name": "self", "type": "Tensor"}]},
      "aten::add.Tensor": {"text": "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "arguments": [{"name": "self", "type": "Tensor"}, {"name": "other", "type": "Tensor"},
                      {"name": "alpha", "type": "Scalar", "kwarg_only": true, "default": "1"}]}}
  })IR");
}

Graph graph(const std::string& reluTarget) { return parsed(graphDocument(reluTarget)); }

// lowerGraph's result, which these graphs always have (format 2).
LoweredGraph lower(const Graph& ir, const LowerOptions& options) {
  Result<LoweredGraph> g = lowerGraph(ir, options);
  if (!g.isOk()) throw std::invalid_argument(g.status().message());
  return std::move(*g);
}

TEST(Lowering, RefusesWhatIsNotGraphIrFormat2) {
  LowerOptions options;
  json format1 = graphDocument("aten::relu.default");
  format1["format"] = 1;
  Result<LoweredGraph> g = Result<LoweredGraph>(Status());
  ASSERT_NO_THROW(g = lowerGraph(parsed(format1), options));
  ASSERT_FALSE(g.isOk()) << "format 1 was lowered";
  EXPECT_EQ(g.status().code(), Status::Code::NotSupported);
  EXPECT_NE(g.status().message().find("format 1"), std::string::npos) << g.status().message();
}

TEST(Lowering, DynamicGraphVerifiesWithItsEntryChecks) {
  LowerOptions options;
  options.ranges = {{"s0", {2, 64}}};
  LoweredGraph g = lower(graph("aten::relu.default"), options);
  ASSERT_TRUE(g.complete()) << g.issues[0].message;
  EXPECT_NE(g.text.find("func.func @inference(%arg0: tensor<?x4xf32>"), std::string::npos) << g.text;
  EXPECT_NE(g.text.find("s0 >= 2 (the compile's range is [2, 64])"), std::string::npos) << g.text;
  EXPECT_NE(g.text.find("s0 <= 64"), std::string::npos) << g.text;
  EXPECT_NE(g.text.find("loc(fused<\"r\">[\"model.py\":7:0])"), std::string::npos) << g.text;
  EXPECT_NO_THROW(Module::parse(g.text));
}

TEST(Lowering, AnOperatorWithoutLoweringIsReportedAndTheRestStillVerifies) {
  LoweredGraph g = lower(graph("mylib::mystery.default"), LowerOptions{});
  ASSERT_EQ(g.issues.size(), 1u);
  EXPECT_EQ(g.issues[0].op, "mylib::mystery.default");
  EXPECT_EQ(g.issues[0].schema, "mylib::mystery(Tensor self) -> Tensor");
  EXPECT_EQ(g.issues[0].line, "model.py:7  torch.relu(x)");
  EXPECT_NE(g.text.find("linalg.generic"), std::string::npos);  // the add after it is lowered
  EXPECT_NO_THROW(Module::parse(g.text));
}

TEST(Lowering, AnInputOfAnotherDtypeIsReportedNotThrown) {
  json ir = graphDocument("aten::relu.default");
  ir["nodes"][1]["outputs"][0]["dtype"] = "complex32";
  LoweredGraph g = lower(parsed(ir), LowerOptions{});
  ASSERT_FALSE(g.complete());
  EXPECT_EQ(g.issues[0].node, "y");
  EXPECT_EQ(g.issues[0].message, "dtype complex32 is not lowered");
}

TEST(Lowering, AReferenceToNoNodeIsRefusedBeforeLowering) {
  json ir = graphDocument("aten::relu.default");
  ir["nodes"][2]["args"][0] = {{"ref", "nowhere"}};
  Result<Graph> g = parseGraph(ir);
  ASSERT_FALSE(g.isOk());
  EXPECT_EQ(g.status().message(), "graph ir: node 2 (r): args[0]: uses unknown node 'nowhere'");
}

TEST(Lowering, UnparsableTextGetsMlirsDiagnostic) {
  try {
    Module::parse("func.func @f(");
    FAIL() << "parsed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not parse"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dynrep::replay::lowering
