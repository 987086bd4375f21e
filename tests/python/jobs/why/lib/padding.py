"""A library helper that pads the rows of a batch to a multiple (as tokenizers and kernels ask).
pad_rows skips the pad when the rows already fit, a branch an unbacked row count cannot decide;
pad_rows_guarded is the library's fix: guard_or_false takes the general path when the compiler
cannot tell, and the general path is also right for rows that fit (it pads by zero)."""

import torch
import torch.nn.functional as F
from torch.fx.experimental.symbolic_shapes import guard_or_false


def pad_rows(x: torch.Tensor, multiple: int) -> torch.Tensor:
    if x.size(0) % multiple == 0:  # why: here
        return x
    return F.pad(x, (0, 0, 0, (-x.size(0)) % multiple))


def pad_rows_guarded(x: torch.Tensor, multiple: int) -> torch.Tensor:
    if guard_or_false(x.size(0) % multiple == 0):  # the advised edit: the fast path only when known
        return x
    return F.pad(x, (0, 0, 0, (-x.size(0)) % multiple))
