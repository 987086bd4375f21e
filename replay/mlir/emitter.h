// The MLIR text of one function, written op by op. Lowerings describe what to compute (an
// elementwise body, a reduction, a named op) and the emitter spells it: fresh SSA names, types,
// constants, the symbolic sizes as index arithmetic, and each op's location. The text is
// parsed and verified by MLIR afterwards (engine.h); nothing here includes MLIR.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "types.h"

namespace dynrep::replay::lowering {

// A node the lowering cannot express: reported with the node's operator and user line.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a node produced: a tensor, a scalar (an SSA i64/f64/i1 value, or a constant known
// while lowering), None, or a list (a tuple output, an int[] argument).
struct Value {
  // Complex: a constant complex scalar (number + imag i); not isScalar(), so that code reading
  // `number` as a real never takes it: only Scalars::of turns it into a value.
  enum class Kind { None, Tensor, Int, Float, Bool, List, Text, Complex };
  Kind kind = Kind::None;
  std::string ssa;           // tensors and non-constant scalars
  TensorType type;           // tensors
  double number = 0;         // constant scalars (ssa empty)
  double imag = 0;           // Complex: the imaginary part
  std::string text;          // Text: a dtype, device, layout, memory format or string argument
  std::vector<Value> items;  // List
  std::string sym;           // Int: the symbolic expression the IR prints for it ("s0*2"), where it has one
  // Tensor: how PyTorch laid it out in memory, as the IR says. Values here are always row-major
  // tensors; only what reads memory positions (as_strided, sym_stride) looks at these.
  std::optional<std::vector<Dim>> strides;
  std::optional<Dim> storageOffset;
  // Tensor: where it is a view (expand, slice, select, ...), the tensor that owns its memory,
  // with that tensor's layout: as_strided reads its input's storage, which a view shares.
  std::shared_ptr<const Value> storage;

  static Value tensor(std::string ssa, TensorType type);
  static Value integer(int64_t v);
  static Value real(double v);
  static Value boolean(bool v);
  static Value complex(double re, double im);
  static Value scalar(Kind kind, std::string ssa);  // an SSA i64 (Int), f64 (Float) or i1 (Bool)
  static Value list(std::vector<Value> items);
  bool isTensor() const { return kind == Kind::Tensor; }
  bool isScalar() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool isConst() const { return isScalar() && ssa.empty(); }
  bool isNone() const { return kind == Kind::None; }
};

// Scalar arithmetic, usable at function level and inside a linalg region.
class Emitter;
struct Scalars {
  Emitter& e;
  std::string constant(double v, DType t);  // inf and nan as MLIR's hex floats
  std::string cast(const std::string& v, DType from, DType to);
  std::string op(const std::string& name, const std::string& a, const std::string& b, DType t);        // "arith.addf"
  std::string unary(const std::string& name, const std::string& a, DType t);                           // "math.exp"
  std::string cmp(const std::string& predicate, const std::string& a, const std::string& b, DType t);  // "olt" / "slt"
  std::string select(const std::string& c, const std::string& a, const std::string& b, DType t);
  // The value of a Value scalar (constant or SSA) as element type t.
  std::string of(const Value& v, DType t);

 private:
  std::string castComplex(const std::string& v, DType from, DType to);
};

using Strings = std::vector<std::string>;

// One linalg.generic operand: a tensor and its indexing map's results over the loop dims
// ("d0", "0", "d1 * 2 + d3"), or a scalar captured from above (map empty).
struct GenericInput {
  std::string ssa;
  TensorType type;
  std::vector<std::string> map;
};

class Emitter {
 public:
  std::string fresh(const std::string& hint = "v");
  void line(const std::string& text);   // an op, indented, with the current location
  void open(const std::string& text);   // a line that opens a region: `... {`
  void close(const std::string& text);  // `} ...`, closing it
  void label(const std::string& text);  // a block header inside the open region: `^bb0(%a: f32):`
  void setLocation(std::string loc) { loc_ = std::move(loc); }
  // What rollback() returns to: the text so far, the open regions and the SSA values cached for
  // reuse (a value defined in dropped text must not be reused).
  struct Checkpoint {
    size_t text = 0;
    int indent = 0, depth = 0;
    std::map<int64_t, std::string> indexCache;
    std::map<std::string, std::string> symbols, exprCache;
  };
  Checkpoint checkpoint() const { return {text_.size(), indent_, depth_, indexCache_, symbols_, exprCache_}; }
  void rollback(const Checkpoint& c) {
    text_.resize(c.text), indent_ = c.indent, depth_ = c.depth;
    indexCache_ = c.indexCache, symbols_ = c.symbols, exprCache_ = c.exprCache;
  }
  const std::string& text() const { return text_; }
  Scalars scalars() { return Scalars{*this}; }

  std::string assign(const std::string& hint, const std::string& rhs);  // `%hintN = rhs`, returns %hintN
  std::string index(int64_t v);     // arith.constant : index (cached at function level)
  std::string loopIndex(size_t d);  // linalg.index d, inside a linalg region
  std::string indexOp(const std::string& op, const std::string& a, const std::string& b);  // "arith.addi" on index
  std::string toIndex(const std::string& i64);                                             // an i64 as an index
  std::string fromIndex(const std::string& index, DType to = DType::I64);  // an index as a number of type `to`
  std::string indexCmp(const std::string& predicate, const std::string& a, const std::string& b);  // "slt": an i1
  // The size of dim `d` of a tensor: a constant, or the symbolic expression's value.
  std::string dimSize(const TensorType& t, size_t d);
  std::string sizeOf(const Dim& dim);                // index
  std::string symbolValue(const std::string& expr);  // index value of an expression over bound symbols
  void bindSymbol(const std::string& symbol, const std::string& indexSsa);
  // Whether `expr` is a bare symbol (s0, u0) rather than an expression over symbols: only those
  // are bound, from the first size or value that names one.
  static bool plainSymbol(const std::string& expr);
  bool bound(const std::string& symbol) const { return symbols_.count(symbol) > 0; }
  const std::map<std::string, std::string>& symbols() const { return symbols_; }

  std::string empty(const TensorType& t);  // tensor.empty with its dynamic sizes
  std::string fill(const TensorType& t, double v);
  std::string cast(const Value& tensor, const TensorType& to);  // tensor.cast where shapes differ in staticness

  // linalg.generic over `loops` dims writing `out` (a fresh empty tensor, or `init` when given
  // for a reduction); body gets the block arguments (inputs then output) and returns the yield.
  std::string generic(const TensorType& out, const std::vector<std::string>& outMap,
                      const std::vector<GenericInput>& ins, const std::vector<std::string>& iterators,
                      const std::function<std::string(std::vector<std::string>&)>& body, const std::string& init = "");
  // v copied into `out`'s type: broadcast as elementwise() does and converted to out's dtype.
  Value copyInto(const Value& v, const TensorType& out);
  Value convert(const Value& v, DType to) { return v.type.dtype == to ? v : copyInto(v, v.type.withDtype(to)); }

  // Elementwise over `out` with broadcasting (PyTorch's rules, right-aligned): tensors are
  // converted to `compute` in the body, scalars too; the body's value (of type compute, or i1
  // when boolResult) is converted to out's dtype.
  Value elementwise(const TensorType& out, const std::vector<Value>& operands, DType compute,
                    const std::function<std::string(Scalars&, std::vector<std::string>&)>& body,
                    bool boolResult = false);

 private:
  std::string text_;
  std::string loc_;
  int indent_ = 2;
  int counter_ = 0;
  int depth_ = 0;  // region nesting: constants are cached at function level only
  std::map<int64_t, std::string> indexCache_;
  std::map<std::string, std::string> symbols_;  // symbol -> index SSA
  std::map<std::string, std::string> exprCache_;
};

std::string mapText(size_t loops, const std::vector<std::string>& results);  // affine_map<(d0, d1) -> (d1)>
Strings loopDims(size_t n, size_t from = 0);
// t read in the loops of `space`, right-aligned as PyTorch broadcasts: a static size-1 dim where
// the space's is not 1 is read at 0. Throws Unsupported when t has the higher rank.
Strings broadcastMap(const TensorType& t,
                     const TensorType& space);   // d<from>, d<from+1>, ...: an identity map's results
std::string join(const Strings& items);          // "a, b, c"
std::string mlirString(const std::string& s);    // an MLIR string literal
std::string hexBytes(const std::string& bytes);  // "0A1B..": raw bytes as MLIR's dense hex literals spell them

}  // namespace dynrep::replay::lowering
