"""A guard replay checks when the job reaches a frame, said as its user reads it: `check`'s
"replays if" line ("self has no hooks", "class TinyGPT unchanged", "global ACT is function
relu"), with Dynamo's raw guard kept for `--verbose` and the JSON."""

from __future__ import annotations

import re
from typing import Any

# Dynamo's sources, in the user's terms: a local by its name, a global by "global NAME".
_LOCAL = re.compile(r"L\['(\w+)'\]")
_GLOBAL = re.compile(r"G\['(\w+)'\]")
_DYNAMO_IMPORT = re.compile(r"G\['__import_(\w+)'\]")
# What a description carries that a user does not need to read: content hashes and the
# defaults of a function (a changed default is still caught: the check compares them all).
_HASH = re.compile(r" (code|contents) [0-9a-f]{8,}")


def in_words(guard: Any) -> str:
    """One dropped guard (DroppedGuard: kind, source, value) as a condition in words."""
    who = _who(guard.source)
    value = _HASH.sub("", (guard.value or "").split("; ")[0])
    if guard.kind == "MODULE_HOOKS":
        module = _LOCAL.search(guard.source)  # the hooks of L['self']: self's
        owner = _who(module.group(0) if module else guard.source)
        return f"{owner} has no hooks" if value == "tuple []" else f"{owner} has the hooks it had at capture"
    if guard.kind == "CLASS_CONTENTS":
        name = value.removeprefix("class ")
        module, _, short = name.rpartition(".")
        return f"class {short} ({module}) unchanged" if module else f"class {short} unchanged"
    if not value:
        return f"{who} is as at capture"
    return f"{who} is {value}"


def _who(source: str) -> str:
    """A source expression in the user's terms."""
    # Dynamo reaches a module's attributes through a global of its own, named after the module.
    source = _DYNAMO_IMPORT.sub(lambda found: found.group(1).replace("_dot_", "."), source)
    text = _LOCAL.sub(r"\1", source)
    if text.startswith("G['"):
        return "global " + _GLOBAL.sub(r"\1", text, count=1)
    return _GLOBAL.sub(r"\1", text)
