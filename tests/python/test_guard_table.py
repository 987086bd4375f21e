"""Never a stale answer: every guard kind this PyTorch release can emit is kept, re-checked or
makes its frame compile (dynamo_replay._torch.guards.GUARD_TABLE), and one differential case per
row of tests/python/guard_cases.py proves it, as each row reads on this release.

The cases are captured once; then replayed in three fresh processes: unchanged (each case
replays from the store, or compiles where the table says so, named with its guard and user
line), with every guarded value changed (each answer is the eager answer of that process,
which is what a plain torch.compile returns), and changed with replay's own checks switched
off (each case that needs them gives the captured process's answer, so these tests can fail).
About 45 s on a 2-core machine."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tiers

torch = pytest.importorskip("torch")

from dynamo_replay._torch import guards as _torch_guards  # noqa: E402
from dynamo_replay._torch import releases  # noqa: E402
from guard_cases import (  # noqa: E402
    COMPILED,
    KEPT,
    KEPT_BY_PYTORCH_FROM,
    RECHECKED,
    UNEXERCISED,
    cases_for,
    guard_table_markdown,
    write_cases,
)
from job_environment import fresh_inductor_cache  # noqa: E402

CASES = cases_for(releases.CURRENT.line)  # the rows of this release, each as it reads here

RUNNER = Path(__file__).parent / "jobs" / "guard_cases" / "run.py"
ALL_CHANGED = ",".join(CASES)
CHECKS_OFF = Path(__file__).parent / "jobs" / "replay_checks_off.py"


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_", "DYNREP_"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(fresh_inductor_cache(cache))
    env.update(extra)
    return env


class Runs:
    """The cases' results in each process: {process: {case: {"right", "compiled"}}} and stderr."""

    def __init__(self, root: Path, cases: dict) -> None:
        self.cases = root / "cases"
        write_cases(self.cases, cases)
        self.store = root / "cases.dynrep"
        self.results: dict[str, dict] = {}
        self.stderr: dict[str, str] = {}
        self._run("capture", ["-m", "dynamo_replay", "capture", "-o", str(self.store)], root)
        replay = ["-m", "dynamo_replay", "replay", str(self.store)]
        self._run("unchanged", replay, root)
        self._run("changed", replay, root, DYNREP_CHANGED=ALL_CHANGED)
        self._run("checks_off", [str(CHECKS_OFF), "replay", str(self.store)], root, DYNREP_CHANGED=ALL_CHANGED)

    def _run(self, name: str, command: list[str], root: Path, **extra: str) -> None:
        out = root / f"{name}.json"
        result = subprocess.run(
            [sys.executable, *command, str(RUNNER), str(self.cases), str(out)],
            capture_output=True,
            text=True,
            timeout=900,
            env=_env(root / f"{name}-cache", **extra),
        )
        assert result.returncode == 0, result.stderr[-3000:]
        self.results[name] = json.loads(out.read_text())
        self.stderr[name] = result.stderr


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory) -> Runs:
    """The cases the session's selected tests read, each process running them all at once."""
    wanted = set(tiers.selected(request, "case"))
    if any(item.name == "test_a_shared_package_key_is_named_and_compiles" for item in request.session.items):
        wanted |= {"same_key_a", "same_key_b"}
    return Runs(tmp_path_factory.mktemp("guard-cases"), {name: row for name, row in CASES.items() if name in wanted})


def test_every_guard_kind_of_this_pytorch_has_a_row() -> None:
    """A PyTorch release that adds a guard kind fails here until the table says what replay does."""
    from torch._dynamo.guards import GuardBuilder

    kinds = {name for name in vars(GuardBuilder) if name.isupper() and callable(getattr(GuardBuilder, name))}
    assert kinds - set(_torch_guards.GUARD_TABLE) == set()
    assert {disposition for disposition, _ in _torch_guards.GUARD_TABLE.values()} <= {KEPT, RECHECKED, COMPILED}


def test_every_row_has_a_case_or_says_why_not() -> None:
    exercised = {kind for kinds, *_ in CASES.values() for kind in kinds}
    assert set(_torch_guards.GUARD_TABLE) - exercised - set(UNEXERCISED) == set()
    assert set(_torch_guards.guard_table_every_release()) <= set(_torch_guards.GUARD_TABLE) | set(UNEXERCISED) | {
        kind for kinds, *_ in cases_for("9.9").values() for kind in kinds
    }
    assert not exercised & set(UNEXERCISED)


@pytest.fixture(scope="module")
def case_modules(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("case-modules")
    write_cases(folder, CASES)
    return folder


@pytest.mark.parametrize("case", CASES)
def test_the_case_makes_dynamo_emit_its_guard_kinds(case: str, case_modules: Path, monkeypatch) -> None:
    """What a row claims to exercise is what PyTorch emits for its program (in this process,
    with the eager backend and every guard, before precompile drops any)."""
    monkeypatch.syspath_prepend(str(RUNNER.parent))
    monkeypatch.syspath_prepend(str(case_modules))
    importlib.invalidate_caches()
    module = importlib.import_module(f"case_{case}")
    function = getattr(module, "f", None) or getattr(module, f"f_{case}")
    emitted: set[str] = set()

    def export(guards) -> None:
        for guard in guards:
            emitted.add(guard.create_fn_name())
            emitted.update(guard.guard_types or ())

    torch._dynamo.reset()
    x = torch.linspace(1, 2, 8, requires_grad=getattr(module, "X_REQUIRES_GRAD", False))
    context = getattr(module, "CONTEXT", None)
    try:
        with context() if context else contextlib.nullcontext():
            torch._dynamo.optimize("eager", guard_export_fn=export)(function)(x)
    finally:
        torch._dynamo.reset()
        sys.modules.pop(f"case_{case}", None)
    kinds = set(CASES[case][0])
    assert kinds <= emitted, f"{case} claims {sorted(kinds - emitted)}, PyTorch emitted {sorted(emitted)}"


@pytest.mark.parametrize("case", CASES)
def test_replay_gives_the_answer_of_a_plain_compile(runs: Runs, case: str) -> None:
    kinds, disposition, needs_checks, _, _ = CASES[case]
    assert runs.results["capture"][case]["right"]
    unchanged, changed = runs.results["unchanged"][case], runs.results["changed"][case]
    assert unchanged["right"], unchanged
    assert changed["right"], f"{case}: replay gave {changed['got']}, a plain compile gives {changed['want']}"
    if disposition == COMPILED:
        assert unchanged["compiled"], "a guard without a faithful description must make its frame compile"
        assert f"case_{case}.py" in runs.stderr["unchanged"].split("saved frames not used")[-1]
    elif case != "same_key_a":  # shares PyTorch's key with same_key_b, whose package wins
        assert not unchanged["compiled"], runs.stderr["unchanged"][-3000:]
    off = runs.results["checks_off"][case]
    if needs_checks:
        assert not off["right"], f"{case} is right without replay's checks: the case does not test them"
    elif case in KEPT_BY_PYTORCH_FROM:  # this release keeps the guard itself: PyTorch alone is right
        assert off["right"], f"{case} needs replay's checks on PyTorch {releases.VERSION} too"


def test_a_shared_package_key_is_named_and_compiles(runs: Runs) -> None:
    """PyTorch keys saved frames by name and first line: f at line 30 of two files; one
    replays, the other's saved package fails its guard-tree check or its guards, and compiles."""
    assert runs.results["unchanged"]["same_key_a"]["compiled"] != runs.results["unchanged"]["same_key_b"]["compiled"]


@pytest.mark.parametrize(
    "case, cause",
    [
        ("enum_member", "global KIND was enum case_enum_member.Kind.A at capture, is enum case_enum_member.Kind.B now"),
        ("function_default", "defaults constant 2.0 at capture, is function case_function_default.post code"),
        ("builtin_shadowed", "['abs'] was callable builtins.abs at capture, is function case_builtin_shadowed.abs"),
        ("object_identity", "`G['CURRENT'] is G['A']` held at capture and does not now"),
        (
            "module_attribute_constant",
            "captured `EQUALS_MATCH: G['helpers_a'].SCALE == 2.0`, now `EQUALS_MATCH: G['helpers_a'].SCALE == 3.0`",
        ),
    ],
)
def test_the_summary_names_what_differs(runs: Runs, case: str, cause: str) -> None:
    compiled_here = runs.stderr["changed"].split("compiled here:")[-1]
    line = next((line for line in compiled_here.splitlines() if f"case_{case}.py" in line), "")
    assert cause in line, line or compiled_here[-2000:]


def test_the_docs_give_the_table() -> None:
    """docs/guards.md ends with the table as the code holds it; DYNREP_UPDATE_GOLDEN=1 rewrites it."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "guards.md"
    text = docs.read_text()
    prose, _, _ = text.partition("| kind | releases |")
    expected = prose + guard_table_markdown(_torch_guards.guard_table_every_release())
    if os.environ.get("DYNREP_UPDATE_GOLDEN"):
        docs.write_text(expected)
    assert text == expected
