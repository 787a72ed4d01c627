"""Events to bytes and back: msgpack, inside a versioned envelope.

The envelope is a two-element msgpack array ``[schema_version, event]`` where ``event`` is
a map carrying its tag in ``type``. The version is read first so that a payload written by
an older crawlog is rewritten by the upcasters *before* it meets the current Structs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from eventlog._events import AnyEvent, Event
from eventlog._exceptions import EventDecodeError

SCHEMA_VERSION = 1
"""Version of the payloads this crawlog writes. Bump it only with an upcaster."""

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

UPCASTERS: Mapping[int, Upcaster] = {}
"""``UPCASTERS[v]`` rewrites a version-``v`` event map into version ``v + 1``."""


class _Envelope(msgspec.Struct, array_like=True, frozen=True, gc=False):
    version: int
    event: AnyEvent


class _RawEnvelope(msgspec.Struct, array_like=True, frozen=True, gc=False):
    version: int
    event: dict[str, Any]


_encoder = msgspec.msgpack.Encoder()
_envelope_decoder = msgspec.msgpack.Decoder(_Envelope)
_raw_envelope_decoder = msgspec.msgpack.Decoder(_RawEnvelope)


def decode_current(payload: bytes) -> AnyEvent | None:
    """The event in ``payload`` if it is of the current schema version, else None.

    The hot path of readers; raises ``msgspec.DecodeError``/``ValidationError`` on bytes
    that ``decode`` must look at more closely.
    """
    envelope = _envelope_decoder.decode(payload)
    return envelope.event if envelope.version == SCHEMA_VERSION else None


def encode(event: Event) -> bytes:
    """The wire bytes of one event."""
    return _encoder.encode((SCHEMA_VERSION, event))


def decode(payload: bytes) -> AnyEvent:
    """The event in ``payload``; raises ``EventDecodeError`` for anything else."""
    # The fast path decodes straight into the current Structs, in one call. Anything else
    # (an older version, even one that happens to fit today's shape) is read as a plain
    # map and goes through the upcasters.
    try:
        envelope = _envelope_decoder.decode(payload)
        if envelope.version == SCHEMA_VERSION:
            return envelope.event
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    try:
        raw = _raw_envelope_decoder.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise EventDecodeError(f"not a crawlog event: {exc}") from None
    # For the current version this re-validates, to report why the fast path refused it.
    return upcast(raw.version, raw.event)


def upcast(
    version: int, event: dict[str, Any], upcasters: Mapping[int, Upcaster] = UPCASTERS
) -> AnyEvent:
    """Rewrite an older event map step by step up to ``SCHEMA_VERSION``, then validate it."""
    if version > SCHEMA_VERSION:
        raise EventDecodeError(
            f"event schema version {version} is newer than this crawlog's {SCHEMA_VERSION}: "
            "upgrade crawlog to read this log"
        )
    for step in range(version, SCHEMA_VERSION):
        if step not in upcasters:
            raise EventDecodeError(f"no upcaster from event schema version {step}")
        event = upcasters[step](event)
    try:
        current: AnyEvent = msgspec.convert(event, AnyEvent)  # a union: typed by hand
        return current
    except msgspec.ValidationError as exc:
        raise EventDecodeError(f"not a crawlog event after upcasting: {exc}") from None
