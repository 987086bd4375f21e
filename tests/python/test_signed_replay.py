"""With a key, everything replay reads to decide anything is covered by the signature.

Replay reads a store's artifacts and nothing else: PyTorch's cache bytes, the kernel libraries,
the compiler's identity and the replay data (environment, sources, frames not saved, dropped
guards, guard trees, the CPU probe). Each row below rewrites a signed capture through the public
Store API, without the key, the way an attacker with write access would, and replay must refuse
it before anything is unpickled; altering the records replay-inspect reads changes nothing
replay decides. Without a key a store is trusted as it is (the README's trust section).
About 20 s on a 2-core machine."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import dynamo_replay as dr  # noqa: E402
from dynamo_replay import kernels, schema  # noqa: E402
from dynamo_replay.replay import checks  # noqa: E402
from job_environment import job_environment  # noqa: E402
from shared_captures import copy_of, shared  # noqa: E402

KEY = "signed-replay-test-key"
JOB = Path(__file__).parent / "jobs" / "swapped_job.py"


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return job_environment(cache, **extra)


@pytest.fixture(scope="module")
def signed(tmp_path_factory) -> Path:
    """The signed capture (once a build: shared_captures), copied: tests rewrite its records."""
    made = shared("signed", _capture_signed, inputs=[__file__])
    return copy_of(made, tmp_path_factory.mktemp("signed")) / "signed.dynrep"


def _capture_signed(root: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dynamo_replay",
            "capture",
            "-o",
            str(root / "signed.dynrep"),
            str(JOB),
            str(root / "out.pt"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(root / "cache", DYNAMO_REPLAY_KEY=KEY),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    shutil.rmtree(root / "cache", ignore_errors=True)


# (record kind, record, the store read, the store written) -> the record to write, or None to drop it
Edit = Callable[[str, object, dr.Store, dr.Store], object | None]


def rewrite(source: Path, target: Path, edit: Edit) -> Path:
    """Copies every record through the public Store API, as edit() says."""
    with dr.Store.open(source) as old, dr.Store.create(target) as new:
        for kind in (dr.Manifest, dr.CodeObject, dr.TraceEvent, dr.Artifact):
            for record in old.records(kind):
                for field in ("blob_key", "payload_key", "bytecode_key", "disassembly_key"):
                    key = getattr(record, field, "")
                    if key:
                        new.put_blob(old.get_blob(key))
                record = edit(kind.__name__, record, old, new)
                if record is not None:
                    new.put(record)
    return target


def artifact_edit(name: str, change: Callable[[bytes], bytes | None]) -> Edit:
    """Replaces (or, when change gives None, removes) the bytes of the artifacts named name*."""

    def edit(kind: str, record, old: dr.Store, new: dr.Store):
        if kind != "Artifact" or not record.name.startswith(name):
            return record
        data = change(old.get_blob(record.blob_key))
        if data is None:
            return None
        return dr.Artifact(
            name=record.name,
            media_type=record.media_type,
            blob_key=new.put_blob(data),
            size=len(data),
            attributes=dict(record.attributes),
        )

    return edit


def records_edit(drop: Callable[[str, object], bool]) -> Edit:
    return lambda kind, record, old, new: None if drop(kind, record) else record


def _without_dropped_guards(data: bytes) -> bytes:
    replay_data = json.loads(data)
    replay_data["dropped_guards"] = []
    return json.dumps(replay_data).encode()


def _other_environment(data: bytes) -> bytes:
    replay_data = json.loads(data)
    replay_data["environment"]["torch.version"] = "9.9"
    return json.dumps(replay_data).encode()


ARTIFACT_CHANGES = {
    "replay data: dropped guards removed": (schema.REPLAY_DATA_NAME, _without_dropped_guards),
    "replay data: environment rewritten": (schema.REPLAY_DATA_NAME, _other_environment),
    "replay data: removed": (schema.REPLAY_DATA_NAME, lambda data: None),
    "pytorch cache bytes: one byte flipped": (schema.MEGA_CACHE_NAME, lambda data: data[:-1] + bytes([data[-1] ^ 1])),
    "kernel library: replaced": (schema.KERNEL_PREFIX, lambda data: b"\x7fELF not the captured library"),
    "compiler identity: rewritten": (schema.TOOLCHAIN_NAME, lambda data: b'{"name": "evil", "version": "1"}'),
    "signature: removed": (schema.SIGNATURE_NAME, lambda data: None),
}


@pytest.fixture
def nothing_unpickled(monkeypatch):
    """Fails the test if replay unpickles or loads anything from the store."""

    def refuse(*args, **kwargs):
        raise AssertionError("replay loaded data from a store it should have refused")

    from dynamo_replay import _torch
    from dynamo_replay._torch import install as _torch_install

    _torch.import_compiler()  # what torch.compile imports anyway
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(_torch_install, "SafeDynamoCache", refuse)
    monkeypatch.setattr(torch.compiler, "load_cache_artifacts", refuse)
    monkeypatch.setattr(kernels, "restore_kernel_libraries", refuse)


@pytest.mark.parametrize("change", ARTIFACT_CHANGES)
def test_every_artifact_replay_reads_is_signed(signed: Path, tmp_path: Path, change: str, nothing_unpickled) -> None:
    name, change_bytes = ARTIFACT_CHANGES[change]
    altered = rewrite(signed, tmp_path / "altered.dynrep", artifact_edit(name, change_bytes))
    with pytest.raises(dr.ReplayRefusedError) as refused, dr.replay(altered, key=KEY, strict=True):
        pytest.fail("a rewritten store was used")
    expected = "not signed" if name == schema.SIGNATURE_NAME else "signature does not verify"
    assert expected in str(refused.value)


def _decisions(store: Path, key: str | None) -> str:
    """Everything replay decides by, as it reads it from the store."""
    contents = checks.read_store(str(store))
    checks.check_signature(contents.artifacts, key)
    return checks.read_replay_data(contents.artifacts).to_json().decode()


def _event(name: str) -> Callable[[str, object], bool]:
    return lambda kind, record: kind == "TraceEvent" and record.name == name


def _manifest_rewritten(kind: str, record, old: dr.Store, new: dr.Store):
    return dr.Manifest(tool=record.tool, environment={"torch.version": "9.9"}) if kind == "Manifest" else record


RECORD_CHANGES: dict[str, Edit] = {
    "dropped-guard events removed": records_edit(_event(schema.EVENT_DROPPED_GUARD)),
    "not-saved events removed": records_edit(_event(schema.EVENT_NOT_PACKAGED)),
    "summary event removed": records_edit(_event(schema.EVENT_SUMMARY)),
    "compile metrics removed": records_edit(_event("compilation_metrics")),
    "code objects removed": records_edit(lambda kind, record: kind == "CodeObject"),
    "manifest environment rewritten": _manifest_rewritten,
}


@pytest.mark.parametrize("change", RECORD_CHANGES)
def test_records_outside_the_signature_decide_nothing(signed: Path, tmp_path: Path, change: str) -> None:
    altered = rewrite(signed, tmp_path / "altered.dynrep", RECORD_CHANGES[change])
    assert _decisions(altered, KEY) == _decisions(signed, KEY)


def test_without_a_key_the_store_is_taken_as_it_is(signed: Path, tmp_path: Path) -> None:
    """No key: the signature is not checked, and replay decides by the (altered) replay data."""
    altered = rewrite(signed, tmp_path / "altered.dynrep", artifact_edit(schema.REPLAY_DATA_NAME, _other_environment))
    assert json.loads(_decisions(altered, None))["environment"]["torch.version"] == "9.9"
    with pytest.raises(dr.ReplayRefusedError) as refused, dr.replay(altered, strict=True):
        pytest.fail("replay used a store captured by another torch")
    assert "torch.version: captured 9.9" in str(refused.value)


def test_the_attack_of_the_issue_is_refused_and_the_answer_stays_right(signed: Path, tmp_path: Path) -> None:
    """A copy rewritten without the key, its dropped-guard records removed, replayed with the key
    in a process whose global function was swapped: the frame compiles, the answer is right."""
    drop = RECORD_CHANGES["dropped-guard events removed"]
    altered = rewrite(signed, tmp_path / "altered.dynrep", drop)
    out = tmp_path / "out.pt"
    result = subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "replay", str(altered), str(JOB), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(tmp_path / "cache", DYNAMO_REPLAY_KEY=KEY, SWAP="global_function"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    compiled, eager = torch.load(out)
    assert torch.equal(compiled, eager)
    assert "global ACT was function __main__.relu_fn" in result.stderr
