"""The progress log of a job: an append-only Redis stream of events."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import msgspec
import redis.asyncio as aioredis
import redis.exceptions

from eventlog._codec import decode, decode_current, encode
from eventlog._connection import command, max_block_ms, redis_errors, script_pipeline
from eventlog._events import AnyEvent
from eventlog._exceptions import ConfigError, EventDecodeError, PoisonEntry
from eventlog._keys import EVENT_FIELD, JobKeys
from eventlog._scripts import APPEND, DEAD_LETTER

DEFAULT_DEDUP_WINDOW_S = 30
"""A repeated ``event_id`` is skipped if it comes back within at least this many seconds.

Long enough for redis-py's own retries (a few seconds); the ids of the last one to two
windows are held in Redis, so a longer window costs memory at high event rates. A repeat
that comes later still changes nothing: the projector ignores a recent ``event_id`` too,
and the fenced scripts refuse a second finish."""
DEFAULT_READ_COUNT = 1000
MAX_EVENTS_PER_CALL = 1000
"""Events per script call; bigger batches are split and pipelined in one round trip."""
START = "0-0"
"""The position before the first entry of any stream."""

# Raw RESP2 replies, as hiredis hands them over with the callbacks removed.
RawEntry = list[Any]


class LogEntry(msgspec.Struct, frozen=True, gc=False):
    """One event, its position in the log, and its bytes as stored (the archive keeps those)."""

    stream_id: str
    event: AnyEvent
    payload: bytes


class StreamInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What the server says of the log stream (``XINFO STREAM``)."""

    entries_added: int
    """Every entry ever added, trimmed ones included."""
    last_id: str
    """Stream ID of the last entry ever added (it may be trimmed since)."""
    max_deleted_id: str | None
    """The highest stream ID trimmed or deleted from the log; None if none was."""
    length: int = 0
    """Entries the stream holds now (the same reply: with ``entries_added``, how many were
    trimmed, as one consistent pair)."""
    first_id: str | None = None
    """Stream ID of the oldest entry it holds (every trimmed one was older); None if it
    holds none."""


def parse_stream_info(reply: object) -> StreamInfo:
    """An ``XINFO STREAM`` reply (a flat list, or a dict if redis-py parsed it) as a
    ``StreamInfo``."""
    if isinstance(reply, dict):
        info = {_text(k): v for k, v in reply.items()}
    else:
        assert isinstance(reply, list | tuple)
        info = {_text(k): v for k, v in zip(reply[::2], reply[1::2], strict=False)}
    deleted = info.get("max-deleted-entry-id")
    max_deleted = _text(deleted) if deleted is not None else START
    return StreamInfo(
        entries_added=int(info.get("entries-added", 0)),
        last_id=_text(info.get("last-generated-id", START)),
        max_deleted_id=None if max_deleted == START else max_deleted,
        length=int(info.get("length", 0)),
        first_id=_first_id(info.get("first-entry")),
    )


def _first_id(entry: object) -> str | None:
    """The ID of XINFO STREAM's ``first-entry`` (``[id, fields]``, or nil)."""
    if isinstance(entry, list | tuple) and entry:
        return _text(entry[0])
    return None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class DeadLetter(msgspec.Struct, frozen=True):
    """An entry moved aside, with why and from where."""

    dead_id: str
    stream: str
    entry_id: str
    reason: str
    deliveries: int
    fields: dict[bytes, bytes]


def parse_dead_letters(reply: list[RawEntry]) -> list[DeadLetter]:
    """Raw entries of the ``dead`` stream as ``DeadLetter``s."""
    letters = []
    for dead_id, flat in reply:
        meta = dict(zip(flat[::2], flat[1::2], strict=True))
        letters.append(
            DeadLetter(
                dead_id=dead_id.decode(),
                stream=meta.pop(b"stream").decode(),
                entry_id=meta.pop(b"entry").decode(),
                reason=meta.pop(b"reason").decode(),
                deliveries=int(meta.pop(b"deliveries")),
                fields={k.removeprefix(b"field:"): v for k, v in meta.items()},
            )
        )
    return letters


def stream_id_key(stream_id: str) -> tuple[int, int]:
    """A stream ID as a sortable ``(ms, seq)`` pair: IDs do not sort as strings."""
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


def dedup_keys(keys: JobKeys, window_s: int, now: float | None = None) -> tuple[str, str]:
    """The current and previous dedup generation sets.

    Computed by the client: a redis-py retry resends the very same keys, and a producer's
    own retry a generation later still finds the id in the previous set.
    """
    generation = int((time.time() if now is None else now) // window_s)
    return keys.event_ids(generation), keys.event_ids(generation - 1)


def decode_entry(stream: str, raw: RawEntry) -> LogEntry:
    """A raw ``[id, [field, value, ...]]`` stream entry as a ``LogEntry``."""
    entry_id: str = raw[0].decode()
    fields = raw[1]
    try:
        if len(fields) != 2 or fields[0] != EVENT_FIELD:
            raise EventDecodeError(f"expected one field {EVENT_FIELD!r}")
        return LogEntry(entry_id, decode(fields[1]), fields[1])
    except EventDecodeError as exc:
        pairs = dict(zip(fields[::2], fields[1::2], strict=False))
        raise PoisonEntry(stream, entry_id, str(exc), pairs) from None


class EventLog:
    """Appends events to a job's log and reads them back in order."""

    def __init__(
        self,
        redis: aioredis.Redis,
        job: str | JobKeys,
        *,
        dedup_window_s: int = DEFAULT_DEDUP_WINDOW_S,
    ) -> None:
        if dedup_window_s < 1:
            raise ConfigError(f"dedup window must be at least 1 s, not {dedup_window_s}")
        self.redis = redis
        self.keys = job if isinstance(job, JobKeys) else JobKeys(job)
        self.dedup_window_s = dedup_window_s
        self._append = redis.register_script(APPEND)
        self._dead_letter = redis.register_script(DEAD_LETTER)
        self._dedup: tuple[int, tuple[str, str]] = (-1, ("", ""))
        """The generation of the last `dedup_args` and its keys: a generation lasts the
        dedup window, and every settle and enqueue asks for them."""

    def dedup_args(self) -> tuple[list[str], int]:
        """Dedup generation keys and their time to live, for a script call now."""
        now = time.time()
        generation, keys = self._dedup
        if int(now // self.dedup_window_s) != generation:
            keys = dedup_keys(self.keys, self.dedup_window_s, now)
            self._dedup = (int(now // self.dedup_window_s), keys)
        return list(keys), 2 * self.dedup_window_s

    async def append(self, event: AnyEvent) -> str | None:
        """Append one event; its stream ID, or None if its ``event_id`` was already there."""
        return (await self.append_many([event]))[0]

    async def append_many(self, events: Sequence[AnyEvent]) -> list[str | None]:
        """Append events in order, in one round trip; None for each repeated ``event_id``."""
        if not events:
            return []
        dedup, ttl = self.dedup_args()
        keys = [self.keys.events, *dedup]
        calls = []
        for start in range(0, len(events), MAX_EVENTS_PER_CALL):
            args: list[str | bytes | int] = [ttl]
            for event in events[start : start + MAX_EVENTS_PER_CALL]:
                args += (event.event_id, encode(event))
            calls.append((self._append, keys, args))
        with redis_errors("appending events"):
            replies = await script_pipeline(self.redis, calls)
        return [None if i is None else i.decode() for reply in replies for i in reply]

    async def read_after(
        self, after: str = START, count: int = DEFAULT_READ_COUNT, *, block_ms: int = 0
    ) -> list[LogEntry]:
        """Up to ``count`` events after stream ID ``after``, in log order.

        With ``block_ms`` > 0, waits that long for an event if there is none yet (capped
        below the socket timeout). A poison entry raises ``PoisonEntry``, but only once the
        good entries before it have been returned: read again after the last one.
        """
        args: list[str | int] = ["XREAD", "COUNT", count]
        if block_ms > 0:
            args += ["BLOCK", min(block_ms, self._max_block_ms)]
        args += ["STREAMS", self.keys.events, after]
        with redis_errors("reading the event log"):
            reply = await command(self.redis, *args)
        if not reply:
            return []
        return self._decode_all(reply[0][1])

    async def wait_for_entry_after(self, after: str | None) -> None:
        """Return once the log holds an entry after stream ID ``after`` (None: any entry).

        Blocking reads, each shorter than the socket timeout, until one returns: nothing is
        decoded, so a poison entry ends the wait as any other would.
        """
        args: list[str | int] = ["XREAD", "COUNT", 1, "BLOCK", self._max_block_ms]
        args += ["STREAMS", self.keys.events, after or START]
        while True:
            with redis_errors("waiting for the event log"):
                if await command(self.redis, *args):
                    return

    async def read_range(
        self, start: str = "-", end: str = "+", count: int | None = None
    ) -> list[LogEntry]:
        """Events with stream IDs in ``[start, end]`` (``(id`` excludes), in order."""
        args: list[str | int] = ["XRANGE", self.keys.events, start, end]
        if count is not None:
            args += ["COUNT", count]
        with redis_errors("reading the event log"):
            reply = await command(self.redis, *args)
        return self._decode_all(reply)

    async def read_ids(self, stream_ids: Sequence[str]) -> dict[str, AnyEvent]:
        """The events at these stream IDs, in one round trip; trimmed ones are absent."""
        with redis_errors("reading events by id"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for stream_id in stream_ids:
                    pipe.execute_command("XRANGE", self.keys.events, stream_id, stream_id)
                replies = await pipe.execute()
        found: dict[str, AnyEvent] = {}
        for reply in replies:
            for entry in self._decode_all(reply, partial=False):
                found[entry.stream_id] = entry.event
        return found

    async def dead_letter(
        self, poison: PoisonEntry, *, group: str = "", deliveries: int = 0
    ) -> str:
        """Move a poison entry to the dead stream with its reason.

        An event is only copied: the log is never edited, the reader skips past it. With
        ``group``, the entry is a task held in that group, and it is acked and deleted too.
        """
        args: list[str | bytes | int] = [group, poison.entry_id, poison.reason, deliveries]
        for field, value in poison.fields.items():
            args += (field, value)
        with redis_errors("dead-lettering an entry"):
            dead_id = await self._dead_letter(keys=[poison.stream, self.keys.dead], args=args)
        return str(dead_id.decode())

    async def dead_letters(self, count: int = DEFAULT_READ_COUNT) -> list[DeadLetter]:
        """Dead-lettered entries of the job, oldest first."""
        with redis_errors("reading dead letters"):
            reply = await command(self.redis, "XRANGE", self.keys.dead, "-", "+", "COUNT", count)
        return parse_dead_letters(reply)

    async def dead_letter_count(self) -> int:
        """Entries in the job's dead stream: events or task entries nobody could decode
        (and not replayed since)."""
        with redis_errors("counting dead letters"):
            return int(await command(self.redis, "XLEN", self.keys.dead))

    async def last_id(self) -> str | None:
        """Stream ID of the newest entry of the log, None if it is empty."""
        with redis_errors("reading the end of the log"):
            reply = await command(self.redis, "XREVRANGE", self.keys.events, "+", "-", "COUNT", 1)
        return reply[0][0].decode() if reply else None

    async def first_id(self, after: str | None = None) -> str | None:
        """Stream ID of the oldest entry of the log still held (after stream ID ``after``,
        if given), None if there is none. Only the ID: the entry is not decoded."""
        start = "-" if after is None else f"({after}"
        with redis_errors("reading the start of the log"):
            reply = await command(self.redis, "XRANGE", self.keys.events, start, "+", "COUNT", 1)
        return _text(reply[0][0]) if reply else None

    async def stream_info(self) -> StreamInfo | None:
        """What the server says of the log stream; None if there is no stream yet."""
        with redis_errors("reading the log's stream info"):
            try:
                reply = await command(self.redis, "XINFO", "STREAM", self.keys.events)
            except redis.exceptions.ResponseError:
                return None  # no stream yet: nothing appended, nothing trimmed
        return parse_stream_info(reply)

    async def trim_before(self, min_id: str) -> int:
        """Remove the entries of the log before stream ID ``min_id`` (exactly, not "~");
        the number removed. Only for what is archived: the log is otherwise never edited."""
        with redis_errors("trimming the log"):
            return int(await command(self.redis, "XTRIM", self.keys.events, "MINID", min_id))

    async def server_time(self) -> float:
        """The server's clock, in seconds since the epoch."""
        with redis_errors("reading the server's clock"):
            seconds, micros = await command(self.redis, "TIME")
        return int(seconds) + int(micros) / 1e6

    async def length(self) -> int:
        """Number of entries in the log stream (what Redis still holds)."""
        with redis_errors("reading the log length"):
            return int(await self.redis.xlen(self.keys.events))

    @property
    def _max_block_ms(self) -> int:
        timeout = self.redis.connection_pool.connection_kwargs.get("socket_timeout")
        return max_block_ms(timeout) if timeout else max_block_ms()

    def _decode_all(self, raw: list[RawEntry], *, partial: bool = True) -> list[LogEntry]:
        entries: list[LogEntry] = []
        add = entries.append
        try:
            # The hot loop of every reader: one msgspec call per entry, nothing else.
            for entry_id, (field, payload) in raw:
                event = decode_current(payload) if field == EVENT_FIELD else None
                if event is None:
                    break
                add(LogEntry(entry_id.decode(), event, payload))
            else:
                return entries
        except (ValueError, msgspec.DecodeError, msgspec.ValidationError):
            pass
        # Entry len(entries) needs a closer look: an older version to upcast, or poison.
        for item in raw[len(entries) :]:
            try:
                add(decode_entry(self.keys.events, item))
            except PoisonEntry:
                if entries and partial:
                    return entries
                raise
        return entries
