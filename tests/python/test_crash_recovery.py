"""A writer killed with SIGKILL at a random moment leaves a store that every tool opens,
calls recovered, and reads up to its last complete record."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import dynamo_replay as dr

WRITER = """
import sys, dynamo_replay as dr
store = dr.Store.create(sys.argv[1], chunk_size=2048)
print("ready", flush=True)
i = 0
while True:
    key = store.put_blob(bytes([i % 251]) * (100 + 37 * (i % 200)) + str(i).encode())
    store.put(dr.Artifact(name=f"artifact-{i}", media_type="application/octet-stream", blob_key=key,
                          size=100 + 37 * (i % 200) + len(str(i))))
    if i % 10 == 0:
        store.flush()
    i += 1
"""


def test_killed_writer_leaves_recoverable_store(tmp_path: Path, inspect) -> None:
    rng = random.Random(1234)
    for trial in range(8):
        path = tmp_path / f"killed-{trial}.dynrep"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL

        with dr.Store.open(path) as store:
            info = store.info()
            assert info.state == "recovered", info.recovery_note
            artifacts = store.records(dr.Artifact)
            assert [a.name for a in artifacts] == [f"artifact-{i}" for i in range(len(artifacts))]
            for artifact in artifacts:  # a record is written after its blob, so its blob is whole
                assert len(store.get_blob(artifact.blob_key)) == artifact.size
        result = inspect("info", str(path))
        assert result.returncode == 0
        assert "recovered" in result.stdout
        assert "recovered store" in result.stderr
