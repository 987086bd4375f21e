"""Descriptions that another process can compare (descriptions.py, library_values.py): one line per
kind of value library code closes over. Each line gives a value and another value of the same
kind; the descriptions must exist, be equal in a fresh process with another string-hash seed, and
tell the two values apart. Values no description can tell apart stay None (they fail closed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dynamo_replay import _torch  # noqa: F401 - registers the describers of PyTorch's objects (optimizer, FSDP2)
from dynamo_replay.descriptions import describe_value

# name -> (setup, value, other value): Python expressions, evaluated after the setup.
_FIELDS = "import dataclasses\n@dataclasses.dataclass\nclass C:\n    a: int = 1\n    b: 'int | None' = None\n"
_VALIDATOR = (
    "import dataclasses\n"
    "def make(field):\n    def validator(value):\n        return isinstance(value, field.type)\n    return validator\n"
    "@dataclasses.dataclass\nclass C:\n    a: int = 1\n    b: float = 1.0\n"
)
_OPT = (
    "import torch\nm = torch.nn.Linear(2, 2)\nn = torch.nn.Linear(2, 3)\n"
    "def before_step(optimizer, args, kwargs):\n    pass\n"
    "def hooked(optimizer):\n    optimizer.register_step_pre_hook(before_step)\n    return optimizer\n"
)
# FSDP2's state on a process group of one (gloo, in this process): shard() fully_shards a fresh
# module and returns the state whose bound methods are the module's hooks.
_FSDP = (
    "import torch, torch.distributed as dist\n"
    "from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n"
    "if not dist.is_initialized():\n"
    "    dist.init_process_group('gloo', store=dist.HashStore(), rank=0, world_size=1)\n"
    "def shard(width=4, **kwargs):\n"
    "    module = torch.nn.Linear(width, 4)\n"
    "    fully_shard(module, **kwargs)\n"
    "    return module._get_fsdp_state()\n"
)
KINDS: dict[str, tuple[str, str, str]] = {
    "dataclass field": (_FIELDS, "dataclasses.fields(C)[0]", "dataclasses.fields(C)[1]"),
    "field default": (_FIELDS, "dataclasses.field(default=1)", "dataclasses.field(default=2)"),
    "field metadata": ("import dataclasses", "dataclasses.field(metadata={'v': 1})", "dataclasses.field()"),
    "validator from a factory": (_VALIDATOR, "make(dataclasses.fields(C)[0])", "make(dataclasses.fields(C)[1])"),
    "generic alias": ("", "list[int]", "list[float]"),
    "nested generic": ("", "dict[str, list[int]]", "dict[str, list[str]]"),
    "typing generic": ("import typing", "typing.List[int]", "list[int]"),
    "union type": ("", "int | None", "float | None"),
    "typing union": ("import typing", "typing.Optional[int]", "int | None"),
    "literal": ("import typing", "typing.Literal['a', 'b']", "typing.Literal['a']"),
    "callable type": ("import typing", "typing.Callable[[int], str]", "typing.Callable[[str], str]"),
    "annotated": ("import typing", "typing.Annotated[int, 'positive']", "typing.Annotated[int, 'negative']"),
    "special form": ("import typing", "typing.Union", "typing.Literal"),
    "type variable": ("import typing", "typing.TypeVar('T', bound=int)", "typing.TypeVar('T', bound=float)"),
    "forward reference": ("import typing", "typing.ForwardRef('int')", "typing.ForwardRef('float')"),
    "compiled regex": ("import re", "re.compile('a+')", "re.compile('a+', re.IGNORECASE)"),
    "partial": ("import functools", "functools.partial(max, 1)", "functools.partial(max, 2)"),
    "signature": ("import inspect", "inspect.signature(lambda a, b=1: 0)", "inspect.signature(lambda a, b=2: 0)"),
    "module sentinel": ("import dataclasses", "dataclasses.MISSING", "dataclasses.KW_ONLY"),
    "mapping proxy": ("import types", "types.MappingProxyType({'a': 1})", "types.MappingProxyType({'a': 2})"),
    "frozenset of types": ("", "frozenset({int, list[int]})", "frozenset({int, list[str]})"),
    "tuple of constructs": ("import re", "(re.compile('a'), int | None)", "(re.compile('b'), int | None)"),
    "named tuple": ("import collections\nP = collections.namedtuple('P', 'a b')", "P(1, 2)", "P(1, 3)"),
    "torch size": ("import torch", "torch.Size([2, 3])", "torch.Size([3, 2])"),
    "item getter": ("import operator", "operator.itemgetter(0)", "operator.itemgetter(1)"),
    "method caller": ("import operator", "operator.methodcaller('mul', 2)", "operator.methodcaller('mul', 3)"),
    "cached function": (
        "import functools\nf = functools.lru_cache(maxsize=8)(lambda n: n)\ng = functools.lru_cache(maxsize=8)(lambda n: -n)",
        "f",
        "g",
    ),
    "namespace": ("import types", "types.SimpleNamespace(a=1)", "types.SimpleNamespace(a=2)"),
    "ordered dict": ("import collections", "collections.OrderedDict(a=1, b=2)", "collections.OrderedDict(b=2, a=1)"),
    "default dict": ("import collections", "collections.defaultdict(int, a=1)", "collections.defaultdict(list, a=1)"),
    "range": ("", "range(3)", "range(4)"),
    "property": ("", "property(len)", "property(abs)"),
    # An optimizer: what changes the code Dynamo compiles for its step (_torch/optimizer_description.py).
    "optimizer class": (_OPT, "torch.optim.Adam(m.parameters())", "torch.optim.AdamW(m.parameters())"),
    "optimizer flag": (_OPT, "torch.optim.Adam(m.parameters(), foreach=True)", "torch.optim.Adam(m.parameters())"),
    "optimizer parameter shape": (_OPT, "torch.optim.SGD(m.parameters())", "torch.optim.SGD(n.parameters())"),
    "optimizer parameter dtype": (_OPT, "torch.optim.SGD(m.parameters())", "torch.optim.SGD(m.double().parameters())"),
    "optimizer groups": (
        _OPT,
        "torch.optim.SGD(m.parameters())",
        "torch.optim.SGD([{'params': [m.weight]}, {'params': [m.bias]}])",
    ),
    "optimizer step hook": (_OPT, "torch.optim.SGD(m.parameters())", "hooked(torch.optim.SGD(m.parameters()))"),
    "optimizer tensor lr": (
        _OPT,
        "torch.optim.SGD(m.parameters(), lr=torch.tensor(0.1))",
        "torch.optim.SGD(m.parameters(), lr=0.1)",
    ),
    "weak reference": ("import weakref", "weakref.ref(int)", "weakref.ref(float)"),
    # FSDP2's per-module state: what changes the code around its hooks (_torch/fsdp_description.py).
    "fsdp reshard after forward": (_FSDP, "shard()", "shard(reshard_after_forward=False)"),
    "fsdp mixed precision": (_FSDP, "shard()", "shard(mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))"),
    "fsdp parameter shape": (_FSDP, "shard()", "shard(width=8)"),
    "fsdp hooks": (
        _FSDP,
        "shard()._pre_forward",
        "shard()._post_forward",
    ),
}
# What an optimizer's description leaves to the guards PyTorch keeps (a float its step reads is
# guarded by value; a tensor is a graph input): name -> (setup, value, value described alike).
OPTIMIZERS_ALIKE: dict[str, tuple[str, str, str]] = {
    "float lr": (_OPT, "torch.optim.SGD(m.parameters(), lr=0.1)", "torch.optim.SGD(m.parameters(), lr=0.2)"),
    "tensor lr": (
        _OPT,
        "torch.optim.Adam(m.parameters(), lr=torch.tensor(0.1))",
        "torch.optim.Adam(m.parameters(), lr=torch.tensor(0.2))",
    ),
    "betas": (_OPT, "torch.optim.Adam(m.parameters())", "torch.optim.Adam(m.parameters(), betas=(0.8, 0.9))"),
    "parameter values": (
        _OPT,
        "torch.optim.SGD(m.parameters())",
        "torch.optim.SGD(torch.nn.Linear(2, 2).parameters())",
    ),
}
# Values whose description would have to pretend: they stay None.
UNDESCRIBED: dict[str, tuple[str, str]] = {
    "plain object": ("", "object()"),
    "field with an object default": ("import dataclasses", "dataclasses.field(default=object())"),
    "partial of an object's method": ("import functools", "functools.partial(object().__eq__)"),
    "annotated with an object": ("import typing", "typing.Annotated[int, object()]"),
    "named tuple of an object": ("import collections", "collections.namedtuple('P', 'a')(object())"),
    "ordered dict keyed by an object": ("import collections", "collections.OrderedDict({object(): 1})"),
    "optimizer holding an object": (_OPT, "torch.optim.SGD([{'params': m.parameters(), 'note': object()}])"),
    "weak reference to an object": ("import weakref\nclass C:\n    pass\nc = C()", "weakref.ref(c)"),
    "closure over a field of an object": (
        "import dataclasses\ndef make(f):\n    return lambda v: f.default\n",
        "make(dataclasses.field(default=object()))",
    ),
}


def _describe_all(kinds: dict[str, tuple[str, str, str]]) -> dict[str, list[str | None]]:
    found = {}
    for name, (setup, *values) in kinds.items():
        scope: dict = {}
        exec(setup, scope)  # noqa: S102 - the table's own code
        found[name] = [describe_value(eval(value, scope)) for value in values]  # noqa: S307
    return found


HERE = _describe_all(KINDS)


@pytest.fixture(scope="module")
def in_a_fresh_process() -> dict[str, list[str | None]]:
    script = (
        "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport test_descriptions as t\n"
        "print(json.dumps(t._describe_all(t.KINDS)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_is_described_the_same_in_two_processes_and_tells_values_apart(
    kind: str, in_a_fresh_process: dict
) -> None:
    one, other = HERE[kind]
    assert one is not None and other is not None, (one, other)
    assert one != other, f"{kind}: two different values look alike: {one}"
    assert in_a_fresh_process[kind] == [one, other]


@pytest.mark.parametrize("kind", UNDESCRIBED)
def test_a_value_without_a_faithful_description_stays_none(kind: str) -> None:
    setup, value = UNDESCRIBED[kind]
    scope: dict = {}
    exec(setup, scope)  # noqa: S102
    assert describe_value(eval(value, scope)) is None  # noqa: S307


def test_a_long_refusal_names_the_first_part_that_differs() -> None:
    from dynamo_replay._torch.guards import differing_parts

    assert differing_parts("function relu", "function gelu") == ("function relu", "function gelu")
    common = "; ".join(f"part {i} " + "x" * 40 for i in range(10))
    captured, live = differing_parts(
        f"{common}; after forward mesh (2,); offload none", f"{common}; after forward none; offload none"
    )
    assert (captured, live) == ("...; after forward mesh (2,); ...", "...; after forward none; ...")


@pytest.mark.parametrize("kind", OPTIMIZERS_ALIKE)
def test_an_optimizer_is_described_without_what_pytorchs_own_guards_check(kind: str) -> None:
    one, other = _describe_all({kind: OPTIMIZERS_ALIKE[kind]})[kind]
    assert one is not None and one == other
