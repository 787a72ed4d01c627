"""Script calls of a process's concurrent tasks, sent together: one round trip per batch.

A worker has many tasks in flight, and each of their pages costs a few script calls (its
host slot, its settle, the enqueue of its links). Alone, each call pays redis-py's client
cost and a round trip of its own; a `ScriptBatcher` sends the calls its callers make while
one batch is in flight as the next batch, one non-transactional pipeline. Only the
transport is shared: each script still runs alone and atomically on the server, fenced by
its own arguments, and its reply (or its error) reaches its own caller only. A call made
while no batch is in flight goes at once, so nothing waits for a batch to fill.

A script the server no longer knows (``NOSCRIPT``: restarted, or ``SCRIPT FLUSH``), and a
write refused for memory (``OOM``, which a riding-out client waits out), are sent again by
their caller alone, as a call without a batcher is: redis-py loads the script, or its
retry policy waits the refusal out. A caller cancelled while its call waits for a batch is
left out of it; one cancelled while its batch is in flight leaves the others' replies
alone, and a batch all of whose callers gave up is given up too (as one call alone is).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import redis.asyncio as aioredis
import redis.exceptions
from redis.commands.core import AsyncScript

from eventlog._connection import Arg, Key, ScriptCaller

MAX_BATCH = 256
"""Calls one batch carries at most: a few hundred script calls of a dozen arguments keep
the server busy only briefly, and the rest go with the next batch."""


class _Call:
    """One caller's script call, and what it got."""

    __slots__ = ("args", "direct", "done", "error", "gone", "keys", "reply", "script")

    def __init__(self, script: AsyncScript, keys: Sequence[Key], args: Sequence[Arg]) -> None:
        self.script, self.keys, self.args = script, keys, args
        self.done = anyio.Event()
        self.reply: Any = None
        self.error: Exception | None = None
        self.direct = False
        """The caller sends it again alone (see the module's doc)."""
        self.gone = False
        """Its caller was cancelled: nobody takes its reply."""


class ScriptBatcher:
    """The script calls of one client's concurrent callers, batched while `running`.

    A call made while nothing is in flight goes at once, alone (`ScriptCaller`: a pipeline
    of one costs more); the calls made while one is in flight wait
    for it, then go together. Outside `running`, every call goes alone. ``calls`` and
    ``batches`` count what went in batches (a batch of one, queued behind another, too),
    ``alone`` the calls sent alone while running.
    """

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._caller = ScriptCaller(redis)
        self.calls = 0
        self.batches = 0
        self.alone = 0
        self._queued: list[_Call] = []
        self._busy = 0
        """Calls sent alone, and batches, in flight now."""
        self._wake: anyio.Event | None = None
        """Set when a call is queued or nothing is in flight any more; None while not
        running."""
        self._in_flight: tuple[list[_Call], anyio.CancelScope] | None = None

    @property
    def is_running(self) -> bool:
        return self._wake is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ScriptBatcher]:
        """Batch the calls made meanwhile; on the way out, a call still waiting is sent
        by its caller alone."""
        if self._wake is not None:
            raise RuntimeError("this batcher is running already")
        async with anyio.create_task_group() as sending:
            self._wake = anyio.Event()
            sending.start_soon(self._send_loop)
            try:
                yield self
            finally:
                self._wake = None
                sending.cancel_scope.cancel()
                _send_alone(self._queued)
                self._queued = []

    async def call(self, script: AsyncScript, keys: Sequence[Key], args: Sequence[Arg]) -> Any:
        """The reply of ``script`` run with ``keys`` and ``args``; raises what redis-py
        raises for it alone (its caller translates it, `redis_errors`)."""
        wake = self._wake
        if wake is None:
            return await self._caller(script, keys, args)
        if not self._busy and not self._queued:
            return await self._alone(script, keys, args)
        call = _Call(script, keys, args)
        self._queued.append(call)
        wake.set()
        try:
            await call.done.wait()
        except BaseException:
            self._give_up(call)
            raise
        if call.direct:
            return await self._alone(script, keys, args)
        if call.error is not None:
            raise call.error
        return call.reply

    async def _alone(self, script: AsyncScript, keys: Sequence[Key], args: Sequence[Arg]) -> Any:
        self._busy += 1
        self.alone += 1
        try:
            return await self._caller(script, keys, args)
        finally:
            self._busy -= 1
            if not self._busy and self._queued and self._wake is not None:
                self._wake.set()

    def _give_up(self, call: _Call) -> None:
        call.gone = True
        if self._in_flight is not None:
            batch, scope = self._in_flight
            if call in batch and all(c.gone for c in batch):
                scope.cancel()

    async def _send_loop(self) -> None:
        while (wake := self._wake) is not None:
            await wake.wait()
            self._wake = anyio.Event()
            if self._busy:
                continue  # woken again once nothing is in flight
            batch = [call for call in self._queued[:MAX_BATCH] if not call.gone]
            del self._queued[:MAX_BATCH]
            if batch:
                self._busy += 1
                try:
                    await self._send(batch)
                finally:
                    self._busy -= 1
            if self._queued:
                self._wake.set()

    async def _send(self, batch: list[_Call]) -> None:
        self.calls += len(batch)
        self.batches += 1
        try:
            with anyio.CancelScope() as scope:
                self._in_flight = (batch, scope)
                replies = await self._pipelined(batch)
                for call, reply in zip(batch, replies, strict=True):
                    _answer(call, reply)
        except Exception as exc:  # the whole batch failed: each caller hears it
            for call in batch:
                call.error = exc
                call.done.set()
        finally:
            self._in_flight = None
            # Cut short (its callers all gone, or the batcher closing): any left send alone.
            _send_alone([call for call in batch if not call.done.is_set()])

    async def _pipelined(self, batch: list[_Call]) -> list[Any]:
        if len(batch) == 1:
            call = batch[0]
            try:
                return [await self._caller(call.script, call.keys, call.args)]
            except redis.exceptions.ResponseError as exc:
                return [exc]
        async with self.redis.pipeline(transaction=False) as pipe:
            for call in batch:
                # EVALSHA itself, not the script object: redis-py checks every script of a
                # pipeline with SCRIPT EXISTS first, a round trip more per batch.
                pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
            return await pipe.execute(raise_on_error=False)


def _answer(call: _Call, reply: Any) -> None:
    if isinstance(reply, (redis.exceptions.NoScriptError, redis.exceptions.OutOfMemoryError)):
        call.direct = True
    elif isinstance(reply, Exception):
        call.error = reply
    else:
        call.reply = reply
    call.done.set()


def _send_alone(calls: list[_Call]) -> None:
    for call in calls:
        call.direct = True
        call.done.set()
