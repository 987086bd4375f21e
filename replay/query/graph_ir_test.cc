// parseGraph: a well-formed graph IR becomes typed nodes, and each malformed one gives one clear
// error naming the node and field, never an exception.
#include "dynrep/replay/query/graph_ir.h"

#include <cmath>

#include <gtest/gtest.h>

namespace dynrep::replay {
namespace {

// A small format 2 forward graph: one placeholder fed by a sample, one operator, the output.
// `node` replaces the add node, `top` is spliced into the document's top level.
std::string document(const std::string& node = "", const std::string& top = R"("format": 2)") {
  std::string add = node.empty() ? R"({"name": "add", "op": "call_function", "target": "aten::add.Tensor",
       "args": [{"ref": "x"}, 2.5], "kwargs": {"alpha": 1},
       "outputs": [{"dtype": "float32", "shape": ["s0", 4], "stride": [4, 1], "device": "cpu", "requires_grad": false}],
       "location": {"file": "train.py", "line": 7, "function": "forward", "code": "y = x + 2.5"},
       "scope": [{"path": "fc", "class": "torch.nn.modules.linear.Linear"}], "seq_nr": 3})"
                                 : node;
  return "{" + top + R"(, "graph": "aot_forward_graph", "origin": "graph",
    "nodes": [
      {"name": "x", "op": "placeholder", "outputs": [{"dtype": "float32", "shape": ["s0", 4], "stride": [4, 1], "device": "cpu"}],
       "input": {"role": "user_input", "source": "L['x']"}, "feed": {"sample_input": 0}},
      )" +
         add + R"(,
      {"name": "output", "op": "output", "args": [{"tuple": [{"ref": "add"}]}], "kwargs": {}}],
    "schemas": {"aten::add.Tensor": {"text": "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      "arguments": [{"name": "self", "type": "Tensor", "kwarg_only": false},
                    {"name": "other", "type": "Tensor", "kwarg_only": false},
                    {"name": "alpha", "type": "Scalar", "kwarg_only": true, "default": "1"}],
      "returns": [{"name": "", "type": "Tensor"}]}},
    "constants": {}, "results": [{"sample_output": 0}]})";
}

TEST(GraphIrTest, ReadsEveryField) {
  Result<Graph> g = parseGraph(document());
  ASSERT_TRUE(g.isOk()) << g.status().toString();
  EXPECT_EQ(g->format, 2);
  EXPECT_EQ(g->event, "aot_forward_graph");
  ASSERT_EQ(g->nodes.size(), 3u);
  const Node& x = g->nodes[0];
  EXPECT_TRUE(x.is(Node::Op::Placeholder));
  ASSERT_TRUE(x.feed && x.input);
  EXPECT_EQ(x.feed->kind, Feed::Kind::SampleInput);
  EXPECT_EQ(x.input->source, "L['x']");
  ASSERT_TRUE(x.meta() && x.meta()->isTensor());
  EXPECT_EQ(x.meta()->tensor.shape[0].expr, "s0");
  EXPECT_EQ(x.meta()->tensor.shape[1].size, 4);
  const Node& add = *g->find("add");
  EXPECT_EQ(add.target, "aten::add.Tensor");
  ASSERT_EQ(add.args.size(), 2u);
  EXPECT_EQ(add.args[0].kind, Argument::Kind::Ref);
  EXPECT_EQ(add.args[1].kind, Argument::Kind::Float);
  EXPECT_EQ(add.kwargs.at("alpha").integer, 1);
  EXPECT_EQ(add.location->line, 7);
  EXPECT_EQ(add.scope.back().path, "fc");
  EXPECT_EQ(*add.seqNr, 3);
  ASSERT_EQ(g->returned().size(), 1u);
  EXPECT_EQ(g->returned()[0].text, "add");
  const Schema* s = g->schema("aten::add.Tensor");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->arguments[2].kwargOnly);
  EXPECT_EQ(*s->arguments[2].defaultValue, "1");
  EXPECT_EQ(g->results[0].kind, ResultSource::Kind::SampleOutput);
  EXPECT_EQ(g->operatorCounts().at("aten::add.Tensor"), 1);
}

TEST(GraphIrTest, ReadsEveryArgumentForm) {
  Result<Graph> g = parseGraph(document(R"({"name": "add", "op": "call_function", "target": "f",
      "args": [null, true, -3, {"float": "-inf"}, "s", [1, 2], {"dtype": "int64"}, {"layout": "strided"},
               {"memory_format": "contiguous_format"}, {"device": "cpu"}, {"sym": "s0 + 1"}, {"slice": [null, 2, null]},
               {"ellipsis": true}, {"complex": [1.0, 2.0]}, {"py": "torch.sym_float"}, {"repr": "<obj>"}]})"));
  ASSERT_TRUE(g.isOk()) << g.status().toString();
  using K = Argument::Kind;
  std::vector<K> kinds;
  for (const Argument& a : g->find("add")->args) kinds.push_back(a.kind);
  EXPECT_EQ(kinds, (std::vector<K>{K::None, K::Bool, K::Int, K::Float, K::String, K::List, K::DType, K::Layout,
                                   K::MemoryFormat, K::Device, K::Sym, K::Slice, K::Ellipsis, K::Complex, K::Callable,
                                   K::Repr}));
  EXPECT_TRUE(std::isinf(g->find("add")->args[3].real) && g->find("add")->args[3].real < 0);
  EXPECT_EQ(g->find("add")->args[11].spelling(), R"({"slice":[null,2,null]})");
}

TEST(GraphIrTest, ReadsFormatOne) {
  // As capture wrote it before format 2: no format key, no feeds, a format-1-only `expr` node.
  Result<Graph> g = parseGraph(std::string(R"({"nodes": [{"name": "arg0_1", "op": "placeholder"},
      {"name": "e", "op": "expr", "target": "x.shape", "outputs": [{"unparsed": "?"}]},
      {"name": "output", "op": "output", "args": [{"expr": "e"}]}], "schemas": {}})"));
  ASSERT_TRUE(g.isOk()) << g.status().toString();
  EXPECT_EQ(g->format, 1);
  EXPECT_EQ(g->nodes[1].op, Node::Op::Expr);
}

struct Malformed {
  const char* what;
  std::string document;
  Status::Code code;
  const char* message;
};

TEST(GraphIrTest, MalformedIrGivesItsError) {
  const std::string add = R"({"name": "add", "op": "call_function", "target": "aten::add.Tensor", )";
  const Malformed cases[] = {
      {"not JSON", "{\"nodes\": [", Status::Code::Corruption, "graph ir: not readable JSON (11 bytes)"},
      {"not an object", "[1]", Status::Code::Corruption, "graph ir: not a JSON object but a list"},
      {"no nodes", R"({"format": 2})", Status::Code::Corruption, "graph ir: no node list"},
      {"nodes not a list", R"({"format": 2, "nodes": {}})", Status::Code::Corruption,
       "graph ir: nodes: expected a list, found an object"},
      {"newer format", document("", R"("format": 3)"), Status::Code::NotSupported,
       "graph ir: format 3 is not one this reader knows (1 to 2)"},
      {"format not a number", document("", R"("format": "2")"), Status::Code::Corruption,
       "graph ir: format: expected an integer, found a string"},
      {"node without a name", document(R"({"op": "call_function", "target": "f"})"), Status::Code::Corruption,
       "graph ir: node 1: no name"},
      {"unknown node kind", document(R"({"name": "add", "op": "call_graph", "target": "f"})"), Status::Code::Corruption,
       "graph ir: node 1 (add): op: unknown node kind 'call_graph'"},
      {"format 1 kind in format 2", document(R"({"name": "add", "op": "expr", "target": "f"})"),
       Status::Code::Corruption, "graph ir: node 1 (add): op: unknown node kind 'expr'"},
      {"call without target", document(R"({"name": "add", "op": "call_function"})"), Status::Code::Corruption,
       "graph ir: node 1 (add): a call_function node with no target"},
      {"args not a list", document(add + R"("args": {"ref": "x"}})"), Status::Code::Corruption,
       "graph ir: node 1 (add): args: expected a list, found an object"},
      {"argument of unknown form", document(add + R"("args": [{"ref": "x"}, {"node": "x"}]})"),
       Status::Code::Corruption,
       "graph ir: node 1 (add): args[1]: expected a node name or a constant, found {\"node\": ...}"},
      {"argument object with two keys", document(add + R"("args": [{"ref": "x", "dtype": "int64"}]})"),
       Status::Code::Corruption,
       "graph ir: node 1 (add): args[0]: expected a node name or a constant, found an object with 2 keys"},
      {"ref not a name", document(add + R"("args": [{"ref": 3}]})"), Status::Code::Corruption,
       "graph ir: node 1 (add): args[0].ref: expected a string, found an integer"},
      {"unknown node", document(add + R"("args": [[{"ref": "y"}]]})"), Status::Code::Corruption,
       "graph ir: node 1 (add): args[0][0]: uses unknown node 'y'"},
      {"unknown node in kwargs", document(add + R"("kwargs": {"other": {"ref": "z"}}})"), Status::Code::Corruption,
       "graph ir: node 1 (add): kwargs.other: uses unknown node 'z'"},
      {"bad float", document(add + R"("args": [{"float": "infinity"}]})"), Status::Code::Corruption,
       "graph ir: node 1 (add): args[0].float: expected inf, -inf or nan, found 'infinity'"},
      {"slice of two", document(add + R"("args": [{"slice": [1, 2]}]})"), Status::Code::Corruption,
       "graph ir: node 1 (add): args[0].slice: expected 3 items, found 2"},
      {"shape not a list", document(add + R"("outputs": [{"dtype": "float32", "shape": 4}]})"),
       Status::Code::Corruption, "graph ir: node 1 (add): outputs[0].shape: expected a list, found an integer"},
      {"dimension of another type", document(add + R"("outputs": [{"dtype": "float32", "shape": [1.5]}]})"),
       Status::Code::Corruption, "graph ir: node 1 (add): outputs[0].shape[0]: expected an integer, found a number"},
      {"output of unknown form", document(add + R"("outputs": [{"size": 4}]})"), Status::Code::Corruption,
       "graph ir: node 1 (add): outputs[0]: expected a tensor, a symbolic or plain value, or an unsupported type"},
      {"duplicate name", document(R"({"name": "x", "op": "call_function", "target": "f"})"), Status::Code::Corruption,
       "graph ir: node 1: a second node named 'x'"},
      {"negative feed", document(R"({"name": "y", "op": "placeholder", "feed": {"sample_input": -1}})"),
       Status::Code::Corruption, "graph ir: node 1 (y): feed.sample_input: expected a position, found -1"},
      {"feed of unknown kind", document(R"({"name": "y", "op": "placeholder", "feed": {"parameter": 0}})"),
       Status::Code::Corruption, "graph ir: node 1 (y): feed: expected sample_input, tangent or forward_output"},
      {"location line as text", document(add + R"("location": {"file": "a.py", "line": "7"}})"),
       Status::Code::Corruption, "graph ir: node 1 (add): location.line: expected an integer, found a string"},
      {"result of unknown kind", R"({"format": 2, "nodes": [], "results": [{"output": 0}]})", Status::Code::Corruption,
       "graph ir: results[0]: expected sample_output, grad_input, symbol, mutated_input or saved"},
      {"schema arguments not a list",
       R"({"format": 2, "nodes": [], "schemas": {"aten::relu.default": {"arguments": 1}}})", Status::Code::Corruption,
       "graph ir: schemas.aten::relu.default.arguments: expected a list, found an integer"},
      {"integer out of range", document(add + R"("args": [18446744073709551615]})"), Status::Code::Corruption,
       "graph ir: node 1 (add): args[0]: integer out of range"},
  };
  for (const Malformed& c : cases) {
    Result<Graph> g = Result<Graph>(Status());
    ASSERT_NO_THROW(g = parseGraph(c.document)) << c.what;
    ASSERT_FALSE(g.isOk()) << c.what;
    EXPECT_EQ(g.status().code(), c.code) << c.what;
    EXPECT_EQ(g.status().message(), c.message) << c.what;
  }
}

}  // namespace
}  // namespace dynrep::replay
