"""MLIR lowering on real models' graphs (issue 36): GPT-2 and Llama training steps, T5, ViT,
Whisper and Mixtral (transformers, random weights from their configs), each compiled by
torch.compile with its default backend and captured with capture's defaults (64 MiB of samples
per graph call, so parameters over it are filled by replay-run), then lower-checked graph by
graph. Writes the table into docs/mlir.md between its marker comments.

Run: nice .venv-2.15.0/bin/python benchmarks/mlir_models.py [--only gpt2-train,...] [--no-docs]
Each model runs in a process of its own (a model's crash or timeout loses that model only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mlir.md"
MARKS = ("<!-- models:begin -->", "<!-- models:end -->")

# name: (what it exercises, the job: code run inside `with dr.capture(...)`; `torch` is imported).
MODELS: dict[str, tuple[str, str]] = {
    "gpt2-train": (
        "training step: dropout, sdpa and its backward, cross-entropy",
        """
from transformers import GPT2Config, GPT2LMHeadModel
net = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=64)).train()
ids = torch.randint(0, 1000, (2, 16))
torch.compile(net)(ids, labels=ids).loss.backward()
""",
    ),
    "llama-train": (
        "training step: grouped-query attention, RMSNorm, rotary embeddings",
        """
from transformers import LlamaConfig, LlamaForCausalLM
net = LlamaForCausalLM(LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=1000))
ids = torch.randint(0, 1000, (2, 16))
torch.compile(net)(ids, labels=ids).loss.backward()
""",
    ),
    "t5": (
        "encoder-decoder inference, relative position buckets",
        """
from transformers import T5Config, T5ForConditionalGeneration
net = T5ForConditionalGeneration(T5Config(d_model=128, d_ff=256, num_layers=2, num_decoder_layers=2,
                                          num_heads=4, vocab_size=1000)).eval()
with torch.no_grad():
    torch.compile(net)(input_ids=torch.randint(0, 1000, (2, 16)), decoder_input_ids=torch.randint(0, 1000, (2, 8)))
""",
    ),
    "vit": (
        "image inference, dynamic batch: patch convolution",
        """
from transformers import ViTConfig, ViTModel
net = ViTModel(ViTConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=4, intermediate_size=256,
                         image_size=32, patch_size=8)).eval()
with torch.no_grad():
    torch.compile(net, dynamic=True)(torch.randn(2, 3, 32, 32))
""",
    ),
    "whisper": (
        "speech encoder-decoder inference: conv1d front end, sdpa",
        """
from transformers import WhisperConfig, WhisperForConditionalGeneration
net = WhisperForConditionalGeneration(WhisperConfig(
    d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
    encoder_ffn_dim=256, decoder_ffn_dim=256, num_mel_bins=80, max_source_positions=100, max_target_positions=32,
    vocab_size=1000, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=3,
    attn_implementation="sdpa")).eval()
with torch.no_grad():
    torch.compile(net)(input_features=torch.randn(1, 80, 200), decoder_input_ids=torch.randint(0, 1000, (1, 8)))
""",
    ),
    "mixtral": (
        "mixture of experts inference: router top-k, expert gather",
        """
from transformers import MixtralConfig, MixtralForCausalLM
net = MixtralForCausalLM(MixtralConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                                       num_local_experts=4, num_experts_per_tok=2,
                                       attn_implementation="sdpa")).eval()
with torch.no_grad():
    torch.compile(net)(torch.randint(0, 1000, (2, 16)))
""",
    ),
}

CHILD = """
import sys, torch, warnings
warnings.simplefilter("ignore")
import dynamo_replay as dr
torch.manual_seed(0)
with dr.capture(sys.argv[1], precompile=False):
    exec(sys.argv[2])
"""


def run_model(name: str, work: Path, timeout: float) -> dict:
    from dynamo_replay import mlir

    store = work / f"{name}.dynrep"
    store.unlink(missing_ok=True)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(store), MODELS[name][1]], capture_output=True, text=True, timeout=timeout
    )
    capture = time.monotonic() - started
    if done.returncode != 0:
        return {
            "model": name,
            "error": f"the job failed: {done.stderr.strip().splitlines()[-1:]}",
            "capture_s": capture,
        }
    started = time.monotonic()
    report = mlir.lower_check(store)
    return {"model": name, "graphs": report["graphs"], "capture_s": capture, "check_s": time.monotonic() - started}


def why(graph: dict) -> str:
    """A graph that did not match: the operators it could not lower, else where it stopped."""
    ops = sorted({i["op"] for i in graph.get("issues", []) if i["op"] not in ("placeholder", "output")})
    if ops:
        return "no lowering: " + ", ".join(f"`{o}`" for o in ops)
    bad = [
        f"output {o['position']} {o['status']} (max |diff| {o['max_abs_diff']:.2g})"
        for o in graph["outputs"]
        if o["status"] in ("differs", "shape differs")
    ]
    return "; ".join(bad) or f"{graph['stage']}: {graph['error'][:160]}"


def table(results: list[dict], command: str, wall: float) -> str:
    import torch

    lines = [
        f"`{command}` ({date.today().isoformat()}, torch {torch.__version__}, {os.cpu_count()} cores "
        f"{platform.machine()}; wall time {wall / 60:.1f} min). Each model compiled with torch.compile's default "
        "backend and captured with capture's defaults; every aot graph lower-checked (parameters over the sample "
        "cap are filled, and replay-run is then the reference).",
        "",
        "| model | what it exercises | aot graphs | matched | not matched, and why |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        what = MODELS[r["model"]][0]
        if "error" in r:
            lines.append(f"| {r['model']} | {what} | – | – | {r['error']} |")
            continue
        graphs = r["graphs"]
        missed = [
            f"{g['compile']} {g['graph'].removeprefix('aot_').removesuffix('_graph')}: {why(g)}"
            for g in graphs
            if not g["matched"]
        ]
        lines.append(
            f"| {r['model']} | {what} | {len(graphs)} | {sum(g['matched'] for g in graphs)} | "
            f"{'; '.join(missed) or 'none'} |"
        )
    return "\n".join(lines)


def replace_section(path: Path, body: str) -> None:
    text = path.read_text()
    begin, end = MARKS
    if begin not in text:
        text += f"\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    path.write_text(f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated models")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "dynrep-mlir-models")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per model's capture")
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(MODELS)
    args.work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results = []
    for name in names:
        try:
            results.append(run_model(name, args.work, args.timeout))
        except subprocess.TimeoutExpired:
            results.append({"model": name, "error": f"the job ran over {args.timeout:.0f} s"})
        print(json.dumps({k: v for k, v in results[-1].items() if k != "graphs"}), flush=True)
    body = table(results, "nice .venv-2.15.0/bin/python benchmarks/mlir_models.py", time.monotonic() - started)
    print(body)
    if not args.no_docs and not args.only:
        replace_section(DOC, body)


if __name__ == "__main__":
    main()
