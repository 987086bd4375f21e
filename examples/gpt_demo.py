"""The job `make demo` captures and replays: a small GPT-style decoder compiled with Inductor,
batch and sequence length dynamic. `python examples/gpt_demo.py` runs it directly.

It prints how long its first output took (compilation included) and a checksum of all its
outputs, so a replayed run can be compared with the captured one at a glance.
"""

from __future__ import annotations

import time

START = time.perf_counter()

import torch  # noqa: E402
from torch import nn  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        attention = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attention.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64, heads: int = 4, layers: int = 2, context: int = 128) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(layers)))
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x)))


def main() -> None:
    torch.manual_seed(0)
    model = torch.compile(GPT().eval(), dynamic=True)
    generator = torch.Generator().manual_seed(1)
    checksum = 0.0
    with torch.no_grad():
        for step, (batch, length) in enumerate([(2, 16), (4, 32), (1, 100)]):
            logits = model(torch.randint(0, 256, (batch, length), generator=generator))
            if step == 0:
                print(
                    f"first output after {time.perf_counter() - START:.2f} s (job start to logits, compiling included)"
                )
            checksum += float(logits.double().sum())
    print(f"output checksum {checksum:.6f}")


if __name__ == "__main__":
    main()
