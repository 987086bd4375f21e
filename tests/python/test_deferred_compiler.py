"""Replay's backend that only loads (_torch/deferred_compiler.py): what capture records for it,
and how the deferred compiler modules behave, in a fresh process where nothing imported them.
That a whole replay of training and inference jobs leaves the compiler unimported is
test_training's (its replay process reports the modules after each run)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dynamo_replay._torch import deferred_compiler

# The extern kernels Inductor's CPU graphs call, by the name its wrappers use: each must resolve
# to the very function without importing the compiler.
EXTERN_KERNELS = ["mm", "addmm", "bmm", "baddbmm", "convolution", "_mkl_linear", "_linear_pointwise"]


@pytest.mark.parametrize("name", EXTERN_KERNELS)
def test_an_extern_kernel_is_recorded_where_replay_finds_it_without_the_compiler(name: str) -> None:
    from torch._inductor.select_algorithm import extern_kernels

    value = getattr(extern_kernels, name)
    reference = deferred_compiler._reference(value)
    assert reference is not None and deferred_compiler.resolve(reference) is value
    assert not reference.startswith("torch._inductor"), reference


def test_every_extern_kernel_recorded_resolves_to_the_same_object() -> None:
    from torch._inductor.select_algorithm import extern_kernels

    for name, value in vars(extern_kernels).items():
        reference = deferred_compiler._reference(value)
        assert reference is None or deferred_compiler.resolve(reference) is value, name


# (a generated wrapper's lines, the operators outside aten it calls)
WRAPPERS = {
    "aten only, through its alias": ("aten = torch.ops.aten\nbuf0 = aten.mm.default(a, b)\n", set()),
    "a namespace called in full": (
        "buf1 = torch.ops.quantized_decomposed.quantize_per_tensor.default(x, 0.1, 0, 0, 255, torch.uint8)\n",
        {"quantized_decomposed::quantize_per_tensor"},
    ),
    "a namespace through its alias": (
        "inductor_ops = torch.ops.inductor\nbuf2 = inductor_ops._alloc_from_pool(pool, 0, torch.float32, (4,), (1,))\n",
        {"inductor::_alloc_from_pool"},
    ),
    "an alias defined but not called": ("_quantized = torch.ops._quantized\n", set()),
    "prims seeds for dropout": ("torch.ops.prims.inductor_seeds.default(2, device)\n", {"prims::inductor_seeds"}),
}


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_capture_records_the_operators_a_wrapper_calls(wrapper: str) -> None:
    source, expected = WRAPPERS[wrapper]
    assert deferred_compiler._operators_called(source) == expected


# One fresh process: each check's result by name. Nothing has imported the compiler before it.
PROBE = """
import json, sys
import torch, torch._dynamo
from dynamo_replay._torch import deferred_compiler as dc

def real(name):
    return type(sys.modules.get(name)).__name__ == "module"

out = {}
out["operators only the compiler registers"] = dc.undeferrable_operators(
    ["quantized_decomposed::quantize_per_tensor", "inductor::_alloc_from_pool", "mkldnn::_linear_pointwise"])
deferred = dc.DeferredCompiler({"extern_kernels": {"mm": "torch:mm"}, "operators": []})
compiled = torch.compile(lambda x: x + 1)
out["torch.compile imports no compiler"] = [n for n in ("torch._inductor.compile_fx", *dc.DEFERRED) if real(n)]
config = compiled.get_compiler_config()
deferred.remove()
out["removed unused: plain imports again"] = [n in sys.modules for n in dc.DEFERRED]
deferred = dc.DeferredCompiler({"extern_kernels": {}, "operators": []})
from torch._inductor.select_algorithm import extern_kernels
import torch._inductor
out["any other reader gets the real module"] = [
    real("torch._inductor.select_algorithm"), torch._inductor.select_algorithm is sys.modules["torch._inductor.select_algorithm"],
    extern_kernels.mm is torch.mm, deferred.imported]
from torch._inductor.graph import GraphLowering
out["GraphLowering is the real class"] = [hasattr(GraphLowering, "codegen"), real("torch._inductor.graph")]
deferred.remove()
out["removed after a real import: stays imported"] = [real(n) for n in dc.DEFERRED]
out["the config is the compiler's, built when read"] = [
    dict(config) == torch._TorchCompileInductorWrapper("default", None, False).get_compiler_config(),
    real("torch._inductor.compile_fx")]
print(json.dumps(out))
"""

# (check, what the probe found)
EXPECTED = {
    "operators only the compiler registers": ["quantized_decomposed::quantize_per_tensor"],
    "torch.compile imports no compiler": [],
    "the config is the compiler's, built when read": [True, True],
    "removed unused: plain imports again": [False, False],
    "any other reader gets the real module": [True, True, True, ["torch._inductor.select_algorithm"]],
    "GraphLowering is the real class": [True, True],
    "removed after a real import: stays imported": [True, True],
}


@pytest.fixture(scope="module")
def probed() -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("check", EXPECTED)
def test_deferred_modules_answer_only_replay_s_loader(probed: dict, check: str) -> None:
    assert probed[check] == EXPECTED[check]
