"""`python -m dynamo_replay why --verify STORE [COMPILE]`: prove the fix `why` advises.

The top advice that is one mechanical edit (`apply` in `why --json`: a `torch._check` inserted
before a line, a `mark_dynamic`/`mark_unbacked` before the first call, a mark_dynamic call made
`maybe_mark_dynamic` or given the range the code allows, a config flag after the imports) is
applied to a copy of the file in a temporary directory; the job is run three times in fresh
processes, the same way capture ran it (argv and working directory from the store): the original
copy and the edited copy under capture, and the edited copy eagerly (TORCHDYNAMO_DISABLE=1).
The answer: is the failure or recompile gone, and does the edited job print what it prints in
eager (numbers compared with a tolerance)? The user's files are never written.

Refuses, with the reason, when the job cannot be run again: no command line recorded, a module
job (`-m`), sources changed since the capture, or an edit in a file that is not the job's script
or a module beside it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynamo_replay import schema
from dynamo_replay.fingerprint import source_hash
from dynamo_replay.tools import run_inspect

RTOL, ATOL = 1e-4, 1e-5  # printed numbers of the compiled and the eager run
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan")


class Refused(Exception):
    """The job cannot be verified; the message says why and what would make it possible."""


@dataclass
class Run:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    problems: list[str] = field(default_factory=list)  # headlines of what why finds for the target function


@dataclass
class Verdict:
    compile_id: str
    function: str
    advice: dict[str, Any]
    file: str
    diff: str
    before: Run
    after: Run
    eager: Run
    fixed: bool
    same_outputs: bool | None  # None: the edited job failed, nothing to compare

    def to_json(self) -> dict[str, Any]:
        def run(r: Run) -> dict[str, Any]:
            return {"command": r.command, "returncode": r.returncode, "problems": r.problems}

        return {
            "compile_id": self.compile_id,
            "function": self.function,
            "advice": self.advice,
            "file": self.file,
            "diff": self.diff,
            "before": run(self.before),
            "after": run(self.after),
            "eager": run(self.eager),
            "fixed": self.fixed,
            "same_outputs": self.same_outputs,
        }


# Every run of the job starts from one random state, so a job that draws its inputs at random
# prints comparable numbers compiled and eager (Python imports sitecustomize from the path).
_SEEDED = """# written by dynamo-replay why --verify
import random
random.seed(0)
try:
    import torch
    torch.manual_seed(0)
except ImportError:
    pass
"""


def _why(store: str, compile_id: str | None = None) -> dict[str, Any]:
    done = run_inspect("why", "--json", store, *([compile_id] if compile_id else []))
    if done.returncode != 0:
        raise Refused(done.stderr.strip() or f"replay-inspect why failed on {store}")
    return json.loads(done.stdout)


def _target(answer: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(compile entry, advice) of the first compile whose advice has an edit to apply."""
    named = []
    for entry in answer.get("compiles", []):
        lists = [p.get("advice", []) for p in entry.get("problems", [])]
        lists.append((entry.get("recompile") or {}).get("advice", []))
        for advice in (a for lst in lists for a in lst):
            named.append(advice.get("kind", "?"))
            if advice.get("apply"):
                return entry, advice
    if not answer.get("compiles"):
        raise Refused("nothing to verify: why finds no failure, graph break or recompile")
    kinds = ", ".join(dict.fromkeys(named)) or "none"
    raise Refused(
        f"no advice is an edit --verify can apply (advice: {kinds}); torch_cond, loops and the like "
        "are code changes a person makes"
    )


def _job(store: str) -> tuple[dict[str, Any], list[tuple[str, list[int], str]]]:
    """The job's start facts (dynamo_replay.job) and each compiled function's (file, lines, sha256)."""
    from dynamo_replay._core import CodeObject, Store, TraceEvent

    job, sources = None, []
    for record in Store.open(store).records():
        if isinstance(record, TraceEvent) and record.name == schema.EVENT_JOB:
            job = json.loads(record.metadata_json)
        elif isinstance(record, CodeObject) and record.role == "original":
            fields = json.loads(record.fields_json)
            if fields.get("source_sha256"):
                sources.append((record.filename, fields["source_lines"], fields["source_sha256"]))
    if not job:
        raise Refused(f"{store} records no command line (captured before dynamo-replay recorded how a job started)")
    return job, sources


def _check_sources(job: dict[str, Any], sources: list[tuple[str, list[int], str]]) -> Path:
    """The job's script, refusing when it or a compiled function's source changed since capture."""
    if job.get("main_module") not in ("", "dynamo_replay.__main__", "__main__") or not job.get("script"):
        raise Refused("the job was run as a module (-m) or from no script file: --verify re-runs scripts only")
    script = Path(job["script"])
    try:
        digest = hashlib.sha256(script.read_bytes()).hexdigest()
    except OSError as error:
        raise Refused(f"the job's script {script} cannot be read: {error.strerror}") from None
    if job.get("script_sha256") and digest != job["script_sha256"]:
        raise Refused(f"{script} changed since the capture: capture it again, then verify")
    for filename, lines, sha in sources:
        if source_hash(filename, lines=lines)[1] != sha:
            raise Refused(f"{filename} lines {lines[0]}-{lines[1]} changed since the capture: capture it again")
    return script


def apply_edit(text: str, apply: dict[str, Any]) -> str:
    """`text` (a Python file) with one edit applied (docs/why.md, "why --verify")."""
    lines = text.splitlines(keepends=True)
    action, code = apply["action"], apply["code"]
    if action == "insert_before":
        index = int(apply["line"]) - 1
        if not 0 <= index < len(lines):
            raise Refused(f"line {apply['line']} is not in the file")
        indent = re.match(r"[ \t]*", lines[index]).group(0)
        lines.insert(index, f"{indent}{code}  # added by dynamo-replay why --verify\n")
    elif action == "config":
        at = _after_imports(lines)
        lines.insert(at, f"import torch._dynamo  # added by dynamo-replay why --verify\n{code}\n")
    elif action == "replace_mark":
        pattern = re.compile(
            r"torch\._dynamo\.mark_dynamic\(\s*"
            + re.escape(apply["name"])
            + r"\s*,\s*"
            + str(int(apply["dim"]))
            + r"\b"
        )
        hits = [i for i, line in enumerate(lines) if pattern.search(line)]
        if len(hits) != 1:
            raise Refused(
                f"found {len(hits)} calls `torch._dynamo.mark_dynamic({apply['name']}, {apply['dim']}...)`, "
                "expected one to replace"
            )
        line = lines[hits[0]]
        start = pattern.search(line).start()
        end = _call_end(line, start)
        if end < 0:
            raise Refused("the mark_dynamic call spans lines: replace it by hand")
        lines[hits[0]] = line[:start] + code + line[end:]
    else:
        raise Refused(f"unknown edit action {action!r}")
    return "".join(lines)


def _after_imports(lines: list[str]) -> int:
    """The index after the last top-level import that precedes any other top-level statement."""
    at = 0
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or line[0] in " \t" or stripped.startswith(("'", '"')):
            continue
        if stripped.startswith(("import ", "from ")):
            at = i + 1
        else:
            break
    return at


def _call_end(line: str, start: int) -> int:
    depth = 0
    for i in range(line.index("(", start), len(line)):
        depth += {"(": 1, ")": -1}.get(line[i], 0)
        if depth == 0:
            return i + 1
    return -1


def _run(
    job: dict[str, Any], script: Path, args: list[str], out: Path | None, env: dict[str, str], timeout: float
) -> Run:
    """The job's script run as capture ran it: under capture to `out`, or eagerly when out is None."""
    python = job.get("python") or sys.executable
    if not os.path.exists(python):
        python = sys.executable
    if out is None:
        command = [python, str(script), *args]
    elif job.get("main_module") == "dynamo_replay.__main__":
        command = [python, "-m", "dynamo_replay", "capture", "-o", str(out), str(script), *args]
    else:  # the job captures itself: its capture() writes where verify reads
        env = {**env, schema.VERIFY_STORE_ENV: str(out)}
        command = [python, str(script), *args]
    try:
        done = subprocess.run(
            command,
            cwd=job.get("cwd") or None,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return Run(command, -1, "", f"timed out after {timeout:.0f} s")
    return Run(command, done.returncode, done.stdout, done.stderr)


def _problems(store: Path, function: str) -> list[str]:
    """What why finds for `function` in a store: problem headlines and recompiles."""
    if not store.exists():
        return ["the job wrote no store"]
    answer = _why(str(store))
    found = []
    for entry in answer.get("compiles", []):
        if entry.get("function") != function:
            continue
        found += [p.get("headline", "") for p in entry.get("problems", [])]
        if entry.get("recompile"):
            found.append(f"{entry['compile_id']} compiled again: {entry['recompile'].get('detail', '')}")
    return found


def same_outputs(a: str, b: str) -> bool:
    """Two runs printed the same, numbers compared within RTOL/ATOL."""
    words_a, words_b = _NUMBER.split(a), _NUMBER.split(b)
    numbers_a, numbers_b = _NUMBER.findall(a), _NUMBER.findall(b)
    if words_a != words_b or len(numbers_a) != len(numbers_b):
        return False
    for x, y in zip(numbers_a, numbers_b):
        fx, fy = float(x), float(y)
        if not (fx == fy or (math.isnan(fx) and math.isnan(fy)) or abs(fx - fy) <= ATOL + RTOL * abs(fy)):
            return False
    return True


def verify(store: str, compile_id: str | None = None, timeout: float = 600) -> Verdict:
    job, sources = _job(store)
    answer = _why(store, compile_id)
    entry, advice = _target(answer)
    script = _check_sources(job, sources)
    apply = advice["apply"]
    edited_file = Path(apply.get("file") or script).resolve()
    if edited_file != script.resolve() and edited_file.parent != script.resolve().parent:
        raise Refused(
            f"the edit goes in {edited_file}: --verify substitutes only the job's script and modules beside it"
        )
    original = edited_file.read_text()
    edited = apply_edit(original, apply)
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            edited.splitlines(keepends=True),
            str(edited_file),
            f"{edited_file} (edited)",
        )
    )
    args = list(job.get("argv", [])[1:])
    with tempfile.TemporaryDirectory(prefix="dynrep-verify-") as tmp:
        work = Path(tmp)
        before_dir, after_dir = work / "before", work / "after"
        for directory, text in ((before_dir, original), (after_dir, edited)):
            directory.mkdir()
            (directory / "sitecustomize.py").write_text(_SEEDED)
            (directory / edited_file.name).write_text(text)
            if edited_file != script.resolve():
                shutil.copy(script, directory / script.name)

        # The copies come first on the path; the script's own folder still serves everything else.
        def env_for(directory: Path) -> dict[str, str]:
            path = os.pathsep.join(
                p for p in (str(directory), str(script.parent), os.environ.get("PYTHONPATH", "")) if p
            )
            return {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "ignore"}

        before = _run(job, before_dir / script.name, args, work / "before.dynrep", env_for(before_dir), timeout)
        after = _run(job, after_dir / script.name, args, work / "after.dynrep", env_for(after_dir), timeout)
        eager = _run(
            job, after_dir / script.name, args, None, {**env_for(after_dir), "TORCHDYNAMO_DISABLE": "1"}, timeout
        )
        function = entry.get("function", "")
        before.problems = _problems(work / "before.dynrep", function)
        after.problems = _problems(work / "after.dynrep", function)
    fixed = after.returncode == 0 and not after.problems
    same = same_outputs(after.stdout, eager.stdout) if after.returncode == 0 and eager.returncode == 0 else None
    return Verdict(
        entry.get("compile_id", ""), function, advice, str(edited_file), diff, before, after, eager, fixed, same
    )


def render(v: Verdict) -> str:
    def last_line(run: Run) -> str:
        lines = [line for line in run.stderr.strip().splitlines() if line.strip()]
        return lines[-1] if lines else f"exit {run.returncode}"

    out = [f"verify {v.compile_id} {v.function}: applied {v.advice['kind']} to a copy of {v.file}", v.diff.rstrip()]
    before = "; ".join(v.before.problems) or ("ok" if v.before.returncode == 0 else last_line(v.before))
    out.append(f"before the edit: {before}")
    if v.fixed:
        out.append("after the edit: fixed: no failure, graph break or recompile of " + v.function)
    else:
        rest = "; ".join(v.after.problems) or last_line(v.after)
        out.append(f"after the edit: not fixed: {rest}")
    if v.same_outputs is None:
        out.append("outputs: not compared (the edited job failed, compiled or eager)")
    else:
        out.append(
            "outputs: "
            + (
                "the edited job prints what it prints in eager"
                if v.same_outputs
                else "DIFFER from the edited job's eager run"
            )
        )
    return "\n".join(out) + "\n"
