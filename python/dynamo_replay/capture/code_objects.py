"""The code objects Dynamo compiles: each original and transformed code object as a CodeObject
record (fields, bytecode, disassembly), and what replay checks of them (each frame's name and
source hash) and of the transformed code (the module globals it reads)."""

from __future__ import annotations

import dis
import json
from types import CodeType
from typing import TYPE_CHECKING, Any

from dynamo_replay import _torch, schema
from dynamo_replay._core import CodeObject
from dynamo_replay.fingerprint import source_hash

if TYPE_CHECKING:
    from dynamo_replay.capture.recording import Recording

_FIELDS = (
    "co_name",
    "co_qualname",
    "co_filename",
    "co_firstlineno",
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_nlocals",
    "co_stacksize",
    "co_flags",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
)


def code_fields(code: CodeType) -> dict[str, Any]:
    fields = {name: getattr(code, name) for name in _FIELDS}
    fields["co_consts"] = [repr(c) for c in code.co_consts]
    fields["co_linetable"] = code.co_linetable.hex()
    fields["co_exceptiontable"] = code.co_exceptiontable.hex()
    fields["co_lines"] = [list(t) for t in code.co_lines()]
    fields["source_lines"], fields["source_sha256"] = source_hash(code.co_filename, code)
    return fields


class CodeObjects:
    def __init__(self, session: Recording) -> None:
        self._session = session
        self.module_globals: dict[str, str] = {}  # see _torch.module_globals

    def compiled(self, compile_id: tuple[int, int, int], code: CodeType, new_code: CodeType) -> None:
        """Dynamo's bytecode hook saw `code` compiled to `new_code`."""
        store = self._session.store
        for role, c in (("original", code), ("transformed", new_code)):
            fields = code_fields(c)
            if role == "original":
                self.keep_source(c, fields)
            store.put(
                CodeObject(
                    compile_id=compile_id,
                    role=role,
                    name=c.co_qualname,
                    filename=c.co_filename,
                    first_line=c.co_firstlineno,
                    fields_json=json.dumps(fields, default=repr),
                    bytecode_key=store.put_blob(c.co_code),
                    disassembly_key=store.put_blob(dis.Bytecode(c).dis().encode()),
                )
            )
        if self._session.precompile:
            self.module_globals.update(_torch.module_globals(new_code))

    def keep_source(self, code: CodeType, fields: dict[str, Any]) -> None:
        data = self._session.replay_data
        name = schema.frame_name(code.co_name, code.co_filename, code.co_firstlineno)
        if name not in data.frames:
            data.frames.append(name)
        if fields["source_sha256"]:
            data.sources.append((code.co_qualname, code.co_filename, fields["source_lines"], fields["source_sha256"]))
