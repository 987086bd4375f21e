"""One table of programs, one line each, whose answer depends on something a guard checks and
that differs between the captured process and the replaying one (DYNREP_CHANGED names the
cases whose value differs). Each row says which guard kinds its program makes Dynamo emit
(checked against PyTorch), how replay handles it (the guard table, _torch.guards.GUARD_TABLE),
and whether the right answer depends on dynamo-replay's own checks (with them switched off the
replay must then be wrong, which proves the test can fail).

A row: name -> (guard kinds, disposition, needs replay's checks, module setup, compiled body).
The setup runs at import with CHANGED true in the changed process; the body is `f(x)`'s
return expression. CONTEXT, when the setup defines it, is entered around each call.

Releases differ: a row whose guard kind a release adds runs from that release on (SINCE), and
a row that needs replay's checks only before a release that keeps the guard itself says so
(KEPT_BY_PYTORCH_FROM); on the releases that keep it, the test proves PyTorch alone is right.
"""

from __future__ import annotations

from pathlib import Path

KEPT, RECHECKED, COMPILED = "kept", "rechecked", "compiled"

# A function made by a factory, closing over `held`: CHECK(v) is v * 2.0 where `test` holds.
_FACTORY = (
    "def make(held):\n    def check(v):\n        return v * (2.0 if {test} else 3.0)\n    return check\n"
    "CHECK = make({held})"
)

CASES: dict[str, tuple[tuple[str, ...], str, bool, str, str]] = {
    "enum_member": (
        ("ID_MATCH",),
        RECHECKED,
        True,
        "class Kind(enum.Enum):\n    A = 1\n    B = 2\nKIND = Kind.B if CHANGED else Kind.A",
        "x * (2.0 if KIND is Kind.A else 3.0)",
    ),
    "function_default": (
        ("CLOSURE_MATCH", "EQUALS_MATCH"),
        RECHECKED,
        True,
        "def post(v, p=3.0 if CHANGED else 2.0):\n    return v * p",
        "post(x)",
    ),
    "function_kwdefault": (
        ("CLOSURE_MATCH", "EQUALS_MATCH"),
        RECHECKED,
        True,
        "def post(v, *, p=3.0 if CHANGED else 2.0):\n    return v * p",
        "post(x)",
    ),
    "function_closure": (
        ("CLOSURE_MATCH", "EQUALS_MATCH"),
        RECHECKED,
        False,
        "def make(c):\n    def inner(v):\n        return v * c\n    return inner\nSCALED = make(3.0 if CHANGED else 2.0)",
        "SCALED(x)",
    ),
    "function_default_object": (
        ("CLOSURE_MATCH",),
        COMPILED,
        False,
        "class Mode:\n    pass\nA, B = Mode(), Mode()\ndef post(v, m=B if CHANGED else A):\n    return v * (2.0 if m is A else 3.0)",
        "post(x)",
    ),
    "global_function": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        True,
        "def double(v):\n    return v * 2.0\ndef triple(v):\n    return v * 3.0\nACT = triple if CHANGED else double",
        "ACT(x)",
    ),
    "builtin_shadowed": (
        ("BUILTIN_MATCH",),
        RECHECKED,
        True,
        "if CHANGED:\n    def abs(v):\n        return v * 3.0",
        "abs(x) * 2.0",
    ),
    "builtin_unshadowed": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        True,
        "if not CHANGED:\n    def abs(v):\n        return v * 3.0",
        "abs(x) * 2.0",
    ),
    "module_attribute_function": (
        ("ID_MATCH",),
        RECHECKED,
        True,
        "import helpers_a\nif CHANGED:\n    helpers_a.act = torch.sigmoid",
        "helpers_a.act(x)",
    ),
    "module_attribute_constant": (
        ("MODULE_MATCH", "EQUALS_MATCH"),
        RECHECKED,
        True,
        "import helpers_a\nif CHANGED:\n    helpers_a.SCALE = 3.0",
        "x * helpers_a.SCALE",
    ),
    "module_swapped": (
        ("MODULE_MATCH",),
        RECHECKED,
        True,
        "import helpers_a, helpers_b\nOPS = helpers_b if CHANGED else helpers_a",
        "OPS.ops(x)",
    ),
    "class_swapped": (
        ("CLASS_MATCH",),
        RECHECKED,
        True,
        "ACT_CLASS = torch.nn.Tanh if CHANGED else torch.nn.ReLU",
        "ACT_CLASS()(x) * 2.0",
    ),
    # type(obj): a CLASS_MATCH PyTorch 2.13 cannot save; capture saves the frame without it and replay re-checks it.
    "class_of_object": (
        ("CLASS_MATCH", "TYPE_MATCH"),
        RECHECKED,
        False,
        "class A:\n    pass\nclass B:\n    pass\nOBJ = B() if CHANGED else A()",
        "x * (3.0 if type(OBJ) is B else 2.0)",
    ),
    # copy.deepcopy guards the object's identity only as its memo key: described by its state.
    "deepcopy_object": (
        ("ID_MATCH", "CLASS_MATCH", "EQUALS_MATCH"),
        RECHECKED,
        False,
        "import copy\nclass Cfg:\n    def __init__(self, scale):\n        self.scale = scale\nCFG = Cfg(3.0 if CHANGED else 2.0)",
        "x * copy.deepcopy(CFG).scale",
    ),
    # id() in user code: the identity is a value, which no other process has: the frame compiles.
    "identity_value": (("ID_MATCH",), COMPILED, False, "class Tag:\n    pass\nTAG = Tag()", "x * (id(TAG) % 5 + 1)"),
    "class_method_swapped": (
        ("TYPE_MATCH", "NOT_PRESENT_IN_GENERIC_DICT"),
        KEPT,
        True,
        "class Net:\n    def act(self, v):\n        return v * 2.0\nif CHANGED:\n    Net.act = lambda self, v: v * 3.0\nNET = Net()",
        "NET.act(x)",
    ),
    "class_attribute": (
        ("TYPE_MATCH", "EQUALS_MATCH"),
        KEPT,
        True,
        "class Cfg:\n    scale = 2.0\nif CHANGED:\n    Cfg.scale = 3.0\nCFG = Cfg()",
        "x * CFG.scale",
    ),
    "instance_method": (
        ("TYPE_MATCH",),
        KEPT,
        False,
        "class M:\n    def act(self, v):\n        return v * 2.0\nOBJ = M()\nif CHANGED:\n    OBJ.act = types.MethodType(lambda self, v: v * 3.0, OBJ)",
        "OBJ.act(x)",
    ),
    "instance_attribute": (
        ("TYPE_MATCH", "EQUALS_MATCH"),
        KEPT,
        False,
        "class Box:\n    pass\nBOX = Box()\nBOX.scale = 3.0 if CHANGED else 2.0",
        "x * BOX.scale",
    ),
    "object_identity": (
        ("DUPLICATE_INPUT",),
        RECHECKED,
        True,
        "class Mode:\n    pass\nA, B = Mode(), Mode()\nCURRENT = B if CHANGED else A",
        "x * (2.0 if CURRENT is A else 3.0)",
    ),
    # PyTorch 2.13 keys saved frames by function name and first line: these two share a key.
    "same_key_a": ((), KEPT, False, "SCALE = 2.0", "x * SCALE"),
    "same_key_b": ((), KEPT, False, "SCALE = 3.0", "x * SCALE"),
    "global_float": (("EQUALS_MATCH", "CONSTANT_MATCH"), KEPT, False, "SCALE = 3.0 if CHANGED else 2.0", "x * SCALE"),
    "global_bool": (("BOOL_MATCH",), KEPT, False, "FLAG = CHANGED", "x * (3.0 if FLAG else 2.0)"),
    "global_none": (
        ("NONE_MATCH",),
        KEPT,
        False,
        "OPT = 3.0 if CHANGED else None",
        "x * (2.0 if OPT is None else OPT)",
    ),
    "global_list": (
        ("SEQUENCE_LENGTH", "EQUALS_MATCH"),
        KEPT,
        False,
        "OPT = None if CHANGED else [2.0]",
        "x * (3.0 if OPT is None else OPT[0])",
    ),
    "global_string": (
        ("EQUALS_MATCH",),
        KEPT,
        False,
        "MODE = 'b' if CHANGED else 'a'",
        "x * (2.0 if MODE == 'a' else 3.0)",
    ),
    "global_tuple": (
        ("SEQUENCE_LENGTH",),
        KEPT,
        False,
        "SCALES = (1.0, 2.0, 3.0) if CHANGED else (1.0, 2.0)",
        "x * len(SCALES)",
    ),
    "global_enum_list": (
        ("SEQUENCE_LENGTH", "ID_MATCH"),
        RECHECKED,
        True,
        "class Kind(enum.Enum):\n    A = 1\n    B = 2\nKINDS = [Kind.B if CHANGED else Kind.A]",
        "x * (2.0 if KINDS[0] is Kind.A else 3.0)",
    ),
    "dict_keys": (
        ("DICT_KEYS_MATCH",),
        KEPT,
        False,
        "D = {'a': 1.0, 'b': 1.0} if CHANGED else {'a': 2.0}",
        "x * sum(D[k] for k in D)",
    ),
    "dict_contains": (
        ("DICT_CONTAINS",),
        KEPT,
        False,
        "D = {} if CHANGED else {'scale': 2.0}",
        "x * (D['scale'] if 'scale' in D else 3.0)",
    ),
    "dict_not_contains": (
        ("DICT_NOT_CONTAINS",),
        KEPT,
        False,
        "D = {'scale': 3.0} if CHANGED else {}",
        "x * (D['scale'] if 'scale' in D else 2.0)",
    ),
    "set_contains": (
        ("SET_CONTAINS",),
        KEPT,
        False,
        "S = {'b'} if CHANGED else {'a'}",
        "x * (2.0 if 'a' in S else 3.0)",
    ),
    "set_not_contains": (
        ("SET_NOT_CONTAINS",),
        KEPT,
        False,
        "S = {'a'} if CHANGED else {'b'}",
        "x * (3.0 if 'a' in S else 2.0)",
    ),
    "has_attribute": (
        ("HASATTR",),
        KEPT,
        False,
        "class O:\n    pass\nOBJ = O()\nif CHANGED:\n    OBJ.scale = 3.0",
        "x * (OBJ.scale if hasattr(OBJ, 'scale') else 2.0)",
    ),
    "partial_argument": (
        ("EQUALS_MATCH",),
        KEPT,
        False,
        "P = functools.partial(torch.mul, other=3.0 if CHANGED else 2.0)",
        "P(x)",
    ),
    "global_tensor": (("TENSOR_MATCH",), KEPT, False, "W = torch.full((8,), 3.0 if CHANGED else 2.0)", "x * W"),
    "grad_mode": (
        ("GLOBAL_STATE", "GRAD_MODE"),
        KEPT,
        False,
        "X_REQUIRES_GRAD = True\nCONTEXT = lambda: torch.set_grad_enabled(CHANGED)",
        "x * 2.0",
    ),
    "default_dtype": (
        ("GLOBAL_STATE",),
        KEPT,
        False,
        "CONTEXT = lambda: setting(torch.get_default_dtype, torch.set_default_dtype, torch.float64 if CHANGED else torch.float32)",
        "x + torch.ones(8)",
    ),
    "deterministic": (
        ("GLOBAL_STATE", "DETERMINISTIC_ALGORITHMS"),
        KEPT,
        False,
        "CONTEXT = lambda: setting(torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms, CHANGED)",
        "x * (3.0 if torch.are_deterministic_algorithms_enabled() else 2.0)",
    ),
    "constant_subclass": (
        ("CONSTANT_SUBCLASS_MATCH",),
        KEPT,
        False,
        "class Scale(float):\n    pass\nS = Scale(3.0 if CHANGED else 2.0)",
        "x * S",
    ),
    "module_hooks": (
        ("EMPTY_NN_MODULE_HOOKS_DICT",),
        RECHECKED,
        True,
        "LIN = torch.nn.Identity()\nif CHANGED:\n    LIN.register_forward_hook(lambda m, i, o: o * 1.5)",
        "LIN(x) * 2.0",
    ),
    # Values of the standard library a function made by a factory closes over (library_values.py),
    # as huggingface_hub's validators close over their dataclass field: one row per kind of value.
    # Where a guard PyTorch keeps already catches the change (a string compared, `is` a global),
    # the row needs none of replay's checks: it proves the frame is now saved, and right.
    "closure_dataclass_field": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        True,
        "import dataclasses\n@dataclasses.dataclass\nclass Cfg:\n    layers: int if CHANGED else float = 2\n"
        + _FACTORY.format(held="dataclasses.fields(Cfg)[0]", test="held.type is float"),
        "CHECK(x)",
    ),
    "closure_union_type": (
        ("CLOSURE_MATCH", "ID_MATCH"),
        RECHECKED,
        True,
        _FACTORY.format(held="(int | None) if CHANGED else (float | None)", test="held.__args__[0] is float"),
        "CHECK(x)",
    ),
    "closure_literal": (
        ("CLOSURE_MATCH", "ID_MATCH"),
        RECHECKED,
        False,
        "import typing\n"
        + _FACTORY.format(
            held="typing.Literal['a'] if CHANGED else typing.Literal['a', 'b']", test="len(held.__args__) == 2"
        ),
        "CHECK(x)",
    ),
    "closure_generic_alias": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        True,
        _FACTORY.format(held="list[int] if CHANGED else list[float]", test="held.__args__[0] is float"),
        "CHECK(x)",
    ),
    "closure_typevar": (
        ("CLOSURE_MATCH", "ID_MATCH"),
        RECHECKED,
        True,
        "import typing\n"
        + _FACTORY.format(held="typing.TypeVar('T', bound=int if CHANGED else float)", test="held.__bound__ is float"),
        "CHECK(x)",
    ),
    "closure_regex": (
        ("CLOSURE_MATCH", "ID_MATCH"),
        RECHECKED,
        True,
        "import re\n" + _FACTORY.format(held="re.compile('b+' if CHANGED else 'a+')", test="held.pattern == 'a+'"),
        "CHECK(x)",
    ),
    "closure_partial": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        False,
        "def make(held):\n    def check(v):\n        return held(v)\n    return check\n"
        "CHECK = make(functools.partial(torch.mul, other=3.0 if CHANGED else 2.0))",
        "CHECK(x)",
    ),
    "closure_sentinel": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        False,
        "import dataclasses\n"
        + _FACTORY.format(held="None if CHANGED else dataclasses.MISSING", test="held is dataclasses.MISSING"),
        "CHECK(x)",
    ),
    "closure_tuple_of_types": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        True,
        _FACTORY.format(
            held="(list[int], int | None) if CHANGED else (list[float], int | None)",
            test="held[0].__args__[0] is float",
        ),
        "CHECK(x)",
    ),
    "closure_named_tuple": (
        ("CLOSURE_MATCH", "CONSTANT_MATCH"),
        RECHECKED,
        False,
        "import collections\nP = collections.namedtuple('P', 'a b')\n"
        + _FACTORY.format(held="P(3.0 if CHANGED else 2.0, 1.0)", test="held.a == 2.0"),
        "CHECK(x)",
    ),
    "closure_item_getter": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        False,
        "import operator\n"
        + _FACTORY.format(held="operator.itemgetter(1 if CHANGED else 0)", test="held((2.0, 3.0)) == 2.0"),
        "CHECK(x)",
    ),
    "closure_cached_function": (
        ("CLOSURE_MATCH",),
        RECHECKED,
        True,
        "@functools.lru_cache(maxsize=None)\ndef two():\n    return 2.0\n"
        "@functools.lru_cache(maxsize=None)\ndef three():\n    return 3.0\n"
        "def make(held):\n    def check(v):\n        return v * held()\n    return check\n"
        "CHECK = make(three if CHANGED else two)",
        "CHECK(x)",
    ),
    "closure_torch_size": (
        ("CLOSURE_MATCH", "CONSTANT_MATCH"),
        RECHECKED,
        False,
        _FACTORY.format(held="torch.Size([3 if CHANGED else 2, 4])", test="held[0] == 2"),
        "CHECK(x)",
    ),
    "closure_namespace": (
        ("CLOSURE_MATCH", "CONSTANT_MATCH"),
        RECHECKED,
        False,
        _FACTORY.format(held="types.SimpleNamespace(scale=3.0 if CHANGED else 2.0)", test="held.scale == 2.0"),
        "CHECK(x)",
    ),
    "closure_ordered_dict": (
        ("CLOSURE_MATCH", "CONSTANT_MATCH"),
        RECHECKED,
        False,
        "import collections\n"
        + _FACTORY.format(held="collections.OrderedDict(a=3.0 if CHANGED else 2.0)", test="held['a'] == 2.0"),
        "CHECK(x)",
    ),
    # An optimizer, guarded by identity: re-checked by its description (class, hooks, groups,
    # flags, parameters' dtypes and shapes). The lr it reads is a float PyTorch guards by value.
    "optimizer_object": (
        ("ID_MATCH",),
        RECHECKED,
        False,
        "W = torch.nn.Parameter(torch.ones(8))\nOPT = torch.optim.SGD([W], lr=3.0 if CHANGED else 2.0)",
        "x * OPT.param_groups[0]['lr']",
    ),
    # A lazy (copy-on-write) clone: 2.14 on guards what torch._C._is_cow_tensor said.
    "cow_tensor": (
        ("COW_TENSOR_MATCH",),
        COMPILED,
        False,
        "W = torch.ones(8)\nif CHANGED:\n    W = torch._lazy_clone(W)",
        "x * (3.0 if torch._C._is_cow_tensor(W) else 2.0)",
    ),
}

# Rows whose guard kind a release adds: name -> the first release line that has it. And
# closure_sentinel: 2.13 checks `held is dataclasses.MISSING` over its saved copy of the globals,
# where the sentinel is a copy that is never the live one, so its saved frame never passes its
# own guards there (the frame compiles, and is right); from 2.14 the check reads the live globals.
SINCE = {"cow_tensor": "2.14", "closure_sentinel": "2.14"}

# Rows that need replay's checks only before a release that keeps their guard itself: name ->
# that release. 2.13 builds object-aliasing guards (`KIND is Kind.A`) as lambda guards over its
# saved copy of the globals; 2.14 on builds them between two accessors of the live globals.
KEPT_BY_PYTORCH_FROM = {"enum_member": "2.14", "object_identity": "2.14", "global_enum_list": "2.14"}


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(int(part) for part in line.split("."))


def cases_for(release: str) -> dict[str, tuple[tuple[str, ...], str, bool, str, str]]:
    """The rows that run on a release line ("2.15"), each with its needs-checks for that release."""
    rows = {}
    for name, (kinds, disposition, needs_checks, setup, body) in CASES.items():
        if name in SINCE and _line_key(release) < _line_key(SINCE[name]):
            continue
        if name in KEPT_BY_PYTORCH_FROM and _line_key(release) >= _line_key(KEPT_BY_PYTORCH_FROM[name]):
            needs_checks = False
        rows[name] = (kinds, disposition, needs_checks, setup, body)
    return rows


# Guard kinds no case makes Dynamo emit, and why (each is still in the guard table).
UNEXERCISED = {
    "NN_MODULE": "emitted only with inline_inbuilt_nn_modules=False (2.13 inlines modules by default)",
    "WEAKREF_ALIVE": "emitted for weak references the program passes in, which a fresh process cannot hold",
    "DICT_VERSION": "not emitted by 2.13's default configuration",
    "FUNCTION_MATCH": "2.13 guards functions with CLOSURE_MATCH, which falls back to it; covered through that",
    "SHAPE_ENV": "emitted by every compile; dynamic shapes are tested by test_replay's new-shape cases",
    "DEFAULT_DEVICE": "emitted by every compile; no case changes the default device yet (CPU only here)",
    "TORCH_FUNCTION_STATE": "emitted by every compile; no case changes the torch-function state yet",
    "AUTOGRAD_SAVED_TENSORS_HOOKS": "emitted by every compile; no case installs saved-tensor hooks yet",
    "NOT_NONE_MATCH": "no plain program found that makes 2.13 emit it (None checks become NONE_MATCH)",
    "MAPPING_KEYS_CHECK": "no case reads a mapping proxy yet",
    "TUPLE_ITERATOR_LEN": "guards an iterator the program consumes; no case yet",
    "RANGE_ITERATOR_MATCH": "guards an iterator the program consumes; no case yet",
    "COUNT_ITERATOR_MATCH": "guards an iterator the program consumes; no case yet",
    "DISPATCH_KEY_SET_MATCH": "needs a tensor subclass or mode; no case yet",
    "TENSOR_SUBCLASS_METADATA_MATCH": "needs a traceable tensor subclass; no case yet",
    "DTENSOR_SPEC_MATCH": "needs DTensor (distributed); no case yet",
    "FSDP_TRAINING_STATE": "needs FSDP (distributed); no case yet",
    "FUNCTORCH_STACK_MATCH": "needs a functorch transform around the compiled call; no case yet",
    "DUAL_LEVEL": "needs forward-mode AD around the compiled call; no case yet",
    "FAKE_SCRIPT_TYPE_MATCH": "no case here; a device mesh read in a compiled function emits it (2.15): test_ranks.py, mesh_size",
    "OPAQUE_OBJ_GUARD_FN_MATCH": "needs a registered opaque object; no case yet",
    "CURRENT_STREAM_MATCH": "needs a device stream (CUDA, XPU); no case yet (CPU only here)",
    "LIST_REVERSEITERATOR_LEN": "guards an iterator the program consumes; no case yet",
}

_PRELUDE = '''"""Guard case {name} (tests/python/guard_cases.py)."""
import contextlib, enum, functools, os, types
import torch
CHANGED = "{name}" in os.environ.get("DYNREP_CHANGED", "").split(",")


@contextlib.contextmanager
def setting(read, write, value):
    before = read()
    write(value)
    try:
        yield
    finally:
        write(before)


'''


def write_cases(folder: Path, cases: dict[str, tuple] | None = None) -> None:
    """One module per case (every row, or those given), case_<name>.py, each defining f(x)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (_, _, _, setup, body) in (cases or CASES).items():
        function = "f" if name.startswith("same_key") else f"f_{name}"  # see the same_key rows
        text = _PRELUDE.format(name=name) + setup + f"\n\n\ndef {function}(x):\n    return {body}\n"
        (folder / f"case_{name}.py").write_text(text)


def guard_table_markdown(table: dict[str, tuple[str, str, str]]) -> str:
    """docs/guards.md's table: each guard kind of every supported release, the first release
    that has it, what replay does, why, and its cases here."""
    cases: dict[str, list[str]] = {}
    for name, (kinds, *_) in CASES.items():
        for kind in kinds:
            cases.setdefault(kind, []).append(f"`{name}`")
    rows = [
        f"| `{kind}` | {'all' if since == '2.13' else since + ' on'} | {disposition} | {why} | "
        f"{', '.join(cases.get(kind, [])) or 'none: ' + UNEXERCISED[kind]} |"
        for kind, (disposition, why, since) in table.items()
    ]
    return "\n".join(["| kind | releases | replay | why | differential cases |", "|---|---|---|---|---|", *rows]) + "\n"
