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
# A keyword argument, a module's parameter, buffer or submodule, a size or stride by index.
_KWARGS = re.compile(r"L\['kwargs'\]\['(\w+)'\]")
_SUBMODULE = re.compile(r"\._(?:modules|parameters|buffers)\['(\w+)'\]")
_SIZE_INDEX = re.compile(r"\.(size|stride)\(\)\[(\d+)\]")
# What a description carries that a user does not need to read: content hashes and the
# defaults of a function (a changed default is still caught: the check compares them all).
_HOOKS_OF = re.compile(r"tuple\((.+?)\._forward_pre_hooks\b")
_HASH = re.compile(r" (code|contents) [0-9a-f]{8,}")


def in_words(guard: Any) -> str:
    """One dropped guard (DroppedGuard: kind, source, value) as a condition in words."""
    who = user_source(guard.source)
    value = _HASH.sub("", (guard.value or "").split("; ")[0])
    if guard.kind == "MODULE_HOOKS":
        owner = hooks_owner(guard.source)
        return f"{owner} has no hooks" if value == "tuple []" else f"{owner} has the hooks it had at capture"
    if guard.kind == "CLASS_CONTENTS":
        name = value.removeprefix("class ")
        module, _, short = name.rpartition(".")
        return f"class {short} ({module}) unchanged" if module else f"class {short} unchanged"
    if not value:
        return f"{who} is as at capture"
    return f"{who} is {value}"


def hooks_owner(source: str) -> str:
    """The module whose hooks a MODULE_HOOKS source reads, in the user's terms: `self.inner` for
    `(tuple(L['self']._modules['inner']._forward_pre_hooks.values()) + ...)`."""
    found = _HOOKS_OF.search(source) or _LOCAL.search(source)
    return user_source(found.group(1) if found.re is _HOOKS_OF else found.group(0)) if found else user_source(source)


def user_source(source: str) -> str:
    """A source expression in the user's terms: `L['kwargs']['ids'].size()[1]` is `ids.size(1)`,
    `L['self']._modules['lin']` is `self.lin`, `G['SCALE']` is `global SCALE`."""
    # Dynamo reaches a module's attributes through a global of its own, named after the module.
    source = _DYNAMO_IMPORT.sub(lambda found: found.group(1).replace("_dot_", "."), source)
    source = _KWARGS.sub(r"\1", source)
    source = _SUBMODULE.sub(r".\1", source)
    source = _SIZE_INDEX.sub(r".\1(\2)", source)
    text = _LOCAL.sub(r"\1", source)
    if text.startswith("G['"):
        return "global " + _GLOBAL.sub(r"\1", text, count=1)
    return _GLOBAL.sub(r"\1", text)
