"""Replay of a job that changed since capture, in fresh processes: its source (refused), a
global, method, module attribute or closure the compiled code calls (the right answer, never the
captured one), a frame whose guards PyTorch cannot save or load (compiled at replay, its graphs
from the store), and saved frames installed at a function's first call. Each test captures its
own small job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from replay_workloads import capture_script, job_env, replay_script, run  # noqa: E402


def test_changed_source_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import torch\ndef double(x):\n    return x * 2\nprint(torch.compile(double)(torch.ones(3)).tolist())\n"
    )
    store = tmp_path / "job.dynrep"
    assert capture_script(store, script, cache=tmp_path / "cache").returncode == 0
    script.write_text(script.read_text().replace("x * 2", "x + x"))
    result = replay_script(store, script, cache=tmp_path / "c2", strict=True)
    assert result.returncode != 0
    assert f"source of double ({script}:2-3) changed since capture" in result.stderr


LOCAL_CLASS_JOB = """\
import sys
import torch


def main():
    class Scale:  # not at module level: PyTorch 2.13 cannot save guards that name it
        factor = 3.0

    scale = Scale()
    compiled = torch.compile(lambda x: x * scale.factor)
    torch.save(compiled(torch.arange(4.0)), sys.argv[1])


main()
"""


def test_frame_whose_guards_cannot_be_saved_compiles_at_replay_with_its_graphs_from_the_store(tmp_path: Path) -> None:
    """PyTorch 2.13 cannot save guards that name a class defined inside a function: capture
    says so in one line and the job finishes; replay traces that frame alone with Dynamo,
    skipping AOTAutograd, Inductor and the C++ compiler, with the same output."""
    script = tmp_path / "job.py"
    script.write_text(LOCAL_CLASS_JOB)
    store = tmp_path / "job.dynrep"
    captured = capture_script(store, script, str(tmp_path / "b.pt"), cache=tmp_path / "c1")
    assert captured.returncode == 0, captured.stderr[-3000:]
    assert "not saved for replay without Dynamo, compiles at replay: <lambda> (" in captured.stderr
    assert "its guards check an object whose class is defined inside a function" in captured.stderr
    replayed = replay_script(store, script, str(tmp_path / "c.pt"), cache=tmp_path / "c2")
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert torch.equal(torch.load(tmp_path / "c.pt"), torch.arange(4.0) * 3.0)
    assert "compiled here: 1 frames" in replayed.stderr
    assert "<lambda>" in replayed.stderr and "class is defined inside a function" in replayed.stderr


DECORATED_JOB = """\
import functools
import sys

import torch


def capture_outputs(func):  # the shape of transformers' output-capturing decorator
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    @capture_outputs
    def forward(self, x, scale=2.0):  # a default: Dynamo guards the wrapped function's __defaults__
        return torch.relu(self.lin(x)) * scale


torch.manual_seed(0)
if len(sys.argv) > 2:  # as PyTorch alone: where it saved the wrapped function as missing, its guards do not load
    from torch._dynamo.guards import _Missing
    from dynamo_replay._torch import install as _torch_install

    def _leave_missing(state, *args):  # and say whether this release saved anything as missing
        scopes = (state.output_graph.local_scope, state.output_graph.global_scope)
        missing = any(isinstance(v, _Missing) for scope in scopes for v in scope.values())
        with open(sys.argv[1] + ".missing", "w") as out:
            out.write(str(int(missing)))
        return []
    _torch_install._fill_missing = _leave_missing
with torch.no_grad():
    torch.save(torch.compile(Net())(torch.ones(4, 8)), sys.argv[1])
"""


def test_decorated_forward_replays_and_a_frame_whose_guards_do_not_load_compiles(tmp_path: Path) -> None:
    """PyTorch saves the function a decorator wraps as missing, and its guards then fail to
    load (the crash of transformers' models under PyTorch's own precompile). Replay rebuilds it
    from the live function: nothing compiles. Where it cannot, that frame compiles as usual,
    named with the cause, and the job finishes with the same output."""
    script = tmp_path / "job.py"
    script.write_text(DECORATED_JOB)
    store = tmp_path / "job.dynrep"
    captured = capture_script(store, script, str(tmp_path / "a.pt"), cache=tmp_path / "c1")
    assert captured.returncode == 0, captured.stderr[-3000:]
    expected = torch.load(tmp_path / "a.pt")
    replayed = replay_script(store, script, str(tmp_path / "b.pt"), cache=tmp_path / "c2", strict=True)
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert "compiled here: 0 frames" in replayed.stderr
    assert torch.equal(torch.load(tmp_path / "b.pt"), expected)
    unfilled = replay_script(store, script, str(tmp_path / "c.pt"), "unfilled", cache=tmp_path / "c3")
    assert unfilled.returncode == 0, unfilled.stderr[-3000:]
    assert torch.equal(torch.load(tmp_path / "c.pt"), expected)
    if (tmp_path / "c.pt.missing").read_text() == "0":  # this PyTorch saved the wrapped function itself (2.15)
        assert "compiled here: 0 frames" in unfilled.stderr
        return
    assert "compiled here: 1 frames" in unfilled.stderr
    assert "wrapper (" in unfilled.stderr and "its saved guards do not load" in unfilled.stderr
    assert "'_Missing' object has no attribute '__defaults__'" in unfilled.stderr
    strict = replay_script(store, script, str(tmp_path / "d.pt"), "unfilled", cache=tmp_path / "c4", strict=True)
    assert strict.returncode != 0 and not (tmp_path / "d.pt").exists()
    assert (
        "dynamo-replay: strict replay: a saved frame of" in strict.stderr
        and "its saved guards do not load" in strict.stderr
    )


SWAPPED_JOB = Path(__file__).parent / "jobs" / "swapped_job.py"


@pytest.fixture(scope="module")
def swapped_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("swapped")
    store = root / "swapped.dynrep"
    result = run(
        "-m",
        "dynamo_replay",
        "capture",
        "-o",
        str(store),
        str(SWAPPED_JOB),
        str(root / "out.pt"),
        env=job_env(root / "cache", compiler=True),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "replay re-checks the" in result.stderr  # one line, not a warning per guard
    assert "is dropped with caching_precompile" not in result.stderr
    return store


# What each change does to the saved frame: the guards PyTorch's precompile dropped (identity
# of a global function, a module attribute, a closure cell) and a class's methods are re-checked
# by dynamo-replay; a global float is still guarded by PyTorch.
SWAPS = {
    "global_function": "global ACT was function __main__.relu_fn",
    "method": "type(net) was class __main__.Net contents",
    "module_attribute": "global swap_helpers.act was callable torch._VariableFunctionsClass.relu",
    "closure": "inner was callable torch._VariableFunctionsClass.relu",
    "global_float": "the call failed the guards of every saved entry: global SCALE: 2.0 at capture, 3.0 now",
}


@pytest.mark.parametrize("swap", SWAPS)
def test_changed_global_method_module_attribute_or_closure_gives_the_right_answer(
    swapped_store: Path, swap: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.pt"
    result = run(
        "-m",
        "dynamo_replay",
        "replay",
        str(swapped_store),
        str(SWAPPED_JOB),
        str(out),
        env=job_env(tmp_path / "cache", compiler=True, SWAP=swap),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    compiled, eager = torch.load(out)
    assert torch.equal(compiled, eager)
    assert "compiled here: 1 frames" in result.stderr and SWAPS[swap] in result.stderr


def test_without_the_re_check_the_swapped_global_gives_a_wrong_answer(swapped_store: Path, tmp_path: Path) -> None:
    """What the re-check prevents: PyTorch's saved frame alone returns the captured process's
    answer for a swapped global function."""
    out = tmp_path / "out.pt"
    checks_off = Path(__file__).parent / "jobs" / "replay_checks_off.py"
    result = run(
        str(checks_off),
        "replay",
        str(swapped_store),
        str(SWAPPED_JOB),
        str(out),
        env=job_env(tmp_path / "cache", compiler=True, SWAP="global_function"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    compiled, eager = torch.load(out)
    assert not torch.equal(compiled, eager)
    assert "compiled here: 0 frames" in result.stderr


def test_saved_frames_are_installed_at_the_first_call_and_once(tmp_path: Path) -> None:
    """A compiled function's saved frames cost nothing until it is first called, and a function
    compiled twice has them installed once; a compiled function never called installs nothing."""
    job = Path(__file__).parent / "jobs" / "lazy_install.py"
    store, out = tmp_path / "job.dynrep", tmp_path / "out.json"
    captured = run(str(job), "capture", str(store), str(out), env=job_env(tmp_path / "c1", compiler=True))
    assert captured.returncode == 0, captured.stderr[-3000:]
    replayed = run(str(job), "replay", str(store), str(out), env=job_env(tmp_path / "c2", compiler=False))
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["installed"] == [0, 1, 1] and result["compiled"] == [] and result["right"]
