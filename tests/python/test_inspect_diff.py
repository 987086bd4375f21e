"""replay-inspect diff: two compiles of one store, or two stores of one job, compared in guards,
graphs, settings and environment. Each test captures real jobs (aot_eager) and checks that diff
names the guard, the values before and after, and the graph change that explain the recompile;
bad input exits 2 (diff(1): 0 same, 1 different, 2 trouble)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import dynamo_replay as dr
from dynamo_replay._core import Manifest, Store, TraceEvent


def scale_and_shift(x: torch.Tensor, factor: float) -> torch.Tensor:
    return torch.relu(x * factor) + x.sum()


class Switch(torch.nn.Module):
    """Runs one of two layers, chosen by a plain attribute Dynamo guards on."""

    def __init__(self, wide: bool) -> None:
        super().__init__()
        self.wide = wide
        self.narrow_fc = torch.nn.Linear(8, 8)
        self.wide_fc = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.wide_fc(x) if self.wide else self.narrow_fc(x)


def capture(path: Path, fn, *calls: tuple) -> Path:
    torch._dynamo.reset()
    with dr.capture(path, precompile=False), torch.no_grad():
        compiled = torch.compile(fn, backend="aot_eager")
        for args in calls:
            compiled(*args)
    return path


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("diff")
    out = {
        "n8": capture(d / "n8.dynrep", scale_and_shift, (torch.randn(8), 2.0)),
        "n8-again": capture(d / "n8-again.dynrep", scale_and_shift, (torch.randn(8), 2.0)),
        "n16": capture(d / "n16.dynrep", scale_and_shift, (torch.randn(16), 2.0)),
        # 0/0 for 4 elements, 0/1 once the size changes (dynamic), 0/2 once the float changes,
        # 0/3 once a size of 1 breaks the dynamic range's 0/1 rule.
        "ladder": capture(
            d / "ladder.dynrep",
            scale_and_shift,
            *[(torch.randn(n), 2.0) for n in (4, 8, 16)],
            (torch.randn(16), 3.0),
            (torch.randn(1), 3.0),
        ),
        "narrow": capture(d / "narrow.dynrep", Switch(False), (torch.randn(2, 8),)),
        "wide": capture(d / "wide.dynrep", Switch(True), (torch.randn(2, 8),)),
    }
    # A setting changed inside the capture (after the manifest), then one for the whole capture.
    torch._dynamo.reset()
    with (
        dr.capture(d / "not-static.dynrep", precompile=False),
        torch._dynamo.config.patch(assume_static_by_default=False),
    ):
        torch.compile(scale_and_shift, backend="aot_eager")(torch.randn(8), 2.0)
    out["not-static"] = d / "not-static.dynrep"
    torch._dynamo.reset()
    with torch._dynamo.config.patch(capture_scalar_outputs=True), dr.capture(d / "scalars.dynrep", precompile=False):
        torch.compile(scale_and_shift, backend="aot_eager")(torch.randn(8), 2.0)
    out["scalars"] = d / "scalars.dynrep"
    torch._dynamo.reset()
    return out


def diff_json(inspect, *args: str) -> tuple[int, dict]:
    result = inspect("diff", "--json", *map(str, args))
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def detail(pair: dict, what: str) -> tuple[str, str]:
    """(a, b) of the changed guard detail named `what`."""
    found = [(d["a"], d["b"]) for g in pair["guards"]["changed"] for d in g["details"] if d["what"] == what]
    assert len(found) == 1, pair["guards"]
    return found[0]


def test_two_stores_name_the_size_guard_and_the_shapes(stores, inspect) -> None:
    code, report = diff_json(inspect, stores["n8"], stores["n16"])
    assert code == 1 and report["between_stores"] and not report["same"]
    [pair] = report["pairs"]
    assert pair["a"]["function"] == pair["b"]["function"] == "scale_and_shift"
    assert detail(pair, "L['x'].size()[0]") == ("8", "16")
    assert pair["guards"]["added"] == pair["guards"]["removed"] == []
    graphs = {g["graph"]: g for g in pair["graphs"]}
    assert {"what": "L['x']", "a": "float32[8]", "b": "float32[16]"} in graphs["dynamo_output_graph"]["inputs"]
    assert {"what": "output 0", "a": "float32[8]", "b": "float32[16]"} in graphs["aot_inference_graph"]["outputs"]
    assert graphs["dynamo_output_graph"]["operators"] == []  # same operators, other shapes
    assert report["environment"]["changes"] == report["settings"]["changes"] == []
    assert (
        "scale_and_shift 0/0 (test_inspect_diff.py:21) compiled again because: L['x'].size()[0] was 8, now 16."
        in report["answer"]
    )
    text = inspect("diff", str(stores["n8"]), str(stores["n16"]))
    assert text.returncode == 1
    assert text.stdout.startswith(f"In {stores['n16']}, scale_and_shift 0/0")  # the answer leads
    assert "L['x'].size()[0]: 8 -> 16" in text.stdout and "input L['x']: float32[8] -> float32[16]" in text.stdout


def test_a_ranks_side_store_is_said_as_that_rank(stores, inspect, tmp_path: Path) -> None:
    """STORE.rank-K beside STORE is rank K's own compile (ranks.py): diff names the rank, rank 0's
    value first; replay's summary line for that rank (ranks.rank_difference) says the same."""
    import shutil

    from dynamo_replay.ranks import rank_difference

    main, side = tmp_path / "job.dynrep", tmp_path / "job.dynrep.rank-3"
    shutil.copy(stores["n8"], main)
    shutil.copy(stores["n16"], side)
    _, report = diff_json(inspect, main, side)
    said = "scale_and_shift 0/0 (test_inspect_diff.py:21): L['x'].size()[0] was 8, now 16"
    assert report["answer"].startswith(f"Rank 3 compiles differently from rank 0 (was: rank 0, now: rank 3): {said}")
    assert rank_difference(str(main), str(side)) == said
    _, other = diff_json(inspect, main, stores["n16"])  # any other name: two runs of one job
    assert other["answer"].startswith(f"In {stores['n16']}, ")


def test_the_same_job_twice_does_not_differ(stores, inspect) -> None:
    result = inspect("diff", str(stores["n8"]), str(stores["n8-again"]))
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("No differences")
    code, report = diff_json(inspect, stores["n8"], stores["n8-again"])
    assert code == 0 and report["same"] and report["pairs"][0]["same"]


def test_a_restart_in_a_new_process_differs_only_where_the_job_did(tmp_path: Path, inspect) -> None:
    """Two processes: object addresses and Dynamo's global numbering differ, nothing else."""
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent("""
        import sys, torch, dynamo_replay as dr
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        with dr.capture(sys.argv[1], precompile=False), torch.no_grad():
            torch.compile(model, backend="aot_eager")(torch.randn(int(sys.argv[2]), 4))
    """)
    )
    for name in ("a", "b"):
        subprocess.run(
            [sys.executable, str(job), str(tmp_path / f"{name}.dynrep"), "3"],
            check=True,
            capture_output=True,
            timeout=120,
        )
    same = inspect("diff", str(tmp_path / "a.dynrep"), str(tmp_path / "b.dynrep"))
    assert same.returncode == 0, same.stdout
    assert "command line (not compared)" in same.stdout  # it names the store, so it always differs


def test_two_compiles_of_a_ladder(stores, inspect) -> None:
    code, report = diff_json(inspect, stores["ladder"], "0/0", "0/1")
    assert code == 1 and not report["between_stores"]
    [pair] = report["pairs"]
    assert detail(pair, "L['x'].size()[0]") == ("4", "dynamic")
    assert {"what": "L['x'].size()[0]", "a": None, "b": "s77 [2, int_oo]"} in pair["guards"]["symbols"]
    assert any("2 <= L['x'].size()[0]" in g["code"] for g in pair["guards"]["added"])
    assert any("expected 4, actual 8" in r for r in pair["pytorch_reasons"])
    dynamo = next(g for g in pair["graphs"] if g["graph"] == "dynamo_output_graph")
    assert {"what": "L['x']", "a": "float32[4]", "b": "float32[s77]"} in dynamo["inputs"]
    assert report["answer"].startswith(
        "0/1 compiled again because: L['x'].size()[0] was 4, now dynamic (s77 [2, int_oo])"
    )
    assert "PyTorch's reason: 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8" in report["answer"]

    # One compile id: against the compile it replaced. The float went from a constant to a symbol.
    code, report = diff_json(inspect, stores["ladder"], "0/2")
    [pair] = report["pairs"]
    assert (pair["a"]["compile_id"], pair["b"]["compile_id"]) == ("0/1", "0/2")
    assert [g["code"] for g in pair["guards"]["removed"]] == ["L['factor'] == 2.0"]
    assert report["answer"].startswith("0/2 compiled again because: L['factor'] was 2.0, now dynamic (zf")
    dynamo = next(g for g in pair["graphs"] if g["graph"] == "dynamo_output_graph")
    assert {"what": "method item", "a": "0", "b": "1"} in dynamo["operators"]

    # A size of 1 falls outside the dynamic range [2, int_oo]: specialized again.
    code, report = diff_json(inspect, stores["ladder"], "0/3")
    [pair] = report["pairs"]
    assert detail(pair, "L['x'].size()[0]") == ("dynamic", "1")
    assert [g["code"] for g in pair["guards"]["removed"]] == ["2 <= L['x'].size()[0]"]
    assert report["answer"].startswith(
        "0/3 compiled again because: L['x'].size()[0] was dynamic (s77 [2, int_oo]), now 1. "
        "PyTorch's reason: 0/2: 2 <= x.size()[0]"
    )


def test_a_setting_changed_at_compile_time(stores, inspect) -> None:
    code, report = diff_json(inspect, stores["n8"], stores["not-static"])
    assert code == 1
    [pair] = report["pairs"]
    assert {"what": "config.dynamo.assume_static_by_default", "a": "true", "b": "false"} in pair["settings"]
    assert report["settings"]["changes"] == []  # the manifest was written before the patch
    assert detail(pair, "L['x'].size()[0]") == ("8", "dynamic")
    assert "setting config.dynamo.assume_static_by_default was true, now false" in report["answer"]


def test_a_setting_for_the_whole_capture(stores, inspect) -> None:
    code, report = diff_json(inspect, stores["n8"], stores["scalars"])
    assert code == 1
    assert {"what": "config.dynamo.capture_scalar_outputs", "a": "False", "b": "True"} in report["settings"]["changes"]
    assert report["pairs"][0]["settings"] == []  # named once, at the job level
    assert report["answer"].startswith(
        f"{stores['scalars']} was captured in another setting or environment: "
        "setting config.dynamo.capture_scalar_outputs was False, now True"
    )


def test_module_scope_and_attribute_guard(stores, inspect) -> None:
    code, report = diff_json(inspect, stores["narrow"], stores["wide"])
    assert code == 1
    [pair] = report["pairs"]
    assert detail(pair, "L['self'].wide") == ("False", "True")  # FALSE_MATCH, then TRUE_MATCH
    assert (
        "compiled again because: L['self'].wide was False, now True; "
        "15 guards on L['self']._modules['narrow_fc'] are gone" in report["answer"]
    )
    dynamo = next(g for g in pair["graphs"] if g["graph"] == "dynamo_output_graph")
    scopes = {s["what"]: (s["a"], s["b"]) for s in dynamo["scopes"]}
    assert scopes["narrow_fc (Linear)"] == ("present", None)
    assert scopes["wide_fc (Sequential)"] == (None, "present")
    assert scopes["wide_fc.0 (Linear)"] == (None, "present")
    aot = next(g for g in pair["graphs"] if g["graph"] == "aot_inference_graph")
    assert {"what": "aten::relu.default", "a": "0", "b": "1"} in aot["operators"]
    assert {"what": "parameter wide_fc.0.weight", "a": None, "b": "float32[32, 8]"} in aot["inputs"]


def test_compile_option_restricts_two_stores(stores, inspect) -> None:
    code, report = diff_json(inspect, stores["ladder"], stores["n8"], "--compile", "0/0")
    assert [(p["a"]["compile_id"], p["b"]["compile_id"]) for p in report["pairs"]] == [("0/0", "0/0")]
    assert report["only_in_a"] == []  # 0/1 and 0/2 are left out
    code, report = diff_json(inspect, stores["ladder"], stores["n8"])
    assert [c["compile_id"] for c in report["only_in_a"]] == ["0/1", "0/2", "0/3"]


def test_gpt2_at_two_sequence_lengths(tmp_path: Path, inspect) -> None:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=500, n_positions=64)).eval()
    paths = [capture(tmp_path / f"gpt2-{seq}.dynrep", model, (torch.randint(0, 500, (2, seq)),)) for seq in (8, 16)]
    code, report = diff_json(inspect, *paths)
    assert code == 1
    [pair] = report["pairs"]
    sizes = [
        (d["what"], d["a"], d["b"]) for g in pair["guards"]["changed"] for d in g["details"] if ".size()[" in d["what"]
    ]
    assert len(sizes) == 1 and sizes[0][0].endswith(".size()[1]") and sizes[0][1:] == ("8", "16"), sizes
    # Process-specific names (Dynamo's installed globals, addresses) are not differences.
    assert pair["guards"]["added"] == pair["guards"]["removed"] == []
    dynamo = next(g for g in pair["graphs"] if g["graph"] == "dynamo_output_graph")
    assert dynamo["operators"] == [] and dynamo["scopes"] == []
    assert any(i["a"] == "int64[2, 8]" and i["b"] == "int64[2, 16]" for i in dynamo["inputs"])
    assert f"compiled again because: {sizes[0][0]} was 8, now 16." in report["answer"]


# --- bad input: exit 2 and a message naming what is wrong ---


def test_missing_store(stores, inspect, tmp_path: Path) -> None:
    result = inspect("diff", str(stores["n8"]), str(tmp_path / "nope.dynrep"))
    assert result.returncode == 2 and "nope.dynrep" in result.stderr and result.stdout == ""


def test_unknown_compile_ids(stores, inspect) -> None:
    result = inspect("diff", str(stores["ladder"]), "0/0", "0/9")
    assert result.returncode == 2 and "no compile 0/9" in result.stderr
    first = inspect("diff", str(stores["ladder"]), "0/0")
    assert first.returncode == 2 and "first compile" in first.stderr
    result = inspect("diff", str(stores["ladder"]), str(stores["n8"]), "--compile", "7/0")
    assert result.returncode == 2 and "no compile 7/0" in result.stderr


def test_bad_operands(stores, inspect) -> None:
    assert inspect("diff", str(stores["n8"])).returncode == 2  # one operand
    result = inspect("diff", str(stores["n8"]), str(stores["n16"]), "0/1")
    assert result.returncode == 2 and "compile ids" in result.stderr
    result = inspect("diff", str(stores["ladder"]), "0/0", "0/1", "--compile", "0/0")
    assert result.returncode == 2 and "--compile" in result.stderr


def test_corrupt_stores(stores, inspect, data_dir: Path, tmp_path: Path) -> None:
    # A damaged trace event: the store cannot be compared.
    records = json.loads(inspect("ls", "--records", "--json", str(stores["n8"])).stdout)["records"]
    event = next(r for r in records if r["kind"] == "trace" and r["bytes"] > 64)
    damaged = bytearray(stores["n8"].read_bytes())
    damaged[event["offset"] + 16 + 5] ^= 0xFF
    (tmp_path / "bad-event.dynrep").write_bytes(damaged)
    result = inspect("diff", str(tmp_path / "bad-event.dynrep"), str(stores["n8"]))
    assert result.returncode == 2 and f"record at offset {event['offset']}: checksum mismatch" in result.stderr
    # A damaged artifact, which diff does not read: a warning, and the comparison goes on.
    result = inspect("diff", str(data_dir / "malformed/flipped-record.dynrep"), str(stores["n8"]))
    assert result.returncode == 1 and "checksum mismatch (diff does not read it)" in result.stderr
    not_a_store = tmp_path / "text.dynrep"
    not_a_store.write_text("hello")
    result = inspect("diff", str(not_a_store), str(stores["n8"]))
    assert result.returncode == 2 and "text.dynrep" in result.stderr
    # A damaged guard list: named, with the compile it belongs to.
    store = Store.open(stores["n8"])
    key = next(e.payload_key for e in store.records(TraceEvent) if e.name == "dynamo_replay.guards")
    store.close()
    blobs = json.loads(inspect("ls", "--blobs", "--json", str(stores["n8"])).stdout)["blobs"]
    offset = next(b["offset"] for b in blobs if b["key"] == key)
    damaged = bytearray(stores["n8"].read_bytes())
    damaged[offset + 16 + 40] ^= 0xFF
    (tmp_path / "damaged.dynrep").write_bytes(damaged)
    result = inspect("diff", str(tmp_path / "damaged.dynrep"), str(stores["n8"]))
    assert result.returncode == 2 and "compile 0/0: guard list" in result.stderr, result.stderr


def test_stores_without_compiles_or_guard_lists(data_dir: Path, inspect) -> None:
    sample = str(data_dir / "v1.0/sample.dynrep")
    assert inspect("diff", sample, sample).returncode == 0
    old, new = data_dir / "capture-1.1/every-record.dynrep", data_dir / "capture-1.2/every-record.dynrep"
    code, report = diff_json(inspect, old, new)
    # The job file gained a line between the two captures: frames still pair, by function and file.
    forward = next(p for p in report["pairs"] if p["a"]["function"] == "forward")
    assert {"what": "first line", "a": "24", "b": "25"} in forward["compile"]
    assert [c["function"] for c in report["only_in_b"]] == ["branches_on_data"]
    assert any(not p["guards"]["recorded"] for p in report["pairs"])


def test_environment_fingerprints_differ(tmp_path: Path, inspect) -> None:
    """Stores written on two machines: the manifests' fingerprints name what moved."""
    for name, torch_version, flags in (("here", "2.13.0", "x86_64,avx2"), ("there", "2.14.0", "x86_64,avx2,avx512")):
        store = Store.create(tmp_path / f"{name}.dynrep", overwrite=True)
        store.put(
            Manifest(
                tool="dynamo-replay test",
                command_line=["job.py"],
                environment={"torch.version": torch_version, "cpu.flags": flags, "config.dynamo.x": "1"},
            )
        )
        store.close()
    code, report = diff_json(inspect, tmp_path / "here.dynrep", tmp_path / "there.dynrep")
    assert code == 1 and report["pairs"] == [] and report["settings"]["changes"] == []
    # config.* entries of the fingerprint are settings; the rest is the environment.
    assert (report["environment"]["entries"], report["settings"]["entries"]) == (2, 1)
    assert report["environment"]["changes"] == [
        {"what": "cpu.flags", "a": "x86_64,avx2", "b": "x86_64,avx2,avx512"},
        {"what": "torch.version", "a": "2.13.0", "b": "2.14.0"},
    ]
    assert "torch.version was 2.13.0, now 2.14.0" in report["answer"]
