"""Compile-time overhead of capture: each workload's first calls (which compile) are timed in a
fresh process without and with dynamo_replay.capture, in back-to-back pairs.

The overhead is the median of the pairs' differences over the median time without capture:
pairing cancels the machine's slow drift, and the median ignores the odd run that a full
garbage collection or a busy neighbour slowed down.

Run: .venv-2.15.0/bin/python benchmarks/capture_overhead.py [--repeat 5] [--backend inductor|aot_eager] [--json]
Target (issue 3): capture adds at most 5% to compile time.

With --baseline DIR (a folder holding an older `dynamo_replay` package, e.g. from `git archive`,
with this build's `_core` module copied in), the pairs are capture with that package against
capture with this one: what a change to capture costs, apart from the machine's noise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

# Each workload defines make() -> (callable, args); its first call is timed. Shapes change
# once so the measurement includes a recompile, as real jobs do.
WORKLOADS = {
    "mlp": """
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        def make(): return model, [(torch.randn(32, 256),), (torch.randn(48, 256),)]
    """,
    "gpt": """
        class Block(torch.nn.Module):
            def __init__(self, d=64, heads=4):
                super().__init__()
                self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
                self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
                self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))
                self.heads = heads
            def forward(self, x):
                b, t, d = x.shape
                q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
                q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
                att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
                att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).tril().logical_not(), float("-inf"))
                x = x + self.proj((att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))
                return x + self.mlp(self.ln2(x))
        class GPT(torch.nn.Module):
            def __init__(self, vocab=100, d=64):
                super().__init__()
                self.emb = torch.nn.Embedding(vocab, d)
                self.blocks = torch.nn.Sequential(Block(d), Block(d))
                self.head = torch.nn.Linear(d, vocab)
            def forward(self, idx):
                return self.head(self.blocks(self.emb(idx)))
        model = GPT().eval()
        def make(): return model, [(torch.randint(0, 100, (2, 16)),), (torch.randint(0, 100, (3, 24)),)]
    """,
    "convnet": """
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10)).eval()
        def make(): return model, [(torch.randn(4, 3, 32, 32),), (torch.randn(8, 3, 32, 32),)]
    """,
    # A whole training step compiled, as users write it: backward() breaks the graph, the
    # forward compiles, AOTAutograd compiles the backward on its first run, and the rest of
    # the step (the optimizer) compiles as a resume function.
    "train": """
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        def step(x, y):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()
        def make(): return step, [(torch.randn(16, 64), torch.randint(0, 10, (16,))),
                                  (torch.randn(24, 64), torch.randint(0, 10, (24,)))]
    """,
    # Real model architectures from transformers' configs (random weights, no downloads), two
    # sequence lengths: the second call recompiles with the length dynamic.
    "hf_gpt2": """
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=256, n_positions=64)).eval()
        def make(): return model, [(torch.randint(0, 256, (1, 16)),), (torch.randint(0, 256, (1, 24)),)]
    """,
    "hf_llama": """
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2)).eval()
        def make(): return model, [(torch.randint(0, 256, (1, 16)),), (torch.randint(0, 256, (1, 24)),)]
    """,
    # Unbacked symbols (nonzero, item) in the graph: what capture records of their values runs here.
    "unbacked": """
        torch._dynamo.config.capture_dynamic_output_shape_ops = True
        torch._dynamo.config.capture_scalar_outputs = True
        def select(x):
            picked = x[torch.nonzero(x[:, 0] > 0).squeeze(1)]
            n = (x[:, 1] > 0).sum().item()
            torch._check(n <= x.size(0))
            return picked.sum(0) + torch.ones(n).sum()
        def make(): return select, [(torch.randn(64, 8),), (torch.randn(96, 8),)]
    """,
}

RUNNER = """
import os, sys, time
if os.environ.get("DYNREP_PACKAGE_DIR"):  # the baseline package, ahead of the editable install
    sys.meta_path = [f for f in sys.meta_path if "editable" not in (getattr(f, "__module__", "") or "")]
    sys.path.insert(0, os.environ["DYNREP_PACKAGE_DIR"])
import torch
{workload}
fn, calls = make()
compiled = torch.compile(fn, backend={backend!r})
torch.set_grad_enabled(False) if isinstance(fn, torch.nn.Module) and not fn.training else None
path = sys.argv[1]
start = time.perf_counter()
if path:
    import dynamo_replay
    with dynamo_replay.capture(path):
        for args in calls: compiled(*args)
else:
    for args in calls: compiled(*args)
print(time.perf_counter() - start)
"""


def time_once(workload: str, backend: str, store: str, package_dir: str = "") -> float:
    code = RUNNER.format(workload=textwrap.dedent(WORKLOADS[workload]), backend=backend)
    env = dict(
        os.environ,
        TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="dynrep-bench-cache-"),
        DYNREP_PACKAGE_DIR=package_dir,
    )
    out = subprocess.run([sys.executable, "-c", code, store], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--workloads", nargs="*", default=list(WORKLOADS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--baseline", default="", help="compare with capture by the dynamo_replay package in this folder"
    )
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="dynrep-capture-bench-") as tmp:
        for name in args.workloads:
            plain, captured = [], []
            time_once(name, args.backend, "")  # warm the page cache and imports
            for i in range(args.repeat):  # in pairs, so drift hits both columns alike
                store = os.path.join(tmp, f"{name}-{i}.dynrep")
                plain.append(time_once(name, args.backend, store + ".base" if args.baseline else "", args.baseline))
                captured.append(time_once(name, args.backend, store))
            p = statistics.median(plain)
            added = statistics.median(c - q for q, c in zip(plain, captured))
            results[name] = {
                "compile_s": p,
                "compile_with_capture_s": statistics.median(captured),
                "added_s": added,
                "overhead": added / p,
                "runs_plain": plain,
                "runs_captured": captured,
            }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    reference = f"capture by {args.baseline}" if args.baseline else "compile"
    print(f"backend {args.backend}, {args.repeat} pairs of fresh processes; reference: {reference}\n")
    print(
        f"{'workload':<10} {'reference (s)':>13} {'with capture (s)':>17} {'added (s)':>10} {'overhead':>9}  target <= 5%"
    )
    for name, r in results.items():
        verdict = "pass" if r["overhead"] <= 0.05 else "MISS"
        print(
            f"{name:<10} {r['compile_s']:>13.3f} {r['compile_with_capture_s']:>17.3f} {r['added_s']:>10.3f} "
            f"{100 * r['overhead']:>8.1f}%  {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
