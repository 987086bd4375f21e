"""Recompile: the tensor arrives inside a dict, and its batch grows between calls."""

import torch


def loss(batch):
    return (batch["x"] @ batch["w"]).square().mean()


f = torch.compile(loss, backend="aot_eager")
w = torch.linspace(-1, 1, 12).reshape(3, 4)
for n in (4, 6, 10):
    inputs = {"x": torch.linspace(0, 1, n * 3).reshape(n, 3), "w": w}
    print(f(inputs))
