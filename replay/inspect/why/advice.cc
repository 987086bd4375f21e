// The recompile advice table of docs/why.md ("Advice patterns", recompiles): which advice answers
// each recompile cause (guard_text.cc) and the edit it proposes; and the advice kinds' ids,
// generated from advice_kinds.def.
#include <map>
#include <regex>

#include <fmt/format.h>

#include "render.h"
#include "why/patterns.h"

namespace dynrep::replay {

namespace {

// PyTorch's guard names a dtype as c10 does ("Float", "Double", "BFloat16"); torch spells it float32.
std::string torchDtype(const std::string& c10) {
  static const std::vector<std::pair<std::string, std::string>> kNames = {
      {"Float", "float32"}, {"Double", "float64"}, {"Half", "float16"}, {"BFloat16", "bfloat16"}, {"Long", "int64"},
      {"Int", "int32"},     {"Short", "int16"},    {"Char", "int8"},    {"Byte", "uint8"},        {"Bool", "bool"}};
  for (const auto& [name, torch] : kNames)
    if (name == c10) return torch;
  return c10;
}

std::string dimOf(const std::string& subject) {
  static const std::regex kDim(R"(\((\d+)\)$)");
  std::smatch m;
  return std::regex_search(subject, m, kDim) ? m[1].str() : "0";
}

// What a row's edit is written from.
struct CauseFacts {
  const CauseClass& k;
  const RecompileCause& c;
  const Compile& fn;     // the compiled function
  std::string tensor;    // the tensor, in the first call's own name for it where capture found one
  const CallSite* call;  // the first compile's call site, or nullptr
  bool callerNamed;      // `call` names the tensor: the edit goes before that call
};

// The statement as an action before the first call, where the caller names the tensor.
EditAction beforeCall(const CauseFacts& f, const std::string& code) {
  if (!f.callerNamed) return {};
  EditAction a;
  a.action = "insert_before";
  a.file = f.call->userFrame.file;
  a.line = f.call->userFrame.line;
  a.code = code;
  return a;
}

// Fills the advice's edit, and its line and action where they are not the defaults (the compiled
// function's first line: settings and marks belong before its first call; no action).
void editFloatConstant(const CauseFacts& f, Advice* a) {
  a->edit = fmt::format("pass {} as a tensor (torch.tensor({})) so it is an input, not a constant; or "
                        "torch.compile({}, dynamic=True) to trace Python floats as symbols from the first compile",
                        f.k.subject, f.c.expected.empty() ? "value" : f.c.expected, f.fn.function);
}

void editMarkDynamic(const CauseFacts& f, Advice* a) {
  std::string mark = fmt::format("torch._dynamo.mark_dynamic({}, {})", f.tensor, dimOf(f.k.subject));
  std::string where = f.callerNamed ? fmt::format("before the first call ({}:{})", baseName(f.call->userFrame.file),
                                                  f.call->userFrame.line)
                                    : "before the first call";
  if (f.k.cause == "int_constant") {
    a->edit = fmt::format("torch.compile({}, dynamic=True), or pass {} as a tensor", f.fn.function, f.k.subject);
  } else {
    a->edit = fmt::format("{}  # {}; or dynamic=True in the torch.compile call of {}", mark, where, f.fn.function);
    a->apply = beforeCall(f, mark);
  }
  if (f.callerNamed) a->line = f.call->userFrame;
}

void editMarkUnbacked(const CauseFacts& f, Advice* a) {
  std::string mark = fmt::format("torch._dynamo.mark_unbacked({}, {})", f.tensor, dimOf(f.k.subject));
  a->edit = mark + "  # before the first call: no 0/1 specialization for it";
  if (f.callerNamed) a->line = f.call->userFrame;
  a->apply = beforeCall(f, mark);
}

void editDtypeChange(const CauseFacts& f, Advice* a) {
  a->edit = fmt::format("convert before the call so every call brings one dtype: {}.to(torch.{})", f.tensor,
                        f.c.expected.empty() ? std::string("float32") : torchDtype(f.c.expected));
}

// The call that brought the new strides is the recompile's own: the edit goes there, in its name.
void editContiguous(const CauseFacts& f, Advice* a) {
  const CallSite& own = f.fn.callSite;
  // PyTorch's reason text names a local without its scope ("tensor 'x'"); call sites key it L['x'].
  std::string tensor = tensorSource(f.c.source);
  auto named = own.arguments.find(tensor);
  if (named == own.arguments.end()) named = own.arguments.find("L['" + tensor + "']");
  bool at = named != own.arguments.end() && !own.userFrame.file.empty();
  tensor = at ? named->second : f.tensor;
  a->edit = at ? fmt::format("pass {}.contiguous() at {}:{} (the call that brought the new strides), so every "
                             "call brings one layout",
                             tensor, baseName(own.userFrame.file), own.userFrame.line)
               : fmt::format("pass {}.contiguous() to {}, so every call brings one layout", tensor, f.fn.function);
  if (at) a->line = own.userFrame;
}

void editRequiresGradChange(const CauseFacts& f, Advice* a) {
  a->edit = fmt::format("call with one requires_grad setting: {0}.detach() (or under torch.no_grad()) where no "
                        "gradient is needed, {0}.requires_grad_() where one is",
                        f.tensor);
}

struct RecompileAdvice {
  const char* causes[2];  // the causes (guard_text.cc) it answers; nullptr: unused
  AdviceKind kind;
  void (*edit)(const CauseFacts&, Advice*);
  const char* why;
};

// One row per recompile advice; a cause no row names gets none.
const RecompileAdvice kRecompileAdvice[] = {
    {{"float_constant"},
     AdviceKind::FloatConstant,
     editFloatConstant,
     "Dynamo compiles a Python float as a constant the first time; a new value fails the guard. With "
     "specialize_float=False (the 2.13 default) the second compile makes it a symbol, unless it is used "
     "where only a constant works"},
    {{"size_changed", "int_constant"},
     AdviceKind::MarkDynamic,
     editMarkDynamic,
     "Dynamo compiles for the sizes and ints of the first call; a new one fails the guard and, with automatic "
     "dynamic shapes, compiles again with it symbolic. Marking it dynamic up front saves that compile"},
    {{"size_0_1"},
     AdviceKind::MarkUnbacked,
     editMarkUnbacked,
     "a dynamic size is compiled for 2 and up; sizes 0 and 1 are specialized (the 0/1 rule) and fail the "
     "guard `2 <= size`. An unbacked size makes no such assumption (its code must then not branch on 0 or 1)"},
    {{"dtype_change"},
     AdviceKind::DtypeChange,
     editDtypeChange,
     "a graph is compiled for one dtype per tensor; each new dtype compiles another graph"},
    {{"requires_grad_change"},
     AdviceKind::RequiresGradChange,
     editRequiresGradChange,
     "requires_grad is guarded: a tensor that needs gradients gets a graph with a backward, one that "
     "does not gets an inference graph, so switching compiles again"},
    {{"stride_change"},
     AdviceKind::Contiguous,
     editContiguous,
     "a graph is compiled for its inputs' strides; a transposed, sliced or expanded view brings others, fails "
     "the guard and compiles again"},
};

const char* const kAdviceKindIds[] = {
    "",  // AdviceKind::None
#define DYNREP_ADVICE_KIND(Enum, id) id,
#include "why/advice_kinds.def"
#undef DYNREP_ADVICE_KIND
};

}  // namespace

const char* adviceKindId(AdviceKind kind) { return kAdviceKindIds[static_cast<int>(kind)]; }

const std::vector<std::string>& adviceKinds() {
  static const std::vector<std::string> kKinds(std::begin(kAdviceKindIds) + 1, std::end(kAdviceKindIds));
  return kKinds;
}

Advice adviseCause(const CauseClass& k, const RecompileCause& c, const Compile& fn, const Compile* first) {
  // The first call's own name for the tensor, where capture found it there: the mark goes before that call.
  const CallSite* call = first ? &first->callSite : nullptr;
  auto named =
      call ? call->arguments.find(tensorSource(c.source)) : std::map<std::string, std::string>::const_iterator{};
  bool callerNamed = call && named != call->arguments.end() && !call->userFrame.file.empty();
  CauseFacts f{
      k, c, fn, callerNamed ? named->second : prettyTensor(c.source.empty() ? k.subject : c.source), call, callerNamed};
  Advice advice;
  advice.line = {fn.file, fn.firstLine, fn.function, ""};
  for (const RecompileAdvice& row : kRecompileAdvice)
    for (const char* cause : row.causes) {
      if (!cause || k.cause != cause) continue;
      advice.kind = row.kind;
      advice.why = row.why;
      row.edit(f, &advice);
      return advice;
    }
  return advice;
}

}  // namespace dynrep::replay
