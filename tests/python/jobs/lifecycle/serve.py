"""A serving-style job for the store-lifecycle tests. Usage:
serve.py STORE REPORT.json --lengths 8,16 [--model gpt2|mlp] [--update] [--plain]

Serves one request per length (a batch of 1 sequence) with a torch.compile'd model built from
its config with seeded random weights, under dynamo_replay.replay(STORE); with --update the
store learns what compiled; with --plain it runs without dynamo-replay (a benchmark's
reference). Writes REPORT.json: the replay summary, and whether every output matches eager's."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

import torch

import dynamo_replay


def build(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            n_layer=2,
            n_embd=64,
            n_head=2,
            vocab_size=256,
            n_positions=128,
            use_cache=False,
            bos_token_id=0,
            eos_token_id=0,
        )
        return GPT2LMHeadModel(config).eval()
    return Tiny().eval()


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(256, 32)
        self.proj = torch.nn.Linear(32, 32)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.proj(self.embed(ids))) * 2.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("report")
    parser.add_argument("--lengths", default="8")
    parser.add_argument("--model", default="mlp", choices=["gpt2", "mlp"])
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--plain", action="store_true")
    args = parser.parse_args()
    model = build(args.model)
    matches = []
    tool = (
        contextlib.nullcontext()
        if args.plain
        else dynamo_replay.replay(args.store, update=args.update or None, verbose=False)
    )
    with tool as session, torch.no_grad():
        compiled = torch.compile(model, dynamic=False)
        for length in (int(n) for n in args.lengths.split(",")):
            ids = torch.arange(length).remainder(256).unsqueeze(0)
            got, want = compiled(ids), model(ids)
            got, want = (got.logits, want.logits) if hasattr(got, "logits") else (got, want)
            matches.append(bool(torch.allclose(got, want, rtol=1e-4, atol=1e-5)))
    summary = getattr(session, "summary", None)
    report = summary.as_dict() if summary is not None else {}
    report["compiled"] = [frame["function"] + ":" + frame["reason"] for frame in report.get("compiled", [])]
    report["outputs_match"] = all(matches)
    Path(args.report).write_text(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
