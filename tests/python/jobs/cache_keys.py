"""A small Inductor job (a forward and a backward graph) that prints, as one JSON object, the
cache keys PyTorch logged for its compiles and a hash of the code Inductor generated.

    python cache_keys.py plain                            # read from PyTorch's structured trace
    python cache_keys.py capture STORE [--no-precompile]  # read back from the store capture wrote

Run it with a fresh TORCHINDUCTOR_CACHE_DIR: a warm cache changes which events PyTorch logs.
PyTorch logs each cache lookup as an "artifact" event named fx_graph_cache_{miss,hit,bypass}
(torch/_inductor/compile_fx.py) or aotautograd_cache_{miss,hit,bypass}, whose JSON payload
holds the "key", and each generated module as an inductor_output_code event.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from typing import Any

import torch

FX_EVENTS = ("fx_graph_cache_miss", "fx_graph_cache_hit", "fx_graph_cache_bypass")
AOT_EVENTS = ("aotautograd_cache_miss", "aotautograd_cache_hit", "aotautograd_cache_bypass")


class Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(-1, 1, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.weight).sin().relu().sum()


def job() -> None:
    torch.manual_seed(0)
    loss = torch.compile(Scale(), backend="inductor")(torch.randn(4, 16))
    loss.backward()


class Found:
    def __init__(self) -> None:
        self.result: dict[str, list[Any]] = {"fx_graph": [], "aot_autograd": [], "output_code": []}

    def add(self, name: str, metadata: Any, payload: str | None) -> None:
        artifact = metadata.get("name") if name == "artifact" and isinstance(metadata, dict) else None
        if artifact in FX_EVENTS:
            self.result["fx_graph"].append([artifact, json.loads(payload)["key"]])
        elif artifact in AOT_EVENTS:
            self.result["aot_autograd"].append([artifact, json.loads(payload).get("key")])
        elif name == "inductor_output_code" and payload:
            self.result["output_code"].append(hashlib.sha256(payload.encode()).hexdigest())


class _Handler(logging.Handler):
    def __init__(self, found: Found) -> None:
        super().__init__(logging.DEBUG)
        self.found = found

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None) or {}
        for name in ("artifact", "inductor_output_code"):
            if name in metadata:
                self.found.add(name, metadata[name], getattr(record, "payload", None))


def plain() -> Found:
    found = Found()
    logger = logging.getLogger("torch.__trace")
    handler = _Handler(found)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        job()
    finally:
        logger.removeHandler(handler)
    return found


def captured(store: str, precompile: bool) -> Found:
    import dynamo_replay as dr

    with dr.capture(store, precompile=precompile):
        job()
    found = Found()
    with dr.Store.open(store) as s:
        for event in s.records(dr.TraceEvent):
            if event.name in ("artifact", "inductor_output_code"):
                payload = s.get_blob(event.payload_key).decode() if event.payload_key else None
                found.add(event.name, json.loads(event.metadata_json), payload)
    return found


if __name__ == "__main__":
    if sys.argv[1] == "plain":
        found = plain()
    else:
        found = captured(sys.argv[2], precompile="--no-precompile" not in sys.argv)
    print(json.dumps(found.result))
