"""FFTs and complex tensors through MLIR: torch.fft's transforms (aten::_fft_r2c, _fft_c2c,
_fft_c2r, lowered as direct DFTs) and the complex elementwise ops around them, each compiled
static and with dynamic=True, must match the outputs PyTorch stored. About 20 s."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from dynamo_replay import mlir

sys.path.insert(0, str(Path(__file__).parent))
from compiled_capture import capture_compiled  # noqa: E402
from test_mlir import MLIR_OPT  # noqa: E402

pytestmark = pytest.mark.skipif(MLIR_OPT is None, reason="MLIR 19 is not installed (make test installs it)")


def _real(*shape: int, dtype: torch.dtype = torch.float32) -> Callable[[], tuple]:
    return lambda: (torch.randn(*shape, dtype=dtype),)


def _complex(*shape: int, dtype: torch.dtype = torch.complex64) -> Callable[[], tuple]:
    return lambda: (torch.randn(*shape, dtype=dtype),)


def _two_complex() -> tuple:
    return torch.randn(4, 5, dtype=torch.complex64), torch.randn(4, 5, dtype=torch.complex64)


# name: (function, its inputs). Odd and even lengths: the Hermitian completion differs.
CASES: dict[str, tuple[Callable[..., Any], Callable[[], tuple]]] = {
    "rfft": (torch.fft.rfft, _real(4, 10)),
    "rfft_odd": (torch.fft.rfft, _real(3, 9)),
    "fft_of_real": (torch.fft.fft, _real(4, 10)),
    "fft_of_complex": (torch.fft.fft, _complex(4, 10)),
    "ifft": (torch.fft.ifft, _complex(4, 10)),
    "irfft": (torch.fft.irfft, _complex(4, 6)),
    "irfft_n_odd": (lambda x: torch.fft.irfft(x, n=11), _complex(4, 6)),
    "irfft_n_shorter": (lambda x: torch.fft.irfft(x, n=8), _complex(4, 6)),
    "rfft2": (torch.fft.rfft2, _real(3, 6, 8)),
    "fft2_ortho": (lambda x: torch.fft.fft2(x, norm="ortho"), _complex(3, 6, 8)),
    "fftn_forward": (lambda x: torch.fft.fftn(x, dim=(0, 2), norm="forward"), _real(3, 6, 8)),
    "irfft2": (lambda x: torch.fft.irfft2(x, s=(6, 7)), _complex(2, 6, 4)),
    "rfft_roundtrip_complex128": (lambda x: torch.fft.irfft(torch.fft.rfft(x) * 2), _real(4, 10, dtype=torch.float64)),
    "complex_elementwise": (
        lambda z, w: (z * w, (z * w).abs(), torch.view_as_real(z + w), (z - w) / w, z.conj() * 2, z.real + w.imag),
        _two_complex,
    ),
    "complex_sum_exp": (lambda z, w: ((z * w).sum(1), torch.exp(z), (z == w)), _two_complex),
    "view_as_complex_and_casts": (
        lambda x: (torch.view_as_complex(x) * 3, torch.view_as_complex(x).to(torch.complex128), x.to(torch.complex64)),
        _real(4, 5, 2),
    ),
    "complex_scalars": (
        lambda z, x: (z * 1j + (2 - 1j), x * (0.5 + 2j), torch.full_like(z, 3 + 1j)),
        lambda: (torch.randn(3, 4, dtype=torch.complex64), torch.randn(3, 4)),
    ),
    "complex128_input": (lambda z: torch.fft.fft(z * 0.5, norm="ortho").abs(), _complex(3, 7, dtype=torch.complex128)),
}


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", list(CASES))
def test_fft_and_complex_graphs_match(name: str, dynamic: bool, tmp_path: Path) -> None:
    fn, inputs = CASES[name]
    torch.manual_seed(0)
    store = capture_compiled(tmp_path / "fft.dynrep", fn, inputs(), dynamic)
    report = mlir.lower_check(store)
    assert report["graphs"] and all(g["matched"] for g in report["graphs"]), report["graphs"]


def test_an_unlowered_complex_op_is_refused_by_name(tmp_path: Path) -> None:
    store = capture_compiled(tmp_path / "sqrt.dynrep", torch.sqrt, _complex(4, 5)(), dynamic=False)
    (graph,) = mlir.lower_check(store)["graphs"]
    assert graph["stage"] == "not lowered", graph
    assert any(i["op"] == "aten::sqrt.default" and "complex" in i["message"] for i in graph["issues"]), graph["issues"]
