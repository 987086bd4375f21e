"""Regenerates the malformed stores under tests/data/malformed/ from the committed sample.

The sample of each released format version (v1.0/sample.dynrep) is written once and kept
forever: pass --new-sample only when adding a new format version's folder. Likewise the capture
of each capture-schema version (capture-1.N/every-record.dynrep, from every_record_job.py: every
record kind and every event capture writes): --new-capture, only for a new schema version.
Run: .venv-2.15.0/bin/python tests/data/make_data.py
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from dynamo_replay import Store, UnknownRecord, _core
from sample_store import write_sample_store  # beside this file
from dynamo_replay.tools import inspect_executable

HERE = Path(__file__).resolve().parent
SAMPLE = HERE / "v1.0" / "sample.dynrep"
CAPTURE = HERE / "capture-1.5" / "every-record.dynrep"  # the newest; older ones are kept as they are


def ls_json(path: Path, *extra: str) -> dict:
    out = subprocess.run([inspect_executable(), "ls", "--json", *extra, str(path)], capture_output=True, text=True)
    return json.loads(out.stdout)


def flip(data: bytes, offset: int, bit: int = 0) -> bytes:
    b = bytearray(data)
    b[offset] ^= 1 << bit
    return bytes(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--new-sample", action="store_true", help="rewrite v1.0/sample.dynrep (never for a released version)")
    parser.add_argument("--new-capture", action="store_true",
                        help="write capture-1.5/every-record.dynrep (never for a released schema version)")
    args = parser.parse_args()
    if args.new_capture:
        CAPTURE.parent.mkdir(exist_ok=True)
        subprocess.run([sys.executable, str(HERE / "every_record_job.py"), str(CAPTURE)], check=True)
    if args.new_sample:
        SAMPLE.parent.mkdir(exist_ok=True)
        # A small chunk size gives the weight blob many chunks, so chunk sequencing is covered.
        write_sample_store(SAMPLE, overwrite=True, chunk_size=4096, created_at="2026-11-21T12:00:00Z")
    good = SAMPLE.read_bytes()
    records = ls_json(SAMPLE)["records"]
    blobs = sorted(ls_json(SAMPLE, "--blobs")["blobs"], key=lambda b: b["offset"])
    weight = max(blobs, key=lambda b: b["raw_bytes"])
    third = records[3]

    bad = HERE / "malformed"
    bad.mkdir(exist_ok=True)
    cases = {
        "empty.dynrep": b"",
        "truncated-header.dynrep": good[:40],
        "truncated-mid-record.dynrep": good[: third["offset"] + 16 + third["bytes"] // 2],
        "truncated-mid-blob.dynrep": good[: weight["offset"] + 5 * 4096 // 2],
        "truncated-trailer.dynrep": good[:-10],
        "flipped-header.dynrep": flip(good, 20),
        "flipped-record.dynrep": flip(good, records[1]["offset"] + 16 + 5, 3),
        "flipped-blob.dynrep": flip(good, weight["offset"] + 16 + 28 + 100, 6),
        "wrong-magic.dynrep": b"PK\x03\x04" + good[4:],
        "newer-major.dynrep": _core._encode_header(2, 0, "dynamo-replay 9.0.0", 1_790_000_000) + good[64:],
    }
    for name, data in cases.items():
        (bad / name).write_bytes(data)

    # A newer minor version with a record kind this reader does not know: must still load.
    compat = HERE / "compat"
    compat.mkdir(exist_ok=True)
    newer = compat / "newer-minor.dynrep"
    with Store.create(newer, overwrite=True) as store:
        store.put(UnknownRecord(kind=4000, payload=b"a record from the future"))
        store.put_blob(b"blob next to it")
    data = newer.read_bytes()
    newer.write_bytes(_core._encode_header(1, 9, "dynamo-replay 1.9.0", 1_790_000_000) + data[64:])
    print(f"wrote {len(cases)} malformed stores and {newer.name}")


if __name__ == "__main__":
    main()
