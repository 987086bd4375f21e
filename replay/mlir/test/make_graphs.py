"""Writes the graph IR files the FileCheck tests lower (one operator family each), captured
from small functions with torch.compile(dynamic=True) so dynamic dims show. Run it again when
the graph IR format changes: .venv-2.15.0/bin/python replay/mlir/test/make_graphs.py [FAMILY...]"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

import dynamo_replay as dr
from dynamo_replay.graphs.stored import read_compile

HERE = Path(__file__).resolve().parent

# family -> (function, example inputs). The functions take every tensor as an input, so the
# graphs hold no constants (whose bytes live in the store).
FAMILIES = {
    "elementwise": (
        lambda x, y: torch.where(x > y, torch.exp(x) * 2, torch.tanh(y)).to(torch.float64),
        (torch.randn(3, 4), torch.randn(4)),
    ),
    "creation": (
        lambda x: x + torch.arange(x.shape[1]) + torch.ones_like(x) * torch.full((1,), 2.0),
        (torch.randn(3, 5),),
    ),
    "shape": (
        lambda x: torch.cat([x.transpose(0, 1).reshape(-1, 2), x.flatten().view(-1, 2)[1:]], 0).expand(2, -1, -1),
        (torch.randn(4, 6),),
    ),
    "linear": (
        lambda x, w, b: torch.addmm(b, x, w) + torch.bmm(x.unsqueeze(0), w.unsqueeze(0)).squeeze(0),
        (torch.randn(3, 8), torch.randn(8, 5), torch.randn(5)),
    ),
    "convolution": (
        lambda x, w: (
            F.max_pool2d(F.conv2d(x, w, padding=1, stride=2), 2) + F.avg_pool2d(F.conv2d(x, w, padding=1, stride=2), 2)
        ),
        (torch.randn(2, 3, 16, 16), torch.randn(4, 3, 3, 3)),
    ),
    "reduction": (
        lambda x: x.sum(1, keepdim=True) + x.amax(1, keepdim=True) + torch.softmax(x, -1) + x.var(1, keepdim=True),
        (torch.randn(4, 7),),
    ),
    "normalization": (
        lambda x, w, b: F.layer_norm(x, (8,), w, b) + F.group_norm(x.transpose(1, 2), 2).transpose(1, 2),
        (torch.randn(2, 5, 8), torch.randn(8), torch.randn(8)),
    ),
    "indexing": (
        lambda e, i, x: F.embedding(i, e).sum(1) + torch.gather(x, 1, i).float().sum(1, keepdim=True),
        (torch.randn(10, 4), torch.randint(0, 4, (3, 4)), torch.randint(0, 9, (3, 4))),
    ),
    "losses": (
        lambda x, t: F.cross_entropy(x, t) + F.nll_loss(F.log_softmax(x, 1), t, reduction="sum"),
        (torch.randn(6, 5), torch.randint(0, 5, (6,))),
    ),
    "attention": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        (torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)),
    ),
    "fft": (
        lambda x, z: (torch.fft.rfft(x).abs(), torch.fft.irfft(z * 2), torch.fft.fft(z, norm="ortho")),
        (torch.randn(4, 10), torch.randn(4, 6, dtype=torch.complex64)),
    ),
    "complex": (
        lambda z, w: torch.where(z == w, z * w, torch.exp(-z)).abs(),
        (torch.randn(3, 4, dtype=torch.complex64), torch.randn(4, dtype=torch.complex64)),
    ),
    "data_dependent": (
        lambda x: torch.nonzero(x > 0).sum() + torch.masked_select(x, x > 0).sum(),
        (torch.randn(5, 6),),
    ),
    "distance": (
        lambda a, b: torch.cdist(a, b).sum(0) + F.pdist(b).sum(),
        (torch.randn(4, 3), torch.randn(5, 3)),
    ),
    "grid_sample": (
        lambda x, g: F.grid_sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=False),
        (torch.randn(1, 2, 5, 6), torch.rand(1, 3, 4, 2) * 2 - 1),
    ),
    "quantize": (
        lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127),
        (torch.randn(3, 8),),
    ),
    "routing": (
        lambda x: torch.histc(x, bins=4, min=-2.0, max=2.0),
        (torch.randn(40),),
    ),
    "strided": (
        lambda x: torch.as_strided(x, (3, 2), (2, 1), 1) * 2,
        (torch.randn(12),),
    ),
}

# Families whose operators Dynamo traces only with a setting: the data-dependent ones make an
# output whose shape is a new (unbacked) symbol.
SETTINGS = {"data_dependent": {"capture_dynamic_output_shape_ops": True}}


def main(families: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for family in families or FAMILIES:
            fn, args = FAMILIES[family]
            store = Path(tmp) / f"{family}.dynrep"
            torch._dynamo.reset()
            with (
                torch._dynamo.config.patch(SETTINGS.get(family, {})),
                dr.capture(store, precompile=False, samples=False, core_aten=False),
                torch.no_grad(),
            ):
                torch.compile(fn, backend="aot_eager", dynamic=True)(*args)
            _, ir = read_compile(store, "0/0").ir("forward")
            for node in ir["nodes"]:  # user paths differ per machine: keep the file name only
                node.pop("stack_trace", None)
                if "location" in node:
                    node["location"]["file"] = Path(node["location"]["file"]).name
            (HERE / f"{family}.json").write_text(json.dumps(ir, indent=1) + "\n")
            print(family, sum(n["op"] == "call_function" for n in ir["nodes"]), "nodes")


if __name__ == "__main__":
    main(sys.argv[1:])  # the families named, or all
