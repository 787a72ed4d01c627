"""The replies of the scripts in ``_scripts``, parsed once into typed values.

A script's reply comes back as nested lists of bytes and integers (a Lua ``false`` as
None). Each shape is checked and converted here, in one msgspec call, so the code that
reads it works with named, typed fields and a reply of the wrong shape is an error at
the boundary, not an ``AttributeError`` three calls later.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import msgspec


class PendingEntry(NamedTuple):
    """A pending entry of a lane, as PENDING and EXPIRED return it."""

    lane: int
    """The lane's index (`LANES`)."""
    entry_id: bytes
    owner: bytes
    """The consumer holding it."""
    deliveries: int
    """Its delivery count (EXPIRED adds the one a takeover counts)."""
    fields: list[bytes] | None
    """The entry's field, value pairs; None if it was deleted while pending."""


class ExpiredReply(NamedTuple):
    """EXPIRED's reply: how soon the next lease expires (-1: none within the horizon), and
    the leases that have."""

    soonest_ms: int
    entries: list[PendingEntry]


class SettleReply(NamedTuple):
    """SETTLE's reply: what happened, and the stream ID of the last event appended (``ok``),
    the entry's owner (``lost``) or the store's epoch (``stale``), if any."""

    status: Literal["ok", "lost", "resumed", "dup", "stale"]
    value: bytes | None = None


class ResolveReply(NamedTuple):
    """RESOLVE's reply: refused (nothing written), or done with the parked tasks moved."""

    status: Literal["ok", "refused"]
    requeued: int = 0


class DeadReplayReply(NamedTuple):
    """DEAD_REPLAY's reply: the letter was gone, or put back (as the new entry's stream ID;
    None for an event whose id was still in the dedup window)."""

    status: Literal["ok", "gone"]
    entry_id: bytes | None = None


def pending_entries(reply: object) -> list[PendingEntry]:
    """PENDING's reply."""
    return msgspec.convert(reply, list[PendingEntry])


def expired_reply(reply: object) -> ExpiredReply:
    """EXPIRED's reply."""
    return msgspec.convert(reply, ExpiredReply)


def settle_reply(reply: object) -> SettleReply:
    """SETTLE's reply."""
    return msgspec.convert(_status_first(reply), SettleReply)


def resolve_reply(reply: object) -> ResolveReply:
    """RESOLVE's reply."""
    return msgspec.convert(_status_first(reply), ResolveReply)


def dead_replay_reply(reply: object) -> DeadReplayReply:
    """DEAD_REPLAY's reply."""
    return msgspec.convert(_status_first(reply), DeadReplayReply)


def _status_first(reply: object) -> object:
    # The status is a Lua string, which arrives as bytes: a Literal is matched as text.
    if isinstance(reply, list) and reply and isinstance(reply[0], bytes):
        return [reply[0].decode(), *reply[1:]]
    return reply
