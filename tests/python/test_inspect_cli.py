"""replay-inspect's output against golden files, its JSON, and its exit codes.
Regenerate the golden files with DYNREP_UPDATE_GOLDEN=1 after a deliberate change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

GOLDEN_CASES = {
    "info": ["info", "v1.0/sample.dynrep"],
    "ls": ["ls", "v1.0/sample.dynrep"],
    "ls-blobs": ["ls", "--blobs", "v1.0/sample.dynrep"],
    "verify": ["verify", "v1.0/sample.dynrep"],
    "verify-flipped-record": ["verify", "malformed/flipped-record.dynrep"],
    "info-json": ["info", "--json", "v1.0/sample.dynrep"],
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_output_matches_golden(data_dir: Path, inspect, case: str) -> None:
    result = inspect("--color=never", *GOLDEN_CASES[case], cwd=data_dir)
    golden = data_dir / "golden" / f"{case}.stdout.exact"
    if os.environ.get("DYNREP_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


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


@pytest.mark.parametrize("args", [[], ["frobnicate", "x"], ["info"], ["ls", "--bogus", "x"], ["--color=pink", "info", "x"]])
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
