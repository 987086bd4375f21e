"""One table of training steps, one line each: an optimizer, the way the step is compiled, and
one change between the captured process and the replaying one. A step replayed with the
change must give what a plain torch.compile gives with it: replayed where the change is a value
the compiled step reads as an input (a tensor `lr`, a scheduler), compiled with its reason where
it changes the code (a float baked in, another class, another flag), never stale.

A row: name -> (how the step is compiled, optimizer before, optimizer after the change, what
replay does with the change). `P` is the model's parameters. How the step is compiled:
- split: the model compiled, and `opt.step()` compiled on its own (PyTorch's compiled-optimizer
  recipe), a scheduler stepping between steps;
- whole: one compiled function for the whole step (forward, backward, `opt.step()`,
  `opt.zero_grad()`), as torchtitan-style loops write it;
- eager: the model compiled, the optimizer eager.
Adam and AdamW with foreach=True are in no row: on a CPU, PyTorch itself fails to compile their
step once several optimizers' steps have compiled in one process (2.13: `_foreach_addcdiv_`,
"Expected scalars to be on CPU, got meta instead"), with or without dynamo-replay.
"""

from __future__ import annotations

from pathlib import Path

REPLAYS, COMPILES = "replays", "compiles"

CASES: dict[str, tuple[str, str, str, str]] = {
    # A tensor lr is a graph input: another value needs no recompile, and is not baked in.
    "sgd_momentum_lr": (
        "split",
        "SGD(P, lr=torch.tensor(0.1), momentum=0.9)",
        "SGD(P, lr=torch.tensor(0.05), momentum=0.9)",
        REPLAYS,
    ),
    "adam_scheduler": ("split", "Adam(P, lr=torch.tensor(0.01))", "Adam(P, lr=torch.tensor(0.03))", REPLAYS),
    "adamw_lr_eager": ("eager", "AdamW(P, lr=0.01)", "AdamW(P, lr=0.02)", REPLAYS),
    "sgd_lr_whole": (
        "whole",
        "SGD(P, lr=torch.tensor(0.1), momentum=0.9)",
        "SGD(P, lr=torch.tensor(0.05), momentum=0.9)",
        REPLAYS,
    ),
    # Fused AdamW hands its floats to one kernel as arguments of the graph: another weight decay too.
    "adamw_fused_weight_decay": (
        "split",
        "AdamW(P, lr=torch.tensor(0.01), fused=True)",
        "AdamW(P, lr=torch.tensor(0.01), fused=True, weight_decay=0.1)",
        REPLAYS,
    ),
    # Floats the step reads are baked into its graph and guarded by PyTorch: another value compiles.
    "adam_betas": (
        "whole",
        "Adam(P, lr=torch.tensor(0.01), betas=(0.9, 0.999))",
        "Adam(P, lr=torch.tensor(0.01), betas=(0.8, 0.99))",
        COMPILES,
    ),
    "sgd_single_to_foreach": (
        "whole",
        "SGD(P, lr=0.1, momentum=0.9, foreach=False)",
        "SGD(P, lr=0.1, momentum=0.9, foreach=True)",
        COMPILES,
    ),
    "sgd_float_lr": ("whole", "SGD(P, lr=0.1, momentum=0.9)", "SGD(P, lr=0.2, momentum=0.9)", COMPILES),
    # What the optimizer's description holds: its class and the flags that change its code.
    "adam_to_adamw": ("whole", "Adam(P, lr=torch.tensor(0.01))", "AdamW(P, lr=torch.tensor(0.01))", COMPILES),
    "sgd_foreach_to_fused": (
        "split",
        "SGD(P, lr=torch.tensor(0.1), momentum=0.9, foreach=True)",
        "SGD(P, lr=torch.tensor(0.1), momentum=0.9, fused=True)",
        COMPILES,
    ),
}

_STEPS = 3

_TEMPLATE = '''"""Training case {name} (tests/python/training_cases.py)."""
import torch
from torch.optim import SGD, Adam, AdamW


def run(changed):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    P = model.parameters()
    opt = {after} if changed else {before}
    scheduler = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5) if {scheduled} else None
    generator = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 8, generator=generator), torch.randn(4, 1, generator=generator)) for _ in range({steps})]
    mode = "{mode}"
    losses = []
    if mode == "whole":
        @torch.compile
        def step_{name}(x, y):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss.detach()

        for x, y in batches:
            losses.append(step_{name}(x, y))
    else:
        compiled = torch.compile(model)

        @torch.compile
        def opt_step_{name}():
            opt.step()

        for x, y in batches:
            loss = torch.nn.functional.mse_loss(compiled(x), y)
            loss.backward()
            opt_step_{name}() if mode == "split" else opt.step()
            opt.zero_grad()
            if scheduler is not None:
                scheduler.step()
            losses.append(loss.detach())
    return losses + [p.detach().clone() for p in model.parameters()]
'''


def write_cases(folder: Path, cases: dict[str, tuple[str, str, str, str]] | None = None) -> None:
    """One module per case, train_case_<name>.py, each defining run(changed) -> the losses and
    the trained parameters. A module of its own gives each case's compiled functions their own
    name, which is what PyTorch keys saved frames by."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (mode, before, after, _) in (cases or CASES).items():
        text = _TEMPLATE.format(
            name=name, mode=mode, before=before, after=after, scheduled=name == "adam_scheduler", steps=_STEPS
        )
        (folder / f"train_case_{name}.py").write_text(text)
