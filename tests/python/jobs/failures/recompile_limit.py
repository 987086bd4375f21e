"""A recompile limit made an error (fail_on_recompile_limit_hit): each new scale recompiles, and
the third compile is one too many."""

import torch

torch._dynamo.config.recompile_limit = 2
torch._dynamo.config.fail_on_recompile_limit_hit = True


def scaled(x, scale: int):  # why: here
    return x * scale + 1


f = torch.compile(scaled, backend="aot_eager", dynamic=False)
for scale in (2, 3, 4):
    print(f(torch.ones(3), scale))
