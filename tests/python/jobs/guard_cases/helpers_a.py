"""A user module whose attributes the guard cases read, and change in one process."""

import torch

act = torch.relu
SCALE = 2.0


def ops(x):
    return x * 2.0
