"""The torch-dialect form of a stored graph checked by torch-mlir itself: parsed and verified
with the torch dialect registered, lowered by torch-mlir's own FX-import pipelines to
linalg-on-tensors, run by a reference backend over torch-mlir's ExecutionEngine, and compared
with the graph's stored outputs on its stored inputs.

    >>> from dynamo_replay import torch_mlir_check
    >>> result = torch_mlir_check.check("job.dynrep", "0/1", graph="forward")
    >>> result.stage, result.error        # ("matched", "") when every stage passed

torch-mlir is optional (`pip install --no-deps torch-mlir`: its wheel pins no torch, and must
not replace the one installed) and imported on first use.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dynamo_replay.errors import GraphError

__all__ = ["STAGES", "TorchMlirResult", "check", "check_store", "check_text", "require_torch_mlir"]

PIP_COMMAND = "pip install --no-deps torch-mlir==20261001"

# What torch-mlir runs after its FX importer (torch_mlir/fx.py _module_lowering), then for
# OutputType.LINALG_ON_TENSORS (torch_mlir/compiler_utils.py lower_mlir_module).
TORCH_BACKEND_PIPELINE = (
    "builtin.module(func.func(torch-match-quantized-custom-ops), "
    "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})"
)
LINALG_PIPELINE = "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline{allow-non-finites=True})"

# linalg-on-tensors -> LLVM, as torch-mlir's reference backend lowers it
# (torch_mlir_e2e_test/linalg_on_tensors_backends/refbackend.py, not in the wheel), except: the
# wheel's MLIR has no buffer-deallocation pass, so buffer-deallocation-pipeline runs after the
# calling-convention munging (the results are copied out by the callback before they are
# freed; run before it, it frees them early); and no runtime verification.
REF_BACKEND_PIPELINE = (
    "builtin.module("
    + ",".join(
        [
            "func.func(linalg-generalize-named-ops)",
            "func.func(linalg-fuse-elementwise-ops)",
            "convert-shape-to-std",
            "sparse-assembler{direct-out}",
            "sparsification-and-bufferization",
            "sparse-storage-specifier-to-llvm",
            "func.func(expand-realloc)",
            "func.func(refback-generalize-tensor-pad)",
            "func.func(refback-generalize-tensor-concat)",
            "func.func(tm-tensor-bufferize)",
            "one-shot-bufferize{copy-before-write bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}",
            "refback-mlprogram-bufferize",
            "inline",
            "refback-munge-calling-conventions",
            "buffer-deallocation-pipeline",
            "func.func(tm-tensor-to-loops)",
            "func.func(refback-munge-memref-copy)",
            "func.func(convert-linalg-to-loops)",
            "func.func(lower-affine)",
            "convert-scf-to-cf",
            "func.func(refback-expand-ops-for-llvm)",
            "func.func(arith-expand)",
            "func.func(convert-math-to-llvm)",
            "convert-math-to-libm",
            "expand-strided-metadata",
            "finalize-memref-to-llvm",
            "lower-affine",
            "convert-bufferization-to-memref",
            "finalize-memref-to-llvm",
            "func.func(convert-arith-to-llvm)",
            "convert-vector-to-llvm",
            "convert-func-to-llvm",
            "convert-cf-to-llvm",
            "convert-complex-to-llvm",
            "reconcile-unrealized-casts",
        ]
    )
    + ")"
)

# Each stage a graph can reach, in order; a result names the last one passed. none: the stored
# inputs or replay-mlir failed; emitted: replay-mlir wrote the module; parsed: torch-mlir parsed
# and verified it; backend: its FX pipeline took it to the torch backend form; linalg: lowered to
# linalg-on-tensors; executed: the reference backend ran it; matched: the stored outputs.
STAGES = ("none", "emitted", "parsed", "backend", "linalg", "executed", "matched")

# lower-check's tolerance: another compiler, another accumulation order (docs/mlir.md).
RTOL, ATOL = 1e-3, 1e-5

_CONSUME_PREFIX = "refbackend_consume_func_return_"


@dataclass(frozen=True)
class TorchMlirResult:
    compile_id: str
    graph: str  # the graph's event: aot_forward_graph, aot_backward_graph, aot_inference_graph
    stage: str  # the last stage passed (STAGES)
    error: str = ""  # why the next stage failed: torch-mlir's diagnostics, or the outputs that differ

    @property
    def ok(self) -> bool:
        return self.stage == "matched"


def require_torch_mlir() -> Any:
    """The torch_mlir package; ImportError naming the pip command when it is not installed."""
    try:
        import torch_mlir.dialects.torch
        import torch_mlir.execution_engine
        import torch_mlir.ir
        import torch_mlir.passmanager
        import torch_mlir.runtime
    except ImportError as e:
        raise ImportError(
            f"torch-mlir is not installed ({e}): {PIP_COMMAND} (--no-deps: it must not replace the installed torch)"
        ) from e
    import torch_mlir

    return torch_mlir


class _StageError(Exception):
    pass


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + " ..."


def _diagnostics(error: Exception) -> str:
    """An MLIRError's diagnostics, one a line, with their locations (the user's line)."""
    lines = []
    for d in getattr(error, "error_diagnostics", None) or []:
        lines.append(f"{d.location}: {d.message}")
        lines += [f"  note: {n.location}: {_first_line(n.message)}" for n in d.notes]
    return "\n".join(lines) or str(error)


def _run_pipeline(tm: Any, module: Any, pipeline: str, unlowered: bool = False) -> None:
    """Runs `pipeline`; _StageError with its diagnostics, and with unlowered=True the torch
    operators still in the module (what the lowering has no pattern for, as a rule)."""
    try:
        tm.passmanager.PassManager.parse(pipeline).run(module.operation)
    except tm.ir.MLIRError as e:
        message = _diagnostics(e)
        if unlowered:
            counts: dict[str, int] = {}
            for op in _ops(tm, module, None):
                name = tm.ir.StringAttr(op.attributes["name"]).value if op.name == "torch.operator" else op.name
                if name.startswith(("torch.aten.", "torch.prims.", "torch.prim.", "torch.operator")):
                    counts[name] = counts.get(name, 0) + 1
            if counts:
                message += "\nnot lowered: " + ", ".join(f"{n} x{c}" for n, c in sorted(counts.items()))
        raise _StageError(message) from None


def _ops(tm: Any, module: Any, names: tuple[str, ...] | None) -> list[Any]:
    """The operations named `names` (None: all) under `module`, in order."""
    found: list[Any] = []

    def visit(op: Any) -> Any:
        if names is None or op.name in names:
            found.append(op)
        return tm.ir.WalkResult.ADVANCE

    getattr(module, "operation", module).walk(visit)
    return found


def _drop_symbolic_shapes(tm: Any, module: Any) -> None:
    """Removes torch.bind_symbolic_shape and torch.symbolic_int: torch-mlir's FX path imports
    without them unless asked (import_symbolic_shape_expressions), and its linalg lowering has
    no pattern for them (they annotate; nothing computes with them)."""
    for op in _ops(tm, module, ("torch.bind_symbolic_shape",)):
        op.erase()
    for op in _ops(tm, module, ("torch.symbolic_int",)):
        op.erase()


def _scalars_as_tensors(tm: Any, func: Any) -> None:
    """The reference backend takes memrefs only: each !torch.int / !torch.float argument (a
    symbolic size) becomes a 0-d tensor read back by aten.Int.Tensor / aten.Float.Tensor."""
    ir = tm.ir
    block = func.regions[0].blocks[0]
    for arg in list(block.arguments):
        kind = str(arg.type)
        if kind not in ("!torch.int", "!torch.float"):
            continue
        scalar = arg.type
        arg.set_type(ir.Type.parse("!torch.vtensor<[],si64>" if kind == "!torch.int" else "!torch.vtensor<[],f64>"))
        with ir.InsertionPoint.at_block_begin(block), func.location:
            read = ir.Operation.create(
                "torch.aten.Int.Tensor" if kind == "!torch.int" else "torch.aten.Float.Tensor",
                results=[scalar],
                operands=[arg],
            )
        arg.replace_all_uses_except(read.result, read)
    inputs = [a.type for a in block.arguments]
    results = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).results
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def _drop_none_results(tm: Any, func: Any) -> list[int]:
    """The reference backend returns tensors and scalars only: a !torch.none result (a gradient
    that does not flow) is dropped. The positions of the results kept."""
    ir = tm.ir
    block = func.regions[0].blocks[0]
    ret = list(block.operations)[-1]
    kept = [i for i, v in enumerate(ret.operands) if str(v.type) != "!torch.none"]
    if len(kept) == len(ret.operands):
        return kept
    values = [ret.operands[i] for i in kept]
    with ir.InsertionPoint(ret), ret.location:
        ir.Operation.create("func.return", operands=values)
    ret.erase()
    inputs = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [v.type for v in values]))
    return kept


def _function(tm: Any, module: Any) -> Any:
    funcs = [
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and "sym_visibility" not in op.operation.attributes
    ]
    if len(funcs) != 1:
        raise _StageError(f"expected one public func.func, found {len(funcs)}")
    return funcs[0].operation


def _arrays(inputs: list[Any]) -> list[Any]:
    """The stored inputs as the contiguous numpy arrays the reference backend takes (a symbolic
    size as a 0-d array, see _scalars_as_tensors)."""
    import numpy as np

    arrays = []
    for i, value in enumerate(inputs):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            arrays.append(np.array(value, dtype=np.int64 if isinstance(value, int) else np.float64))
        elif hasattr(value, "numpy") and str(value.dtype) != "torch.bfloat16":
            arrays.append(np.ascontiguousarray(value.detach().resolve_conj().resolve_neg().numpy()))
        else:
            kind = value.dtype if hasattr(value, "dtype") else type(value).__name__
            raise _StageError(f"input {i}: the reference backend takes no {kind} argument")
    return arrays


def _check_narrowing_casts(tm: Any, module: Any) -> None:
    """torch-mlir's lowering may cast a dynamic size to a static one it assumed, unchecked (its
    legacy aten.view lowering narrows one of several dynamic dims to 1, llvm/torch-mlir#3852 and
    #4743), and canonicalization carries the assumption back to the arguments; code built on a
    wrong one reads and writes out of bounds. Each such tensor.cast gets a cf.assert of the size,
    so a wrong assumption stops the run with its location instead."""
    from torch_mlir.dialects import arith, cf, tensor

    ir = tm.ir
    for op in _ops(tm, module, ("tensor.cast",)):
        source = op.operands[0]
        have, want = ir.RankedTensorType(source.type), ir.RankedTensorType(op.results[0].type)
        for d in range(want.rank):
            if not have.is_dynamic_dim(d) or want.is_dynamic_dim(d):
                continue
            size = want.get_dim_size(d)
            with ir.InsertionPoint(op), op.location:
                actual = tensor.dim(source, arith.ConstantOp.create_index(d))
                same = arith.cmpi(arith.CmpIPredicate.eq, actual, arith.ConstantOp.create_index(size))
                cf.assert_(
                    same,
                    f"{op.location}: torch-mlir's lowering assumed dim {d} of a {have} is {size}, "
                    "and it is not (llvm/torch-mlir#4743)",
                )


def _execute(tm: Any, module: Any, name: str, arrays: list[Any]) -> list[Any]:
    """Runs the lowered function on `arrays`; its results as numpy arrays and scalars, in order."""
    import numpy as np
    from torch_mlir.runtime import UnrankedMemRefDescriptor, get_unranked_memref_descriptor, unranked_memref_to_numpy

    memref_dtypes = {
        "mrf16": np.float16,
        "mrf32": np.float32,
        "mrf64": np.float64,
        "mri1": np.bool_,
        "mri8": np.int8,
        "mri32": np.int32,
        "mri64": np.int64,
        "mrc32": np.complex64,
        "mrc64": np.complex128,
    }
    scalars = {"i1": ctypes.c_bool, "i64": ctypes.c_int64, "f32": ctypes.c_float, "f64": ctypes.c_double}
    engine = tm.execution_engine.ExecutionEngine(module, opt_level=2)
    results: list[Any] = []
    callbacks = []  # alive until the call returns
    for op in module.body.operations:
        symbol = tm.ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else ""
        if not symbol.startswith(_CONSUME_PREFIX):
            continue
        tokens = symbol[len(_CONSUME_PREFIX) :].split("_")
        unknown = [t for t in tokens if t not in memref_dtypes and t not in scalars]
        if unknown:
            raise _StageError(f"the reference backend cannot return {', '.join(unknown)} values")
        prototype = ctypes.CFUNCTYPE(None, *[scalars.get(t, ctypes.POINTER(UnrankedMemRefDescriptor)) for t in tokens])

        def consume(*values: Any, tokens: list[str] = tokens) -> None:  # copies: the buffers are freed after it
            results[:] = [
                np.array(unranked_memref_to_numpy(v, memref_dtypes[t]), copy=True) if t in memref_dtypes else v
                for v, t in zip(values, tokens)
            ]

        callbacks.append(prototype(consume))
        engine.register_runtime(symbol, callbacks[-1])
    descriptors = [ctypes.pointer(ctypes.pointer(get_unranked_memref_descriptor(a))) for a in arrays]
    engine.invoke(name, *descriptors)
    return results


def _isolated(run: Callable[[], list[Any]]) -> list[Any]:
    """run() in a forked child: JIT-compiled code that fails a runtime check aborts, and code
    miscompiled from a wrong assumption can corrupt the heap; either ends the child, not the
    caller. The child's results come back pickled; its output (the check's message) on failure."""
    import faulthandler
    import pickle
    import signal
    import tempfile

    with tempfile.TemporaryFile() as err:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            status = 0
            try:
                os.close(read)
                faulthandler.disable()  # the abort is the result, not a crash to dump
                for fd in (1, 2):  # a failed cf.assert puts its message on stdout
                    os.dup2(err.fileno(), fd)
                try:
                    payload = pickle.dumps(("ok", run()))
                except _StageError as e:
                    payload = pickle.dumps(("error", str(e)))
                except Exception as e:  # noqa: BLE001 - the JIT's own errors, reported as the stage's
                    payload = pickle.dumps(("error", f"{type(e).__name__}: {e}"))
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
            except BaseException:  # noqa: BLE001 - the child must reach os._exit
                status = 1
            os._exit(status)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        output = err.read().decode(errors="replace").strip()
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise _StageError(f"the compiled function was killed by {name}" + (f": {output}" if output else ""))
    if not payload:
        raise _StageError(
            f"the compiled function's process exited {os.WEXITSTATUS(status)}" + (f": {output}" if output else "")
        )
    kind, value = pickle.loads(payload)
    if kind == "error":
        raise _StageError(value)
    return value


def _compare(got: list[Any], kept: list[int], expected: list[tuple[int, Any]]) -> str:
    """Lines naming each output that differs from its stored value; `got` holds the results at
    positions `kept`."""
    import numpy as np
    import torch

    from dynamo_replay.graphs.standalone import differences

    outputs: list[Any] = [None] * (max(kept, default=-1) + 1)
    for position, value in zip(kept, got):
        outputs[position] = torch.from_numpy(np.asarray(value)) if isinstance(value, np.ndarray) else value
    for position, want in expected:
        if position >= len(outputs):
            return f"output {position}: the function returned {len(outputs)} values"
        if isinstance(want, torch.Tensor) and isinstance(outputs[position], torch.Tensor):
            outputs[position] = outputs[position].to(want.dtype)  # si64 comes back as i64, bool as i1
        elif not isinstance(want, torch.Tensor) and isinstance(outputs[position], torch.Tensor):
            outputs[position] = outputs[position].item()
    return "\n".join(differences(outputs, expected, RTOL, ATOL))


# What draws from a generator (replay/query/random_ops.h names the same for the linalg form,
# which takes PyTorch's draws as inputs instead).
_RANDOM_OPS = re.compile(
    r"(?:torch\.aten\.|\"aten\.)(?:rand|randn|randint|randperm|bernoulli|uniform|normal|exponential|geometric|"
    r"cauchy|log_normal|multinomial|native_dropout|rrelu_with_noise|poisson)\w*"
)


def check_text(
    text: str, inputs: list[Any], expected: list[tuple[int, Any]], compile_id: str = "", graph: str = ""
) -> TorchMlirResult:
    """`text` (a torch-dialect module from dynamo_replay.mlir.lower) through torch-mlir, run on
    `inputs` and compared with `expected` ((output position, value) pairs)."""
    tm = require_torch_mlir()
    stage = "emitted"
    context = tm.ir.Context()
    tm.dialects.torch.register_dialect(context)
    try:
        with context, tm.ir.Location.unknown():
            try:
                module = tm.ir.Module.parse(text)
                module.operation.verify()
            except tm.ir.MLIRError as e:
                raise _StageError(_diagnostics(e)) from None
            stage = "parsed"
            func = _function(tm, module)
            name = tm.ir.StringAttr(func.attributes["sym_name"]).value
            _drop_symbolic_shapes(tm, module)
            _scalars_as_tensors(tm, func)
            kept = _drop_none_results(tm, func)
            _run_pipeline(tm, module, TORCH_BACKEND_PIPELINE)
            stage = "backend"
            _run_pipeline(tm, module, LINALG_PIPELINE, unlowered=True)
            stage = "linalg"
            arrays = _arrays(inputs)
            _check_narrowing_casts(tm, module)
            _run_pipeline(tm, module, REF_BACKEND_PIPELINE)
            got = _isolated(lambda: _execute(tm, module, name, arrays))
            stage = "executed"
            drawn = _RANDOM_OPS.search(text)
            if drawn:  # a different number is expected here, not a lowering bug
                raise _StageError(f"not compared: it draws random numbers ({drawn[0]}), from torch-mlir's generator")
            problems = _compare(got, kept, expected)
            if problems:
                raise _StageError(problems)
            stage = "matched"
    except _StageError as e:
        return TorchMlirResult(compile_id, graph, stage, str(e))
    return TorchMlirResult(compile_id, graph, stage)


def check(
    store: str | os.PathLike[str],
    compile_id: str,
    graph: str = "forward",
    library: str | os.PathLike[str] | None = None,
) -> TorchMlirResult:
    """One stored graph ("forward", "backward", "inference"): emitted by replay-mlir in the torch
    dialect, then through torch-mlir (check_text) on the stored first-call inputs."""
    from dynamo_replay import mlir
    from dynamo_replay.graphs import load_graph

    require_torch_mlir()
    try:
        module = load_graph(store, compile_id, graph=graph)
        event = module.graph_event
        inputs, expected = module.example_inputs, module.expected_outputs
    except GraphError as e:
        return TorchMlirResult(compile_id, graph, "none", f"the stored inputs: {e}")
    try:
        text = mlir.lower(store, compile_id, graph=graph, dialect="torch", library=library)
    except GraphError as e:
        return TorchMlirResult(compile_id, event, "none", str(e))
    return check_text(text, inputs, expected, compile_id, event)


def check_store(store: str | os.PathLike[str]) -> list[TorchMlirResult]:
    """check() for every aot graph of the store, in compile order."""
    from dynamo_replay.graphs.stored import stored_graphs

    names = {"aot_forward_graph": "forward", "aot_backward_graph": "backward", "aot_inference_graph": "inference"}
    return [check(store, compile_id, names[event]) for compile_id, event in stored_graphs(store) if event in names]
