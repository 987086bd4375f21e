"""A job for the export and report tests: transformers' GPT-2 from a small config (random
weights, aot_eager) called at two batch sizes (a recompile of the model's frame), and a head
that prints (a graph break, a resume function) called at both. Usage: STORE."""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

import dynamo_replay as dr


def head(logits: torch.Tensor, scale: float) -> torch.Tensor:
    y = logits.softmax(-1) * scale
    print("a graph break", file=sys.stderr)
    return y.sum()


def main(store: str) -> None:
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=200, n_positions=32)
    model = GPT2LMHeadModel(config).eval()
    with dr.capture(store):
        compiled_model = torch.compile(model, backend="aot_eager")
        compiled_head = torch.compile(head, backend="aot_eager")
        with torch.no_grad():
            for batch, seq in ((2, 8), (3, 12)):
                compiled_head(compiled_model(torch.randint(0, 200, (batch, seq))).logits, 0.5)


if __name__ == "__main__":
    main(sys.argv[1])
