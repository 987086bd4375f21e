"""Jobs for the replay tests, each run once under capture and again under replay, every time
in a fresh process. Usage: replay_jobs.py WORKLOAD OUT_DIR [--new-shape]

Writes OUT_DIR/outputs.pt (every output, for a bitwise comparison) and OUT_DIR/compiler.json
(what Dynamo, AOTAutograd and Inductor did in this process: frames traced, compile callbacks,
cache hits and misses), so the test can prove what did and did not compile.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch._dynamo.convert_frame
from torch._dynamo.utils import counters
from torch._inductor import cpu_vec_isa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from torch._inductor.graph import GraphLowering  # noqa: E402

from models import TinyGPT  # noqa: E402

compile_starts: list[str] = []
traced: list[str] = []
codegens: list[str] = []  # Inductor generating a graph's code: what a cache hit skips
_codegen = GraphLowering.codegen
GraphLowering.codegen = lambda self, *args, **kwargs: codegens.append("codegen") or _codegen(self, *args, **kwargs)
isa_checks: list[str] = []  # Inductor's CPU vector-ISA probe builds (each runs g++ and a Python child)
_check_build = cpu_vec_isa.VecISA.check_build
cpu_vec_isa.VecISA.check_build = lambda isa, code: isa_checks.append(str(isa)) or _check_build(isa, code)
torch._dynamo.callback.on_compile_start(
    lambda args: compile_starts.append(f"{args.callback_trigger.name} {args.compile_id}")
)
torch._dynamo.convert_frame.register_bytecode_hook(lambda code, new_code: traced.append(code.co_name))


def gpt(new_shape: bool) -> list[torch.Tensor]:
    """Inference with Inductor, batch and sequence length dynamic."""
    torch.manual_seed(0)
    model = TinyGPT().eval()
    compiled = torch.compile(model, dynamic=True)
    shapes = [(2, 16), (3, 24)] + ([(1, 40)] if new_shape else [])
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        return [compiled(torch.randint(0, 97, shape, generator=generator)) for shape in shapes]


class Note:
    """A plain object: nothing another process could compare it by."""


def train(new_shape: bool, opaque: bool = False) -> list[torch.Tensor]:
    """Two training steps, each compiled whole as users write it: zero_grad (a graph that calls
    nothing), forward, backward (a graph break) and the optimizer step (a resume function).
    With `opaque`, the optimizer's parameter group also holds a plain object, so the optimizer
    has no faithful description."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if opaque:
        optimizer.param_groups[0]["note"] = Note()

    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    compiled = torch.compile(step)
    generator = torch.Generator().manual_seed(1)
    outputs = []
    for _ in range(2):
        outputs.append(compiled(torch.randn(4, 8, generator=generator), torch.randn(4, 1, generator=generator)))
    return outputs + [p.detach().clone() for p in model.parameters()]


def graph_break(new_shape: bool) -> list[torch.Tensor]:
    """A function with a graph break in the middle: two graphs and a resume function."""

    def scaled(x: torch.Tensor) -> torch.Tensor:
        y = torch.sin(x) * 2
        torch._dynamo.graph_break()
        return torch.cos(y) + 1

    compiled = torch.compile(scaled)
    return [compiled(torch.linspace(-1, 1, 12))]


def ladder(new_shape: bool) -> list[torch.Tensor]:
    """The recompile ladder: changing shapes, then a changed Python float."""

    def scale_and_shift(x: torch.Tensor, factor: float) -> torch.Tensor:
        return torch.relu(x * factor) + x.sum()

    compiled = torch.compile(scale_and_shift)
    calls = [(torch.linspace(-1, 1, n), 2.0) for n in (4, 8, 16)] + [(torch.linspace(-1, 1, 16), 3.0)]
    if new_shape:
        calls.append((torch.linspace(-1, 1, 32).reshape(4, 8), 3.0))
    return [compiled(x, factor) for x, factor in calls]


def local_class(new_shape: bool) -> list[torch.Tensor]:
    """A frame PyTorch 2.13 cannot save (its guards name a class defined inside a function),
    compiled twice: the second length recompiles it with a dynamic size."""

    class Scale:
        factor = 3.0

    scale = Scale()
    compiled = torch.compile(lambda x: torch.sin(x) * scale.factor)
    return [compiled(torch.linspace(-1, 1, n)) for n in (4, 8, 16)]


def hf_t5(new_shape: bool) -> list[torch.Tensor]:
    """transformers' T5 (a small config, random weights) at two lengths: its forward guards
    classes by identity (CLASS_MATCH, which PyTorch 2.13 cannot save) and deep-copies its config
    (an identity guard made by copy.deepcopy), and the second length recompiles it."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(
        d_model=32, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=2, vocab_size=97, attn_implementation="sdpa"
    )
    compiled = torch.compile(T5ForConditionalGeneration(config).eval())
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        return [
            compiled(
                input_ids=torch.randint(0, 97, (2, n), generator=generator),
                decoder_input_ids=torch.randint(0, 97, (2, n // 2), generator=generator),
            ).logits
            for n in (8, 20)
        ]


def tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=97, n_positions=64, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config)


def hf_gpt2(new_shape: bool) -> list[torch.Tensor]:
    """transformers' GPT-2 (a small config, random weights): its forward goes through
    transformers' output-capturing decorator, whose guards PyTorch 2.13 saves as missing."""
    model = tiny_gpt2().eval()
    compiled = torch.compile(model)
    shapes = [(2, 16), (2, 24)] + ([(1, 40)] if new_shape else [])
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():  # the caller names each batch: a miss is said in its name (input_ids)
        batches = [torch.randint(0, 97, shape, generator=generator) for shape in shapes]
        return [compiled(input_ids).logits for input_ids in batches]


def hf_train(new_shape: bool) -> list[torch.Tensor]:
    """Two AdamW training steps of transformers' GPT-2, each compiled whole: the loss goes
    through a property (loss_function) and a dataclass __init__, which PyTorch 2.13's
    precompile cannot save, and the optimizer step, which it leaves out by design."""
    model = tiny_gpt2()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(ids: torch.Tensor) -> torch.Tensor:
        loss = model(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.detach()

    compiled = torch.compile(step)
    generator = torch.Generator().manual_seed(1)
    losses = [compiled(torch.randint(0, 97, (2, 16), generator=generator)) for _ in range(2)]
    return losses + [p.detach().clone() for p in model.parameters()]


class Unnamed(torch.nn.Module):
    """Code PyTorch's package cannot find by module and qualified name, each with a graph on
    both sides of a graph break, so each is a frame of its own: a property's getter and a method
    made by exec (as a dataclass's __init__ is). `is_compiling()` is baked into a compiled
    graph, so a frame that ran eagerly at replay gives another number."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(-1, 1, 12))

    @property
    def offset(self) -> torch.Tensor:
        y = torch.sin(self.w) * 2
        torch._dynamo.graph_break()
        return y + (1.0 if torch.compiler.is_compiling() else 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scaled(x) + self.offset


_made: dict = {}
exec(  # noqa: S102 - code made at run time in the module's globals, as dataclasses make __init__
    "def scaled(self, x):\n"
    "    y = torch.cos(x) * 3\n"
    "    torch._dynamo.graph_break()\n"
    "    return y + (1.0 if torch.compiler.is_compiling() else 2.0)\n",
    globals(),
    _made,
)
_made["scaled"].__qualname__ = "Unnamed.scaled"
Unnamed.scaled = _made["scaled"]


def unnamed_code(new_shape: bool) -> list[torch.Tensor]:
    """The frames of Unnamed, saved through the function that holds their code."""
    with torch.no_grad():
        return [torch.compile(Unnamed())(torch.linspace(-2, 2, 12))]


WORKLOADS = {
    "gpt": gpt,
    "train": train,
    "train_opaque": lambda new_shape: train(new_shape, opaque=True),
    "graph_break": graph_break,
    "ladder": ladder,
    "hf_gpt2": hf_gpt2,
    "hf_train": hf_train,
    "local_class": local_class,
    "hf_t5": hf_t5,
    "unnamed_code": unnamed_code,
}

if __name__ == "__main__":
    workload, out_dir = sys.argv[1], Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = WORKLOADS[workload]("--new-shape" in sys.argv)
    torch.save(outputs, out_dir / "outputs.pt")
    (out_dir / "compiler.json").write_text(
        json.dumps(
            {
                "compile_starts": compile_starts,
                "frames_traced": traced,
                "unique_graphs": counters["stats"]["unique_graphs"],
                "fxgraph_cache_miss": counters["inductor"]["fxgraph_cache_miss"],
                "fxgraph_cache_hit": counters["inductor"]["fxgraph_cache_hit"],
                "autograd_cache_miss": counters["aot_autograd"]["autograd_cache_miss"],
                "autograd_cache_hit": counters["aot_autograd"]["autograd_cache_hit"],
                "dynamo_cache_hit": counters["dynamo_cache"]["dynamo_cache_hit"],
                "isa_checks": isa_checks,
                "inductor_codegens": len(codegens),
            },
            indent=1,
        )
    )
