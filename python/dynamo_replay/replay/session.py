"""The `replay` block (the package docstring, dynamo_replay.replay, says what it does)."""

from __future__ import annotations

import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from types import TracebackType
from typing import Any

from dynamo_replay import _torch, generations, kernels, ranks, schema
from dynamo_replay._torch import install as _torch_install
from dynamo_replay.errors import ReplayError, ReplayRefusedError, ReplayWarning
from dynamo_replay.replay.checks import (
    Contents,
    Refused,
    captured_settings,
    check_all,
    compiler_stand_in_needed,
    read_store,
)
from dynamo_replay.replay.frame_checks import FrameChecks
from dynamo_replay.replay.misses import Miss, explain, reads
from dynamo_replay.replay.summary import CompiledFrame, ReplaySummary

__all__ = ["replay", "ReplaySummary", "CompiledFrame"]


def _in_one_line(refusal: Refused) -> str:
    """A refusal with its first differing factor: what a rank's peers are told."""
    if not refusal.differences:
        return str(refusal)
    more = len(refusal.differences) - 1
    return f"{refusal}: {refusal.differences[0]}" + (f" (and {more} more)" if more else "")


class replay:  # noqa: N801 - a context manager, like capture
    """Run the torch.compile work in this block from the store at `path` instead of compiling.

    Functions must be passed to torch.compile inside the block (PyTorch attaches its saved
    frames to the compiled wrapper when it is made). `strict=True` raises ReplayRefusedError
    when the store cannot be used, and ReplayError naming the frame and the cause when a saved
    frame cannot be used or anything compiles.
    `key` (or DYNAMO_REPLAY_KEY) makes replay refuse a store whose signature does not verify.
    The summary is printed to stderr at the end unless `verbose=False`; it is `.summary`.
    """

    def __init__(
        self, path: str, *, strict: bool = False, key: str | bytes | None = None, verbose: bool = True
    ) -> None:
        self.path = str(path)
        self.strict = strict
        self.key = key
        self.verbose = verbose
        self._summary = ReplaySummary(store=self.path)
        self._active = False
        self._undo: list[Callable[[], None]] = []
        self._pid = os.getpid()  # a forked child leaving the block prints no summary of its own
        self._metrics_before = 0
        self._checks_before = 0.0  # seconds in replay's call-time checks before this block
        self._contents: Contents | None = None
        self._reasons: dict[str, str] = {}  # frame -> why it compiles here: not saved, or saved but not used
        self._refused: dict[str, str] = {}  # frame -> why a call refused its saved entry (SafeDynamoCache.refused)
        self._agreement: ranks.Agreement | None = None  # in a job of many ranks: all use the store or none
        self._hits: dict[tuple[int, str], int] = {}  # (generation, frame) -> calls (SafeDynamoCache.hits)
        self._deferred_compiler: _torch.deferred_compiler.DeferredCompiler | None = None
        # frame -> for each of its compiles here after a call failed every saved entry, in order:
        # the nearest entry's failed guard, said in the user's terms (replay/misses.py)
        self._missed: dict[str, list[Miss]] = {}

    @property
    def summary(self) -> ReplaySummary:
        """What replay loaded and what compiled anyway so far."""
        if self._active:
            self._collect_compiles()
        return self._summary

    def __enter__(self) -> replay:
        start = time.perf_counter()
        _torch.import_compiler()  # what torch.compile imports anyway; timed apart from replay's own work
        self._summary.import_seconds = time.perf_counter() - start
        start = time.perf_counter()
        job = ranks.job_rank()
        path, self._summary.rank = ranks.store_for_rank(self.path, job)
        self._agreement = ranks.Agreement(job) if job is not None else None
        if path != self.path:  # a store of this rank's own: its saved frames must not reach rank 0's
            # through the Inductor cache they share
            self._undo.append(kernels.PrivateCacheDir(with_isa_probes=False).restore)
        try:
            contents = read_store(path)
            libraries = check_all(contents, self.key, _torch.PRECOMPILE_SETTINGS)
            settings = captured_settings(contents.data.environment, _torch.PRECOMPILE_SETTINGS)
            self._summary.read_seconds = time.perf_counter() - start
            self._load_or_refuse(contents, settings, libraries)
        except Refused as refusal:  # nothing has changed, or every change was undone
            self._summary.refused, self._summary.differences = str(refusal), refusal.differences
            message = str(self._summary)
            if self.strict:
                raise ReplayRefusedError(message) from None
            warnings.warn(message + "\n  the job compiles as usual", ReplayWarning, stacklevel=2)
            if self._agreement is not None:  # every rank then says which rank refused, and the factor
                self._undo.append(self._agreement.refuse_at_compile_start(_in_one_line(refusal)))
            return self
        self._summary.loaded = self._active = True
        runtime = self._deferred_compiler.runtime_import_seconds if self._deferred_compiler else 0.0
        self._summary.load_seconds = time.perf_counter() - start - runtime
        self._summary.import_seconds += runtime
        return self

    def _load_or_refuse(
        self, contents: Contents, settings: tuple[tuple[str, str, Any], ...], libraries: dict[str, bytes]
    ) -> None:
        """_load, with any failure undone and turned into a refusal: the job then compiles as
        it would without replay."""
        try:
            self._load(contents, settings, libraries)
        except Refused:
            self._undo_all()
            raise
        except Exception as error:
            self._undo_all()
            raise Refused(f"loading the store failed: {type(error).__name__}: {error}") from None

    def _every_rank_agrees(self) -> bool:
        """Before this rank's first saved frame is installed: whether every rank of the job
        uses its store. When one refused, nothing more is installed and every frame compiles."""
        if self._agreement is None:
            return True
        decision = self._agreement.use()
        if decision == "use":
            return True
        if self._summary.loaded:
            self._summary.loaded = self._active = False
            self._summary.refused = f"not used on any rank of the job: {decision}"
            message = str(self._summary)
            if self.strict:
                raise ReplayRefusedError(message)
            warnings.warn(message + "\n  every rank compiles as usual", ReplayWarning, stacklevel=2)
        return False

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._active:
            self._collect_compiles()
        self._active = False
        self._undo_all()
        if self.verbose and self._summary.loaded and os.getpid() == self._pid:
            print(self._summary, file=sys.stderr)
        if self.strict and exc is not None and "torch.compile stance is 'fail_on_recompile'" in str(exc):
            raise ReplayError(self._strict_message(str(exc))) from exc

    def _undo_all(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _load(
        self, contents: Contents, settings: tuple[tuple[str, str, Any], ...], libraries: dict[str, bytes]
    ) -> None:
        """Puts the store's artifacts in place; every check has passed."""
        import torch.compiler

        summary = self._summary
        self._contents = contents
        artifacts = contents.artifacts
        identity = compiler_stand_in_needed(artifacts)
        if identity is not None:
            self._undo.append(kernels.CompilerStandIn(identity).remove)
        # Put back only if loading fails: see _torch.PRECOMPILE_SETTINGS.
        undo_settings = _torch.apply_settings(settings)
        self._undo.append(undo_settings)
        summary.precompiled = contents.precompiled
        self._defer_compiler(contents.data.output_code)
        summary.kernel_libraries = len(libraries)
        kernels.restore_kernel_libraries(libraries)
        if contents.data.vec_isa is not None:
            summary.isa_probe_reused = _torch.reuse_vec_isa_probe(contents.data.vec_isa)
        later_packages: dict[str, list[tuple[int, bytes]]] = {}
        try:
            torch.compiler.load_cache_artifacts(artifacts[schema.MEGA_CACHE_NAME][1])
            for generation in generations.generations(artifacts)[1:]:  # what each update added, in order
                name = generations.artifact_name(generation, schema.MEGA_CACHE_NAME)
                for key, package in _torch_install.load_later_generation(artifacts[name][1]).items():
                    later_packages.setdefault(key, []).append((generation, package))
        except Exception as error:  # PyTorch's own loader: any failure means nothing usable
            raise Refused(f"PyTorch could not load the store's cache artifacts: {error!r}") from None
        summary.generations = len(generations.generations(artifacts))
        summary.saved_frames = [f for f in contents.data.frames if f not in contents.data.not_saved]
        done = [m for m in contents.data.compiles if not m.get("fail_type")]
        summary.captured_compiles = len(done)
        summary.captured_compile_seconds = sum(m.get("entire_frame_compile_time_s") or 0.0 for m in done)
        summary.captured_trace_seconds = sum(
            max(0.0, (m.get("entire_frame_compile_time_s") or 0.0) - (m.get("backend_compile_time_s") or 0.0))
            for m in done
        )
        summary.not_packaged = [f"{frame}: {why}" for frame, why in contents.data.not_saved.items()]
        self._reasons.update(contents.data.not_saved)
        _torch.skip_unique_ids(contents.data.unique_ids)
        self._undo.append(_torch.LiftedOptimizerState().remove)  # as at capture: the step's graph is saved
        if contents.precompiled:
            checks = FrameChecks(contents.data)
            cache = _torch_install.SafeDynamoCache(
                checks, self._installed, contents.data.module_globals, self._every_rank_agrees, later_packages
            )
            self._hits = cache.hits
            self._refused = cache.refused
            self._undo.append(_torch.settings.register_bytecode_hook(lambda code, _: self._missed_entries(cache, code)))
            self._undo.append(cache.remove)
            safety = _torch.PrecompileSafety(lambda frame, reason: None)  # recompiles here: same safety
            self._undo.append(safety.remove)
            self._undo.append(_torch.StableAutogradCacheKeys().remove)  # a frame compiled here finds its graphs
            self._undo.append(_torch.quiet_dropped_guards())
            self._undo.append(_torch.quiet_missing_backend())  # named in the summary instead
        elif self._agreement is not None:  # Dynamo traces every frame here, as on a rank that refused
            self._undo.append(self._agreement.refuse_at_compile_start("its store was captured with --no-precompile"))
        self._observe(torch)
        self._undo.remove(undo_settings)  # loaded: the settings stay

    def _defer_compiler(self, facts: dict[str, Any] | None) -> None:
        """Leaves Inductor's compiler unimported until a frame compiles (_torch/deferred_compiler.py),
        where the store says what its graphs need instead."""
        why_not = _torch.deferred_compiler.why_not_deferred(facts)
        if why_not or facts is None:
            self._summary.compiler = f"imported: {why_not}"
            return
        self._deferred_compiler = _torch.deferred_compiler.DeferredCompiler(facts)
        self._undo.append(self._deferred_compiler.remove)

    def _missed_entries(self, cache: _torch_install.SafeDynamoCache, code: Any) -> None:
        """When a frame with saved entries compiles: which guard of the nearest entry failed,
        and what it reads now (the summary's reason for it). Explaining never fails the job."""
        found = cache.entries.get(id(code))
        if found is None or found[0] is not code:
            return
        try:
            scopes = _torch.settings.compiling_frame_scopes()
            failed = _torch_install.nearest_failure(found[1], *scopes, reads) if scopes else None
            if failed is None:
                return
            miss = explain(
                failed.text, failed.now, failed.has_now, failed.caller, failed.library_line, failed.caller_names
            )
        except Exception:
            return
        self._missed.setdefault(_torch.guards.code_key(code), []).append(miss)

    def _installed(self, function: str, report: _torch_install.InstallReport) -> None:
        self._summary.install_seconds += report.seconds
        self._summary.graph_load_seconds += report.graph_seconds
        self._summary.entries_installed += report.installed
        self._summary.skipped += [f"{frame}: {why}" for frame, why in report.skipped]
        self._summary.recreated += report.recreated
        self._reasons.update(report.skipped)
        if self.strict and report.skipped:
            frame, why = report.skipped[0]
            raise ReplayError(f"strict replay: a saved frame of {function} cannot be used: {frame}: {why}")

    def _observe(self, torch: Any) -> None:
        self._metrics_before = len(_torch.settings.compilation_metrics())
        self._checks_before = _torch.call_checks.CLOCK.seconds
        if self.strict and self._summary.precompiled:  # otherwise Dynamo has to trace every frame
            self._undo.append(_torch.settings.fail_on_recompile())

    def _strict_message(self, error: str) -> str:
        """What PyTorch's fail_on_recompile error says, with the frame's cause from the store."""
        found = re.search(r"filename: '([^']*)', function name: '([^']*)'", error)
        if not found:
            return f"strict replay: a frame would compile: {error.splitlines()[0]}"
        filename, function = found.groups()
        prefix = f"{function} ({filename}:"  # the error gives the line running, not the first line
        for frame, why in self._reasons.items():
            if frame.startswith(prefix):
                return f"strict replay: {frame} would compile: {why}"
        failures = "\n".join(
            "  " + line.strip()
            for line in error.splitlines()[1:]
            if line.strip().startswith(("- ", "verbose_code_parts="))
        )
        return (
            f"strict replay: {function} ({filename}) would compile: the call failed the guards of every saved "
            f"entry" + (f"\n{failures}" if failures else "")
        )

    def _why_compiled(self, function: str, filename: str, line: int) -> str:
        name = schema.frame_name(function, filename, line)
        if name in self._reasons:
            return self._reasons[name]
        assert self._contents is not None
        if name in self._refused:
            return self._refused[name]
        if name in self._contents.data.frames:
            if not self._summary.precompiled:
                return "traced again (captured with --no-precompile)"
            return "the call failed the guards of every saved entry"
        if function.startswith("torch_dynamo_resume_in_") and self._summary.skipped:
            # Dynamo made it while compiling a frame replay did not use; its lines can differ from capture's.
            return "resumes a frame that compiled here (its saved frame was not used)"
        return "this frame was not compiled during capture"

    def _collect_compiles(self) -> None:
        self._summary.call_check_seconds = _torch.call_checks.CLOCK.seconds - self._checks_before
        if self._deferred_compiler is not None:
            imported = self._deferred_compiler.imported
            self._summary.compiler = (
                f"imported when first needed ({', '.join(imported)})" if imported else "not imported"
            )
        get_compilation_metrics = _torch.settings.compilation_metrics
        hits: dict[str, int] = {}
        for (_, frame), count in self._hits.items():
            hits[frame] = hits.get(frame, 0) + count
        self._summary.hits = hits
        self._summary.generation_hits = {}
        for (generation, _), count in self._hits.items():
            self._summary.generation_hits[generation] = self._summary.generation_hits.get(generation, 0) + count

        compiled, taken = [], {}
        for metrics in get_compilation_metrics()[self._metrics_before :]:
            if not metrics.co_name:  # PyTorch also records the loading of a saved frame, unnamed
                continue
            where = (metrics.co_name, metrics.co_filename or "?", metrics.co_firstlineno or 0)
            name = schema.frame_name(*where)
            misses = self._missed.get(name, [])
            miss = misses[taken.get(name, 0)] if taken.get(name, 0) < len(misses) else None
            taken[name] = taken.get(name, 0) + (miss is not None)
            if name in self._refused:  # one of replay's own checks on calls said why, in full
                miss, reason = None, self._refused[name]
            elif miss is not None:
                reason = f"the call failed the guards of every saved entry: {miss}"
            else:
                reason = metrics.recompile_reason or self._why_compiled(*where)
            compiled.append(
                CompiledFrame(*where, reason=reason, seconds=metrics.entire_frame_compile_time_s or 0.0, miss=miss)
            )
        self._summary.compiled = compiled
