"""Events to bytes and back: msgpack, inside a versioned envelope.

The envelope is a two-element msgpack array ``[schema_version, event]`` where ``event`` is
a map carrying its tag in ``type``. The version is read first so that a payload written by
an older crawlog is rewritten by the upcasters *before* it meets the current Structs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from eventlog._events import AnyEvent
from eventlog._exceptions import EventDecodeError

SCHEMA_VERSION = 1
"""Version of the payloads this crawlog writes. Bump it only with an upcaster."""

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

UPCASTERS: Mapping[int, Upcaster] = {}
"""``UPCASTERS[v]`` rewrites a version-``v`` event map into version ``v + 1``."""


class _Envelope(msgspec.Struct, array_like=True, frozen=True):
    version: int
    event: msgspec.Raw


_encoder = msgspec.msgpack.Encoder()
_envelope_decoder = msgspec.msgpack.Decoder(_Envelope)
_event_decoder = msgspec.msgpack.Decoder(AnyEvent)  # type: ignore[arg-type]
_map_decoder = msgspec.msgpack.Decoder(dict[str, Any])


def encode(event: AnyEvent) -> bytes:
    """The wire bytes of one event."""
    return _encoder.encode((SCHEMA_VERSION, event))


def decode(payload: bytes) -> AnyEvent:
    """The event in ``payload``; raises ``EventDecodeError`` for anything else."""
    try:
        envelope = _envelope_decoder.decode(payload)
        if envelope.version == SCHEMA_VERSION:
            return _event_decoder.decode(envelope.event)  # type: ignore[no-any-return]
        return upcast(envelope.version, _map_decoder.decode(envelope.event))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise EventDecodeError(f"not a crawlog event: {exc}") from None


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
        return msgspec.convert(event, AnyEvent)  # type: ignore[arg-type,no-any-return]
    except msgspec.ValidationError as exc:
        raise EventDecodeError(f"not a crawlog event after upcasting: {exc}") from None
