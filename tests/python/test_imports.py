"""What each way into the package imports, in a fresh process: the package and its store API
import no torch, and `import torch` with the package installed and DYNAMO_REPLAY unset imports
only the few modules its backend entry point needs to decide that there is nothing to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The package's modules any entry below may import without torch: the store API, the errors, the
# fleet URL parser, and the two block packages (their blocks load with torch when first used).
LIGHT = {
    "dynamo_replay",
    "dynamo_replay._core",
    "dynamo_replay.errors",
    "dynamo_replay.fleet",
    "dynamo_replay.fleet.url",
    "dynamo_replay.capture",
    "dynamo_replay.replay",
    "dynamo_replay.replay.summary",
}

# One line per way in: (the code run in a fresh process, whether torch may be imported, the
# package's modules allowed beyond LIGHT).
ENTRIES = {
    "import dynamo_replay": ("import dynamo_replay", False, set()),
    "the store API": (
        "import dynamo_replay as dr\n"
        "with dr.Store.create(STORE) as s:\n"
        "    s.put(dr.Artifact(name='a', media_type='text/plain', blob_key=s.put_blob(b'x' * 100), size=100))\n"
        "with dr.Store.open(STORE) as s:\n"
        "    (a,) = s.records(dr.Artifact)\n"
        "    assert s.get_blob(a.blob_key) == b'x' * 100 and s.info().state == 'finished'\n",
        False,
        set(),
    ),
    "import torch, DYNAMO_REPLAY unset": ("import torch", True, {"dynamo_replay._autoload"}),
}


@pytest.mark.parametrize("entry", ENTRIES)
def test_each_way_in_imports_only_what_it_needs(entry: str, tmp_path: Path) -> None:
    code, torch_allowed, extra = ENTRIES[entry]
    probe = (
        f"STORE = {str(tmp_path / 'job.dynrep')!r}\n{code}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'torch' or m.startswith('dynamo_replay'))))\n"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DYNAMO_REPLAY")}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    imported = set(json.loads(result.stdout.splitlines()[-1]))
    assert ("torch" in imported) == torch_allowed
    assert imported - {"torch"} <= LIGHT | extra, sorted(imported - {"torch"} - LIGHT - extra)
