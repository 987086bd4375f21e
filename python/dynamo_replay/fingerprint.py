"""The environment fingerprint a store records: everything that decides whether code compiled
in one process is valid in another (torch build, Python, CPU vector ISA, C++ compiler, and the
configs that affect compilation)."""

from __future__ import annotations

import hashlib
import linecache
import platform
import shutil
import subprocess
import sys
from types import CodeType

from dynamo_replay.schema import FINGERPRINT_CPU_FLAGS


def _compiler_version(cxx: str) -> str:
    path = shutil.which(cxx)
    if path is None:
        return f"{cxx} (not found)"
    try:
        first = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.splitlines()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path} (version unknown: {exc})"
    return first[0] if first else path


def _canonical(value: object) -> str:
    # PyTorch's own config.get_hash() reprs sets in hash-seed order, so it differs between
    # processes; sort them so equal configs give equal text.
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_canonical(v) for v in value)) + "}"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(
                f"{_canonical(k)}: {_canonical(v)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))
            )
            + "}"
        )
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_canonical(v) for v in value) + "]"
    return repr(value)


def environment_fingerprint() -> dict[str, str]:
    """Fingerprint entries, name -> value, all strings. Imports torch."""
    import torch

    from dynamo_replay._torch import releases, settings

    # The compiler Inductor would pick: the first name its config gives (cpp_builder, which
    # resolves it fully, costs a second to import in a job that never uses Inductor).
    cxx = next(iter(settings.inductor_cxx_names()), "c++")
    entries = {
        "torch.version": releases.VERSION,
        "torch.git_version": torch.version.git_version,
        "torch.debug": str(torch.version.debug),
        "python.version": platform.python_version(),
        "python.cache_tag": sys.implementation.cache_tag,
        "machine": platform.machine(),
        "platform": platform.platform(),
        "cpu.capability": torch.backends.cpu.get_cpu_capability(),
        FINGERPRINT_CPU_FLAGS: cpu_isa_flags(),
        "cxx.compiler": _compiler_version(cxx),
    }
    for name, values in settings.compile_config_values().items():
        entries.update({f"config.{name}.{key}": _canonical(value) for key, value in values.items()})
    return entries


def ignored_by_pytorch(key: str) -> bool:
    """Whether PyTorch leaves this config out of its own cache keys (an absolute path such as
    xpu.cutlass_dir, which follows the working directory; trace settings; thread counts)."""
    from dynamo_replay._torch import settings

    prefix = "config.inductor."
    if not key.startswith(prefix):
        return False
    ignored = settings.inductor_config_ignored_prefixes()
    return bool(ignored) and key[len(prefix) :].startswith(ignored)


def cpu_isa_flags() -> str:
    """The CPU features Inductor picks its vector ISA by, as PyTorch's CPU checks report
    them (no compiler probe, no Inductor import)."""
    from dynamo_replay._torch import inductor

    return ",".join([platform.machine(), *inductor.cpu_isa_features()])


def source_hash(filename: str, code: CodeType | None = None, lines: list[int] | None = None) -> tuple[list[int], str]:
    """([first, last], sha256 of those source lines) of a function, as the file reads now;
    ([], "") when the file cannot be read (code made by exec, a deleted file)."""
    if lines is None and code is not None:
        numbers = [line for *_, line in code.co_lines() if line is not None] + [code.co_firstlineno]
        lines = [min(numbers), max(numbers)]
    text = linecache.getlines(filename)
    if not lines or not text or lines[1] > len(text):
        return [], ""
    return lines, hashlib.sha256("".join(text[lines[0] - 1 : lines[1]]).encode()).hexdigest()
