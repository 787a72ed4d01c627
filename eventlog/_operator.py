"""What operator commands read and repair in Redis: leases, live workers, dead letters,
uncertain actions.

Read-only views of the consumer group (who holds which task, for how long by the server's
clock) and of the worker-name locks; a person's decision about an uncertain action (an
event, its marker and the task resumed, in one script); and the one write that is not an
event: putting a dead-lettered entry back where it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from eventlog._codec import decode, encode
from eventlog._connection import command, redis_errors
from eventlog._events import ActionResolved, Decision, TaskResumed
from eventlog._exceptions import EventDecodeError, OperatorRefused
from eventlog._keys import (
    EVENT_FIELD,
    TASK_FIELD,
    WORKERS_GROUP,
    JobKeys,
    action_field,
    awaiting_action,
    parked_prefix,
    seen_slot,
    task_pause_flag,
)
from eventlog._lock import is_gone
from eventlog._log import DeadLetter, EventLog, parse_dead_letters
from eventlog._queue import Task
from eventlog._replies import dead_replay_reply, resolve_reply
from eventlog._scripts import DEAD_REPLAY, REBUILD_CKPT, RESOLVE

LEASES_READ = 10_000
"""Pending entries read per lane: more leases than this are counted but not listed."""
_SCAN_COUNT = 500
_task_decoder = msgspec.msgpack.Decoder(Task)


class LeaseInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One lease as the server holds it: a pending entry of the ``workers`` group."""

    worker: str
    lane: int
    entry_id: str
    age_ms: int
    """The server's idle time of the entry: time since its owner last renewed it."""
    deliveries: int
    task_id: str | None
    """None if the entry was deleted while pending (nothing left to run) or is unreadable."""
    url: str | None


class WorkerInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A worker as Redis sees it: whether its process holds its name, and its leases."""

    name: str
    alive: bool
    leases: int
    oldest_lease_ms: int | None
    """Idle time of its least recently renewed lease: near the lease, the worker is stuck."""
    idle_ms: int
    """Since the worker last read from or claimed in the queue."""
    held_slots: int = 0
    """Per-host politeness slots a gone worker still holds (killed mid-request): until
    its restart or the recovery of its leases frees them, others may wait for that host."""
    slots_expire_ms: int | None = None
    """Server time until the first of those slots expires by itself (its ttl)."""


async def read_leases(
    redis: aioredis.Redis, keys: JobKeys, limit: int = LEASES_READ
) -> tuple[list[LeaseInfo], int]:
    """Every lease of the job (at most ``limit`` per lane listed), and how many there are."""
    lanes = keys.lanes
    with redis_errors("reading leases"):
        async with redis.pipeline(transaction=False) as pipe:
            for lane in lanes:
                pipe.exists(lane)
            exists = await pipe.execute()
        present = [(n, lane) for n, lane in enumerate(lanes) if exists[n]]
        total = 0
        pending: list[tuple[int, list[list[bytes | int]]]] = []
        for n, lane in present:
            summary = await command(redis, "XPENDING", lane, WORKERS_GROUP)
            total += int(summary[0])
            if summary[0]:
                entries = await command(redis, "XPENDING", lane, WORKERS_GROUP, "-", "+", limit)
                pending.append((n, entries))
        # The task of each lease, in one round trip: its entry in the lane.
        async with redis.pipeline(transaction=False) as pipe:
            for n, entries in pending:
                for entry in entries:
                    pipe.execute_command("XRANGE", lanes[n], entry[0], entry[0])
            bodies = iter(await pipe.execute())
    leases = []
    for n, entries in pending:
        for entry_id, consumer, idle, deliveries in entries:
            body = next(bodies)
            task = _decode_task(body[0][1]) if body else None
            leases.append(
                LeaseInfo(
                    worker=_text(consumer),
                    lane=n,
                    entry_id=_text(entry_id),
                    age_ms=int(idle),
                    deliveries=int(deliveries),
                    task_id=task.task_id if task else None,
                    url=task.url if task else None,
                )
            )
    return leases, total


async def read_workers(redis: aioredis.Redis, keys: JobKeys) -> list[WorkerInfo]:
    """Every worker that is alive or holds leases, by name: their lease counts and ages."""
    leases: dict[str, int] = {}
    idle: dict[str, int] = {}
    oldest: dict[str, int] = {}
    with redis_errors("reading the workers"):
        for lane in keys.lanes:
            try:
                consumers = await command(redis, "XINFO", "CONSUMERS", lane, WORKERS_GROUP)
            except ResponseError:
                continue  # the lane or its group does not exist yet: nobody has read it
            for consumer in consumers:
                info = _fields(consumer)
                name = _text(info["name"])
                leases[name] = leases.get(name, 0) + int(info["pending"])
                # Idle since its last read of *any* lane: the smallest over the lanes.
                idle[name] = min(idle.get(name, int(info["idle"])), int(info["idle"]))
            if not consumers:
                continue
            pending = await command(redis, "XPENDING", lane, WORKERS_GROUP, "-", "+", LEASES_READ)
            for _entry_id, owner, entry_idle, _deliveries in pending:
                name = _text(owner)
                oldest[name] = max(oldest.get(name, 0), int(entry_idle))
        names = sorted(leases)
        if not names:
            return []
        async with redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.get(keys.worker_lock(name))
            # A holder this machine sees is dead is gone, though its name has not expired.
            alive = [isinstance(v, bytes) and not is_gone(v) for v in await pipe.execute()]
        gone = [name for name, is_alive in zip(names, alive, strict=True) if not is_alive]
        slots = await _held_slots(redis, keys, gone)
    return [
        WorkerInfo(
            name=name,
            alive=is_alive,
            leases=leases[name],
            oldest_lease_ms=oldest.get(name) if leases[name] else None,
            idle_ms=idle[name],
            held_slots=slots.get(name, (0, None))[0],
            slots_expire_ms=slots.get(name, (0, None))[1],
        )
        for name, is_alive in zip(names, alive, strict=True)
        # A name from an earlier run that holds nothing is history, not a worker.
        if is_alive or leases[name]
    ]


async def _held_slots(
    redis: aioredis.Redis, keys: JobKeys, holders: Sequence[str]
) -> dict[str, tuple[int, int | None]]:
    """Per holder: its politeness slots still held, and ms until the first expires."""
    if not holders:
        return {}
    async with redis.pipeline(transaction=False) as pipe:
        for holder in holders:
            pipe.hgetall(keys.slots_held(holder))
        indexes: list[dict[bytes, bytes]] = await pipe.execute()
    listed = [
        (h, token, host)
        for h, index in zip(holders, indexes, strict=True)
        for token, host in index.items()
    ]
    if not listed:
        return {}
    async with redis.pipeline(transaction=False) as pipe:
        pipe.time()
        for _, token, host in listed:
            pipe.zscore(keys.host_slots(_text(host)), token)
        now, *expiries = await pipe.execute()
    now_ms = int(now[0]) * 1000 + int(now[1]) // 1000
    found: dict[str, tuple[int, int | None]] = {}
    for (holder, _, _), expiry in zip(listed, expiries, strict=True):
        if expiry is None or expiry <= now_ms:
            continue  # freed, or expired (dropped on the next take of the host)
        count, first = found.get(holder, (0, None))
        left = int(expiry) - now_ms
        found[holder] = (count + 1, left if first is None else min(first, left))
    return found


async def tasks_at(
    redis: aioredis.Redis, keys: JobKeys, held: Sequence[tuple[int, str]]
) -> list[Task]:
    """The tasks behind these (lane, entry id) pairs (``TaskQueue.leases_of``), in one round
    trip; an entry deleted meanwhile, or one that does not decode, is left out."""
    with redis_errors("reading task entries"):
        async with redis.pipeline(transaction=False) as pipe:
            for lane, entry_id in held:
                pipe.execute_command("XRANGE", keys.tasks(lane), entry_id, entry_id)
            bodies = await pipe.execute()
    tasks = []
    for body in bodies:
        for _, fields in body:
            if (task := _decode_task(fields)) is not None:
                tasks.append(task)
    return tasks


async def is_seen(redis: aioredis.Redis, keys: JobKeys, fingerprint: str) -> bool:
    """Whether a task was ever enqueued for this URL fingerprint (or a task fetched it
    through a redirect): the job's seen buckets (or the set an older crawlog kept)."""
    bucket, field = seen_slot(fingerprint)
    with redis_errors("reading the seen fingerprints"):
        async with redis.pipeline(transaction=False) as pipe:
            pipe.hexists(keys.seen_bucket(bucket), field)
            pipe.sismember(keys.seen, fingerprint)
            in_bucket, in_set = await pipe.execute()
    return bool(in_bucket or in_set)


async def rebuild_checkpoints(
    redis: aioredis.Redis, keys: JobKeys, pointers: Sequence[tuple[str, str | None]]
) -> int:
    """Point the ``ckpt`` index at these (task id, checkpoint stream ID) pairs, never
    backwards (None: the task is terminal, its pointer dropped); returns entries changed."""
    if not pointers:
        return 0
    args = [value for task_id, stream_id in pointers for value in (task_id, stream_id or "")]
    with redis_errors("rebuilding the checkpoint index"):
        return int(await redis.register_script(REBUILD_CKPT)(keys=[keys.ckpt], args=args))


def _decode_task(fields: Sequence[bytes]) -> Task | None:
    """The task of a lane entry's fields; None if they are not a task this code reads."""
    try:
        if len(fields) == 2 and fields[0] == TASK_FIELD:
            return _task_decoder.decode(fields[1])
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    return None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def find_dead_letter(log: EventLog, dead_id: str) -> DeadLetter:
    """The dead letter ``dead_id``; ``OperatorRefused`` if there is none (any more)."""
    with redis_errors("reading a dead letter"):
        reply = await command(log.redis, "XRANGE", log.keys.dead, dead_id, dead_id)
    for letter in parse_dead_letters(reply):
        return letter
    raise OperatorRefused(
        f"no dead letter {dead_id} in job {log.keys.job!r} (already replayed?): "
        f"`crawlog dead list --job {log.keys.job}` shows what is there"
    )


async def replay_dead_letter(log: EventLog, letter: DeadLetter) -> str:
    """Put a dead letter back on its stream as a new entry, and delete it; the new ID.

    Only if it decodes now (after an upgrade, or an upcaster was added): otherwise it
    would only be dead-lettered again, and ``OperatorRefused`` says why. Replaying the
    same letter twice puts it back once.
    """
    keys = log.keys
    event_id = ""
    fields: Sequence[bytes] = [b for pair in letter.fields.items() for b in pair]
    if letter.stream == keys.events:
        payload = letter.fields.get(EVENT_FIELD)
        try:
            if payload is None or len(letter.fields) != 1:
                raise EventDecodeError(f"expected one field {EVENT_FIELD!r}")
            event_id = decode(payload).event_id
        except EventDecodeError as exc:
            raise OperatorRefused(_still_bad(letter, str(exc))) from None
    elif letter.stream in keys.lanes:
        if _decode_task(fields) is None:
            raise OperatorRefused(_still_bad(letter, "the task still does not decode"))
    else:
        raise OperatorRefused(
            f"dead letter {letter.dead_id} came from {letter.stream}, not a stream of job "
            f"{keys.job!r}; nothing replayed"
        )
    dedup, ttl = log.dedup_args()
    script = log.redis.register_script(DEAD_REPLAY)
    args: list[str | bytes | int] = [letter.dead_id, ttl, event_id, *fields]
    with redis_errors("replaying a dead letter"):
        reply = dead_replay_reply(await script(keys=[keys.dead, letter.stream, *dedup], args=args))
    if reply.status == "gone":
        raise OperatorRefused(f"dead letter {letter.dead_id} was replayed meanwhile")
    # An event whose id is still in the dedup window is not appended twice: no new ID.
    return reply.entry_id.decode() if reply.entry_id else "(already in the log)"


def _still_bad(letter: DeadLetter, why: str) -> str:
    return (
        f"dead letter {letter.dead_id} ({letter.stream} entry {letter.entry_id}) still does "
        f"not decode ({why}): replaying it would only dead-letter it again; nothing replayed"
    )


def _fields(consumer: object) -> dict[str, Any]:
    """A consumer's XINFO reply as a dict, whether redis-py parsed it already or not."""
    if isinstance(consumer, dict):
        return {_text(k): v for k, v in consumer.items()}
    assert isinstance(consumer, list | tuple)
    return {_text(k): v for k, v in zip(consumer[::2], consumer[1::2], strict=False)}


class Resolution(msgspec.Struct, frozen=True, kw_only=True):
    """A decision about an uncertain action, as recorded."""

    task_id: str
    action_id: str
    decision: Decision
    requeued: int
    """Parked tasks put back in their lane (1, or 0 if it had not been parked yet)."""


_GLOB_SPECIALS = str.maketrans({c: "\\" + c for c in "*?[]\\"})


async def uncertain_action(
    redis: aioredis.Redis, keys: JobKeys, task_id: str
) -> tuple[str, str] | None:
    """(site, action id) of the task's action that waits for a person to decide, or None:
    its intent is logged, its completion not, and the task is paused."""
    with redis_errors("reading the task's actions"):
        site = await redis.hget(keys.control, task_pause_flag(task_id))
        if not isinstance(site, bytes):
            return None  # not paused: an action of a running task is not uncertain yet
        recorded = await redis.hget(keys.awaiting, task_id)
        if isinstance(recorded, bytes):
            action_id = awaiting_action(recorded.decode())
            if await redis.hget(keys.actions, action_field(task_id, action_id)) == b"intended":
                return site.decode(), action_id
        # Paused for an uncertain action before tasks waiting for a person were listed:
        # its marker says so.
        prefix = f"{task_id}|"
        async for field, value in redis.hscan_iter(
            keys.actions, match=prefix.translate(_GLOB_SPECIALS) + "*", count=_SCAN_COUNT
        ):
            if value == b"intended":
                return site.decode(), _text(field).removeprefix(prefix)
    return None


async def resolve_action(
    redis: aioredis.Redis,
    keys: JobKeys,
    task_id: str,
    decision: Decision,
    *,
    actor: str,
    reason: str,
) -> Resolution:
    """Record a person's decision about the task's uncertain action and resume the task.

    ``done``: the action counts as done and is skipped when the task runs again; ``redo``:
    it runs again. ``OperatorRefused`` if the task has no action waiting for a decision
    (or another decision was recorded meanwhile).
    """
    found = await uncertain_action(redis, keys, task_id)
    if found is None:
        raise OperatorRefused(
            f"task {task_id} has no uncertain action to resolve: only a task paused because "
            "an action's intent is logged and its completion not waits for a decision"
        )
    site, action_id = found
    resolved = ActionResolved(
        actor=actor, task_id=task_id, action_id=action_id, decision=decision, reason=reason
    )
    resumed = TaskResumed(
        actor=actor, task_id=task_id, reason=f"action {action_id} resolved ({decision}): {reason}"
    )
    log = EventLog(redis, keys)
    dedup, ttl = log.dedup_args()
    script = redis.register_script(RESOLVE)
    script_keys = [
        keys.events,
        *dedup,
        keys.actions,
        keys.awaiting,
        keys.control,
        keys.parked,
        *keys.lanes,
    ]
    args: list[str | bytes | int] = [
        ttl, task_id, action_field(task_id, action_id), decision, task_pause_flag(task_id),
        parked_prefix(site, task_id), resolved.event_id, encode(resolved), resumed.event_id,
        encode(resumed),
    ]  # fmt: skip
    with redis_errors("resolving an uncertain action"):
        reply = resolve_reply(await script(keys=script_keys, args=args))
    if reply.status == "refused":
        raise OperatorRefused(
            f"action {action_id} of task {task_id} was decided or resumed meanwhile; "
            "nothing written"
        )
    return Resolution(
        task_id=task_id, action_id=action_id, decision=decision, requeued=reply.requeued
    )
