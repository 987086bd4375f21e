"""Replay refuses what it cannot trust, before loading anything, and the job goes on.

Non-strict replay turns every refusal into a ReplayWarning naming the problem; strict replay
raises ReplayRefusedError with the same message. These run in-process: nothing here gets as
far as loading PyTorch artifacts.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import dynamo_replay as dr
from dynamo_replay import signing
from dynamo_replay.replay_data import ReplayData
from dynamo_replay.schema import (
    KERNEL_MEDIA_TYPE,
    MEGA_CACHE_MEDIA_TYPE,
    MEGA_CACHE_NAME,
    REPLAY_DATA_MEDIA_TYPE,
    REPLAY_DATA_NAME,
    SIGNATURE_MEDIA_TYPE,
    SIGNATURE_NAME,
)


def refusal(path: Path, **options) -> str:
    """The warning non-strict replay gives; also checks strict raises the same message."""
    with pytest.raises(dr.ReplayRefusedError) as strict, dr.replay(path, strict=True, **options):
        pytest.fail("strict replay entered a refused store")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with dr.replay(path, **options) as session:
            assert not session.summary.loaded
    messages = [str(w.message) for w in caught if issubclass(w.category, dr.ReplayWarning)]
    assert len(messages) == 1 and messages[0].startswith(str(strict.value))
    assert messages[0].endswith("the job compiles as usual")
    return str(strict.value)


def write_store(
    path: Path, artifacts: dict[str, tuple[str, bytes]], *, key: bytes | None = None, tamper: bytes | None = None
) -> Path:
    """A store shaped like a capture's; with `tamper`, the mega cache is replaced after signing."""
    with dr.Store.create(path) as store:
        store.put(dr.Manifest(tool="test", environment={"torch.version": "0.0-test"}))
        signed = dict(artifacts)
        if tamper is not None:
            artifacts = {**artifacts, MEGA_CACHE_NAME: (MEGA_CACHE_MEDIA_TYPE, tamper)}
        for name, (media_type, data) in artifacts.items():
            store.put(dr.Artifact(name=name, media_type=media_type, blob_key=store.put_blob(data), size=len(data)))
        if key is not None:
            signature = signing.sign(key, signed).encode()
            store.put(
                dr.Artifact(
                    name=SIGNATURE_NAME,
                    media_type=SIGNATURE_MEDIA_TYPE,
                    blob_key=store.put_blob(signature),
                    size=len(signature),
                )
            )
    return path


# What every capture writes: PyTorch's cache bytes and the replay data (replay_data.py).
MEGA = {
    MEGA_CACHE_NAME: (MEGA_CACHE_MEDIA_TYPE, b"not really a mega cache"),
    REPLAY_DATA_NAME: (REPLAY_DATA_MEDIA_TYPE, ReplayData(environment={"torch.version": "0.0-test"}).to_json()),
}


def test_missing_file(tmp_path: Path) -> None:
    message = refusal(tmp_path / "absent.dynrep")
    assert message.endswith("absent.dynrep: no such file")


@pytest.mark.parametrize(
    "name", sorted(p.name for p in (Path(__file__).parent.parent / "data" / "malformed").iterdir())
)
def test_malformed_store(data_dir: Path, name: str) -> None:
    message = refusal(data_dir / "malformed" / name)
    assert "not loaded" in message and name in message


def test_a_store_that_is_not_a_capture(data_dir: Path) -> None:
    assert "holds no PyTorch cache artifacts" in refusal(data_dir / "v1.0" / "sample.dynrep")


@pytest.mark.parametrize(
    "data, why",
    [
        (None, "holds no replay data (dynamo_replay/replay.json): it was captured by an older dynamo-replay"),
        (b"{not json", "the store's replay data cannot be read (JSONDecodeError"),
        (b'{"version": 99}', "replay data version 99, this dynamo-replay reads 1"),
        (b'{"version": 1}', "the store's replay data cannot be read (KeyError: 'environment')"),
    ],
    ids=["missing", "not-json", "future-version", "truncated"],
)
def test_replay_data_missing_or_unreadable(tmp_path: Path, data: bytes | None, why: str) -> None:
    artifacts = dict(MEGA)
    if data is None:
        del artifacts[REPLAY_DATA_NAME]
    else:
        artifacts[REPLAY_DATA_NAME] = (REPLAY_DATA_MEDIA_TYPE, data)
    assert why in refusal(write_store(tmp_path / "old.dynrep", artifacts))


def test_unfinished_store(tmp_path: Path) -> None:
    path = tmp_path / "crashed.dynrep"
    write_store(path, MEGA)
    data = path.read_bytes()
    path.write_bytes(data[:-40])  # the trailer and part of the index: a writer that died at close
    assert "was not finished by its writer (recovered)" in refusal(path)


def test_kernel_library_names_cannot_leave_the_cache(tmp_path: Path) -> None:
    path = write_store(tmp_path / "evil.dynrep", {**MEGA, "inductor/../../evil.so": (KERNEL_MEDIA_TYPE, b"\x7fELF")})
    assert "'inductor/../../evil.so' is not <dir>/<file>.so under the Inductor cache" in refusal(path)


def test_key_set_but_store_unsigned(tmp_path: Path) -> None:
    path = write_store(tmp_path / "unsigned.dynrep", MEGA)
    assert "a signing key is set but the store is not signed" in refusal(path, key="k")


def test_tampered_artifact_fails_the_signature(tmp_path: Path) -> None:
    path = write_store(tmp_path / "tampered.dynrep", MEGA, key=b"k", tamper=b"payload swapped after signing")
    assert "signature does not verify" in refusal(path, key="k")


def test_good_signature_passes_and_the_environment_check_follows(tmp_path: Path, monkeypatch) -> None:
    """A correctly signed store gets past the signature to the next check, which refuses this
    synthetic one for its environment, naming each difference."""
    import torch._dynamo.config

    monkeypatch.setattr(torch._dynamo.config, "caching_precompile", False)
    path = write_store(tmp_path / "signed.dynrep", MEGA, key=b"k")
    message = refusal(path, key="k")
    assert torch._dynamo.config.caching_precompile is False  # refused: no setting left changed
    assert "does not verify" not in message and "not signed" not in message
    assert "this process differs from the one captured" in message
    assert f"torch.version: captured 0.0-test, now {torch.__version__}" in message
    assert "python.version: captured (absent), now 3.11" in message
