"""Each compile's guards as structured data, read from the guard tree PyTorch renders.

Dynamo logs the whole tree (`dynamo_cpp_guards_str`): guard managers, one per value it reaches
(`source=L['x']`), and under them the guards, one per line as `KIND: check  # user code  #
file:line in function`. Capture keeps that text and adds this list: per guard its kind, the
source expression it checks, the check's code and the user line it came from. (Dynamo's guard
export hook would give the same, but only to code that passes it to torch.compile.)
"""

from __future__ import annotations

import re
from typing import Any

_LINE = re.compile(r"^(?P<bars>(?:\| )*)\+- (?P<body>.*)$")
_MANAGER = re.compile(r"^\w*GuardManager(?::\s*source=(?P<source>.*?), accessed_by=.*)?$")
_GUARD = re.compile(r"^(?P<kind>[A-Z][A-Z0-9_]+): (?P<rest>.*)$")
_WHERE = re.compile(r"^(?P<file>.+):(?P<line>\d+) in (?P<function>\S+)$")


def parse_guard_tree(text: str) -> list[dict[str, Any]]:
    """[{kind, source, code, user_code, file, line, function}] in tree order; `source` is the
    nearest enclosing guard manager's, empty at the root."""
    sources: list[str] = []  # by depth: the source of the manager open at that depth
    guards = []
    for raw in text.splitlines():
        match = _LINE.match(raw)
        if not match:
            continue
        depth, body = len(match["bars"]) // 2, match["body"]
        del sources[depth:]
        if manager := _MANAGER.match(body):
            sources.append(manager["source"] or "")
            continue
        guard = _GUARD.match(body)
        if not guard:
            continue
        parts = [part.strip() for part in guard["rest"].split("  # ")]
        entry: dict[str, Any] = {
            "kind": guard["kind"],
            "source": next((s for s in reversed(sources) if s), ""),
            "code": parts[0],
        }
        # Trailing comments: the user's source line, then where it is; or only a location.
        where = _WHERE.match(parts[-1]) if len(parts) > 1 else None
        if where:
            entry.update(file=where["file"], line=int(where["line"]), function=where["function"])
            if len(parts) > 2:
                entry["user_code"] = parts[-2]
        elif len(parts) > 1:
            entry["note"] = "  # ".join(parts[1:])
        guards.append(entry)
    return guards
