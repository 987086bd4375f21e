"""replay-inspect's output against golden files, its JSON, and its exit codes: on the sample
store (records and blobs, no compiles) and on the kept capture of schema 1.5 (compiles, a
recompile, a failed compile, unbacked symbols, a constraint violation, a run-time failure, a
graph break). Regenerate the golden files with DYNREP_UPDATE_GOLDEN=1 after a deliberate change.
A few seconds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

KEPT = "capture-1.5/every-record.dynrep"

# case -> (arguments, exit code), run from tests/data.
GOLDEN_CASES = {
    "info": (["info", "v1.0/sample.dynrep"], 0),
    "ls": (["ls", "v1.0/sample.dynrep"], 0),
    "ls-blobs": (["ls", "--blobs", "v1.0/sample.dynrep"], 0),
    "verify": (["verify", "v1.0/sample.dynrep"], 0),
    "verify-flipped-record": (["verify", "malformed/flipped-record.dynrep"], 1),
    "info-json": (["info", "--json", "v1.0/sample.dynrep"], 0),
    "kept-ls": (["ls", KEPT], 0),
    "kept-ls-json": (["ls", "--json", KEPT], 0),
    "kept-show-shapes": (["show", KEPT, "0/1", "--shapes"], 0),
    "kept-show-failed-json": (["show", "--json", KEPT, "1/0", "--shapes"], 0),
    "kept-why": (["why", KEPT], 0),
    "kept-why-json": (["why", "--json", KEPT], 0),
    "kept-why-symbol": (["why", KEPT, "1/0", "--symbol", "u0"], 0),
    "kept-diff": (["diff", KEPT, "0/0", "0/1"], 1),
    "kept-diff-json": (["diff", "--json", KEPT, "0/1"], 1),
    "kept-export-perfetto": (["export", "--perfetto", "-", KEPT], 0),
    "kept-no-such-compile": (["why", KEPT, "9/9"], 1),
}


def _check_golden(data_dir: Path, case: str, text: str) -> None:
    golden = data_dir / "golden" / f"{case}.stdout.exact"
    if os.environ.get("DYNREP_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_output_matches_golden(data_dir: Path, inspect, case: str) -> None:
    arguments, code = GOLDEN_CASES[case]
    result = inspect("--color=never", *arguments, cwd=data_dir)
    assert result.returncode == code, result.stderr
    _check_golden(data_dir, case, result.stdout)


def test_torch_trace_export_matches_golden(data_dir: Path, inspect, tmp_path: Path) -> None:
    """The TORCH_TRACE log of the kept capture (tlparse reads this file): per event line its
    source, event name, compile id, its payload's MD5 and the metadata's length."""
    result = inspect("export", "--torch-trace", str(tmp_path), KEPT, cwd=data_dir)
    assert result.returncode == 0, result.stderr
    (log,) = sorted(tmp_path.glob("*.log"))
    summary = []
    for line in log.read_text().splitlines():
        if line.startswith("\t"):
            continue
        head, _, body = line.partition("] ")
        record = json.loads(body)
        name = next(k for k in record if k not in ("frame_id", "frame_compile_id", "attempt", "has_payload"))
        ids = "/".join(str(record.get(k, "-")) for k in ("frame_id", "frame_compile_id", "attempt"))
        summary.append(f"{head.split()[-1]} {name} {ids} {record.get('has_payload', '')} {len(body)}\n")
    _check_golden(data_dir, "kept-export-torch-trace", "".join(summary))


def test_json_agrees_with_the_store(data_dir: Path, inspect) -> None:
    info = json.loads(inspect("info", "--json", str(data_dir / "v1.0/sample.dynrep")).stdout)
    assert info["records"] == {"manifest": 1, "artifact": 5}
    assert info["blob_count"] == 5
    ls = json.loads(inspect("ls", "--json", str(data_dir / "v1.0/sample.dynrep")).stdout)
    assert [r["kind"] for r in ls["records"]] == ["manifest"] + ["artifact"] * 5
    assert ls["records"][1]["description"].startswith("inductor/kernel_0.cpp")
    verify = json.loads(inspect("verify", "--json", str(data_dir / "malformed/flipped-record.dynrep")).stdout)
    assert verify["ok"] is False and "checksum mismatch" in verify["problems"][0]


def test_colour_only_when_asked(data_dir: Path, inspect) -> None:
    sample = str(data_dir / "v1.0/sample.dynrep")
    assert "\033[" not in inspect("info", sample).stdout  # stdout is a pipe: auto means off
    assert "\033[32mfinished\033[0m" in inspect("--color=always", "info", sample).stdout


@pytest.mark.parametrize(
    "args", [[], ["frobnicate", "x"], ["info"], ["ls", "--bogus", "x"], ["--color=pink", "info", "x"]]
)
def test_bad_usage_exits_2(inspect, args: list[str]) -> None:
    result = inspect(*args)
    assert result.returncode == 2
    assert result.stderr  # says what is wrong


def test_help_exits_0(inspect) -> None:
    result = inspect("--help")
    assert result.returncode == 0 and "verify" in result.stdout


def test_show_names_a_missing_compile(data_dir: Path, inspect) -> None:
    result = inspect("show", str(data_dir / "v1.0/sample.dynrep"), "0/0")
    assert result.returncode == 1
    assert "no compile 0/0 (replay-inspect ls lists them)" in result.stderr


def test_ls_records_and_blobs_are_exclusive(data_dir: Path, inspect) -> None:
    sample = str(data_dir / "v1.0/sample.dynrep")
    assert inspect("ls", "--records", sample).stdout == inspect("ls", sample).stdout  # no compiles: records
    assert inspect("ls", "--records", "--blobs", sample).returncode == 2
