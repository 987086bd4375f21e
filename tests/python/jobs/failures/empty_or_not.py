"""A data-dependent branch under fullgraph=True (could not decide Eq(u0, 0)); argv[1] says which
side the data takes, so the recorded value of u0 decides the advice."""

import sys

import torch

threshold = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5


def top(scores):
    picked = torch.nonzero(scores > threshold).squeeze(1)  # why: u0
    if picked.numel() == 0:  # why: here
        return scores.new_zeros(1)
    return scores[picked].sort(descending=True).values


f = torch.compile(top, backend="aot_eager", fullgraph=True)
print(f(torch.tensor([0.9, 0.1, 0.7, 0.3, 0.6])))
