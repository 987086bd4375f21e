#!/usr/bin/env python3
"""Store benchmark: dynamo-replay's blob store against the zstd command-line tool.

Builds a deterministic corpus of realistic artifact bytes (shared libraries, Python
source, pickled objects, float32 tensors), writes it into a store one file per blob
and reads it back, and in the same run times `zstd -3 -T1` and `zstd -d -T1` on the
same bytes concatenated into one file. Every timing is repeated and the median kept;
the store and zstd runs are interleaved so background load hits both alike.

    python benchmarks/store_bench.py                 # 1 GiB corpus in a temp dir
    python benchmarks/store_bench.py --size-mb 64    # quick check
    python benchmarks/store_bench.py --out bench-out --json

Targets (from the issue): write >= 0.8x zstd -3, read >= 0.8x zstd -d, compression
ratio within 5% of zstd -3, `replay-inspect info` < 50 ms, writer peak RSS < 256 MiB.
A missed target is reported, not an error: the exit status is non-zero only when
something fails to run.

Units: MB = 10^6 bytes (throughput), MiB = 2^20 bytes (sizes, memory).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import pickle
import platform
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

MiB = 1 << 20
MB = 1_000_000
CORPUS_VERSION = 2
CATEGORIES = ("shared_lib", "python_source", "pickle", "tensor")
PREFIX = {"shared_lib": "L", "python_source": "P", "pickle": "K", "tensor": "T"}

TARGETS = {
    "write": 0.8,  # store write throughput / zstd -3 throughput
    "read": 0.8,  # store read throughput / zstd -d throughput
    "ratio": 0.05,  # store ratio may be at most 5% below zstd -3's
    "info_ms": 50.0,
    "writer_rss_mib": 256.0,
}


def log(msg: str) -> None:
    print(f"[store_bench] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- corpus


class CorpusBuilder:
    def __init__(self, root: Path, seed: int):
        self.root = root
        self.seed = seed
        self.files: list[dict] = []
        self.seen: set[bytes] = set()  # content digests: no duplicate for the store to dedupe
        self.counter = dict.fromkeys(CATEGORIES, 0)

    def bytes_in(self, category: str) -> int:
        return sum(f["bytes"] for f in self.files if f["category"] == category)

    def add(self, category: str, name: str, data: bytes, source: str | None = None) -> bool:
        if not data:
            return False
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if digest in self.seen:
            return False
        self.seen.add(digest)
        i = self.counter[category]
        self.counter[category] += 1
        safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)[:80]
        rel = Path(category) / f"{PREFIX[category]}{i:05d}_{safe}"
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.files.append(
            {"path": str(rel), "category": category, "bytes": len(data), "digest": digest.hex(), "source": source}
        )
        return True


def _walk_sorted(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            yield Path(dirpath) / name


def torch_lib_dir() -> Path | None:
    spec = importlib.util.find_spec("torch")  # finds it without importing it
    if spec is None or not spec.origin:
        return None
    d = Path(spec.origin).parent / "lib"
    return d if d.is_dir() else None


def add_shared_libs(b: CorpusBuilder, budget: int, cap: int) -> None:
    roots = [Path("/usr/lib/x86_64-linux-gnu")]
    tl = torch_lib_dir()
    if tl:
        roots.append(tl)
    cands = []
    for root in roots:
        if not root.is_dir():
            continue
        for p in _walk_sorted(root):
            n = p.name
            if not (n.endswith(".so") or ".so." in n) or p.is_symlink() or not p.is_file():
                continue
            try:
                size = p.stat().st_size
            except OSError:
                continue
            if size > 0:
                cands.append((p, size))
    # torch's big libraries first (capped), then a seeded shuffle of everything else.
    big = [c for c in cands if tl and c[0].parent == tl and c[1] >= 16 * MiB]
    rest = [c for c in cands if c not in big]
    random.Random(b.seed).shuffle(rest)
    for p, size in big + rest:
        left = budget - b.bytes_in("shared_lib")
        if left <= 0:
            break
        try:
            with open(p, "rb") as f:
                data = f.read(min(size, cap, left))
        except OSError:
            continue
        b.add("shared_lib", p.name, data, str(p))


def add_python_sources(b: CorpusBuilder, budget: int, cap: int) -> None:
    paths = sysconfig.get_paths()
    minor = f"python3.{sys.version_info.minor}"
    roots = [paths["purelib"], paths["platlib"], paths["stdlib"], "/usr/lib/python3/dist-packages", f"/usr/lib/{minor}"]
    done: set[str] = set()
    for r in roots:
        root = Path(r)
        if str(root) in done or not root.is_dir():
            continue
        done.add(str(root))
        for p in _walk_sorted(root):
            if not p.name.endswith(".py") or p.is_symlink() or not p.is_file():
                continue
            left = budget - b.bytes_in("python_source")
            if left <= 0:
                return
            try:
                if p.stat().st_size > cap:
                    continue
                data = p.read_bytes()[:left]
            except OSError:
                continue
            b.add("python_source", p.name, data, str(p))


# ---- pickles: config-like nested data, guard sets, FX graph code, generated kernel source

WORDS = (
    "layer",
    "attn",
    "mlp",
    "proj",
    "norm",
    "embed",
    "head",
    "block",
    "encoder",
    "decoder",
    "q",
    "k",
    "v",
    "o",
    "up",
    "down",
    "gate",
    "weight",
    "bias",
    "scale",
    "conv",
    "bn",
    "residual",
    "dropout",
    "rotary",
    "cache",
    "pos",
    "token",
    "lm",
    "fc1",
    "fc2",
)
CONFIG_KEYS = (
    "max_autotune",
    "epilogue_fusion",
    "coordinate_descent_tuning",
    "freezing",
    "triton.cudagraphs",
    "triton.unique_kernel_names",
    "cpp.threads",
    "fallback_random",
    "split_reductions",
    "size_asserts",
    "debug",
    "dynamic_shapes",
    "assume_static_by_default",
    "automatic_dynamic_shapes",
    "cache_size_limit",
    "inline_inbuilt_nn_modules",
    "specialize_int",
    "capture_scalar_outputs",
    "suppress_errors",
    "benchmark_kernel",
    "aggressive_fusion",
    "pattern_matcher",
    "reorder_for_locality",
    "conv_1x1_as_mm",
)
DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16", "torch.int64", "torch.bool")


def _param_name(r: random.Random) -> str:
    parts = ["L['self']", r.choice(("model", "backbone", "transformer"))]
    parts.append(f"{r.choice(('layers', 'blocks', 'h'))}[{r.randrange(48)}]")
    parts += [r.choice(WORDS) for _ in range(r.randrange(1, 3))]
    parts.append(r.choice(("weight", "bias")))
    return ".".join(parts)


def _shape(r: random.Random) -> tuple:
    return tuple(
        r.choice((1, 8, 64, 128, 256, 512, 768, 1024, 2048, 4096, 11008, 32000)) for _ in range(r.randrange(1, 5))
    )


def _contiguous_stride(shape: tuple) -> tuple:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def gen_config(r: random.Random) -> dict:
    cfg = {}
    for k in CONFIG_KEYS:
        cfg[k] = r.choice(
            (True, False, None, r.randrange(1 << 16), round(r.random(), 4), "_".join(r.choice(WORDS) for _ in range(2)))
        )
    cfg["nested"] = {
        f"{r.choice(WORDS)}_{i}": {
            "enabled": r.random() < 0.5,
            "threshold": r.random(),
            "tags": [r.choice(WORDS) for _ in range(r.randrange(4))],
        }
        for i in range(r.randrange(4, 20))
    }
    return cfg


def gen_tensor_meta(r: random.Random, n: int) -> list:
    out = []
    for _ in range(n):
        shape = _shape(r)
        out.append(
            {
                "name": _param_name(r),
                "shape": shape,
                "stride": _contiguous_stride(shape),
                "dtype": r.choice(DTYPES),
                "device": r.choice(("cuda:0", "cpu")),
                "requires_grad": r.random() < 0.7,
                "storage_offset": 0,
                "data_ptr": r.randrange(1 << 40, 1 << 47),
            }
        )
    return out


def gen_guards(r: random.Random, n: int) -> list:
    out = []
    for _ in range(n):
        kind = r.randrange(5)
        if kind == 0:
            out.append(f"___check_obj_id({_param_name(r)}, {r.randrange(1 << 46, 1 << 47)})")
        elif kind == 1:
            out.append(f"___check_type_id(L['{r.choice(WORDS)}'], {r.randrange(1 << 46, 1 << 47)})")
        elif kind == 2:
            shape = _shape(r)
            out.append(
                f"check_tensor(L['{r.choice(WORDS)}'], Tensor, DispatchKeySet(CUDA, BackendSelect, "
                f"ADInplaceOrView, AutogradCUDA), {r.choice(DTYPES)}, device=0, requires_grad="
                f"{r.random() < 0.5}, size={list(shape)}, stride={list(_contiguous_stride(shape))})"
            )
        elif kind == 3:
            out.append(f"L['self'].{r.choice(WORDS)}.training == {r.random() < 0.5}")
        else:
            out.append(f"2 <= L['{r.choice(WORDS)}'].size()[{r.randrange(4)}] <= {r.randrange(2, 1 << 20)}")
    return out


KERNEL_TEMPLATE = """
@triton.jit
def triton_{kind}_fused_{a}_{b}_{n}(in_ptr0, in_ptr1, out_ptr0, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xnumel = {xnumel}
    rnumel = {rnumel}
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    x0 = xindex % {mod}
    _tmp{n} = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        tmp0 = tl.load(in_ptr0 + (rindex + ({rnumel}*x0)), rmask & xmask, eviction_policy='evict_last', other=0.0)
        tmp1 = tl.load(in_ptr1 + (x0), xmask, eviction_policy='evict_last')
        tmp2 = tmp0 * tmp1
        tmp3 = tmp2 + {c0}
        tmp4 = tl.broadcast_to(tmp3, [XBLOCK, RBLOCK])
        _tmp{n} = tl.where(rmask & xmask, _tmp{n} + tmp4, _tmp{n})
    tmp5 = tl.sum(_tmp{n}, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp5 * {c1}, xmask)
"""


def gen_kernel_source(r: random.Random, n: int) -> str:
    return KERNEL_TEMPLATE.format(
        kind=r.choice(("red", "per", "poi")),
        a=r.choice(WORDS),
        b=r.choice(WORDS),
        n=n,
        xnumel=r.choice((512, 4096, 32768, 131072)),
        rnumel=r.choice((64, 768, 4096)),
        mod=r.choice((768, 1024, 4096)),
        c0=repr(r.uniform(-2, 2)),
        c1=repr(r.uniform(0, 1)),
    )


class FxGraphs:
    """Random aten-level FX graphs; their generated code and printed graph go into pickles."""

    def __init__(self):
        try:
            import torch
            import torch.fx as fx
        except ImportError:
            self.torch = None
            return
        self.torch, self.fx = torch, fx
        aten = torch.ops.aten
        self.unary = [
            aten.relu.default,
            aten.gelu.default,
            aten.sigmoid.default,
            aten.neg.default,
            aten.exp.default,
            aten.rsqrt.default,
            aten.clone.default,
            aten.t.default,
        ]
        self.binary = [
            aten.mm.default,
            aten.add.Tensor,
            aten.mul.Tensor,
            aten.sub.Tensor,
            aten.div.Tensor,
            aten.bmm.default,
        ]

    def make(self, r: random.Random, nodes: int) -> dict:
        if self.torch is None:
            return {"code": "\n".join(f"    v{i} = op{r.randrange(20)}(v{max(0, i - 1)})" for i in range(nodes))}
        torch, aten = self.torch, self.torch.ops.aten
        g = self.fx.Graph()
        vals = [g.placeholder(f"primals_{i + 1}") for i in range(r.randrange(2, 12))]
        for _ in range(nodes):
            k = r.random()
            a = r.choice(vals[-24:])
            if k < 0.35:
                n = g.call_function(r.choice(self.binary), (a, r.choice(vals[-24:])))
            elif k < 0.6:
                n = g.call_function(r.choice(self.unary), (a,))
            elif k < 0.75:
                n = g.call_function(aten.view.default, (a, list(_shape(r))))
            elif k < 0.85:
                perm = list(range(r.randrange(2, 5)))
                r.shuffle(perm)
                n = g.call_function(aten.permute.default, (a, perm))
            elif k < 0.92:
                n = g.call_function(aten.sum.dim_IntList, (a, [r.randrange(3)], True))
            else:
                n = g.call_function(
                    aten.addmm.default, (r.choice(vals[-24:]), a, r.choice(vals[-24:])), {"beta": 1, "alpha": 1}
                )
            vals.append(n)
        g.output(tuple(vals[-r.randrange(1, 4) :]))
        gm = self.fx.GraphModule(torch.nn.Module(), g)
        return {
            "code": gm.code,
            "graph": str(g),
            "nodes": [(n.name, n.op, str(n.target), len(n.args)) for n in g.nodes],
        }


def gen_pickle_obj(r: random.Random, target: int, fx: FxGraphs, serial: int) -> object:
    kind = serial % 4
    obj: dict = {"schema": "dynamo_replay.bench/1", "serial": serial, "seed": r.randrange(1 << 30)}
    size = 0
    i = 0
    while size < target:
        if kind == 0:  # a compiled graph: FX code, printed graph, tensor metadata
            item = fx.make(r, r.randrange(100, 1200))
            item["example_inputs"] = gen_tensor_meta(r, r.randrange(4, 40))
        elif kind == 1:  # guards plus config
            item = {"guards": gen_guards(r, r.randrange(50, 400)), "config": gen_config(r)}
        elif kind == 2:  # inductor-style cache entry: kernel source, autotune timings
            item = {
                "kernels": {f"k{j}": gen_kernel_source(r, j) for j in range(r.randrange(5, 40))},
                "timings": {
                    f"XBLOCK={2 ** r.randrange(4, 11)},RBLOCK={2 ** r.randrange(4, 11)},"
                    f"num_warps={2 ** r.randrange(0, 4)}": r.uniform(0.001, 2.0)
                    for _ in range(r.randrange(5, 60))
                },
                "meta": gen_tensor_meta(r, r.randrange(2, 10)),
            }
        else:  # run metadata: many small records with numbers
            item = {
                "frames": [
                    {
                        "co_name": r.choice(WORDS) + f"_{r.randrange(1000)}",
                        "co_filename": f"/src/{r.choice(WORDS)}/{r.choice(WORDS)}.py",
                        "lineno": r.randrange(1, 3000),
                        "compile_time_s": r.uniform(0, 30),
                        "graph_break": r.random() < 0.1,
                        "ops": r.randrange(1, 5000),
                    }
                    for _ in range(r.randrange(100, 1000))
                ],
                "config": gen_config(r),
            }
        obj[f"item_{i}"] = item
        i += 1
        size += len(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))
    return obj


def add_pickles(b: CorpusBuilder, budget: int, seed: int) -> None:
    r = random.Random(seed + 1)
    fx = FxGraphs()
    serial = 0
    while b.bytes_in("pickle") < budget:
        left = budget - b.bytes_in("pickle")
        target = min(left, int(2 ** r.uniform(14, 23)))  # 16 KiB .. 8 MiB
        data = pickle.dumps(gen_pickle_obj(r, target, fx, serial), protocol=pickle.HIGHEST_PROTOCOL)
        b.add("pickle", f"{('graph', 'guards', 'kernels', 'frames')[serial % 4]}.pkl", data[: max(left, 1)])
        serial += 1


def add_tensors(b: CorpusBuilder, budget: int, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed + 2)
    kinds = ("normal", "normal", "normal", "quantized", "smooth", "sparse", "normal", "quantized")
    serial = 0
    while b.bytes_in("tensor") < budget:
        left = budget - b.bytes_in("tensor")
        nbytes = min(left, int(2 ** rng.uniform(20, 26)))  # 1 MiB .. 64 MiB
        n = max(1, nbytes // 4)
        kind = kinds[serial % len(kinds)]
        if kind == "normal":  # trained / freshly initialised weights
            a = rng.standard_normal(n, dtype=np.float32) * np.float32(rng.uniform(0.005, 0.1))
        elif kind == "quantized":  # int8-quantised weights stored dequantised: 256 levels x a scale
            a = rng.integers(-128, 128, n, dtype=np.int8).astype(np.float32) * np.float32(rng.uniform(1e-3, 1e-2))
        elif kind == "smooth":  # positional encodings / schedules: smooth functions of the index
            t = np.arange(n, dtype=np.float32)
            a = np.sin(t * np.float32(rng.uniform(1e-4, 1e-2))) * np.cos(t * np.float32(rng.uniform(1e-5, 1e-3)))
            a = a.astype(np.float32)
        else:  # activations after ReLU: mostly zeros
            a = rng.standard_normal(n, dtype=np.float32)
            a[a < np.float32(rng.uniform(0.5, 1.5))] = 0
        b.add("tensor", f"{kind}_{serial}.f32", a.astype(np.float32).tobytes()[:left])
        serial += 1


def build_corpus(out: Path, size_mb: int, seed: int, lib_cap_mb: int) -> dict:
    corpus = out / "corpus"
    manifest_path = out / "corpus.json"
    params = {"version": CORPUS_VERSION, "size_mb": size_mb, "seed": seed, "lib_cap_mb": lib_cap_mb}
    if manifest_path.exists():
        m = json.loads(manifest_path.read_text())
        if (
            m.get("params") == params
            and all(
                (corpus / f["path"]).is_file() and (corpus / f["path"]).stat().st_size == f["bytes"] for f in m["files"]
            )
            and (out / "corpus.bin").is_file()
        ):
            log(f"reusing corpus in {corpus}")
            return m
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    total = size_mb * MiB
    quarter = total // 4
    b = CorpusBuilder(corpus, seed)
    t = time.perf_counter()
    add_shared_libs(b, quarter, min(lib_cap_mb * MiB, max(quarter // 4, MiB)))
    add_python_sources(b, quarter, 4 * MiB)
    left = total - b.bytes_in("shared_lib") - b.bytes_in("python_source")
    add_pickles(b, left // 2, seed)  # shortfalls in the found files go to the generated ones
    add_tensors(b, total - sum(f["bytes"] for f in b.files), seed)
    log(
        f"built corpus: {len(b.files)} files, {sum(f['bytes'] for f in b.files) / MiB:.1f} MiB "
        f"in {time.perf_counter() - t:.1f}s"
    )
    with open(out / "corpus.bin", "wb") as dst:  # the same bytes, concatenated, for zstd
        for f in b.files:
            with open(corpus / f["path"], "rb") as src:
                shutil.copyfileobj(src, dst, 4 * MiB)
    m = {"params": params, "files": b.files}
    manifest_path.write_text(json.dumps(m))
    return m


def composition(files: list[dict]) -> dict:
    out = {}
    total = sum(f["bytes"] for f in files)
    for c in CATEGORIES:
        fs = [f for f in files if f["category"] == c]
        n = sum(f["bytes"] for f in fs)
        out[c] = {
            "files": len(fs),
            "bytes": n,
            "share": n / total if total else 0.0,
            "largest": max((f["bytes"] for f in fs), default=0),
        }
    return out


# --------------------------------------------------------------------------- running things


# Children are started through a small launcher: Linux carries the high-water RSS of the
# process that execs into the new program's ru_maxrss, so a child forked straight from this
# (large) process would report at least this process's RSS. The launcher is small.
LAUNCHER = r"""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[2:])
_, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
json.dump({"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
           "maxrss_mib": ru.ru_maxrss / 1024, "rc": os.waitstatus_to_exitcode(status)}, open(sys.argv[1], "w"))
"""


def run_measured(cmd: list[str], stdout=subprocess.DEVNULL, stdin=None) -> dict:
    """Wall time, CPU time and peak RSS of one child process, as its launcher saw them."""
    fd, result = tempfile.mkstemp(prefix="dynrep-launch-", suffix=".json")
    os.close(fd)
    try:
        p = subprocess.run(
            [sys.executable, "-S", "-E", "-c", LAUNCHER, result, *map(str, cmd)],
            stdout=stdout,
            stdin=stdin,
            stderr=subprocess.PIPE,
        )
        r = json.loads(Path(result).read_text() or "{}")
    finally:
        os.unlink(result)
    if p.returncode != 0 or r.get("rc") != 0:
        err = p.stderr.decode(errors="replace").strip()[-2000:]
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {r.get('rc', p.returncode)}: {err}")
    return r


CHILD = r"""
import json, os, resource, sys, time
t_start = time.perf_counter()
import dynamo_replay as dr
t_import = time.perf_counter()
mode, store_path, list_path, result_path = sys.argv[1:5]
files = json.load(open(list_path))
res = {"import_s": t_import - t_start}
if mode in ("write", "write_baseline"):
    t0 = time.perf_counter()
    st = dr.Store.create(store_path, level=3, overwrite=True)
    t1 = time.perf_counter()
    keys = [st.put_blob(p) for p in files] if mode == "write" else []
    t2 = time.perf_counter()
    st.close()
    t3 = time.perf_counter()
    res.update(create_s=t1 - t0, puts_s=t2 - t1, close_s=t3 - t2, total_s=t3 - t0, keys=keys)
elif mode == "import_only":
    pass
else:
    keys = json.load(open(list_path + ".keys"))
    n = 0
    if mode == "read_bytes":
        t0 = time.perf_counter()
        st = dr.Store.open(store_path)
        for k in keys:
            n += len(st.get_blob(k))
        t1 = time.perf_counter()
    elif mode == "read_stream":
        buf = bytearray(4 << 20)
        t0 = time.perf_counter()
        st = dr.Store.open(store_path)
        for k in keys:
            r = st.get_blob(k, stream=True)
            while True:
                got = r.readinto(buf)
                if not got:
                    break
                n += got
        t1 = time.perf_counter()
    elif mode == "verify":
        import hashlib
        digests = json.load(open(list_path + ".digests"))
        t0 = time.perf_counter()
        st = dr.Store.open(store_path)
        bad = [k for k, d in zip(keys, digests) if hashlib.blake2b(st.get_blob(k), digest_size=16).hexdigest() != d]
        t1 = time.perf_counter()
        res["mismatches"] = len(bad)
    else:
        raise SystemExit("unknown mode " + mode)
    st.close()
    res.update(total_s=t1 - t0, bytes=n)
res["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        res["vmhwm_mib"] = int(line.split()[1]) / 1024
json.dump(res, open(result_path, "w"))
"""


class Bench:
    def __init__(self, out: Path, manifest: dict, python: str, inspect: str):
        self.out = out
        self.manifest = manifest
        self.python = python
        self.inspect = inspect
        self.corpus_bytes = sum(f["bytes"] for f in manifest["files"])
        self.store = out / "bench.store"
        self.baseline_store = out / "baseline.store"
        self.zst = out / "corpus.bin.zst"
        self.child = out / "child.py"
        self.child.write_text(CHILD)
        self.list_path = out / "files.json"
        self.list_path.write_text(json.dumps([str(out / "corpus" / f["path"]) for f in manifest["files"]]))
        self.result_path = out / "child-result.json"

    def child_run(self, mode: str, store: Path) -> dict:
        outer = run_measured(
            [self.python, str(self.child), mode, str(store), str(self.list_path), str(self.result_path)]
        )
        inner = json.loads(self.result_path.read_text())
        self.result_path.unlink()
        inner["outer"] = outer
        return inner

    def store_write(self) -> dict:
        self.store.unlink(missing_ok=True)
        r = self.child_run("write", self.store)
        keys = r.pop("keys")
        (self.out / "files.json.keys").write_text(json.dumps(keys))
        r["store_bytes"] = self.store.stat().st_size
        return r

    def store_write_baseline(self) -> dict:
        self.baseline_store.unlink(missing_ok=True)
        r = self.child_run("write_baseline", self.baseline_store)
        r.pop("keys")
        return r

    def zstd_compress(self) -> dict:
        self.zst.unlink(missing_ok=True)
        r = run_measured(["zstd", "-3", "-T1", "-q", "-f", str(self.out / "corpus.bin"), "-o", str(self.zst)])
        t = time.perf_counter()
        fd = os.open(self.zst, os.O_RDONLY)
        os.fsync(fd)  # the store's close() fsyncs; report what that costs zstd as well
        os.close(fd)
        r["fsync_s"] = time.perf_counter() - t
        r["zst_bytes"] = self.zst.stat().st_size
        return r

    def zstd_decompress(self) -> dict:
        return run_measured(["zstd", "-d", "-T1", "-q", "-c", str(self.zst)], stdout=subprocess.DEVNULL)

    def info_latency(self, n: int = 20) -> dict:
        times = []
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run([self.inspect, "info", str(self.store)], check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
        j = json.loads(
            subprocess.run(
                [self.inspect, "info", str(self.store), "--json"], check=True, capture_output=True, text=True
            ).stdout
        )
        return {
            "median_ms": statistics.median(times) * 1e3,
            "min_ms": min(times) * 1e3,
            "max_ms": max(times) * 1e3,
            "runs": n,
            "json": j,
        }

    def breakdown(self) -> dict:
        """Per category: store stored bytes vs zstd -3 per file and over the concatenation (untimed)."""
        keys = json.loads((self.out / "files.json.keys").read_text())
        ls = json.loads(
            subprocess.run(
                [self.inspect, "ls", "--blobs", "--json", str(self.store)], check=True, capture_output=True, text=True
            ).stdout
        )
        stored = {b["key"]: b["stored_bytes"] for b in ls["blobs"]}
        flat = self.out / "zst-per-file"
        shutil.rmtree(flat, ignore_errors=True)
        flat.mkdir()
        filelist = self.out / "filelist.txt"
        filelist.write_text("\n".join(str(self.out / "corpus" / f["path"]) for f in self.manifest["files"]) + "\n")
        per_file = run_measured(
            ["zstd", "-3", "-T1", "-q", "-f", "--filelist", str(filelist), "--output-dir-flat", str(flat)]
        )
        out = {"zstd_per_file_wall_s": per_file["wall_s"], "categories": {}}
        for c in CATEGORIES:
            fs = [(f, k) for f, k in zip(self.manifest["files"], keys) if f["category"] == c]
            raw = sum(f["bytes"] for f, _ in fs)
            if not raw:
                continue
            st = sum(stored[k] for _, k in fs)
            pf = sum((flat / (Path(f["path"]).name + ".zst")).stat().st_size for f, _ in fs)
            z = subprocess.Popen(["zstd", "-3", "-T1", "-q", "-c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            got = [0]

            def drain(z=z, got=got):
                while True:
                    chunk = z.stdout.read(MiB)
                    if not chunk:
                        break
                    got[0] += len(chunk)

            th = threading.Thread(target=drain)
            th.start()
            for f, _ in fs:
                with open(self.out / "corpus" / f["path"], "rb") as src:
                    shutil.copyfileobj(src, z.stdin, 4 * MiB)
            z.stdin.close()
            th.join()
            z.wait()
            out["categories"][c] = {
                "raw_bytes": raw,
                "store_ratio": raw / st,
                "zstd_per_file_ratio": raw / pf,
                "zstd_concat_ratio": raw / got[0],
            }
        shutil.rmtree(flat, ignore_errors=True)
        return out


def median_of(runs: list[dict], *path: str) -> float:
    vals = []
    for r in runs:
        v = r
        for p in path:
            v = v[p]
        vals.append(v)
    return statistics.median(vals)


def machine() -> dict:
    model = "?"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    zv = subprocess.run(["zstd", "--version"], capture_output=True, text=True).stdout.strip()
    import resource

    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory": mem,
        "kernel": platform.release(),
        "nofile_soft_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "python": platform.python_version(),
        "zstd": zv,
        "loadavg_start": os.getloadavg(),
    }


def run(args) -> dict:
    if not shutil.which("zstd"):
        raise RuntimeError("the zstd command-line tool is not on PATH")
    python = args.python or sys.executable
    inspect = args.inspect or shutil.which("replay-inspect") or str(Path(python).parent / "replay-inspect")
    if not Path(inspect).exists():
        raise RuntimeError(f"replay-inspect not found (tried {inspect}); pass --inspect")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    res: dict = {"machine": machine(), "args": {"size_mb": args.size_mb, "repeat": args.repeat, "seed": args.seed}}
    manifest = build_corpus(out, args.size_mb, args.seed, args.lib_cap_mb)
    res["corpus"] = {
        "bytes": sum(f["bytes"] for f in manifest["files"]),
        "files": len(manifest["files"]),
        "composition": composition(manifest["files"]),
    }
    (out / "files.json.digests").write_text(json.dumps([f["digest"] for f in manifest["files"]]))
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and soft < len(manifest["files"]) + 64:
        log(
            f"warning: open-file limit {soft} < {len(manifest['files'])} corpus files; put_blob(path) keeps a "
            f"descriptor per queued blob, so the store write may fail with EMFILE (raise `ulimit -n`)"
        )
    bench = Bench(out, manifest, python, inspect)
    nbytes = bench.corpus_bytes

    log("warm-up round (page cache, not counted)")
    subprocess.run(["cat", str(out / "corpus.bin")], stdout=subprocess.DEVNULL, check=True)
    bench.zstd_compress()
    bench.store_write()
    bench.zstd_decompress()
    bench.child_run("read_bytes", bench.store)
    v = bench.child_run("verify", bench.store)
    if v["mismatches"]:
        raise RuntimeError(f"{v['mismatches']} blobs read back differ from the corpus")

    runs: dict[str, list] = {k: [] for k in ("zstd_c", "write", "baseline", "zstd_d", "read_bytes", "read_stream")}
    for i in range(args.repeat):
        log(f"round {i + 1}/{args.repeat}")
        runs["zstd_c"].append(bench.zstd_compress())
        runs["write"].append(bench.store_write())
        runs["baseline"].append(bench.store_write_baseline())
        runs["zstd_d"].append(bench.zstd_decompress())
        runs["read_bytes"].append(bench.child_run("read_bytes", bench.store))
        runs["read_stream"].append(bench.child_run("read_stream", bench.store))
    for r in runs["read_bytes"] + runs["read_stream"]:
        if r["bytes"] != nbytes:
            raise RuntimeError(f"read {r['bytes']} bytes, corpus has {nbytes}")
    import_only = [bench.child_run("import_only", bench.store) for _ in range(args.repeat)]
    res["runs"] = runs

    zc = median_of(runs["zstd_c"], "wall_s")
    zc_sync = statistics.median(r["wall_s"] + r["fsync_s"] for r in runs["zstd_c"])
    w_raw = median_of(runs["write"], "outer", "wall_s")
    w_base = median_of(runs["baseline"], "outer", "wall_s")
    w_net = w_raw - w_base
    w_inproc = median_of(runs["write"], "total_s")
    zd = median_of(runs["zstd_d"], "wall_s")
    rb = median_of(runs["read_bytes"], "total_s")
    rs = median_of(runs["read_stream"], "total_s")
    store_bytes = runs["write"][-1]["store_bytes"]
    zst_bytes = runs["zstd_c"][-1]["zst_bytes"]
    info = bench.info_latency(20)
    if info["json"]["blob_count"] != len(manifest["files"]):
        raise RuntimeError(f"info says {info['json']['blob_count']} blobs, corpus has {len(manifest['files'])} files")
    writer_rss = max(r["outer"]["maxrss_mib"] for r in runs["write"])
    base_rss = median_of(runs["baseline"], "outer", "maxrss_mib")
    import_rss = statistics.median(r["outer"]["maxrss_mib"] for r in import_only)
    store_ratio = nbytes / store_bytes
    zstd_ratio = nbytes / zst_bytes

    res["write"] = {
        "store_wall_s": w_raw,
        "baseline_wall_s": w_base,
        "store_net_s": w_net,
        "store_inprocess_s": w_inproc,
        "store_puts_s": median_of(runs["write"], "puts_s"),
        "store_close_s": median_of(runs["write"], "close_s"),
        "store_cpu_s": median_of(runs["write"], "outer", "cpu_s"),
        "store_MBps": nbytes / w_net / MB,
        "store_inprocess_MBps": nbytes / w_inproc / MB,
        "zstd_wall_s": zc,
        "zstd_cpu_s": median_of(runs["zstd_c"], "cpu_s"),
        "zstd_MBps": nbytes / zc / MB,
        "zstd_plus_fsync_s": zc_sync,
        "zstd_plus_fsync_MBps": nbytes / zc_sync / MB,
        "speed_vs_zstd": zc / w_net,
        "speed_vs_zstd_plus_fsync": zc_sync / w_net,
        "store_MBps_runs": [nbytes / (r["outer"]["wall_s"] - w_base) / MB for r in runs["write"]],
        "zstd_MBps_runs": [nbytes / r["wall_s"] / MB for r in runs["zstd_c"]],
    }
    res["read"] = {
        "store_bytes_s": rb,
        "store_bytes_MBps": nbytes / rb / MB,
        "store_stream_s": rs,
        "store_stream_MBps": nbytes / rs / MB,
        "zstd_wall_s": zd,
        "zstd_cpu_s": median_of(runs["zstd_d"], "cpu_s"),
        "zstd_MBps": nbytes / zd / MB,
        "bytes_vs_zstd": zd / rb,
        "stream_vs_zstd": zd / rs,
        "store_bytes_MBps_runs": [nbytes / r["total_s"] / MB for r in runs["read_bytes"]],
        "store_stream_MBps_runs": [nbytes / r["total_s"] / MB for r in runs["read_stream"]],
        "zstd_MBps_runs": [nbytes / r["wall_s"] / MB for r in runs["zstd_d"]],
    }
    res["ratio"] = {
        "store_file_bytes": store_bytes,
        "store_ratio": store_ratio,
        "store_payload_ratio": info["json"]["ratio"],
        "zstd_bytes": zst_bytes,
        "zstd_ratio": zstd_ratio,
        "shortfall": (zstd_ratio - store_ratio) / zstd_ratio,
    }
    res["info"] = {k: v for k, v in info.items() if k != "json"} | {"blob_count": info["json"]["blob_count"]}
    res["memory"] = {
        "writer_peak_rss_mib": writer_rss,
        "writer_vmhwm_mib": max(r["vmhwm_mib"] for r in runs["write"]),
        "baseline_writer_rss_mib": base_rss,
        "import_only_rss_mib": import_rss,
        "writer_own_mib": writer_rss - import_rss,
        "zstd_c_peak_rss_mib": max(r["maxrss_mib"] for r in runs["zstd_c"]),
        "reader_bytes_peak_rss_mib": max(r["outer"]["maxrss_mib"] for r in runs["read_bytes"]),
        "reader_stream_peak_rss_mib": max(r["outer"]["maxrss_mib"] for r in runs["read_stream"]),
    }
    if not args.no_breakdown:
        log("per-category ratios (untimed)")
        res["breakdown"] = bench.breakdown()
    res["machine"]["loadavg_end"] = os.getloadavg()

    res["table"] = [
        {
            "metric": "write throughput (MB/s)",
            "store": res["write"]["store_MBps"],
            "zstd": res["write"]["zstd_MBps"],
            "value": res["write"]["speed_vs_zstd"],
            "target": f">= {TARGETS['write']}x zstd -3",
            "pass": res["write"]["speed_vs_zstd"] >= TARGETS["write"],
        },
        {
            "metric": "read throughput, get_blob (MB/s)",
            "store": res["read"]["store_bytes_MBps"],
            "zstd": res["read"]["zstd_MBps"],
            "value": res["read"]["bytes_vs_zstd"],
            "target": f">= {TARGETS['read']}x zstd -d",
            "pass": res["read"]["bytes_vs_zstd"] >= TARGETS["read"],
        },
        {
            "metric": "read throughput, stream readinto (MB/s)",
            "store": res["read"]["store_stream_MBps"],
            "zstd": res["read"]["zstd_MBps"],
            "value": res["read"]["stream_vs_zstd"],
            "target": f">= {TARGETS['read']}x zstd -d",
            "pass": res["read"]["stream_vs_zstd"] >= TARGETS["read"],
        },
        {
            "metric": "compression ratio (raw/compressed)",
            "store": store_ratio,
            "zstd": zstd_ratio,
            "value": store_ratio / zstd_ratio,
            "target": f">= {1 - TARGETS['ratio']:.2f}x zstd -3",
            "pass": store_ratio >= (1 - TARGETS["ratio"]) * zstd_ratio,
        },
        {
            "metric": "replay-inspect info (ms, median of 20)",
            "store": info["median_ms"],
            "zstd": None,
            "value": info["median_ms"],
            "target": f"< {TARGETS['info_ms']:.0f} ms",
            "pass": info["median_ms"] < TARGETS["info_ms"],
        },
        {
            "metric": "writer peak RSS (MiB)",
            "store": writer_rss,
            "zstd": res["memory"]["zstd_c_peak_rss_mib"],
            "value": writer_rss,
            "target": f"< {TARGETS['writer_rss_mib']:.0f} MiB",
            "pass": writer_rss < TARGETS["writer_rss_mib"],
        },
    ]
    return res


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}" if v < 1000 else f"{v:.0f}"
    return str(v)


def print_report(res: dict) -> None:
    m, c = res["machine"], res["corpus"]
    print(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory']}, {m['zstd']}")
    print(f"load average at start {m['loadavg_start'][0]:.2f}, at end {m['loadavg_end'][0]:.2f}")
    print(f"corpus: {c['files']} files, {c['bytes'] / MiB:.1f} MiB")
    for cat, d in c["composition"].items():
        print(
            f"  {cat:<14} {d['files']:>6} files  {d['bytes'] / MiB:8.1f} MiB  {d['share'] * 100:5.1f}%  "
            f"largest {d['largest'] / MiB:.1f} MiB"
        )
    w, r = res["write"], res["read"]
    print(
        f"write: store {w['store_wall_s']:.2f}s wall - {w['baseline_wall_s']:.2f}s baseline = "
        f"{w['store_net_s']:.2f}s (in-process {w['store_inprocess_s']:.2f}s: puts {w['store_puts_s']:.2f}s, "
        f"close {w['store_close_s']:.2f}s; cpu {w['store_cpu_s']:.2f}s); zstd -3 {w['zstd_wall_s']:.2f}s "
        f"(cpu {w['zstd_cpu_s']:.2f}s, +fsync {w['zstd_plus_fsync_s']:.2f}s)"
    )
    print(
        f"read:  store get_blob {r['store_bytes_s']:.2f}s, stream {r['store_stream_s']:.2f}s; "
        f"zstd -d {r['zstd_wall_s']:.2f}s (cpu {r['zstd_cpu_s']:.2f}s)"
    )
    rng = lambda xs: f"{min(xs):.0f}..{max(xs):.0f}"  # noqa: E731
    print(
        f"per-run MB/s: write store {rng(w['store_MBps_runs'])}, zstd -3 {rng(w['zstd_MBps_runs'])}; "
        f"read get_blob {rng(r['store_bytes_MBps_runs'])}, stream {rng(r['store_stream_MBps_runs'])}, "
        f"zstd -d {rng(r['zstd_MBps_runs'])}"
    )
    mem = res["memory"]
    print(
        f"memory: writer peak {mem['writer_peak_rss_mib']:.1f} MiB, writer without puts "
        f"{mem['baseline_writer_rss_mib']:.1f} MiB, import only {mem['import_only_rss_mib']:.1f} MiB, "
        f"zstd -3 {mem['zstd_c_peak_rss_mib']:.1f} MiB"
    )
    if "breakdown" in res:
        print("ratio by category: store / zstd -3 per file / zstd -3 concatenated")
        for cat, d in res["breakdown"]["categories"].items():
            print(f"  {cat:<14} {d['store_ratio']:.3f} / {d['zstd_per_file_ratio']:.3f} / {d['zstd_concat_ratio']:.3f}")
    print()
    rows = [("metric", "store", "zstd", "store/zstd", "target", "result")]
    for t in res["table"]:
        ratio = fmt(t["value"]) if t["zstd"] is not None and "RSS" not in t["metric"] else "-"
        rows.append((t["metric"], fmt(t["store"]), fmt(t["zstd"]), ratio, t["target"], "pass" if t["pass"] else "MISS"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for j, row in enumerate(rows):
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
        if j == 0:
            print("  ".join("-" * w for w in widths))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size-mb", type=int, default=1024, help="corpus size in MiB (default 1024)")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="work directory; kept, and its corpus reused when the parameters match "
        "(default: a temporary directory under /tmp, removed at the end)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds; medians are reported (default 3)")
    ap.add_argument("--seed", type=int, default=20240611, help="corpus seed")
    ap.add_argument("--lib-cap-mb", type=int, default=64, help="cap on one shared library's bytes (default 64)")
    ap.add_argument("--python", default=None, help="interpreter for the store subprocesses (default: this one)")
    ap.add_argument("--inspect", default=None, help="replay-inspect binary (default: on PATH or next to python)")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the untimed per-category ratio breakdown")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.size_mb < 4:
        ap.error("--repeat must be >= 1 and --size-mb >= 4")
    temp = args.out is None
    if temp:
        args.out = Path(tempfile.mkdtemp(prefix="dynrep-store-bench-", dir="/tmp"))
    try:
        res = run(args)
        if not temp:
            (args.out / "results.json").write_text(json.dumps(res, indent=2))
        if args.json:
            json.dump(res, sys.stdout, indent=2)
            print()
        else:
            print_report(res)
    except Exception as e:  # noqa: BLE001 - report and exit non-zero
        log(f"error: {e}")
        return 1
    finally:
        if temp and not args.keep:
            shutil.rmtree(args.out, ignore_errors=True)
        elif temp:
            log(f"kept {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
