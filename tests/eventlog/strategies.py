"""Hypothesis strategies for events: every field of every event type, generated."""

from __future__ import annotations

import math
import typing
from typing import Any

import msgspec
from hypothesis import strategies as st

from eventlog import EVENT_TYPES, AnyEvent

_scalars: dict[Any, st.SearchStrategy[Any]] = {
    str: st.text(max_size=40),
    int: st.integers(min_value=-(2**63), max_value=2**64 - 1),
    float: st.floats(allow_nan=False),
    bool: st.booleans(),
    bytes: st.binary(max_size=40),
}
_json_values = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text())


def for_type(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for values of a field annotation used in the events module."""
    if tp in _scalars:
        return _scalars[tp]
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return struct_of(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is dict:
        values = _json_values if args[1] is Any else for_type(args[1])
        return st.dictionaries(st.text(max_size=10), values, max_size=4)
    if origin is tuple and args[-1] is Ellipsis:
        return st.lists(for_type(args[0]), max_size=3).map(tuple)
    if origin is tuple:  # a fixed-length one, such as a header's (name, value)
        return st.tuples(*(for_type(a) for a in args))
    if args:  # a union such as ``str | None``
        return st.one_of(*(st.none() if a is type(None) else for_type(a) for a in args))
    raise TypeError(f"no strategy for {tp!r}")


def struct_of(cls: type[msgspec.Struct]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {f.name: for_type(hints[f.name]) for f in msgspec.structs.fields(cls)}
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


events: st.SearchStrategy[AnyEvent] = st.one_of(*(struct_of(t) for t in EVENT_TYPES))
"""Any event of any type, every field drawn."""


def is_finite(event: AnyEvent) -> bool:
    return math.isfinite(event.at)
