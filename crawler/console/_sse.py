"""The job's event log as server-sent events: one message per log entry.

A message's ``id`` is the entry's stream ID, so a browser that reconnects (``EventSource``
does by itself) sends the last one it got as ``Last-Event-ID`` and the stream goes on right
after it: nothing missed, nothing twice, because the log is read in stream-ID order after
that ID (``XREAD``), not from "now". A page starts its stream after the position it was
rendered at (``?after=``), so nothing between the render and the connection is lost either.

If the events after that ID were trimmed from Redis (a browser asleep past the projector's
trim), the stream says ``reset`` and the page reloads itself from the committed state.
Between events, a comment every :data:`KEEPALIVE_S` keeps proxies from closing the
connection and lets the server notice a browser that went away.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import msgspec

from eventlog import EventLog, LogEntry, PoisonEntry, stream_id_key, tag_of

KEEPALIVE_S = 15.0
READ_COUNT = 500
RESET = "event: reset\ndata: {}\n\n"
BLOCK_MS = 1_000
"""Each blocking read waits at most this long (well below the socket timeout)."""


def format_entry(entry: LogEntry) -> str:
    """One log entry as an SSE message: ``id`` its stream ID, data the event as JSON."""
    data = {"type": tag_of(type(entry.event)), **msgspec.to_builtins(entry.event)}
    return f"id: {entry.stream_id}\nevent: log\ndata: {json.dumps(data)}\n\n"


async def start_position(log: EventLog, last_event_id: str | None, after: str | None) -> str:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnect), else after ``?after=``
    (the position the page was rendered at), else after the log's last entry now."""
    for given in (last_event_id, after):
        if given:
            stream_id_key(given)  # a malformed ID is a ValueError here, not a Redis error
            return given
    return await log.last_id() or "0-0"


async def log_messages(log: EventLog, after: str) -> AsyncIterator[str]:
    """SSE messages for every entry after stream ID ``after``, forever."""
    position = after
    idle_ms = 0
    yield f"retry: {BLOCK_MS}\n\n"
    if await _trimmed_past(log, position):
        # XREAD would go on from the oldest entry still held, silently past the gap.
        yield RESET
        return
    while True:
        try:
            entries = await log.read_after(position, READ_COUNT, block_ms=BLOCK_MS)
        except PoisonEntry as poison:
            # Skipped by every reader (the projector dead-letters it): so by this one too.
            position = poison.entry_id
            continue
        if not entries:
            idle_ms += BLOCK_MS
            if idle_ms >= KEEPALIVE_S * 1000:
                idle_ms = 0
                yield ": keepalive\n\n"
            continue
        idle_ms = 0
        for entry in entries:
            yield format_entry(entry)
        position = entries[-1].stream_id


async def _trimmed_past(log: EventLog, position: str) -> bool:
    info = await log.stream_info()
    if info is None or info.max_deleted_id is None:
        return False
    return stream_id_key(info.max_deleted_id) > stream_id_key(position)
