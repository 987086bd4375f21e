"""The store's Python API: what a user puts in comes back out, once, whatever the source."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dynamo_replay as dr
from dynamo_replay.errors import StoreUsageError


def test_blobs_from_every_kind_of_source_round_trip(store_path: Path, tmp_path: Path) -> None:
    src = tmp_path / "lib.so"
    src.write_bytes(os.urandom(50_000) + b"\0" * 50_000)
    with dr.Store.create(store_path) as store:
        keys = {
            "bytes": store.put_blob(b"plain bytes"),
            "bytearray": store.put_blob(bytearray(b"a bytearray")),
            "memoryview": store.put_blob(memoryview(b"xx a memoryview yy")[3:-3]),
            "path": store.put_blob(src),
            "str path": store.put_blob(str(src)),
            "BytesIO": store.put_blob(io.BytesIO(b"in memory file")),
        }
        with open(src, "rb") as f:
            f.seek(10)
            keys["file from offset"] = store.put_blob(f)
    with dr.Store.open(store_path) as store:
        assert store.get_blob(keys["bytes"]) == b"plain bytes"
        assert store.get_blob(keys["bytearray"]) == b"a bytearray"
        assert store.get_blob(keys["memoryview"]) == b"a memoryview"
        assert store.get_blob(keys["path"]) == src.read_bytes()
        assert keys["str path"] == keys["path"]
        assert store.get_blob(keys["BytesIO"]) == b"in memory file"
        assert store.get_blob(keys["file from offset"]) == src.read_bytes()[10:]
        assert store.info().blob_count == 6  # the two path puts are one blob


def test_same_bytes_are_stored_once_under_one_key(store_path: Path) -> None:
    data = b"kernel code " * 10_000
    with dr.Store.create(store_path) as store:
        first, second = store.put_blob(data), store.put_blob(bytes(data))
    assert first == second
    info = dr.Store.open(store_path).info()
    assert info.blob_count == 1
    assert info.raw_bytes == len(data)
    assert info.stored_bytes < len(data) / 50  # repetitive text compresses well


def test_large_blob_streams_in_chunks(store_path: Path) -> None:
    data = os.urandom(1 << 20) * 3
    with dr.Store.create(store_path, chunk_size=256 * 1024) as store:
        key = store.put_blob(data)
    with dr.Store.open(store_path) as store:
        reader = store.get_blob(key, stream=True)
        assert reader.size == len(data)
        buf, parts = bytearray(100_000), []
        while n := reader.readinto(buf):
            parts.append(bytes(buf[:n]))
        assert b"".join(parts) == data
        assert store.get_blob(key, stream=True).read() == data


def test_typed_records_come_back_by_kind_in_put_order(store_path: Path) -> None:
    manifest = dr.Manifest(
        tool="dynamo-replay test",
        created_at="2026-11-21T00:00:00Z",
        command_line=["python", "train.py", "--steps", "3"],
        environment={"torch": "2.13.0"},
    )
    with dr.Store.create(store_path) as store:
        store.put(manifest)
        for i in range(3):
            key = store.put_blob(f"kernel {i}".encode())
            store.put(
                dr.Artifact(
                    name=f"k{i}.cpp", media_type="text/x-c++src", blob_key=key, size=8, attributes={"graph": str(i)}
                )
            )
        store.put(dr.UnknownRecord(kind=4000, payload=b"from a newer version"))
    with dr.Store.open(store_path) as store:
        assert store.records(dr.Manifest) == [manifest]
        artifacts = store.records(dr.Artifact)
        assert [a.name for a in artifacts] == ["k0.cpp", "k1.cpp", "k2.cpp"]
        assert store.get_blob(artifacts[2].blob_key) == b"kernel 2"
        unknown = store.records(4000)
        assert len(unknown) == 1 and unknown[0].payload == b"from a newer version"
        assert len(store.records()) == 5
        assert store.info().records == {"manifest": 1, "artifact": 3, "kind 4000": 1}


def test_exception_inside_with_still_leaves_a_finished_store(store_path: Path) -> None:
    with pytest.raises(RuntimeError, match="job failed"), dr.Store.create(store_path) as store:
        key = store.put_blob(b"written before the error")
        raise RuntimeError("job failed")
    with dr.Store.open(store_path) as store:
        assert store.info().state == "finished"
        assert store.get_blob(key) == b"written before the error"


def test_flushed_records_survive_a_process_killed_on_the_spot(store_path: Path) -> None:
    """What capture relies on to keep a failure the job then dies of (os._exit: no unwinding, no
    close): everything put before flush() is in the file. 64 MiB of random bytes queued first keep
    the writer's thread busy long after put returns, so without the flush the record is lost."""
    code = f"""
import os, dynamo_replay as dr
store = dr.Store.create({str(store_path)!r})
store.put_blob(os.urandom(64 << 20))
store.put(dr.UnknownRecord(kind=4000, payload=b"the failure"))
store.flush()
os._exit(3)
"""
    assert subprocess.run([sys.executable, "-c", code]).returncode == 3
    with dr.Store.open(store_path) as store:
        assert store.info().state == "recovered"
        assert [r.payload for r in store.records(4000)] == [b"the failure"]


def test_store_being_written_reads_as_in_progress(store_path: Path) -> None:
    with dr.Store.create(store_path) as store:
        key = store.put_blob(b"early")
        assert store.get_blob(key) == b"early"  # a writer can read back what it put
        reader = dr.Store.open(store_path)
        assert reader.info().state == "in progress"
        assert reader.get_blob(key) == b"early"
    assert dr.Store.open(store_path).info().state == "finished"


def test_existing_store_is_kept_unless_overwrite(store_path: Path) -> None:
    with dr.Store.create(store_path) as store:
        store.put_blob(b"precious")
    with pytest.raises(dr.StoreExistsError, match="store already exists"):
        dr.Store.create(store_path)
    assert dr.Store.open(store_path).info().blob_count == 1
    old_reader = dr.Store.open(store_path)
    with dr.Store.create(store_path, overwrite=True) as store:
        store.put_blob(b"new")
        store.put_blob(b"newer")
    assert dr.Store.open(store_path).info().blob_count == 2
    assert old_reader.info().blob_count == 1  # an open reader keeps the file it opened


def test_second_writer_in_another_process_is_refused(store_path: Path) -> None:
    with dr.Store.create(store_path):
        code = f"import dynamo_replay as dr; dr.Store.create({str(store_path)!r}, overwrite=True)"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert f"StoreLockedError: {store_path}: store is locked by another writer" in result.stderr


def test_misuse_gets_a_clear_error(store_path: Path) -> None:
    with dr.Store.create(store_path) as store:
        with pytest.raises(TypeError, match="put_blob"):
            store.put_blob(12345)
        with pytest.raises(TypeError, match="not int"):
            store.put(42)
        with pytest.raises(ValueError, match="not a blob key"):
            store.get_blob("xyz")
    with pytest.raises(ValueError, match="compression level 99"):
        dr.Store.create(store_path.with_name("other.dynrep"), level=99)
    reader = dr.Store.open(store_path)
    with pytest.raises(StoreUsageError, match="opened for reading"):
        reader.put_blob(b"x")
    with pytest.raises(dr.MissingKeyError, match="no blob 0{32}"):
        reader.get_blob("0" * 32)
    reader.close()
    with pytest.raises(ValueError, match="store is closed"):
        reader.info()


def test_info_reports_versions_and_sizes(store_path: Path) -> None:
    with dr.Store.create(store_path, level=19) as store:
        store.put_blob(b"abc" * 1000)
    info = dr.Store.open(store_path).info()
    assert info.format_version == (1, 0)
    assert info.writer == f"dynamo-replay {dr.__version__}"
    assert info.file_bytes == store_path.stat().st_size
    assert info.ratio == pytest.approx(info.raw_bytes / info.stored_bytes)
    assert dr.Store.open(store_path).verify() == []
