"""A store of sample artifacts, the kinds a torch.compile job produces (generated C++,
Python source, pickled objects, float32 tensors, a shared library), written without PyTorch.
tests/data/make_data.py keeps one per format version; the store tests use it. Test data, not
part of the package."""

from __future__ import annotations

import array
import math
import os
import pickle
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

from dynamo_replay._core import Artifact, Manifest, Store, __version__

_KERNEL = """\
#include <cstdint>
extern "C" void kernel_{n}(const float* in_ptr0, float* out_ptr0, int64_t ks0) {{
    for (int64_t x0 = 0; x0 < ks0; x0 += 16) {{
        // relu(x) * {n} + 1
        for (int64_t i = 0; i < 16; ++i) out_ptr0[x0 + i] = (in_ptr0[x0 + i] > 0 ? in_ptr0[x0 + i] : 0) * {n} + 1;
    }}
}}
"""


def _tensor_bytes(n: int) -> bytes:
    # Smooth values, like trained weights seen as float32: compressible, but not trivially.
    return array.array("f", (math.sin(i * 0.01) * 0.5 for i in range(n))).tobytes()


def write_sample_store(
    path: str | os.PathLike[str], *, overwrite: bool = False, chunk_size: int | None = None, created_at: str = ""
) -> list[Artifact]:
    """Writes a finished store at `path` and returns the artifacts it holds."""
    options = {"chunk_size": chunk_size} if chunk_size else {}
    items: list[tuple[str, str, bytes]] = [
        ("inductor/kernel_0.cpp", "text/x-c++src", _KERNEL.format(n=0).encode()),
        ("inductor/kernel_1.cpp", "text/x-c++src", _KERNEL.format(n=1).encode()),
        ("dynamo/transformed_forward.py", "text/x-python", Path(__file__).read_bytes()),
        ("aot/forward_meta.pkl", "application/x-python-pickle",
         pickle.dumps({"graph": "forward", "inputs": [[4, 16], [16]], "dtypes": ["float32"] * 2}, protocol=4)),
        ("params/weight.f32", "application/x-float32", _tensor_bytes(16_384)),
    ]
    artifacts = []
    with Store.create(path, overwrite=overwrite, **options) as store:
        store.put(Manifest(
            tool=f"dynamo-replay {__version__}",
            created_at=created_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            command_line=["python", "examples/demo.py"],
            environment={"python": platform.python_version(), "machine": platform.machine(),
                         "cache_tag": sys.implementation.cache_tag},
        ))
        for name, media_type, data in items:
            key = store.put_blob(data)
            artifact = Artifact(name=name, media_type=media_type, blob_key=key, size=len(data))
            store.put(artifact)
            artifacts.append(artifact)
    return artifacts
