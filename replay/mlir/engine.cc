// MLIR 19 from Debian's libMLIR.so: only the dialects, interfaces and passes the lowering uses
// are registered (MLIR's InitAll headers would make this one file take a minute to compile).
#include "engine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <mlir/Conversion/Passes.h>
#include <mlir/Dialect/Affine/IR/AffineOps.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h>
#include <mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Arith/Transforms/Passes.h>
#include <mlir/Dialect/Bufferization/IR/Bufferization.h>
#include <mlir/Dialect/Bufferization/Pipelines/Passes.h>
#include <mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Bufferization/Transforms/Passes.h>
#include <mlir/Dialect/Complex/IR/Complex.h>
#include <mlir/Dialect/ControlFlow/IR/ControlFlow.h>
#include <mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h>
#include <mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Linalg/Passes.h>
#include <mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h>
#include <mlir/Dialect/MemRef/Transforms/Passes.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h>
#include <mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/ExecutionEngine/ExecutionEngine.h>
#include <mlir/ExecutionEngine/OptUtils.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/MLIRContext.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Parser/Parser.h>
#include <mlir/Pass/PassManager.h>
#include <mlir/Pass/PassRegistry.h>
#include <mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h>
#include <mlir/Transforms/Passes.h>

namespace dynrep::replay::lowering {

namespace {

void registerOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerConversionPasses();
    mlir::registerTransformsPasses();
    mlir::registerLinalgPasses();
    mlir::arith::registerArithPasses();  // arith-expand: floordivsi/ceildivsi of symbolic sizes
    mlir::memref::registerMemRefPasses();
    mlir::bufferization::registerBufferizationPasses();
    mlir::bufferization::registerBufferizationPipelines();
  });
}

std::unique_ptr<mlir::MLIRContext> makeContext() {
  registerOnce();
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect, mlir::memref::MemRefDialect, mlir::bufferization::BufferizationDialect,
                  mlir::affine::AffineDialect, mlir::complex::ComplexDialect, mlir::LLVM::LLVMDialect>();
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  mlir::cf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::memref::registerAllocationOpInterfaceExternalModels(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

// Collects MLIR's diagnostics as "location: error: message" lines; the locations of lowered
// ops are the user's file:line and module scope.
class Diagnostics {
 public:
  explicit Diagnostics(mlir::MLIRContext* context)
      : handler_(context, [this](mlir::Diagnostic& d) {
          llvm::raw_string_ostream os(text_);
          os << d.getLocation() << ": " << (d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error: " : "note: ")
             << d.str() << "\n";
          for (mlir::Diagnostic& note : d.getNotes())
            os << "  " << note.getLocation() << ": note: " << note.str() << "\n";
          return mlir::success();
        }) {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext* context, const std::string& text, Diagnostics& diagnostics) {
  mlir::ParserConfig config(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(text, config, "lowered.mlir");
  if (!module) throw std::runtime_error("MLIR does not parse the lowered module:\n" + diagnostics.text());
  if (mlir::failed(mlir::verify(*module)))
    throw std::runtime_error("MLIR's verifier rejects the lowered module:\n" + diagnostics.text());
  return module;
}

void runPipeline(mlir::MLIRContext* context, mlir::ModuleOp module, Diagnostics& diagnostics) {
  mlir::PassManager pm(context);
  std::string error;
  llvm::raw_string_ostream errors(error);
  // The pipeline is written for mlir-opt's --pass-pipeline, anchored on builtin.module; the
  // pass manager here already is the module's, so it takes what is inside.
  std::string pipeline = llvmPipeline();
  pipeline = pipeline.substr(std::strlen("builtin.module("), pipeline.size() - std::strlen("builtin.module(") - 1);
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, errors)))
    throw std::runtime_error("the lowering pipeline does not parse: " + error);
  if (mlir::failed(pm.run(module))) throw std::runtime_error("lowering to LLVM failed:\n" + diagnostics.text());
}

}  // namespace

// convert-math-to-funcs outlines math.ipowi (integer pow), which has no LLVM lowering, as a
// function of cf and arith branches; it runs before those are lowered. convert-complex-to-standard
// spells abs, div and the rest over the parts (arith and math), before those are lowered too;
// complex-to-llvm then takes create, re, im, add, sub and mul.
const char* llvmPipeline() {
  return "builtin.module(inline,symbol-dce,"
         "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
         "buffer-deallocation-pipeline,convert-bufferization-to-memref,func.func(convert-linalg-to-loops),"
         "convert-complex-to-standard,convert-math-to-funcs,convert-scf-to-cf,expand-strided-metadata,lower-affine,"
         "arith-expand,finalize-memref-to-"
         "llvm,convert-math-to-llvm,"
         "convert-math-to-libm,convert-complex-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
         "convert-func-to-llvm,reconcile-unrealized-casts)";
}

struct Module::Impl {
  std::unique_ptr<mlir::MLIRContext> context = makeContext();
  Diagnostics diagnostics{context.get()};
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::~Module() = default;

std::unique_ptr<Module> Module::parse(const std::string& text) {
  auto impl = std::make_unique<Impl>();
  impl->module = lowering::parse(impl->context.get(), text, impl->diagnostics);
  return std::unique_ptr<Module>(new Module(std::move(impl)));
}

std::string Module::toLLVM() {
  runPipeline(impl_->context.get(), *impl_->module, impl_->diagnostics);
  std::string out;
  llvm::raw_string_ostream os(out);
  impl_->module->print(os);
  return out;
}

Library loadLibrary(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read the op library " + path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  auto context = makeContext();
  Diagnostics diagnostics(context.get());
  mlir::ParserConfig config(context.get());
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(buffer.str(), config, path);
  if (!module || mlir::failed(mlir::verify(*module)))
    throw std::runtime_error("the op library " + path + " is not a valid MLIR module:\n" + diagnostics.text());
  Library library;
  for (mlir::func::FuncOp fn : module->getOps<mlir::func::FuncOp>()) {
    if (fn.isExternal()) continue;
    LibraryFunction signature;
    auto print = [](mlir::Type t) {
      std::string s;
      llvm::raw_string_ostream os(s);
      t.print(os);
      return s;
    };
    for (mlir::Type t : fn.getArgumentTypes()) signature.argTypes.push_back(print(t));
    for (mlir::Type t : fn.getResultTypes()) signature.resultTypes.push_back(print(t));
    fn.setPrivate();  // inlined, then dropped
    library.functions[fn.getSymName().str()] = signature;
    std::string text;
    llvm::raw_string_ostream os(text);
    fn->print(os, mlir::OpPrintingFlags().enableDebugInfo(true, /*prettyForm=*/false));
    library.text += "  " + text + "\n";
  }
  if (library.functions.empty()) throw std::runtime_error("the op library " + path + " defines no func.func");
  return library;
}

// ---- JIT -----------------------------------------------------------------------------------

struct Jit::Impl {
  std::unique_ptr<Module> module;  // its context outlives the engine
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

Jit::Jit(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Jit::~Jit() = default;

std::unique_ptr<Jit> Jit::compile(std::unique_ptr<Module> module) {
  auto impl = std::make_unique<Impl>();
  impl->module = std::move(module);
  Module::Impl& m = *impl->module->impl_;
  runPipeline(m.context.get(), *m.module, m.diagnostics);
  mlir::ExecutionEngineOptions options;
  static const llvm::StringRef runtime[] = {DYNREP_MLIR_RUNTIME};
  options.sharedLibPaths = runtime;
  options.transformer = mlir::makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0, /*targetMachine=*/nullptr);
  auto engine = mlir::ExecutionEngine::create(*m.module, options);
  if (!engine) {
    std::string error;
    llvm::raw_string_ostream os(error);
    os << engine.takeError();
    throw std::runtime_error("the JIT could not compile the module: " + error + "\n" + m.diagnostics.text());
  }
  impl->engine = std::move(*engine);
  return std::unique_ptr<Jit>(new Jit(std::move(impl)));
}

namespace {

// tensor<?x4xcomplex<f32>> -> "?x4x" and "complex<f32>": the element type may hold an 'x' itself.
std::pair<std::string, std::string> shapeAndElement(const std::string& type) {
  std::string body = type.substr(type.find('<') + 1, type.rfind('>') - type.find('<') - 1);
  size_t complex = body.find("complex<");
  size_t split = complex != std::string::npos           ? complex
                 : body.rfind('x') == std::string::npos ? 0
                                                        : body.rfind('x') + 1;
  return {body.substr(0, split), body.substr(split)};
}

size_t rankOf(const std::string& type) {  // tensor<?x4xf32> -> 2
  std::string shape = shapeAndElement(type).first;
  return static_cast<size_t>(std::count(shape.begin(), shape.end(), 'x'));
}

std::optional<DType> elementOf(const std::string& type) {  // tensor<?x4xf32> -> f32
  std::string e = shapeAndElement(type).second;
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::I16, DType::I8,
                  DType::Bool, DType::C64, DType::C128})
    if (e == elementType(t)) return t;
  return std::nullopt;
}

}  // namespace

// The packed interface the ExecutionEngine makes for every function: one pointer per LLVM
// argument (a memref expands to allocated, aligned, offset, sizes, strides) and, last, one to
// the result, a struct of the results (memref descriptors are structs of 8-byte words).
std::vector<HostValue> Jit::call(const std::string& function, const std::vector<HostValue>& inputs,
                                 const std::vector<std::string>& resultTypes) const {
  std::vector<int64_t> words;
  words.reserve(inputs.size() * 16);
  std::vector<uint8_t> bools;
  bools.reserve(inputs.size());
  std::vector<void*> args;
  std::vector<std::pair<size_t, bool>> plan;  // (word index, is bool) per packed argument
  for (const HostValue& in : inputs) {
    if (in.kind == HostValue::Kind::Tensor) {
      void* data = const_cast<uint8_t*>(in.data.data());
      int64_t ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
      size_t base = words.size();
      words.push_back(ptr);
      words.push_back(ptr);
      words.push_back(0);
      for (int64_t d : in.shape) words.push_back(d);
      std::vector<int64_t> strides(in.shape.size(), 1);
      for (size_t d = in.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * in.shape[d];
      for (int64_t s : strides) words.push_back(s);
      for (size_t i = base; i < words.size(); ++i) plan.emplace_back(i, false);
    } else if (in.kind == HostValue::Kind::Float) {
      int64_t bits;
      std::memcpy(&bits, &in.real, 8);
      plan.emplace_back(words.size(), false);
      words.push_back(bits);
    } else if (in.kind == HostValue::Kind::Bool) {
      bools.push_back(static_cast<uint8_t>(in.integer != 0));
      plan.emplace_back(bools.size() - 1, true);
    } else {
      plan.emplace_back(words.size(), false);
      words.push_back(in.integer);
    }
  }
  for (const auto& [i, isBool] : plan)
    args.push_back(isBool ? static_cast<void*>(&bools[i]) : static_cast<void*>(&words[i]));
  // Result layout: 8-byte aligned words, an i1 one byte (padded when followed by words).
  size_t bytes = 0;
  std::vector<size_t> offsets;
  for (const std::string& t : resultTypes) {
    if (t == "i1") {
      offsets.push_back(bytes);
      bytes += 1;
      continue;
    }
    bytes = (bytes + 7) / 8 * 8;
    offsets.push_back(bytes);
    bytes += t.rfind("tensor", 0) == 0 ? (3 + 2 * rankOf(t)) * 8 : 8;
  }
  std::vector<int64_t> result((bytes + 7) / 8 + 1, 0);
  if (!resultTypes.empty()) args.push_back(result.data());
  if (auto error = impl_->engine->invokePacked(function, args)) {
    std::string message;
    llvm::raw_string_ostream os(message);
    os << error;
    throw std::runtime_error("calling " + function + ": " + message);
  }
  std::set<void*> inputData, owned;
  for (const HostValue& in : inputs) inputData.insert(const_cast<uint8_t*>(in.data.data()));
  std::vector<HostValue> out;
  const uint8_t* raw = reinterpret_cast<const uint8_t*>(result.data());
  for (size_t r = 0; r < resultTypes.size(); ++r) {
    const std::string& t = resultTypes[r];
    const uint8_t* at = raw + offsets[r];
    HostValue v;
    if (t == "i1") {
      v.kind = HostValue::Kind::Bool;
      v.integer = *at & 1;
    } else if (t == "i64") {
      v.kind = HostValue::Kind::Int;
      std::memcpy(&v.integer, at, 8);
    } else if (t == "f64") {
      v.kind = HostValue::Kind::Float;
      std::memcpy(&v.real, at, 8);
    } else {
      size_t rank = rankOf(t);
      if (rank > 8) throw std::runtime_error("a result of rank " + std::to_string(rank) + " is not read back");
      int64_t w[3 + 16];
      std::memcpy(w, at, (3 + 2 * rank) * 8);
      auto dtype = elementOf(t);
      if (!dtype) throw std::runtime_error("result type " + t + " is not read back");
      std::vector<int64_t> shape(w + 3, w + 3 + rank);
      v = HostValue::tensor(*dtype, shape);
      const uint8_t* base =
          reinterpret_cast<const uint8_t*>(static_cast<intptr_t>(w[1])) + w[2] * static_cast<int64_t>(byteSize(*dtype));
      size_t elem = byteSize(*dtype), n = v.numel();
      std::vector<int64_t> index(rank, 0);
      for (size_t i = 0; i < n; ++i) {  // strided copy: a result may be a view of a buffer
        int64_t offset = 0;
        for (size_t d = 0; d < rank; ++d) offset += index[d] * w[3 + rank + d];
        std::memcpy(v.data.data() + i * elem, base + offset * static_cast<int64_t>(elem), elem);
        for (size_t d = rank; d-- > 0;) {
          if (++index[d] < shape[d]) break;
          index[d] = 0;
        }
      }
      void* allocated = reinterpret_cast<void*>(static_cast<intptr_t>(w[0]));
      if (allocated && !inputData.count(allocated)) owned.insert(allocated);
    }
    out.push_back(std::move(v));
  }
  // Freed only once every result is read: a function may return one buffer more than once
  // (an output that is also a saved value), or views of one buffer.
  for (void* allocated : owned) std::free(allocated);
  return out;
}

}  // namespace dynrep::replay::lowering
