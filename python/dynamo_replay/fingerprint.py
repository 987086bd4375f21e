"""The environment fingerprint a store records: everything that decides whether code compiled
in one process is valid in another (torch build, Python, CPU vector ISA, C++ compiler, and the
configs that affect compilation)."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys


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
        return "{" + ", ".join(f"{_canonical(k)}: {_canonical(v)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_canonical(v) for v in value) + "]"
    return repr(value)


def _config_entries(prefix: str, module) -> dict[str, str]:
    """The module's configs that affect compilation (not marked compile-ignored)."""
    values = module._get_dict(ignored_keys=list(module._compile_ignored_keys), readonly_values=True)
    return {f"{prefix}.{key}": _canonical(value) for key, value in values.items()}


def environment_fingerprint() -> dict[str, str]:
    """Fingerprint entries, name -> value, all strings. Imports torch."""
    import torch
    import torch._dynamo.config
    import torch._functorch.config
    import torch._inductor.config


    # The compiler Inductor would pick: the first name its config gives (cpp_builder, which
    # resolves it fully, costs a second to import in a job that never uses Inductor).
    cxx = next((c for c in torch._inductor.config.cpp.cxx if c), "c++")
    entries = {
        "torch.version": torch.__version__,
        "torch.git_version": torch.version.git_version,
        "torch.debug": str(torch.version.debug),
        "python.version": platform.python_version(),
        "python.cache_tag": sys.implementation.cache_tag,
        "machine": platform.machine(),
        "platform": platform.platform(),
        "cpu.capability": torch.backends.cpu.get_cpu_capability(),
        "cxx.compiler": _compiler_version(cxx),
    }
    entries.update(_config_entries("config.dynamo", torch._dynamo.config))
    entries.update(_config_entries("config.inductor", torch._inductor.config))
    entries.update(_config_entries("config.functorch", torch._functorch.config))
    return entries
