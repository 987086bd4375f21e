"""The parts of stores that grow that need no compile: generations merged as replay reads
them, an update's records renumbered past the store's, usage per start, which generations
eviction keeps, the fleet URL's byte limit, the inert-store line and `check`'s reading of
sources and imports. Tables, one line per case; about a second."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dynamo_replay import generations
from dynamo_replay.fleet.url import parse_fleet_url
from dynamo_replay.replay.preflight import FramePlan, Preflight, _imported_module, _source_of
from dynamo_replay.replay.summary import CompiledFrame, ReplaySummary
from dynamo_replay.replay_data import ReplayData
from dynamo_replay.update.files import record_usage
from dynamo_replay.update.merge import Limits, _generations_kept, _renumbered


@pytest.mark.parametrize(
    "name, split",
    [
        ("torch/mega_cache.bin", (0, "torch/mega_cache.bin")),
        ("generation/3/torch/mega_cache.bin", (3, "torch/mega_cache.bin")),
        ("generation/12/dynamo_replay/replay.json", (12, "dynamo_replay/replay.json")),
        ("inductor/ab/kernel.so", (0, "inductor/ab/kernel.so")),
        ("generation/x/torch/mega_cache.bin", (0, "generation/x/torch/mega_cache.bin")),
    ],
)
def test_artifact_names_of_generations(name: str, split: tuple[int, str]) -> None:
    assert generations.split_name(name) == split
    assert generations.artifact_name(*split) == name


def test_generations_merge_as_one_replay_data() -> None:
    base = ReplayData(
        environment={"torch.version": "2.15.0"},
        frames=["f (a.py:1)", "g (a.py:9)"],
        not_saved={"g (a.py:9)": "a DDP split"},
        compiles=[{"compile_id": "0/0"}],
        unique_ids=3,
        sources=[("f", "a.py", [1, 4], "x")],
        cache_keys=["inductor:k1"],
    )
    later = ReplayData(
        environment={"torch.version": "other"},
        frames=["f (a.py:1)", "h (b.py:2)"],
        compiles=[{"compile_id": "2/0"}],
        unique_ids=7,
        sources=[("h", "b.py", [2, 5], "y")],
        cache_keys=["inductor:k1", "inductor:k2"],
    )
    merged = generations.merged_replay_data(base, [(1, later)])
    assert merged.environment == base.environment  # the capture's, which every update was checked against
    assert merged.frames == ["f (a.py:1)", "g (a.py:9)", "h (b.py:2)"]
    assert merged.not_saved == {"g (a.py:9)": "a DDP split"}
    assert [c["generation"] for c in merged.compiles] == [0, 1]
    assert merged.unique_ids == 7 and merged.cache_keys == ["inductor:k1", "inductor:k2"]
    assert len(merged.sources) == 2 and base.frames == ["f (a.py:1)", "g (a.py:9)"]  # the base is not changed


@pytest.mark.parametrize(
    "value, moved",
    [
        ({"compile_id": "0/1", "x": 1}, {"compile_id": "5/1", "x": 1}),
        ({"frame_id": 2, "frame_compile_id": 0}, {"frame_id": 7, "frame_compile_id": 0}),
        ({"stack": [{"line": 3, "name": "f", "filename": 4}]}, {"stack": [{"line": 3, "name": "f", "filename": 14}]}),
        ({"filename": "/a.py", "line": 3}, {"filename": "/a.py", "line": 3}),
        ([{"compile_id": "-"}], [{"compile_id": "-"}]),
        ({"frame_id": -1}, {"frame_id": -1}),
    ],
)
def test_an_update_s_compile_ids_and_file_names_move_past_the_store_s(value, moved) -> None:
    assert _renumbered(value, 5, 10) == moved


def test_usage_keeps_each_frame_s_hits_per_start_and_each_generation_s_last_use() -> None:
    usage = record_usage({}, {"f": 3}, {0: 3}, now=100.0)
    usage = record_usage(usage, {"g": 1}, {0: 0, 1: 1}, now=200.0)
    assert usage["starts"] == 2
    assert usage["frames"]["f"] == {"hits": [3, 0], "last_used": 100.0}
    assert usage["frames"]["g"] == {"hits": [1], "last_used": 200.0}
    assert usage["generations"] == {"0": {"last_used": 100.0}, "1": {"last_used": 200.0}}
    for start in range(20):
        usage = record_usage(usage, {"f": start}, {}, now=300.0 + start, keep_starts=4)
    assert usage["frames"]["f"]["hits"] == [16, 17, 18, 19]


def _artifacts(**sizes: tuple[int, str]) -> dict[str, SimpleNamespace]:
    """name -> a stand-in Artifact of that size, with the generation attribute given (or none)."""
    return {
        name.replace("__", "/"): SimpleNamespace(
            name=name.replace("__", "/"), size=size, attributes={"generation": g} if g else {}
        )
        for name, (size, g) in sizes.items()
    }


STORE = _artifacts(
    **{
        "torch__mega_cache.bin": (100, ""),
        "dynamo_replay__replay.json": (10, ""),
        "generation__1__torch__mega_cache.bin": (50, ""),
        "generation__2__torch__mega_cache.bin": (50, ""),
        "generation__3__torch__mega_cache.bin": (50, ""),
        "inductor__aa__k.so": (40, "2"),
    }
)
USED = {"generations": {"1": {"last_used": 30.0}, "2": {"last_used": 10.0}, "3": {"last_used": 20.0}}}


@pytest.mark.parametrize(
    "limits, kept",
    [
        (Limits(max_generations=16), {0, 1, 2, 3}),
        (Limits(max_generations=4), {0, 1, 3}),  # room for the one being added: the least recently used goes
        (Limits(max_generations=2), {0}),
        (Limits(max_generations=16, max_bytes=260), {0, 1, 3}),  # generation 2 with its kernel library: 90 bytes
        (Limits(max_generations=16, max_bytes=1), {0}),  # the capture itself always stays
    ],
)
def test_eviction_keeps_the_capture_and_the_most_recently_used(limits: Limits, kept: set[int]) -> None:
    assert _generations_kept(STORE, USED, limits) == kept


@pytest.mark.parametrize(
    "name, generation, owners",
    [
        ("torch/mega_cache.bin", "", {0}),
        ("generation/3/dynamo_replay/replay.json", "", {3}),
        ("inductor/aa/k.so", "", {0}),  # the capture's own library
        ("inductor/aa/k.so", "2", {2}),
        ("inductor/aa/k.so", "1,3", {1, 3}),  # brought by update 1, used by update 3 too: kept while either is
    ],
)
def test_which_generations_an_artifact_belongs_to(name: str, generation: str, owners: set[int]) -> None:
    from dynamo_replay.update.merge import _generations_of

    attributes = {"generation": generation} if generation else {}
    assert _generations_of(SimpleNamespace(name=name, attributes=attributes)) == owners


@pytest.mark.parametrize(
    "url, max_bytes",
    [
        ("redis://h/0?name=j", None),
        ("redis://h/0?name=j&max_bytes=1000000", 1000000),
    ],
)
def test_the_fleet_url_takes_a_byte_limit(url: str, max_bytes: int | None) -> None:
    assert parse_fleet_url(url).max_bytes == max_bytes


@pytest.mark.parametrize("url", ["redis://h/0?name=j&max_bytes=0", "redis://h/0?name=j&max_bytes=lots"])
def test_a_bad_byte_limit_is_named(url: str) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        parse_fleet_url(url)


def _summary(hits: dict[str, int], compiled: list[CompiledFrame] = (), skipped: list[str] = ()) -> ReplaySummary:
    return ReplaySummary(
        store="s.dynrep",
        loaded=True,
        precompiled=True,
        saved_frames=["f (a.py:1)", "g (a.py:5)"],
        hits=hits,
        compiled=list(compiled),
        skipped=list(skipped),
    )


@pytest.mark.parametrize(
    "summary, first_line",
    [
        (_summary({"f (a.py:1)": 2, "g (a.py:5)": 1}), "dynamo-replay: s.dynrep"),
        (_summary({"f (a.py:1)": 2}), "dynamo-replay: s.dynrep"),  # half used: not inert
        (
            _summary({}, [CompiledFrame("f", "a.py", 1, "the call failed the guards of every saved entry", 1.0)]),
            "2 of 2 saved frames unused: the call failed the guards of every saved entry",
        ),
        (
            _summary({}, skipped=["f (a.py:1): G['act'] was function relu at capture, is function gelu now"]),
            "unused: G['act'] was function relu at capture",
        ),
        (_summary({}), "unused: the job never called them"),
    ],
)
def test_an_inert_store_is_named_in_the_summary_s_first_line(summary: ReplaySummary, first_line: str) -> None:
    line = str(summary).splitlines()[0]
    assert first_line in line
    assert ("mostly inert" in line) == ("unused" in first_line)
    if "unused" in first_line:
        assert "python -m dynamo_replay check s.dynrep" in line


@pytest.mark.parametrize(
    "frame, difference, same",
    [
        ("f (/a.py:3)", "source of f (/a.py:3-9) changed since capture", True),
        ("f (/a.py:12)", "source of f (/a.py:3-9) changed since capture", False),
        ("f (/b.py:3)", "source of f (/a.py:3-9) changed since capture", False),
        ("forward (/x (1)/m.py:4)", "source of Net.forward (/x (1)/m.py:4-6) changed since capture", True),
    ],
)
def test_check_ties_each_source_change_to_its_frame(frame: str, difference: str, same: bool) -> None:
    assert _source_of(frame, difference) == same


@pytest.mark.parametrize(
    "imports, source, value, imported",
    [
        ("import torch\n", "G['torch']", "module torch", True),
        ("import numpy as np\n", "G['np']", "module numpy", True),
        ("import torch.nn.functional as F\n", "G['F']", "module torch.nn.functional", True),
        ("torch = object()\n", "G['torch']", "module torch", False),
        ("import torch\n", "G['act']", "function relu", False),
        ("import numpy\n", "G['np']", "module numpy", False),
    ],
)
def test_check_knows_a_module_the_file_imports(
    tmp_path: Path, imports: str, source: str, value: str, imported: bool
) -> None:
    path = tmp_path / "job.py"
    path.write_text(imports + "def f(x):\n    return x\n")
    guard = SimpleNamespace(source=source, value=value, frame=f"f ({path}:2)")
    assert _imported_module(guard) == imported


@pytest.mark.parametrize(
    "source, value, pinned",
    [
        ("G['__builtins_dict___2']['iter']", "callable builtins.iter", True),
        ("G['__builtins_dict___0']['len']", "callable builtins.len", True),
        ("G['iter']", "callable builtins.iter", False),  # a module global named like a builtin: the job's
        ("G['__builtins_dict___2']['iter']", "function mod.iter code 1a2b", False),
    ],
)
def test_check_knows_a_builtin_is_the_same_in_every_process(source: str, value: str, pinned: bool) -> None:
    from dynamo_replay.replay.preflight import _builtin

    assert _builtin(SimpleNamespace(source=source, value=value)) == pinned


@pytest.mark.parametrize(
    "refused, outcomes, code",
    [
        (None, ["replays", "replays"], 0),
        (None, ["replays", "compiles"], 3),
        (None, ["depends"], 0),  # listed, with the value each needs; the store is used
        (None, ["depends", "compiles"], 3),
        ("the store was not finished by its writer", [], 4),
        ("this process differs from the one captured", ["replays"], 4),
    ],
)
def test_check_s_exit_codes(refused: str | None, outcomes: list[str], code: int) -> None:
    result = Preflight(store="s", refused=refused, frames=[FramePlan(f"f{i}", o, "") for i, o in enumerate(outcomes)])
    assert result.exit_code == code and result.to_json()["exit_code"] == code
    assert f"(exit {code})" in result.render()
