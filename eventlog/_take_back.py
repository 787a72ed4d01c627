"""Taking back a restarted worker's own pending list, each task with its resume point.

A worker killed and started again under its name finds its leases still in the lanes'
pending lists. `TakeBack` re-delivers them in chunks (``XREADGROUP`` from an id, with the
``XPENDING`` beside it for the delivery counts, both in one MULTI), decodes their tasks,
and reads each task's ``ckpt`` value (``HMGET``) on another connection while the next
chunk is on its way. `TaskQueue.take_back` and `TaskQueue.take_back_all` call it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from itertools import repeat
from typing import Any, cast

import anyio
import anyio.lowlevel
import msgspec
import redis.asyncio as aioredis

from eventlog._connection import InFlight, redis_errors
from eventlog._keys import TASK_FIELD, WORKERS_GROUP, JobKeys
from eventlog._tasks import Lease, Task, task_decoder, task_of

DEFAULT_TAKE_BACK_CHUNK = 2_000
"""Own pending entries a lane taken back in one call (see `TakeBack.all`)."""

Poisoned = Callable[[int, bytes, list[bytes], Exception, int], Awaitable[None]]
"""What to do with an entry whose task does not decode: (lane, entry id, fields, the
error, deliveries) (`TaskQueue` moves it to the dead stream)."""

_Taken = tuple[int, bytes, Task, int]
"""A taken-back entry before its resume point is read: lane, entry id, task, deliveries."""


class TakeBack:
    """One consumer's reading of its own pending list: re-delivered, with resume points."""

    def __init__(
        self, redis: aioredis.Redis, keys: JobKeys, consumer: str, *, poisoned: Poisoned
    ) -> None:
        self.redis, self.keys, self.consumer = redis, keys, consumer
        self._poisoned = poisoned

    async def chunk(
        self, count: int, after: tuple[str, ...] | None = None
    ) -> tuple[list[Lease], tuple[str, ...] | None]:
        """Up to ``count`` entries a lane after the entry ids ``after`` (one a lane; None:
        from the start), and where to go on from (None once every lane is read to its end)."""
        start = after or self._start()
        started = await self._fetches_started()
        replies = await self._read(start, count)
        cursor = _cursor(replies, start, count)
        return await self._with_resume_points(await self._taken(replies), started), cursor

    async def all(self, chunk: int = DEFAULT_TAKE_BACK_CHUNK) -> list[Lease]:
        """The whole pending list, ``chunk`` entries a lane at a time, pipelined.

        Each chunk's read is sent as soon as the one before it has arrived, before that one
        is decoded, and each chunk's resume points are read on another connection while
        the next chunk is on its way: the server works while this process decodes, instead of
        each waiting for the other. Short calls, not one long one: other workers' commands
        are served in between.
        """
        chunks: list[list[Lease]] = []
        # Read once: only this consumer takes slots under its name, and it runs nothing yet.
        started = await self._fetches_started()

        async def resume_points(taken: list[_Taken], into: int) -> None:
            chunks[into] = await self._with_resume_points(taken, started)

        async with anyio.create_task_group() as tasks:
            start = self._start()
            read = InFlight(tasks, self._read(start, chunk))
            while True:
                replies = await read.result()
                after = _cursor(replies, start, chunk)
                if after is not None:
                    start, read = after, InFlight(tasks, self._read(after, chunk))
                    await anyio.lowlevel.checkpoint()  # the read is sent before the decoding
                chunks.append([])
                tasks.start_soon(resume_points, await self._taken(replies), len(chunks) - 1)
                if after is None:
                    break
        taken_back = [lease for leases in chunks for lease in leases]
        if started:
            # Tasks no longer this consumer's (taken over, or a lease found lost after its
            # slot): a later take-back of one would count a request that never went.
            left = started - {lease.task.task_id for lease in taken_back}
            if left:
                with redis_errors("clearing the fetches started"):
                    await self.redis.hdel(self.keys.fetches_started(self.consumer), *left)
        return taken_back

    def _start(self) -> tuple[str, ...]:
        return ("0",) * len(self.keys.lanes)

    async def _read(self, start: tuple[str, ...], count: int) -> list[Any]:
        # XREADGROUP from an id re-delivers this consumer's own PEL after it, with each
        # entry's fields (delivery count + 1, idle time reset), and XPENDING then gives
        # the new counts: two native commands a lane, in one MULTI so that both see the same
        # PEL. Native commands and an HMGET of the ckpt values beat one script doing all
        # three (the script's replies are converted to Lua and back) and a script doing
        # XPENDING + XCLAIM (several times longer).
        with redis_errors("taking back pending tasks"):
            async with self.redis.pipeline(transaction=True) as pipe:
                for key, first in zip(self.keys.lanes, start, strict=True):
                    pipe.execute_command(
                        "XREADGROUP", "GROUP", WORKERS_GROUP, self.consumer, "COUNT", count,
                        "STREAMS", key, first,
                    )  # fmt: skip
                    pipe.execute_command(
                        "XPENDING", key, WORKERS_GROUP, f"({first}" if first != "0" else "-",
                        "+", count, self.consumer,
                    )  # fmt: skip
                replies: list[Any] = await pipe.execute()
                return replies

    async def _taken(self, replies: list[Any]) -> list[_Taken]:
        """The tasks of a take-back read, with their delivery counts."""
        taken: list[_Taken] = []
        for lane in range(len(replies) // 2):
            read, pending = replies[2 * lane], replies[2 * lane + 1]
            entries = read[0][1] if read else []
            counts = _delivery_counts(entries, pending)
            if (tasks := _tasks_of(entries)) is not None:
                taken.extend(zip(repeat(lane), [entry[0] for entry in entries], tasks, counts))
                continue
            for (entry_id, fields), delivered in zip(entries, counts, strict=True):
                if not fields:
                    continue  # deleted while pending: nothing left to run
                # An entry that does not decode is moved aside as a claimed one is.
                try:
                    taken.append((lane, entry_id, task_of(fields), delivered))
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    await self._poisoned(lane, entry_id, fields, exc, delivered)
        return taken

    async def _fetches_started(self) -> set[str]:
        """The tasks this consumer took a politeness slot for since their last write
        (`JobKeys.fetches_started`): a few, those its requests were on their way for."""
        with redis_errors("reading the fetches started"):
            found = await self.redis.hkeys(self.keys.fetches_started(self.consumer))
        return {t.decode() if isinstance(t, bytes) else t for t in found}

    async def _with_resume_points(self, taken: list[_Taken], started: set[str]) -> list[Lease]:
        """The leases, each with its task's checkpoint and whether the worker before had a
        request of it on its way (its task in ``started``)."""
        values: Sequence[object] = []
        if taken:
            with redis_errors("reading checkpoints"):
                values = await self.redis.hmget(self.keys.ckpt, [t.task_id for _, _, t, _ in taken])
        return [
            Lease(
                lane=lane,
                entry_id=entry_id.decode(),
                task=task,
                deliveries=delivered,
                resume=value if isinstance(value, bytes) else b"",
                unrecorded_fetch=task.task_id in started,
            )
            for (lane, entry_id, task, delivered), value in zip(taken, values, strict=True)
        ]


def _cursor(replies: list[Any], start: tuple[str, ...], count: int) -> tuple[str, ...] | None:
    """Where the read after ``replies`` starts; None if every lane was read to its end."""
    cursor, more = list(start), False
    for lane in range(len(start)):
        read = replies[2 * lane]
        entries = read[0][1] if read else []
        if entries:
            cursor[lane] = entries[-1][0].decode()
        more = more or len(entries) >= count
    return tuple(cursor) if more else None


def _tasks_of(entries: list[Any]) -> list[Task] | None:
    """The task of every entry of a read, or None if one is deleted or does not decode.

    One comprehension, not a call an entry: a restart takes back 100,000 entries at once.
    """
    try:
        tasks = [
            task_decoder.decode(fields[1])
            if fields and len(fields) == 2 and fields[0] == TASK_FIELD
            else None
            for _, fields in entries
        ]
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return None if None in tasks else cast("list[Task]", tasks)


def _delivery_counts(entries: list[Any], pending: list[Any]) -> list[int]:
    """The delivery count of each entry of a take-back read, from the XPENDING beside it."""
    # Both list this consumer's pending entries after the same id, in id order, in one
    # MULTI: paired by position (checked at both ends), looked up only if they differ.
    if len(pending) == len(entries) and (
        not entries or (pending[0][0] == entries[0][0] and pending[-1][0] == entries[-1][0])
    ):
        return [int(entry[3]) for entry in pending]
    counts = {entry[0]: int(entry[3]) for entry in pending}
    return [counts.get(entry[0], 1) for entry in entries]
