"""A standalone script that runs one stored graph, in the spirit of PyTorch's minifier repros.

The script holds the graph as FX's Python code, and runs it on the inputs the compiled graph
was first called with, then compares its outputs with the stored ones. It needs torch alone:
not the model, not the store, not dynamo_replay. Its constants, inputs and expected outputs
are one torch.save file beside it (loaded with weights_only=True), or base64 inside the script
when they are small or when there is no file to put beside it (the script on stdout).
"""

from __future__ import annotations

import base64
import inspect
import io
import os
import re
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dynamo_replay import _torch
from dynamo_replay._core import __version__
from dynamo_replay.errors import GraphError
from dynamo_replay.graphs import FLOAT_TOLERANCE, load_graph, standalone
from dynamo_replay.graphs.rebuild import locate

INLINE_LIMIT = 32 << 10  # bytes of data put inside the script rather than beside it
_WHAT_IT_COMPARES = (
    "Runs the graph on the inputs the compiled graph was first called with and compares its\n"
    "        outputs with the stored ones.",
    "Some inputs were over the capture's sample cap: they are seeded random values of their\n"
    "        description, and the outputs are compared with replay-run's (libtorch) on the same inputs.",
)


@dataclass(frozen=True)
class Repro:
    """A repro script and its data (the torch.save bytes); `inline` when the script holds it."""

    script: str
    data: bytes
    inline: bool
    graph_event: str
    inputs: int
    compared: int  # outputs with a stored value, which the script compares
    outputs: int


@dataclass(frozen=True)
class Written:
    script: Path
    data: Path | None  # None: inside the script
    repro: Repro


def _import_line(name: str, value: Any) -> str:
    """A line that binds `name` to `value`, a global of the graph's code, by importing it."""
    if (line := _torch.fx_builtin_import(name, value)) is not None:
        return line
    if isinstance(value, types.ModuleType):
        return f"import {value.__name__}" + (f" as {name}" if name != value.__name__ else "")
    qualified = f"{getattr(value, '__module__', None)}.{getattr(value, '__qualname__', type(value).__qualname__)}"
    found = locate(qualified)
    if found is not None and found[2] is value:
        module_name, attrs, _ = found
        if len(attrs) == 1:
            return f"from {module_name} import {attrs[0]}" + (f" as {name}" if name != attrs[0] else "")
        return f"import {module_name}\n{name} = {module_name}.{'.'.join(attrs)}"
    raise GraphError(f"the graph's code uses {qualified} ({name}), which a script cannot import")


def _imports(globals_: dict[str, Any], src: str) -> str:
    lines = ["import torch"]
    for name, value in globals_.items():
        if not re.search(rf"(?<![\w.]){re.escape(name)}\b", src):  # FX lists its builtins whether used or not
            continue
        for line in _import_line(name, value).splitlines():
            if line not in lines:
                lines.append(line)
    return "\n".join(lines)


_CLASS = '''
class Repro(torch.nn.Module):
    """The stored graph, as FX's code; the constants it reads as buffers."""

    def __init__(self, constants):
        super().__init__()
        register_constants(self, constants)

'''

_MAIN = """

def main():
    data = _load()
    module = Repro(data["constants"])
    if data.get("rng_state") is not None:  # random operators (dropout) draw as the job's call did
        torch.set_rng_state(data["rng_state"])
    with torch.no_grad():
        result = module(*data["inputs"])
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    expected = list(zip(data["expected_positions"], data["expected_values"]))
    unstored = len(outputs) - len(expected)
    rest = f"; {unstored} other output{'s have' if unstored > 1 else ' has'} no stored value" if unstored else ""
    noun = "output equals the stored one" if len(expected) == 1 else "outputs equal the stored ones"
    if not differences(outputs, expected, 0, 0):
        print(f"match: {len(expected)} {noun} (bitwise){rest}")
        return 0
    problems = differences(outputs, expected, RTOL, ATOL)
    if not problems:
        print(f"match: {len(expected)} {noun} within rtol={RTOL:g}, atol={ATOL:g}, not bitwise{rest}")
        return 0
    print(f"mismatch: {len(problems)} of {len(expected)} stored outputs differ (rtol={RTOL:g}, atol={ATOL:g})")
    for problem in problems:
        print(f"  {problem}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
"""


# register_constants and differences, as the library runs them (graphs/standalone.py).
_STANDALONE = "\n\n" + "\n\n".join(
    inspect.getsource(f) for f in (standalone.register_constants, standalone.differences)
)


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    return repr(value)


def _input_comments(gm: torch.fx.GraphModule) -> str:
    """One comment line per graph input: what it is in the job and the stored value's type."""
    lines = ["# The graph's inputs (stored values in _DATA):"]
    placeholders = [n for n in gm.ir["nodes"] if n["op"] == "placeholder"]
    for node, value in zip(placeholders, gm.example_inputs):
        role, feed = node.get("input") or {}, node.get("feed") or {}
        if role.get("role") in ("parameter", "buffer"):
            what = f"{role['role']} {role['name']}"
        elif role.get("role") == "symbol":
            what = f"size {role['symbol']} = {role['source']}"
        elif "source" in role:
            what = role["source"]
        elif "tangent" in feed:
            what = f"gradient of forward output {feed['grad_output']}" if "grad_output" in feed else "gradient"
        elif "forward_output" in feed:
            what = f"forward output {feed['forward_output']}, saved for the backward"
        else:
            what = "input"
        lines.append(f"#   {node['name']}: {what}: {_describe(value)}")
    return "\n".join(lines) + "\n"


def _data_bytes(gm: torch.fx.GraphModule) -> bytes:
    constants = {name: gm.get_buffer(name).detach() for name in (gm.ir.get("constants") or {})}
    buffer = io.BytesIO()
    torch.save(
        {
            "constants": constants,
            "inputs": [x.detach() if isinstance(x, torch.Tensor) else x for x in gm.example_inputs],
            "rng_state": gm.rng_state,
            "expected_positions": [p for p, _ in gm.expected_outputs],
            "expected_values": [v for _, v in gm.expected_outputs],
        },
        buffer,
    )
    return buffer.getvalue()


def make_repro(
    store: str | os.PathLike[str],
    compile_id: str,
    graph: str = "forward",
    *,
    data_file: str | None = None,
    inline_limit: int = INLINE_LIMIT,
) -> Repro:
    """The script for graph `graph` of compile `compile_id`. Its data is read from `data_file`
    (a file name beside the script) when given and the data is over `inline_limit` bytes;
    otherwise it is base64 inside the script.

    GraphError (naming the store) when the compile, the graph or its samples are missing, or
    when the graph cannot be rebuilt or its code cannot import what it uses."""
    gm = load_graph(store, compile_id, graph)
    where = f"{os.fspath(store)}: compile {compile_id}"
    if gm.filled_inputs:
        gm.expected_outputs = _runner_outputs(store, compile_id, graph, gm, where)
    if not gm.expected_outputs:
        raise GraphError(
            f"{where} has no stored outputs of its {gm.graph_event} to compare with (samples off, "
            "over the size cap, or the graph never ran)"
        )
    code = gm.graph.python_code(root_module="self", verbose=True)  # verbose: the user lines as comments
    try:
        imports = _imports(code.globals, code.src)
    except GraphError as error:
        raise GraphError(f"{where}, {gm.graph_event}: {error}") from None
    data = _data_bytes(gm)
    inline = data_file is None or len(data) <= inline_limit
    if inline:
        encoded = base64.encodebytes(data).decode()
        loader = (
            f'_DATA = """\n{encoded}"""\n\n\ndef _load():\n'
            "    return torch.load(io.BytesIO(base64.b64decode(_DATA)), weights_only=True)\n"
        )
    else:
        loader = (
            f"_DATA = Path(__file__).with_name({data_file!r})\n\n\ndef _load():\n"
            "    return torch.load(_DATA, weights_only=True)\n"
        )
    header = (
        textwrap.dedent(f'''\
        """Repro: {gm.graph_event} of compile {compile_id} in {Path(store).name}, rebuilt from its graph IR
        by dynamo-replay {__version__} (torch {_torch.releases.VERSION}).

        {_WHAT_IT_COMPARES[bool(gm.filled_inputs)]} Needs only torch{"" if inline else f" and {data_file} beside this file"}.
        Exit status: 0 the outputs match (bitwise, or within RTOL and ATOL), 1 they differ.
        """

        ''')
        + ("import base64\nimport io\nimport sys\n" if inline else "import sys\nfrom pathlib import Path\n")
        + "\n"
    )
    script = (
        header + imports + "\n\n" + f"RTOL, ATOL = {FLOAT_TOLERANCE['rtol']!r}, {FLOAT_TOLERANCE['atol']!r}  "
        "# the rebuilt graph runs the aten ops one by one; the compiled one may fuse them\n"
        + loader
        + "\n\n"
        + _input_comments(gm)
        + _STANDALONE
        + _CLASS
        + textwrap.indent(code.src.strip("\n"), "    ")
        + "\n"
        + _MAIN
    )
    return Repro(
        script=script,
        data=data,
        inline=inline,
        graph_event=gm.graph_event,
        inputs=len(gm.example_inputs),
        compared=len(gm.expected_outputs),
        outputs=_output_count(gm),
    )


def _runner_outputs(
    store: str | os.PathLike[str], compile_id: str, graph: str, gm: torch.fx.GraphModule, where: str
) -> list[tuple[int, Any]]:
    """What to compare with when inputs were filled at random (not stored): replay-run's
    outputs on the same filled inputs, which must equal the ones filled here."""
    import subprocess
    import tempfile

    from dynamo_replay import tools

    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "run.pt")
        subprocess.run(
            [tools.runner_executable(), os.fspath(store), compile_id, "--graph", graph, "--dump", dump],
            capture_output=True,
            text=True,
        )
        if not os.path.exists(dump):
            raise GraphError(
                f"{where}: inputs {', '.join(gm.filled_inputs)} were not stored, and replay-run, "
                "which would give the outputs to compare with, did not run the graph"
            )
        inputs, outputs = torch.load(dump, weights_only=True)
    for name, ours, theirs in zip(_placeholder_names(gm), gm.example_inputs, inputs):
        if isinstance(ours, torch.Tensor) and not torch.equal(ours, theirs):
            raise GraphError(f"{where}: replay-run filled input {name} with other values than this library did")
    return [(i, v) for i, v in enumerate(outputs) if isinstance(v, torch.Tensor)]


def _placeholder_names(gm: torch.fx.GraphModule) -> list[str]:
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def _output_count(gm: torch.fx.GraphModule) -> int:
    output = next(n for n in gm.graph.nodes if n.op == "output")
    value = output.args[0] if output.args else None
    return len(value) if isinstance(value, (list, tuple)) else 1


def data_path_for(script: str | os.PathLike[str]) -> Path:
    """Where the data of the script at `script` goes: beside it, with the suffix .pt."""
    path = Path(script)
    return path.with_suffix(".pt") if path.suffix != ".pt" else path.with_name(path.name + ".data.pt")


def write_repro(
    store: str | os.PathLike[str],
    compile_id: str,
    graph: str,
    path: str | os.PathLike[str],
    *,
    inline_limit: int = INLINE_LIMIT,
) -> Written:
    """Writes the script at `path` and, when its data is over `inline_limit` bytes, the data
    beside it (data_path_for)."""
    script_path, data_path = Path(path), data_path_for(path)
    repro = make_repro(store, compile_id, graph, data_file=data_path.name, inline_limit=inline_limit)
    if not repro.inline:
        data_path.write_bytes(repro.data)
    script_path.write_text(repro.script)
    return Written(script_path, None if repro.inline else data_path, repro)
