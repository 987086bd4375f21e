"""A compile that fails on a data-dependent branch, in a job killed on the spot (os._exit): the
failure and the value of u0 were written when the compile failed, and the recovered store holds them."""

import os

import torch


@torch.compile(backend="aot_eager", fullgraph=True)
def top(scores):
    picked = torch.nonzero(scores > 0.5).squeeze(1)  # why: u0
    if picked.numel() == 0:  # why: here
        return scores.new_zeros(1)
    return scores[picked].sort(descending=True).values


try:
    top(torch.tensor([0.9, 0.1, 0.7, 0.3, 0.6]))
except Exception:
    os._exit(3)
