"""What a replay did, as a value: printed at the end of a replay, returned as `replay.summary`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the package's import stays small: misses.py is read when a summary is printed
    from dynamo_replay.replay.misses import Miss


@dataclass
class CompiledFrame:
    """A frame that compiled while replay was active, and why."""

    function: str
    filename: str
    line: int
    reason: str
    seconds: float
    miss: Miss | None = None  # a call failed every saved entry: the nearest entry's failed guard

    def __str__(self) -> str:
        return f"{self.function} ({self.filename}:{self.line}): {self.reason} [{self.seconds:.2f} s]"


@dataclass
class ReplaySummary:
    store: str
    rank: str | None = None  # in a job of many ranks whose rank replays a store of its own: which
    loaded: bool = False
    refused: str | None = None
    differences: list[str] = field(default_factory=list)
    precompiled: bool = False  # captured with precompile: Dynamo's frames are in the store too
    entries_installed: int = 0  # saved (frame, guards) entries in force
    kernel_libraries: int = 0
    isa_probe_reused: bool = False
    captured_compiles: int = 0
    captured_compile_seconds: float = 0.0
    not_packaged: list[str] = field(default_factory=list)  # frames the capture could not save, with why
    skipped: list[str] = field(default_factory=list)  # saved frames not used here, with why
    recreated: list[str] = field(default_factory=list)  # guard values rebuilt from the live function
    compiled: list[CompiledFrame] = field(default_factory=list)
    captured_trace_seconds: float = 0.0  # Dynamo's share of the capture's compile time
    # The start, in its parts (the summary's first lines):
    import_seconds: float = 0.0  # importing Dynamo and Inductor's runtime, which torch.compile does anyway
    load_seconds: float = 0.0  # reading and checking the store, putting its artifacts in place
    read_seconds: float = 0.0  # of load_seconds: reading the store and every check before it is used
    install_seconds: float = 0.0  # installing saved frames at their function's first call
    graph_load_seconds: float = 0.0  # of install_seconds: the compiled graphs' code and kernel libraries
    call_check_seconds: float = 0.0  # the first run of replay's own checks on calls (dropped guards, DDP splits, ...)
    generations: int = 0  # the capture and each update since (dynamo_replay.generations)
    saved_frames: list[str] = field(default_factory=list)  # frames the store can replay without Dynamo
    hits: dict[str, int] = field(default_factory=dict)  # saved frame -> calls of its saved graphs here
    generation_hits: dict[int, int] = field(default_factory=dict)  # generation -> calls of the graphs it saved
    updated: str | None = None  # with update=True: what the update did to the store
    compiler: str = ""  # whether Inductor's compiler was imported, and why (_torch/deferred_compiler.py)

    @property
    def unused_frames(self) -> list[str]:
        """Saved frames this run never ran from the store."""
        return [frame for frame in self.saved_frames if not self.hits.get(frame)]

    @property
    def inert(self) -> str | None:
        """Why most of a loaded store's saved frames went unused, or None: the "installed but
        inert" failure, said first in the summary rather than found by timing restarts."""
        if not self.loaded or not self.precompiled or not self.saved_frames:
            return None
        unused = self.unused_frames
        if len(unused) * 2 <= len(self.saved_frames):
            return None
        causes: dict[str, int] = {}
        for entry in self.skipped:
            why = entry.split(": ", 1)[-1]
            causes[why] = causes.get(why, 0) + 1
        for frame in self.compiled:
            causes[frame.reason] = causes.get(frame.reason, 0) + 1
        cause = (
            max(causes, key=lambda why: causes[why])
            if causes
            else ("the job never called them (torch.compile not reached, or other functions compiled)")
        )
        return (
            f"{len(unused)} of {len(self.saved_frames)} saved frames unused: {cause}; "
            f"`python -m dynamo_replay check {self.store}` says why before a start"
        )

    @property
    def compile_seconds(self) -> float:
        return sum(frame.seconds for frame in self.compiled)

    @property
    def compile_seconds_saved(self) -> float:
        """The capture's compile time, less what compiling and loading took under replay:
        what a cold start of this job would have paid on top."""
        if not self.loaded:
            return 0.0
        return self.captured_compile_seconds - self.compile_seconds - self.load_seconds - self.install_seconds

    @property
    def seconds_saved_over_warm_cache(self) -> float:
        """At least what a restart with PyTorch's warm local caches would have paid on top:
        they skip Inductor but Dynamo still traces every frame."""
        if not self.loaded or not self.precompiled:
            return 0.0
        return max(0.0, self.captured_trace_seconds - self.compile_seconds - self.load_seconds - self.install_seconds)

    def as_dict(self) -> dict[str, Any]:
        fields = {name: getattr(self, name) for name in self.__dataclass_fields__}
        fields["compiled"] = [
            {**vars(frame), "miss": frame.miss.as_dict() if frame.miss else None} for frame in self.compiled
        ]
        fields["compile_seconds_saved"] = self.compile_seconds_saved
        fields["seconds_saved_over_warm_cache"] = self.seconds_saved_over_warm_cache
        return fields

    def _start_lines(self) -> list[str]:
        """Where the start went: replay's own work in its parts, then what torch.compile pays anyway."""
        own = self.load_seconds + self.install_seconds + self.call_check_seconds
        parts = [
            ("store read and checked", self.read_seconds),
            ("artifacts put in place", self.load_seconds - self.read_seconds),
            ("saved frames' guards built and checked", self.install_seconds - self.graph_load_seconds),
            ("compiled graphs and kernels loaded", self.graph_load_seconds),
            ("checks on first calls", self.call_check_seconds),
        ]
        return [
            f"  start: {own:.2f} s of replay's own work: " + ", ".join(f"{what} {s:.2f} s" for what, s in parts),
            f"    and {self.import_seconds:.2f} s importing Dynamo and Inductor's runtime, as torch.compile does"
            + (f"; Inductor's compiler {self.compiler}" if self.compiler else ""),
        ]

    def __str__(self) -> str:
        if not self.loaded:
            lines = [f"dynamo-replay: {self.store} not loaded: {self.refused}"]
            lines += [f"  {difference}" for difference in self.differences]
            return "\n".join(lines)
        mode = (
            f"{self.entries_installed} saved frames in force"
            if self.precompiled
            else "captured with --no-precompile: Dynamo traces each frame, the rest comes from the store"
        )
        inert = self.inert
        lines = [
            f"dynamo-replay: {self.store} loaded but mostly inert: {inert}"
            if inert
            else f"dynamo-replay: {self.store}",
            *self._start_lines(),
            f"  {mode}, {self.kernel_libraries} kernel libraries"
            + (", CPU ISA probe reused" if self.isa_probe_reused else ""),
            *([f"  {self.rank}"] if self.rank else []),
            *(
                [f"  {self.generations} generations (the capture and {self.generations - 1} updates)"]
                if self.generations > 1
                else []
            ),
            *(
                [
                    f"  saved frames run from the store: {len(self.saved_frames) - len(self.unused_frames)} of "
                    f"{len(self.saved_frames)}"
                ]
                if self.precompiled and self.saved_frames
                else []
            ),
            f"  captured: {self.captured_compiles} compiles, {self.captured_compile_seconds:.2f} s",
            f"  compiled here: {len(self.compiled)} frames ({self.compile_seconds:.2f} s)",
        ]
        lines += [f"    {frame}" for frame in self.compiled]
        if any(frame.miss for frame in self.compiled):
            from dynamo_replay.replay.misses import UPDATE_FIX

            lines.append(f"    to replay them next time: {UPDATE_FIX.replace('STORE', self.store)}")
        if self.not_packaged:
            lines.append(
                "  frames PyTorch's precompile could not save (Dynamo traces them; graphs come from the store):"
            )
            lines += [f"    {entry}" for entry in self.not_packaged]
        if self.skipped:
            lines.append("  saved frames not used (they compile as usual):")
            lines += [f"    {entry}" for entry in self.skipped]
        if self.updated:
            lines.append(f"  update: {self.updated}")
        lines.append(
            f"  compile time saved: {self.compile_seconds_saved:.2f} s against a cold compile, "
            + (
                f"at least {self.seconds_saved_over_warm_cache:.2f} s against PyTorch's warm caches (Dynamo tracing)"
                if self.precompiled
                else "about none against PyTorch's warm caches"
            )
        )
        return "\n".join(lines)
