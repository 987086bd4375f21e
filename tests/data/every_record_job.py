"""The job behind tests/data/capture-1.5/every-record.dynrep: a small captured job that makes
every record kind and every event capture writes (make_data.py --new-capture runs it).

A training step with a dynamic batch (forward and backward graphs, symbols and their origins,
a recompile, call counts, samples of both passes), a frame PyTorch's precompile cannot save (code
made by exec: not_packaged), guards it drops (dropped_guard), a compile that fails on an unbacked
symbol (compile_failure, shape_guard from torch._check, symbol_values from the graph traced up to
the failure), a dimension marked dynamic that the code specializes (a constraint violation), a
compiled graph whose runtime assert real data breaks (runtime_failure), and an exception that
ends the job (error). Every compile records its call site; the job records how it started.
"""

from __future__ import annotations

import sys

import torch

import dynamo_replay as dr


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)) * 0.5)


# Code from a string, as dataclasses and other code generators make it: PyTorch cannot name it.
_GENERATED: dict = {}
exec("def generated(x):\n    y = torch.tanh(x)\n    torch._dynamo.graph_break()\n    return y.sum()\n",
     {"torch": torch}, _GENERATED)


def calls_generated(x: torch.Tensor) -> torch.Tensor:
    return _GENERATED["generated"](x) + 1  # the graph break makes `generated` a frame of its own


def branches_on_data(x: torch.Tensor) -> torch.Tensor:
    count = torch.nonzero(x > 0.5).size(0)
    torch._check(count <= x.numel() // 2)  # a runtime assert on u0
    if count == 0:  # undecidable at compile time: the compile fails under fullgraph
        return x
    return x * 2


def pairs(x: torch.Tensor) -> torch.Tensor:
    idx = torch.nonzero(x).flatten()
    return idx.view(-1, 2).float().mean(0)  # 5 nonzeros below: the assert Eq(Mod(u0, 2), 0) fails


def head(x: torch.Tensor) -> torch.Tensor:
    if x.size(0) == 8:  # specializes the size marked dynamic
        return x + 1
    return x - 1


def main(path: str) -> None:
    torch.manual_seed(0)
    model = MLP()
    step = torch.compile(model, backend="aot_eager")
    try:
        with dr.capture(path):
            for batch in (4, 6):
                step(torch.randn(batch, 16)).sum().backward()
            try:
                torch.compile(branches_on_data, backend="aot_eager", fullgraph=True)(torch.rand(8))
            except Exception:  # the store keeps the failure
                pass
            marked = torch.randn(8, 2)
            torch._dynamo.mark_dynamic(marked, 0)
            try:
                torch.compile(head, backend="aot_eager")(marked)
            except Exception:  # ConstraintViolationError
                pass
            with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
                try:
                    torch.compile(pairs, backend="aot_eager", fullgraph=True)(torch.tensor([1, 0, 2, 3, 0, 4, 5]))
                except RuntimeError:  # the compiled code's runtime assert
                    pass
            torch.compile(calls_generated, backend="aot_eager")(torch.randn(3))
            raise RuntimeError("the job stops here, on purpose: the store keeps this error")
    except RuntimeError:
        pass


if __name__ == "__main__":
    main(sys.argv[1])
