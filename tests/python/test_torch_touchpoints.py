"""The pieces of dynamo_replay._torch that decide whether a saved frame may be used: how values
are described across processes, the lenient load of saved guard state, and the reuse of
Inductor's CPU vector-ISA probe."""

from __future__ import annotations

import pickle
import subprocess
import sys
import types

import pytest

pytest.importorskip("torch")

from dynamo_replay import _torch
from dynamo_replay._torch import install as _torch_install  # noqa: E402


def relu_like(x):
    return max(x, 0) if x not in {"a", "b", "c"} else x


def relu_like_too(x):
    return max(x, 0) if x not in {"a", "b", "c"} else x


def sigmoid_like(x):
    return 1 / (1 + 2.718**-x)


def test_functions_are_described_by_name_and_code() -> None:
    assert _torch.describe_value(relu_like) != _torch.describe_value(sigmoid_like)
    # Same code, other name: a swap from one to the other is seen.
    assert _torch.describe_value(relu_like) != _torch.describe_value(relu_like_too)
    assert _torch.describe_value(relu_like).startswith(f"function {__name__}.relu_like code ")


def test_descriptions_do_not_depend_on_the_string_hash_seed() -> None:
    """A set constant's repr follows the hash seed; its description must not."""
    code = "import test_torch_touchpoints as t; from dynamo_replay import _torch; print(_torch.describe_value(t.relu_like))"
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={
                "PYTHONHASHSEED": seed,
                "PATH": "/usr/bin",
                "PYTHONPATH": str(__import__("pathlib").Path(__file__).parent),
            },
        ).stdout
        for seed in ("1", "2")
    }
    assert len(seen) == 1


def test_a_user_class_is_described_by_its_methods() -> None:
    class Net:
        def act(self, x):
            return x

    before = _torch.describe_value(Net)
    Net.act = lambda self, x: -x
    assert _torch.describe_value(Net) != before
    assert _torch.describe_value(dict) == "class builtins.dict"  # pinned by the Python build


class Optimizerish:
    """Like AdamW: its __setstate__ reads a value PyTorch may save as missing."""

    def __init__(self) -> None:
        self.lr = 0.1
        self.state = {"step": 3}

    def __setstate__(self, state: dict) -> None:
        float(state["state"]["step"])
        self.__dict__.update(state)


def test_saved_state_whose_setstate_fails_loads_leniently() -> None:
    obj = Optimizerish()
    obj.state = {"step": object()}  # what float() rejects, as it rejects PyTorch's _Missing
    data = pickle.dumps({"scope": obj})
    with pytest.raises(TypeError):
        pickle.loads(data)
    state, lenient = _torch_install._load_guards_state(data)
    assert lenient == ["Optimizerish"]
    assert type(state["scope"]) is Optimizerish and state["scope"].lr == 0.1


# Faked CPUs: (CPU features as PyTorch reports them, what the capture's probe recorded,
# whether the record is used, the ISAs Inductor then holds). Any x86-64 host runs every row.
AVX2 = {"isa": "avx2"}
AVX512 = {"isa": "avx512", "avx512_bf16": False}
AVX512_BF16 = {"isa": "avx512", "avx512_bf16": True}
VNNI_BF16 = {"isa": "avx512 avx512_vnni", "avx512_bf16": True}
AMX_FP16 = {"isa": "avx512 avx512_vnni amx_tile", "avx512_bf16": True, "amx_fp16": True}
ISA_ROWS = {
    "avx2 only": ({"avx2"}, [AVX2], True, ["avx2"]),
    "avx-512 without bf16": ({"avx2", "avx512"}, [AVX512, AVX2], True, ["avx512", "avx2"]),
    "avx-512 with bf16 (zen 4)": ({"avx2", "avx512", "avx512_bf16"}, [AVX512_BF16, AVX2], True, ["avx512", "avx2"]),
    "vnni with bf16": (
        {"avx2", "avx512", "vnni", "avx512_bf16"},
        [VNNI_BF16, AVX512_BF16, AVX2],
        True,
        ["avx512 avx512_vnni", "avx512", "avx2"],
    ),
    "amx with fp16 (sapphire rapids)": (
        {"avx2", "avx512", "vnni", "avx512_bf16", "amx_tile", "amx_fp16"},
        [AMX_FP16, VNNI_BF16, AVX512_BF16, AVX2],
        True,
        ["avx512 avx512_vnni amx_tile", "avx512 avx512_vnni", "avx512", "avx2"],
    ),
    "recorded isa this cpu lacks": ({"avx2"}, [AVX512, AVX2], False, None),
    "record without the extras": ({"avx2"}, ["avx2"], False, None),
}


@pytest.fixture
def faked_cpu(monkeypatch):
    """Sets the CPU features PyTorch reports; any real probe build fails the test."""
    import torch
    from torch._inductor import cpu_vec_isa

    def fake(features: set[str]) -> None:
        for name in ("avx2", "avx512", "vnni", "avx512_bf16", "amx_tile", "amx_fp16"):
            monkeypatch.setattr(torch.cpu, f"_is_{name}_supported", lambda name=name: name in features)
        monkeypatch.setattr(torch.cpu, "_init_amx", lambda: True)
        monkeypatch.setattr(cpu_vec_isa.platform, "machine", lambda: "x86_64")
        monkeypatch.setattr(cpu_vec_isa.sys, "platform", "linux")

    def probe(isa, code):  # the real probe: a compiler and a Python child process
        raise AssertionError(f"Inductor probed {isa} although the record answers it")

    monkeypatch.setattr(cpu_vec_isa.VecISA, "check_build", probe)
    _torch._clear_isa_caches(cpu_vec_isa)
    yield fake
    _torch._clear_isa_caches(cpu_vec_isa)


@pytest.mark.parametrize("row", ISA_ROWS)
def test_isa_probe_is_answered_from_the_record_on_any_cpu(faked_cpu, row: str) -> None:
    from torch._inductor import cpu_vec_isa

    features, recorded, reused, selected = ISA_ROWS[row]
    faked_cpu(features)
    assert _torch.reuse_vec_isa_probe(recorded) is reused
    if not reused:
        assert cpu_vec_isa.valid_vec_isa_list.cache_info().currsize == 0  # Inductor probes as usual
        return
    isas = cpu_vec_isa.valid_vec_isa_list()
    assert [str(isa) for isa in isas] == selected
    for isa, entry in zip(isas, recorded):  # what the probe found for bf16 and fp16 builds kernels
        if str(isa) in ("avx512", "avx512 avx512_vnni amx_tile"):  # the two that pass the extras to g++
            assert ("-mavx512bf16" in isa.build_arch_flags()) is entry.get("avx512_bf16", False)
            assert ("-mamx-fp16" in isa.build_arch_flags()) is entry.get("amx_fp16", False)
    assert _torch.probed_vec_isas() == [
        {"isa": e["isa"], "avx512_bf16": e.get("avx512_bf16", False), "amx_fp16": e.get("amx_fp16", False)}
        for e in recorded
    ]


def test_recompile_causes_read_expected_and_seen() -> None:
    """PyTorch's reason lines, as 2.13 writes them, become source, expected and seen; a value the
    text lacks is read from the call's frame, and nothing beyond names, constant subscripts,
    attributes and size()/stride()/dim() is evaluated."""
    import torch

    from dynamo_replay.capture.shape_events import read_source, recompile_cause

    frame = ({"x": torch.zeros(1, 3), "scale": 0.7, "cfg": {"k": 2}}, {})
    size = recompile_cause("0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8", frame)
    assert (size["entry"], size["source"], size["expected"], size["seen"]) == ("0/0", "x.size()[0]", "4", "8")
    grad = recompile_cause("0/3: tensor 'x' requires_grad mismatch. expected requires_grad=1", frame)
    assert (grad["source"], grad["expected"], grad["seen"]) == ("x.requires_grad", "1", "False")
    scale = recompile_cause("0/1: scale == 0.5                # return x * scale  # f.py:3 in f", frame)
    assert (scale["guard"], scale["expected"], scale["seen"]) == ("scale == 0.5", "0.5", "0.7")
    zero_one = recompile_cause("0/2: 2 <= x.size()[0]  # (0/1 specialization ...)", frame)
    assert (zero_one["source"], zero_one["seen"]) == ("x.size()[0]", "1")
    assert read_source("L['cfg']['k']", *frame) == "2"
    assert read_source("x.sum()", *frame) == "" and read_source("__import__('os')", *frame) == ""


def test_a_guard_capture_leaves_out_of_the_saved_frame_stays_in_force_in_the_capture_process() -> None:
    """Capture saves CLASS_MATCH / MODULE_MATCH / FUNCTION_MATCH frames without those guards
    (replay re-checks them); in the capturing process each stays pinned to its object."""
    from dynamo_replay._torch import guards as _torch_guards

    added = []
    manager = types.SimpleNamespace(
        root=types.SimpleNamespace(add_lambda_guard=lambda check, parts, stack: added.append(check))
    )
    scope = {"Cfg": dict}
    _torch_guards.pin_in_capture(manager, [(_torch_guards._LiveExpression("G['Cfg']", scope), dict)])
    (check,) = added
    assert check({})
    scope["Cfg"] = list  # swapped in the same process: the saved-without-it frame must not answer
    assert not check({})


# A captured guard-tree line -> the aliasing guard replay reads from it: 2.13's lambda guard
# (evaluated by PyTorch over its saved globals) and 2.14's OBJECT_ALIASING leaf (over the live
# ones). One line per case.
ALIASING_LINES = {
    "LAMBDA_GUARD: G['CURRENT'] is G['A']": ("G['CURRENT'] is G['A']", False),
    "OBJECT_ALIASING: G['KIND'] is G['Kind'].A": ("G['KIND'] is G['Kind'].A", True),
    "OBJECT_ALIASING: G['KINDS'][0] is G['Kind'].A": ("G['KINDS'][0] is G['Kind'].A", True),
    "OBJECT_ALIASING: L['a'] is L['b']": None,  # reads no global: PyTorch's own check suffices
    "OBJECT_ALIASING": None,  # the leaf's second, bare line
    "LAMBDA_GUARD: len(G['x']) == 2": None,
}


@pytest.mark.parametrize("line", ALIASING_LINES)
def test_aliasing_guards_are_read_as_each_release_renders_them(line: str) -> None:
    from dynamo_replay._torch.guards import aliasing_guards

    found = [(g.expression, g.live_in_pytorch) for g in aliasing_guards([line])]
    assert found == ([ALIASING_LINES[line]] if ALIASING_LINES[line] else [])
