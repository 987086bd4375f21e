"""Tables written twice, once in C++ and once in Python, agree: the graph names a user gives
(`--graph forward`) and the events they stand for, and the seeded fill of graph inputs the
capture described but did not store, which must give the same bits in replay-run (C++, libtorch)
and in the Python rebuild and repro scripts. (Capture's event names have their own check,
capture/events_test.cc.) About 10 s."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import torch

import dynamo_replay as dr
from dynamo_replay.graphs import GRAPH_EVENTS, samples
from dynamo_replay.graphs.stored import read_compile, stored_graphs
from dynamo_replay.tools import runner_executable

ROOT = Path(__file__).resolve().parents[2]


def cxx_graph_events() -> dict[str, tuple[str, ...]]:
    """The rows of replay/query's graphEvents() table, read from the header that defines it."""
    headers = [h for h in (ROOT / "replay").rglob("*.h") if "graphEvents()" in h.read_text()]
    defining = [h for h in headers if re.search(r"graphEvents\(\)\s*\{", h.read_text())]
    assert len(defining) == 1, f"one header should define graphEvents(): {defining}"
    text = defining[0].read_text()
    body = text[text.index("table = {") :]
    body = body[: body.index("};")]
    rows = re.findall(r'\{"([^"]+)",\s*\{([^}]*)\}\}', body)
    return {name: tuple(re.findall(r'"([^"]+)"', events)) for name, events in rows}


def test_graph_names_are_the_same_table_in_cxx_and_python() -> None:
    cxx = cxx_graph_events()
    assert cxx, "no rows read from graphEvents()"
    assert cxx == GRAPH_EVENTS  # every row: the same names, the same events in the same order


# Inputs of every dtype the fill draws differently (floats as normals cast down, integers in a
# range, bool), of several shapes, one non-contiguous; all over a 1-byte sample cap.
def _inputs() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return [
        torch.randn(3, 4, generator=g) * 3 + 2,
        torch.randn(5, generator=g, dtype=torch.float64),
        torch.randn(2, 3, generator=g).to(torch.float16),
        torch.randn(4, generator=g).to(torch.bfloat16) - 7,
        torch.randint(3, 21, (6,), generator=g),
        torch.randint(-4, 5, (2, 2), generator=g, dtype=torch.int32),
        torch.randint(0, 2, (3,), generator=g).bool(),
        torch.randint(0, 256, (2, 5), generator=g, dtype=torch.int64).to(torch.uint8),
        torch.randn(4, 3, generator=g).t(),
        torch.randn(1, 1, 1, generator=g),
    ]


def _job(a, b, c, d, e, f, g, h, i, j):
    return a * 2, b + 1, c * 2, d + 1, e + 1, f * 3, g.logical_not(), h + 1, i * 2, j - 1


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fill") / "job.dynrep"
    torch._dynamo.reset()
    with torch.no_grad(), dr.capture(path, precompile=False, sample_limit_bytes=1):
        torch.compile(_job, backend="aot_eager")(*_inputs())
    return path


@pytest.mark.parametrize("seed", [0, 7])
def test_the_seeded_fill_gives_the_same_bits_in_cxx_and_python(store: Path, tmp_path: Path, seed: int) -> None:
    compile_id, event = next((c, g) for c, g in stored_graphs(store) if g.startswith("aot_"))
    dump = tmp_path / "run.pt"
    done = subprocess.run(
        [
            runner_executable(),
            str(store),
            compile_id,
            "--graph",
            event,
            "--seed",
            str(seed),
            "--dump",
            str(dump),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    cxx_inputs, _ = torch.load(dump, weights_only=True)

    stored = read_compile(store, compile_id)
    placeholders = [n for n in stored.irs[event]["nodes"] if n["op"] == "placeholder"]
    entries = [stored.samples["forward"]["inputs"][n["feed"]["sample_input"]] for n in placeholders]
    assert len(entries) == len(_inputs()) and all(samples.not_stored(e) for e in entries), entries
    assert len(report["filled"]) == len(entries), report
    python_inputs = [
        samples.filled(entry, position, (node.get("outputs") or [{}])[0].get("stride"), seed)
        for position, (node, entry) in enumerate(zip(placeholders, entries))
    ]
    if seed == 0:  # what the rebuild and the repro scripts use, through the feeds
        names: list[str] = []
        for made, rebuilt in zip(python_inputs, samples.example_inputs(stored, event, filled_names=names)):
            assert made.dtype == rebuilt.dtype and torch.equal(made, rebuilt)
        assert len(names) == len(entries)

    assert len(cxx_inputs) == len(python_inputs)
    for position, (cxx, python) in enumerate(zip(cxx_inputs, python_inputs)):
        what = f"input {position} ({entries[position]['dtype']} {entries[position]['shape']})"
        assert cxx.dtype == python.dtype and cxx.shape == python.shape, what
        assert cxx.stride() == python.stride(), what
        # Bitwise: the same bytes, not only equal values (a float's sign of zero, NaN payloads).
        assert torch.equal(cxx.contiguous().view(torch.uint8), python.contiguous().view(torch.uint8)), what
