"""Inductor as capture and replay reach it: its cache directory, the probe sources of its CPU
vector-ISA check, its compiler, its in-memory kernel maps, and the ISA probe's answers,
recorded at capture and reused at replay."""

from __future__ import annotations

import functools
import sys
from typing import Any

# The extras Inductor probes on top of an ISA: record key -> the ISA attribute its probe sets.
_ISA_EXTRAS = {"avx512_bf16": "_is_avx512_bf16_supported", "amx_fp16": "_is_amx_fp16_supported"}


def cpu_isa_features() -> list[str]:
    """The CPU features Inductor picks its vector ISA by that this CPU has, as PyTorch's own
    checks report them (torch.cpu: no compiler probe, no Inductor import)."""
    import torch

    names = ("avx2", "avx512", "vnni", "avx512_bf16", "amx_tile", "amx_fp16")
    return [name for name in names if getattr(torch.cpu, f"_is_{name}_supported", lambda: False)()]


def probed_vec_isas() -> list[dict[str, Any]] | None:
    """What Inductor's probe found in this process, or None if it never ran: each vector ISA it
    accepted, with the two extras it probes separately (AVX-512 bf16 conversions, AMX fp16)."""
    if "torch._inductor.cpu_vec_isa" not in sys.modules:
        return None
    from torch._inductor.cpu_vec_isa import valid_vec_isa_list

    if valid_vec_isa_list.cache_info().currsize == 0:
        return None
    return [
        {"isa": str(isa), **{key: bool(getattr(isa, attr, False)) for key, attr in _ISA_EXTRAS.items()}}
        for isa in valid_vec_isa_list()
    ]


def reuse_vec_isa_probe(recorded: list[Any]) -> bool:
    """Answers Inductor's vector-ISA probe (a compiler and a Python child process per ISA and
    extra) from the capture's record: PyTorch's own selection then runs with each compile
    check answered as it was at capture. Call only after checking that this CPU's feature flags
    are the captured ones (the fingerprint's cpu.flags). Returns whether the record was used."""
    from torch._inductor import cpu_vec_isa

    if cpu_vec_isa.valid_vec_isa_list.cache_info().currsize:
        return False  # already probed in this process
    found = {entry["isa"]: entry for entry in recorded if isinstance(entry, dict) and "isa" in entry}
    if len(found) != len(recorded):
        return False  # a record from before the extras were kept: probe as usual
    extras = {cpu_vec_isa.VecAVX512._avx512_bf16_code: "avx512_bf16", cpu_vec_isa.VecAMX._amx_fp16_code: "amx_fp16"}

    def answer(isa: Any, code: str) -> bool:
        entry = found.get(str(isa))
        return bool(entry) and bool(entry.get(extras[code], False) if code in extras else True)

    _clear_isa_caches(cpu_vec_isa)
    original = cpu_vec_isa.VecISA.check_build
    cpu_vec_isa.VecISA.check_build = answer  # type: ignore[method-assign]
    try:
        selected = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
    finally:
        cpu_vec_isa.VecISA.check_build = original  # type: ignore[method-assign]
    if selected != [entry["isa"] for entry in recorded]:
        _clear_isa_caches(cpu_vec_isa)  # let Inductor probe as usual
        return False
    return True


def _clear_isa_caches(cpu_vec_isa: Any) -> None:
    """Forgets every cached probe answer: the list, and each ISA's own cached __bool__."""
    cpu_vec_isa.valid_vec_isa_list.cache_clear()
    for isa in cpu_vec_isa.supported_vec_isa_list:
        for cls in type(isa).__mro__:
            for name in ("__bool__", "_VecISA__bool__impl"):
                cached = vars(cls).get(name)
                if hasattr(cached, "cache_clear"):
                    cached.cache_clear()
        for attr in _ISA_EXTRAS.values():
            vars(isa).pop(attr, None)


def cache_dir() -> str:
    from torch._inductor.runtime.cache_dir_utils import cache_dir as inductor_cache_dir

    return inductor_cache_dir()


def isa_probe_sources() -> set[str]:
    """The C++ sources Inductor's vector-ISA check compiles (the ISA classes' *_code attributes)."""
    from torch._inductor import cpu_vec_isa

    return {
        value.strip()
        for cls in vars(cpu_vec_isa).values()
        if isinstance(cls, type) and issubclass(cls, cpu_vec_isa.VecISA)
        for name, value in vars(cls).items()
        if name.endswith("_code") and isinstance(value, str)
    }


def clear_caches() -> None:
    """Inductor's in-memory maps from keys to files, when it is loaded (importing it costs a second)."""
    if "torch._inductor.utils" in sys.modules:
        sys.modules["torch._inductor.utils"].clear_caches()


def cpp_compiler() -> str:
    from torch._inductor.cpp_builder import get_cpp_compiler

    return get_cpp_compiler()


def enter_kernel_library(key: str, path: str) -> None:
    """Enters a kernel library into the maps from kernel key to loader of each of Inductor's C++
    code caches, as if this process had built it; each map's class loads it on first use."""
    from torch._inductor import codecache

    for owner in (codecache.CppCodeCache, codecache.CppPythonBindingsCodeCache, codecache.CppWrapperCodeCache):
        owner.cache.setdefault(key, functools.cache(functools.partial(owner._load_library, path, key)))
