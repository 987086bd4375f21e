"""Inductor's kernel libraries and C++ compiler identity, saved at capture and put back at replay.

On CPU, a graph loaded from PyTorch's caches still needs the shared libraries Inductor built
for it: they are looked up in Inductor's cache directory under a key made of the kernel source
and the compile command, and compiled again when missing. The command includes the compiler's
own `-v` output, and picking the CPU vector ISA dlopens small probe libraries built the same
way. So capture saves the kernel libraries this process loaded, the ISA probe libraries and
the compiler's version answers. Replay writes the libraries back under the same names and
enters them into Inductor's in-memory kernel maps (so no header is preprocessed), and on a host
with no compiler puts a stand-in on PATH that gives the recorded answers and refuses to compile.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

from dynamo_replay.schema import KERNEL_PREFIX

_VERSION_FLAGS = ("-v", "--version")


def inductor_used() -> bool:
    """Whether this process generated or loaded any C++ through Inductor."""
    return "torch._inductor.codecache" in sys.modules


def cache_dir() -> Path:
    from dynamo_replay._torch import inductor

    return Path(inductor.cache_dir())


def _mapped_libraries(root: Path) -> set[Path]:
    """Shared libraries under root that this process has mapped (Inductor dlopens each kernel)."""
    found = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if path.endswith(".so") and path.startswith(str(root) + os.sep):
                    found.add(Path(path))
    except OSError:
        pass
    return found


def _isa_probe_libraries(root: Path) -> set[Path]:
    """The libraries Inductor's CPU vector ISA check builds: it dlopens them in a child process,
    so they never show in our maps. They sit next to a .cpp holding one of the probe sources
    the ISA classes carry (class attributes named *_code)."""
    from dynamo_replay._torch import inductor

    probes = inductor.isa_probe_sources()
    longest = max(map(len, probes), default=0) + 64
    found = set()
    for source in root.glob("??/*.cpp"):
        library = source.with_suffix(".so")
        if (
            library.exists()
            and source.stat().st_size <= longest
            and source.read_text(errors="replace").strip() in probes
        ):
            found.add(library)
    return found


def isa_probe_files(root: Path) -> list[Path]:
    """The ISA probe's libraries under root, each with the files Inductor keeps beside it (its
    source, and from 2.15 a marker that it loaded)."""
    return sorted(file for library in _isa_probe_libraries(root) for file in library.parent.glob(library.stem + ".*"))


def copy_isa_probes(source: Path, target: Path) -> None:
    """Copies the ISA probe's libraries of one Inductor cache into another. Inductor's
    vector-ISA check compiles a probe per ISA (about 15 s of g++ on 2 cores) into a cache that
    lacks them, and the libraries depend only on their source and the compiler's flags, never on
    the directory they sit in."""
    for file in isa_probe_files(source):
        copy = target / file.relative_to(source)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, copy)


class PrivateCacheDir:
    """Points Inductor at a fresh, empty cache directory while capture runs.

    So the capture sees a whole compile (a package left in the job's own cache by an earlier
    run would otherwise skip it), every library built for it lands in one place, and the job's
    own cache is left as it was. A capture's starts with the ISA probe's libraries of the job's
    own cache (copy_isa_probes), which it needs and saves like any other; a replay's does not
    (its store brings them, and its start must not search the job's cache). The directory is
    removed when the process exits: compiled code may still load files from it until then.
    """

    def __init__(self, *, with_isa_probes: bool) -> None:
        self.original = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        self.original_root = cache_dir() if inductor_used() else None
        self.path = Path(tempfile.mkdtemp(prefix="dynrep-capture-"))
        atexit.register(_remove_in_process, self.path, os.getpid())
        if with_isa_probes:
            copy_isa_probes(self.original_root or cache_dir(), self.path)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(self.path)
        _clear_inductor_caches()

    def restore(self) -> None:
        if self.original is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = self.original
        _clear_inductor_caches()

    def kernel_libraries(self) -> dict[str, Path]:
        """Relative name (inductor/<dir>/<file>.so) -> path, for every library replay needs:
        all built during capture, and any that capture's compiles found already loaded or
        ISA-probed in the job's own cache."""
        found = {lib.relative_to(self.path).as_posix(): lib for lib in self.path.glob("??/*.so")}
        if self.original_root is not None:
            root = self.original_root
            for lib in _mapped_libraries(root) | _isa_probe_libraries(root):
                found.setdefault(lib.relative_to(root).as_posix(), lib)
        return {KERNEL_PREFIX + name: found[name] for name in sorted(found)}


class CurrentCacheDir:
    """Inductor's cache directory as it is, for a replay's update: the libraries replay put
    back and those the update's compiles built are all there."""

    def __init__(self) -> None:
        self.path = cache_dir()
        self._before = set(self.path.glob("??/*.so"))

    def restore(self) -> None:
        return None

    def kernel_libraries(self) -> dict[str, Path]:
        """Those built since, and those this process has loaded (the job's own cache holds
        other jobs' libraries too)."""
        found = (set(self.path.glob("??/*.so")) - self._before) | _mapped_libraries(self.path)
        return {KERNEL_PREFIX + lib.relative_to(self.path).as_posix(): lib for lib in sorted(found)}


def _remove_in_process(path: Path, pid: int) -> None:
    """Removes the directory at exit of the process that made it: a forked child that exits
    through atexit must leave it to its parent, whose compiled code may still load from it."""
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


def _clear_inductor_caches() -> None:
    # Inductor keeps in-memory maps from keys to files; they must not outlive a directory
    # switch. Not loaded yet means nothing to clear (and importing it would cost a second).
    from dynamo_replay._torch import inductor

    inductor.clear_caches()


def compiler_identity() -> dict[str, str]:
    """The compiler name Inductor uses and its answers to the version queries Inductor asks."""
    from dynamo_replay._torch import inductor

    name = inductor.cpp_compiler()
    env = {**os.environ, "LC_ALL": "C"}
    answers = {"name": name}
    for flag in _VERSION_FLAGS:
        run = subprocess.run([name, flag], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=30)
        answers[flag] = run.stdout.decode(errors="replace")
    return answers


def _safe_relative(name: str) -> PurePosixPath:
    """The path under the cache directory for an artifact name; refuses anything that could
    land outside it, since a store may come from elsewhere."""
    relative = PurePosixPath(name[len(KERNEL_PREFIX) :])
    if (
        not name.startswith(KERNEL_PREFIX)
        or relative.is_absolute()
        or ".." in relative.parts
        or relative.suffix != ".so"
        or len(relative.parts) != 2
    ):
        raise ValueError(f"kernel library name {name!r} is not <dir>/<file>.so under the Inductor cache")
    return relative


def check_kernel_names(names: list[str]) -> None:
    for name in names:
        _safe_relative(name)


def restore_kernel_libraries(libraries: dict[str, bytes]) -> None:
    """Puts each library back as if this process had built it: writes it into Inductor's cache
    directory unless it is already there, and enters each kernel into Inductor's in-memory
    maps from kernel key to loader.

    Files are written to a temporary name and renamed into place, so a concurrent process
    never sees half a library. The maps matter because Inductor looks a kernel up there first,
    and only on a miss rebuilds its command line, which with header precompilation on (the
    default) runs the C++ preprocessor over Inductor's headers in every new process and
    compiles them once per host. Each map's class loads the library itself, on first use.
    """
    from dynamo_replay._torch import inductor

    root = cache_dir()
    for name, data in libraries.items():
        relative = _safe_relative(name)
        target = root / relative
        if not target.exists():
            _write_atomically(target, data)
        # Libraries Inductor builds for a kernel are named <key>.main.so; the rest are ISA
        # probes, which Inductor finds by their path.
        key = relative.name.removesuffix(".main.so")
        if key != relative.name:
            inductor.enter_kernel_library(key, str(target))


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".dynrep-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temp, 0o755)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class CompilerStandIn:
    """A directory put first on PATH holding an executable named like the captured compiler.
    It answers the version queries with the recorded text and fails every other call, naming
    dynamo-replay, so Inductor can find its cached kernels on a host without a compiler."""

    def __init__(self, identity: dict[str, str]) -> None:
        self.name = identity["name"]
        self._dir = tempfile.mkdtemp(prefix="dynrep-cxx-")
        self._pid = os.getpid()
        answers = Path(self._dir) / "answers.json"
        answers.write_text(json.dumps({flag: identity.get(flag, "") for flag in _VERSION_FLAGS}))
        script = Path(self._dir) / os.path.basename(self.name)
        script.write_text(
            f"#!{sys.executable}\n"
            "import json, sys\n"
            f"answers = json.load(open({str(answers)!r}))\n"
            "if len(sys.argv) == 2 and sys.argv[1] in answers:\n"
            "    sys.stdout.write(answers[sys.argv[1]]); sys.exit(0)\n"
            "sys.exit('dynamo-replay: no C++ compiler on this host and a kernel library missing from the store '\n"
            "         'was requested: ' + ' '.join(sys.argv[1:3]))\n"
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self._old_path = os.environ.get("PATH")
        os.environ["PATH"] = self._dir + os.pathsep + (self._old_path or "")

    def remove(self) -> None:
        if self._old_path is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = self._old_path
        _remove_in_process(Path(self._dir), self._pid)


def compiler_missing(identity: dict[str, str]) -> bool:
    name = identity.get("name", "")
    return bool(name) and shutil.which(name) is None
