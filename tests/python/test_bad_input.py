"""Stores from every format version load forever; malformed ones give their own clear error,
from Python and from replay-inspect, never a crash or a hang."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import dynamo_replay as dr
from dynamo_replay.errors import NotAStoreError

SAMPLE_ARTIFACTS = [
    ("inductor/kernel_0.cpp", "text/x-c++src", 293),
    ("inductor/kernel_1.cpp", "text/x-c++src", 293),
    ("dynamo/transformed_forward.py", "text/x-python"),
    ("aot/forward_meta.pkl", "application/x-python-pickle"),
    ("params/weight.f32", "application/x-float32", 65536),
]


def test_v1_0_sample_loads_with_its_exact_contents(data_dir: Path) -> None:
    with dr.Store.open(data_dir / "v1.0" / "sample.dynrep") as store:
        info = store.info()
        assert (info.format_version, info.state) == ((1, 0), "finished")
        (manifest,) = store.records(dr.Manifest)
        assert manifest.tool == "dynamo-replay 0.1.0"
        assert manifest.created_at == "2026-11-21T12:00:00Z"
        artifacts = store.records(dr.Artifact)
        assert [(a.name, a.media_type) for a in artifacts] == [x[:2] for x in SAMPLE_ARTIFACTS]
        for artifact in artifacts:
            assert len(store.get_blob(artifact.blob_key)) == artifact.size
        kernel = store.get_blob(artifacts[0].blob_key)
        assert kernel.startswith(b'#include <cstdint>\nextern "C" void kernel_0(const float* in_ptr0')
        weights = struct.unpack("<4f", store.get_blob(artifacts[4].blob_key)[:16])
        assert weights == pytest.approx([0.0, 0.005, 0.01, 0.015], abs=1e-4)
        assert store.verify() == []


def test_newer_minor_version_loads_and_keeps_unknown_kinds(data_dir: Path) -> None:
    with dr.Store.open(data_dir / "compat" / "newer-minor.dynrep") as store:
        assert store.info().format_version == (1, 9)
        (record,) = store.records()
        assert (record.kind, record.payload) == (4000, b"a record from the future")
        assert store.get_blob(store.blob_keys()[0]) == b"blob next to it"


# name -> (exception class raised by Store.open, message fragment); None: opens, see below.
OPEN_ERRORS = {
    "empty": (dr.CorruptStoreError, "empty file (not a dynamo-replay store)"),
    "truncated-header": (dr.CorruptStoreError, "file is 40 bytes, shorter than a store header (truncated?)"),
    "flipped-header": (dr.CorruptStoreError, "file header: checksum mismatch"),
    "wrong-magic": (dr.CorruptStoreError, "not a dynamo-replay store (bad magic number)"),
    "newer-major": (dr.UnsupportedVersionError, "format version 2.0 is not supported (this reader reads 1.x)"),
}


@pytest.mark.parametrize("name", sorted(OPEN_ERRORS))
def test_unreadable_store_is_refused_with_its_reason(data_dir: Path, inspect, name: str) -> None:
    path = data_dir / "malformed" / f"{name}.dynrep"
    cls, message = OPEN_ERRORS[name]
    with pytest.raises(cls) as excinfo:
        dr.Store.open(path)
    assert str(excinfo.value) == f"{path}: {message}"
    for command in ("info", "ls", "verify"):
        result = inspect(command, str(path))
        assert result.returncode == 1, (command, result.stderr)
        assert message in result.stderr


@pytest.mark.parametrize(
    "name, records_left, why",
    [
        ("truncated-mid-record", 3, "truncated"),
        ("truncated-mid-blob", 5, "truncated"),
        ("truncated-trailer", 6, "trailing bytes ignored"),
    ],
)
def test_truncated_store_opens_as_recovered_prefix(
    data_dir: Path, inspect, name: str, records_left: int, why: str
) -> None:
    path = data_dir / "malformed" / f"{name}.dynrep"
    with dr.Store.open(path) as store:
        info = store.info()
        assert info.state == "recovered"
        assert why in info.recovery_note
        records = store.records()
        assert len(records) == records_left
        for artifact in store.records(dr.Artifact):
            if artifact.blob_key in store:
                assert len(store.get_blob(artifact.blob_key)) == artifact.size
            else:
                with pytest.raises(dr.MissingKeyError):
                    store.get_blob(artifact.blob_key)
    result = inspect("info", str(path))
    assert result.returncode == 0
    assert "recovered" in result.stdout and "warning:" in result.stderr
    assert inspect("verify", str(path)).returncode == 1


def test_flipped_record_is_named_by_offset(data_dir: Path, inspect) -> None:
    path = data_dir / "malformed" / "flipped-record.dynrep"
    store = dr.Store.open(path)
    with pytest.raises(dr.CorruptStoreError, match=r"record at offset \d+: checksum mismatch"):
        store.records()
    assert len(store.verify()) == 1
    result = inspect("verify", str(path))
    assert result.returncode == 1
    assert "checksum mismatch" in result.stderr


def test_flipped_blob_fails_that_blob_only(data_dir: Path) -> None:
    store = dr.Store.open(data_dir / "malformed" / "flipped-blob.dynrep")
    artifacts = {a.name: a for a in store.records(dr.Artifact)}
    with pytest.raises(dr.CorruptStoreError, match="checksum mismatch"):
        store.get_blob(artifacts["params/weight.f32"].blob_key)
    assert store.get_blob(artifacts["inductor/kernel_0.cpp"].blob_key).startswith(b"#include")


def test_directory_and_missing_file(tmp_path: Path, inspect) -> None:
    with pytest.raises(NotAStoreError, match="is a directory, not a store file"):
        dr.Store.open(tmp_path)
    with pytest.raises(dr.StoreNotFoundError, match="no such file"):
        dr.Store.open(tmp_path / "absent.dynrep")
    assert isinstance(dr.StoreNotFoundError("x"), FileNotFoundError)
    result = inspect("info", str(tmp_path))
    assert result.returncode == 1 and "is a directory" in result.stderr
