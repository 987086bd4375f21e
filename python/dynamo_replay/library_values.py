"""Values of the standard library that library code closes over, each described by what makes
it what it is: a validator made by a factory holds its dataclass field, whose type is a
`typing` construct; other closures hold compiled regexes, partials, getters, cached functions,
named tuples, ordered mappings, signatures, weak references and module sentinels. descriptions.describe_value
asks this table after its own kinds; `describe` is describe_value itself, for what these values
hold. A value that has no faithful description here stays None (it fails closed).

A row: (test, describe(value, describe) -> str | None). The first row whose test takes the
value describes it; a value no row takes, of a class the build pins, is described by the name
its module holds it under, if it has one."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import fractions
import functools
import inspect
import operator
import pathlib
import re
import sys
import types
import typing
import uuid
import weakref
from collections.abc import Callable
from typing import Any

Describe = Callable[[Any], "str | None"]


def _all(parts: list[tuple[str, str | None]], head: str) -> str | None:
    """head and each `label value`, or None when any value has no description."""
    if any(value is None for _, value in parts):
        return None
    return "; ".join([head, *(f"{label} {value}" for label, value in parts)])


def _field(value: dataclasses.Field, describe: Describe) -> str | None:
    # Every slot a dataclass field has; _field_type says field, class variable or init-only.
    names = ("type", "default", "default_factory", "init", "repr", "hash", "compare", "metadata", "kw_only")
    parts = [(name, describe(getattr(value, name, None))) for name in names]
    kind = getattr(getattr(value, "_field_type", None), "name", "?")
    return _all(parts, f"dataclass field {value.name!r} ({kind})")


def _typing_construct(value: Any, describe: Describe) -> str | None:
    """A parameterized type (list[int], int | None, Literal['a'], Optional[X], Callable[...]): its
    kind, its origin and its arguments, which is what validators and isinstance read."""
    parts = [("origin", describe(typing.get_origin(value))), ("args", describe(typing.get_args(value)))]
    return _all(parts, f"typing {type(value).__module__}.{type(value).__qualname__}")


def _is_typing_construct(value: Any) -> bool:
    return not isinstance(value, type) and typing.get_origin(value) is not None


def _type_variable(value: Any, describe: Describe) -> str | None:
    parts = [
        ("bound", describe(getattr(value, "__bound__", None))),
        ("constraints", describe(tuple(getattr(value, "__constraints__", ())))),
        ("covariant", describe(getattr(value, "__covariant__", False))),
        ("contravariant", describe(getattr(value, "__contravariant__", False))),
    ]
    return _all(parts, f"{type(value).__name__} {value.__name__}")


def _forward_reference(value: typing.ForwardRef, describe: Describe) -> str | None:
    parts = [
        ("module", describe(getattr(value, "__forward_module__", None))),
        ("is_class", describe(getattr(value, "__forward_is_class__", False))),
    ]
    return _all(parts, f"forward reference {value.__forward_arg__!r}")


def _partial(value: functools.partial, describe: Describe) -> str | None:
    parts = [
        ("function", describe(value.func)),
        ("args", describe(value.args)),
        ("keywords", describe(dict(value.keywords))),
    ]
    return _all(parts, "partial")


def _signature(value: inspect.Signature, describe: Describe) -> str | None:
    parts = [(f"parameter {p.name}", describe(p)) for p in value.parameters.values()]
    parts.append(("returns", describe(value.return_annotation)))
    return _all(parts, "signature")


def _parameter(value: inspect.Parameter, describe: Describe) -> str | None:
    parts = [("default", describe(value.default)), ("annotation", describe(value.annotation))]
    return _all(parts, f"parameter {value.name} {value.kind.name}")


def _property(value: property, describe: Describe) -> str | None:
    parts = [(name, describe(getattr(value, name))) for name in ("fget", "fset", "fdel")]
    return _all(parts, "property")


def _method_wrapper(value: staticmethod | classmethod, describe: Describe) -> str | None:
    return _all([("of", describe(value.__func__))], type(value).__name__)


def _mapping_proxy(value: types.MappingProxyType, describe: Describe) -> str | None:
    inner = describe(dict(value))
    return None if inner is None else f"mappingproxy {inner}"


def _named_tuple(value: tuple, describe: Describe) -> str | None:
    parts = [("class", describe(type(value))), ("values", describe(tuple(value)))]
    return _all(parts, "namedtuple")


def _getter(value: Any, describe: Describe) -> str | None:
    """operator.itemgetter, attrgetter and methodcaller: by what they are built from."""
    return _all([("of", describe(value.__reduce__()))], f"operator.{type(value).__name__}")


def _lru_cached(value: Any, describe: Describe) -> str | None:
    parts = [("function", describe(value.__wrapped__)), ("parameters", describe(value.cache_parameters()))]
    return _all(parts, "lru_cache")


def _ordered_mapping(value: Any, describe: Describe) -> str | None:
    """OrderedDict, defaultdict and Counter: their items in order (an OrderedDict's order is its
    value), and a defaultdict's factory."""
    keys = [describe(k) for k in value]
    if any(k is None for k in keys):
        return None
    parts = [(f"item {k}", describe(v)) for k, v in zip(keys, value.values())]
    if isinstance(value, collections.defaultdict):
        parts.append(("default_factory", describe(value.default_factory)))
    return _all(parts, type(value).__name__)


def _weak_reference(value: weakref.ref, describe: Describe) -> str | None:
    """A plain weak reference by what it refers to (an LR scheduler's wrapper of `opt.step`
    closes over one to its optimizer), or as dead."""
    referent = value()
    return "dead weakref" if referent is None else _all([("to", describe(referent))], "weakref")


def _is_torch_size(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and type(value) is torch.Size


def _module_singleton(value: Any, describe: Describe) -> str | None:
    """A sentinel of the standard library or torch (dataclasses.MISSING, the field kinds, typing's
    special forms): the one object its module holds under a name, which the build pins."""
    module = sys.modules.get(type(value).__module__ or "")
    for name, held in vars(module).items() if module is not None else ():
        if held is value:
            return f"singleton {module.__name__}.{name}"
    return None


# Immutable values of the standard library whose repr says exactly what they are.
_BY_REPR = (
    range,
    slice,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    decimal.Decimal,
    fractions.Fraction,
    uuid.UUID,
    pathlib.PurePath,
)

_LRU_CACHED = type(functools.lru_cache(maxsize=None)(lambda: None))  # functools' wrapper type, public or not

ROWS: list[tuple[Callable[[Any], bool], Callable[[Any, Describe], str | None]]] = [
    (lambda v: isinstance(v, dataclasses.Field), _field),
    (lambda v: isinstance(v, tuple) and type(v) is not tuple and hasattr(type(v), "_fields"), _named_tuple),
    (_is_torch_size, lambda v, describe: _all([("sizes", describe(tuple(v)))], "torch.Size")),
    (lambda v: type(v) in (operator.itemgetter, operator.attrgetter, operator.methodcaller), _getter),
    (lambda v: type(v) is _LRU_CACHED, _lru_cached),
    (lambda v: type(v) is types.SimpleNamespace, lambda v, describe: _all([("of", describe(vars(v)))], "namespace")),
    (lambda v: type(v) in (collections.OrderedDict, collections.defaultdict, collections.Counter), _ordered_mapping),
    (lambda v: type(v) in _BY_REPR or isinstance(v, pathlib.PurePath), lambda v, _: f"constant {v!r}"),
    (lambda v: isinstance(v, re.Pattern), lambda v, _: f"regex {v.pattern!r} flags {int(v.flags)}"),
    (lambda v: type(v) is functools.partial, _partial),
    (lambda v: type(v) is weakref.ref, _weak_reference),
    (lambda v: type(v) is types.MappingProxyType, _mapping_proxy),
    (lambda v: type(v) is inspect.Signature, _signature),
    (lambda v: type(v) is inspect.Parameter, _parameter),
    (lambda v: type(v) is property, _property),
    (lambda v: type(v) in (staticmethod, classmethod), _method_wrapper),
    (lambda v: isinstance(v, (typing.TypeVar, typing.ParamSpec)), _type_variable),
    (lambda v: isinstance(v, typing.ForwardRef), _forward_reference),
    (_is_typing_construct, _typing_construct),
]


def describe_library_value(value: Any, describe: Describe, pinned: Callable[[type], bool]) -> str | None:
    """`pinned(cls)`: whether the build pins the class (torch or the standard library), whose
    module's sentinels are then described by name."""
    for test, describer in ROWS:
        if test(value):
            return describer(value, describe)
    return _module_singleton(value, describe) if pinned(type(value)) else None
