"""Real jobs whose stored graphs the graph tests run (replay-run, load_graph) and lower (MLIR);
capture_stores captures a set of them, one store each (benchmarks/lowering.py captures the same
corpus), and GraphStores captures each at most once a test session, when a test first reads it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import torch

import dynamo_replay as dr

sys.path.insert(0, str(Path(__file__).parent))
from models import MLP, ConvNet, TinyGPT  # noqa: E402

# The custom-op library the MLIR tests lower dynrep_mlir::scale with.
SCALE_LIBRARY = Path(__file__).parent / "mlir" / "scale_ops.mlir"


@torch.library.custom_op("dynrep_mlir::scale", mutates_args=())
def scale(x: torch.Tensor, s: float) -> torch.Tensor:
    return x * s


@scale.register_fake
def _(x: torch.Tensor, s: float) -> torch.Tensor:
    return torch.empty_like(x)


def mlp() -> None:
    compiled = torch.compile(MLP(), backend="aot_eager")
    with torch.no_grad():
        compiled(torch.randn(8, 16))


def gpt() -> None:
    model = TinyGPT().eval()
    compiled = torch.compile(model, backend="aot_eager")
    with torch.no_grad():
        for batch, seq in ((2, 8), (3, 12)):
            compiled(torch.randint(0, 97, (batch, seq)))


def convnet_training_step() -> None:
    model = ConvNet().train()  # batch norm updates its running statistics: mutated inputs
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    compiled = torch.compile(model, backend="aot_eager")
    loss = torch.nn.functional.cross_entropy(compiled(torch.randn(4, 3, 16, 16)), torch.tensor([1, 2, 3, 4]))
    loss.backward()
    optimizer.step()


def graph_break() -> None:
    def step(x: torch.Tensor) -> torch.Tensor:
        y = torch.sin(x) * 2
        print("a graph break", file=sys.stderr)
        return torch.cos(y).sum(dim=0)

    torch.compile(step, backend="aot_eager")(torch.randn(5, 3, requires_grad=True)).sum().backward()


def hf_gpt2_training_step(dropout: bool = True) -> None:
    """transformers' GPT-2 from its config (random weights), a loss frame and recompiles. With
    dropout (its default 0.1) and sdpa attention; without, eager attention and no dropout, whose
    draws nothing but PyTorch's generator reproduces (what the MLIR lowering can match)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    no_dropout = {} if dropout else {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=64, **no_dropout)
    if not dropout:
        config._attn_implementation = "eager"  # sdpa's CPU backward kernel is not lowered to MLIR yet
    compiled = torch.compile(GPT2LMHeadModel(config).train(), backend="aot_eager")
    for batch, seq in ((2, 8), (3, 12)) if dropout else ((2, 8),):
        ids = torch.randint(0, 500, (batch, seq))
        compiled(ids, labels=ids).loss.backward()


def hf_bert() -> None:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, vocab_size=500
    )
    compiled = torch.compile(BertModel(config).eval(), backend="aot_eager")
    with torch.no_grad():
        compiled(torch.randint(0, 500, (2, 16)), attention_mask=torch.ones(2, 16, dtype=torch.long))


def inductor_mlp() -> None:
    model = MLP()

    def step(x: torch.Tensor) -> torch.Tensor:  # Inductor's decompositions make arange prims.iota
        return model(x) + torch.arange(4, dtype=torch.float32)

    with torch.no_grad():
        torch.compile(step, backend="inductor")(torch.randn(8, 16))


def custom_op() -> None:
    def step(x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        return scale(y, 2.5) + 1  # the custom op's user line

    torch.compile(step, backend="aot_eager")(torch.randn(6, 5))


def capture_stores(directory: Callable[[str], Path], jobs: dict[str, Callable[[], None]]) -> dict[str, Path]:
    """Each job captured (without precompile) into its own store, in directory(name)."""
    out = {}
    for name, job in jobs.items():
        path = directory(name) / "job.dynrep"
        torch._dynamo.reset()
        with dr.capture(path, precompile=False):
            job()
        out[name] = path
    return out


def bf16_convnet() -> None:
    """The convnet in bfloat16, batch norm in training mode, forward only: PyTorch's kernels and
    the lowering accumulate in different orders, so values may differ in their last bit."""
    model = ConvNet().to(torch.bfloat16).train()
    with torch.no_grad():
        torch.compile(model, backend="aot_eager")(torch.randn(4, 3, 16, 16, dtype=torch.bfloat16))


# Every job a graph test reads, by one name across the test files.
JOBS: dict[str, Callable[[], None]] = {
    "mlp": mlp,
    "gpt": gpt,
    "convnet": convnet_training_step,
    "graph_break": graph_break,
    "hf_bert": hf_bert,
    "hf_gpt2_train": hf_gpt2_training_step,
    "hf_gpt2_train_no_dropout": lambda: hf_gpt2_training_step(dropout=False),
    "inductor": inductor_mlp,
    "custom_op": custom_op,
    "bf16_convnet": bf16_convnet,
}


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Bitwise equality needs the same float sums in the same order on both sides, and a matmul's
    or a reduction's order follows its thread split: the jobs are captured on one intra-op thread
    (replay-run gets one too)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def capture_on_one_thread(path: Path, job: Callable[[], None]) -> None:
    with one_thread(), dr.capture(path, precompile=False):
        job()


class GraphStores:
    """Jobs' stores (JOBS' by default), each captured (on one thread by default) the first time
    a test reads it: test files that read the same job share its store, and a tier that reads
    fewer jobs captures fewer. folder(job, make) gives the folder make(folder) filled (the
    suite's shared_captures.shared keeps it for every worker and tier of a build)."""

    def __init__(
        self,
        folder: Callable[[str, Callable[[Path], None]], Path],
        jobs: dict[str, Callable[[], None]] | None = None,
        capture: Callable[[Path, Callable[[], None]], None] = capture_on_one_thread,
    ) -> None:
        self._folder, self._jobs, self._capture = folder, jobs or JOBS, capture
        self._stores: dict[str, Path] = {}

    def __getitem__(self, job: str) -> Path:
        if job not in self._stores:

            def make(folder: Path) -> None:
                torch._dynamo.reset()
                self._capture(folder / "job.dynrep", self._jobs[job])

            self._stores[job] = self._folder(job, make) / "job.dynrep"
        return self._stores[job]

    def view(self, names: dict[str, str]) -> Mapping[str, Path]:
        """A test file's own names -> JOBS' names, read lazily."""
        return _View(self, names)


class _View(Mapping):
    def __init__(self, stores: GraphStores, names: dict[str, str]) -> None:
        self._stores, self._names = stores, names

    def __getitem__(self, name: str) -> Path:
        return self._stores[self._names[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
