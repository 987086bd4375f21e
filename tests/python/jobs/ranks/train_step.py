"""A multi-rank training job for the rank tests and benchmarks, run under torchrun.

Usage: torchrun --nproc-per-node N train_step.py OUT_DIR [--model gpt2|mlp] [--wrap ddp|fsdp]
  [--steps K] [--rank-branch] [--key-on-rank R] [--compile-optimizer] [--bucket-cap-mb MB]
  [--no-reshard-after-forward]

Each rank builds a 2-layer GPT-2 from a transformers config (or a 3 MB MLP; random weights,
the same seed on every rank), wraps it in DDP (1 MB buckets unless --bucket-cap-mb says otherwise, so Dynamo's DDPOptimizer
splits the graph) or
FSDP2 (fully_shard; --no-reshard-after-forward keeps parameters unsharded between forward and
backward), runs K compiled SGD steps on gloo (--compile-optimizer: the optimizer's
step compiled too), and writes OUT_DIR/rank-R.json: each
step's loss as a hex float, a digest of the final parameters, what Dynamo traced in this
process, and the seconds to the first output; --rank-branch makes the compiled step depend on the rank (a compile that
really differs); --key-on-rank R gives rank R alone a signing key (DYNAMO_REPLAY_KEY), so it
alone refuses an unsigned store."""

from __future__ import annotations

import argparse
import datetime
import faulthandler
import hashlib
import json
import os
import sys
import time
from pathlib import Path

START = time.perf_counter()
# A rank still running after 200 s (the tests' launches wait 300 s) prints where each of its
# threads is and exits: a hang fails its test with the stacks that explain it.
faulthandler.dump_traceback_later(200, exit=True)
if "--key-on-rank" in sys.argv and os.environ.get("RANK") == sys.argv[sys.argv.index("--key-on-rank") + 1]:
    os.environ["DYNAMO_REPLAY_KEY"] = "a key the store was not signed with"  # read as torch is imported

import torch  # noqa: E402
import torch._dynamo.convert_frame  # noqa: E402
import torch.distributed as dist  # noqa: E402

traced: list[str] = []
torch._dynamo.convert_frame.register_bytecode_hook(lambda code, new_code: traced.append(code.co_name))


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(1000, 256)
        self.layers = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
        self.head = torch.nn.Linear(256, 1000)

    def forward(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.layers(self.embed(tokens)))
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def build(name: str, wrap: str, bucket_cap_mb: float, reshard: bool) -> tuple[torch.nn.Module, torch.nn.Module]:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    no_dropout = {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
    model = (
        MLP()
        if name == "mlp"
        else GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=64, **no_dropout))
    ).train()
    if wrap == "fsdp":
        from torch.distributed.fsdp import fully_shard

        sharding = {} if reshard else {"reshard_after_forward": False}
        for block in model.transformer.h if name == "gpt2" else [model.layers]:
            fully_shard(block, **sharding)
        fully_shard(model, **sharding)
        return model, model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb), model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", choices=["gpt2", "mlp"], default="gpt2")
    parser.add_argument("--wrap", choices=["ddp", "fsdp"], default="ddp")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rank-branch", action="store_true")
    parser.add_argument("--key-on-rank")
    parser.add_argument("--compile-optimizer", action="store_true")
    parser.add_argument("--bucket-cap-mb", type=float, default=1.0)
    parser.add_argument("--no-reshard-after-forward", dest="reshard", action="store_false")
    args = parser.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))  # a hang ends as an error
    rank = dist.get_rank()
    wrapped, model = build(args.model, args.wrap, args.bucket_cap_mb, args.reshard)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scale = 2.0 if (args.rank_branch and rank == 1) else 1.0

    def step(tokens: torch.Tensor, scale: float) -> torch.Tensor:
        out = wrapped(tokens, labels=tokens)
        loss = (out if isinstance(out, torch.Tensor) else out.loss) * scale
        loss.backward()
        return loss

    compiled = torch.compile(step)
    optimizer_step = torch.compile(optimizer.step) if args.compile_optimizer else optimizer.step
    tokens = torch.randint(0, 1000, (2, 32), generator=torch.Generator().manual_seed(1))
    losses, first = [], None
    for _ in range(args.steps):
        loss = compiled(tokens, scale)
        optimizer_step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()).hex())
        first = first if first is not None else time.perf_counter() - START
    digest = hashlib.sha256()
    for parameter in model.parameters():
        full = parameter.full_tensor() if hasattr(parameter, "full_tensor") else parameter
        digest.update(full.detach().contiguous().numpy().tobytes())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"rank-{rank}.json").write_text(
        json.dumps(
            {
                "rank": rank,
                "world": dist.get_world_size(),
                "losses": losses,
                "parameters": digest.hexdigest(),
                "traced": traced,
                "first_output_s": first,
                "pid": os.getpid(),
            }
        )
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
