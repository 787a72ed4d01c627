"""The store side of ``crawlog restore``: the writes that rebuild a job's keys.

The projector decides what to write (``projector._restore``: the tasks, their resume
points, the flags, from the committed state); every key it touches is written here. The
job's other keys are cleared first (`clear_job_keys`), the log is kept only where it goes
on from the archive (`log_continues`) and is otherwise started again empty, its last ID set
to the committed position, so that the projector, which reads after that position, goes on
as before and every new entry sorts after what is archived.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import anyio
import msgspec
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from eventlog._codec import encode
from eventlog._connection import command, redis_errors
from eventlog._events import CheckpointSaved
from eventlog._keys import (
    JOB_PAUSED,
    LANES,
    RESTORED_EPOCH,
    RESTORED_POSITION,
    SEEN_FIELD_BYTES,
    WORKERS_GROUP,
    JobKeys,
    action_field,
    awaiting_value,
    circuit_flag,
    delayed_member,
    parked_member,
    seen_slot,
    site_pause_flag,
    task_pause_flag,
)
from eventlog._lock import DEFAULT_NAME_TTL_MS
from eventlog._scripts import RESTORE_LANE, RESTORE_SEEN
from eventlog._tasks import Task, task_encoder

RESTORE_BATCH = 5_000
"""Tasks (or hash fields) a restore writes per call: large enough that a million tasks
cost few round trips, small enough that no call holds the server long."""


async def live_holders(redis: aioredis.Redis, keys: JobKeys) -> list[str]:
    """The workers of the job alive now: those holding their worker name (a live process
    renews it; a dead one's lapses within `DEFAULT_NAME_TTL_MS`, and the leases it left in
    a lane are void)."""
    prefix = keys.worker_lock("")
    holders: set[str] = set()
    with redis_errors("looking for live workers"):
        async for key in redis.scan_iter(match=keys.worker_lock("*"), count=1000):
            holders.add((key.decode() if isinstance(key, bytes) else key).removeprefix(prefix))
    return sorted(holders)


HOLDERS_POLL_S = 0.2
HOLDERS_MARGIN_S = 1.0
"""Beyond a worker name's lifetime: how long `holders_after_lapse` waits for the names of
workers that just died to lapse."""


async def holders_after_lapse(redis: aioredis.Redis, keys: JobKeys) -> list[str]:
    """The workers of the job still alive once the names of those that just died had time
    to lapse (a worker killed a moment ago holds its name a little longer): none, or those
    an operator's action must be refused for."""
    holders = await live_holders(redis, keys)
    with anyio.move_on_after(DEFAULT_NAME_TTL_MS / 1000 + HOLDERS_MARGIN_S):
        while holders:
            await anyio.sleep(HOLDERS_POLL_S)
            holders = await live_holders(redis, keys)
    return holders


async def log_continues(redis: aioredis.Redis, keys: JobKeys, position: str) -> bool:
    """Whether the stream still holds the entry at the committed ``position``: then what
    follows it is the same log's tail, to keep; otherwise anything in it was written after
    the loss (or it is empty)."""
    with redis_errors("reading the log"):
        reply = await command(redis, "XRANGE", keys.events, position, position)
    return bool(reply)


async def clear_job_keys(redis: aioredis.Redis, keys: JobKeys, *, keep: Iterable[str]) -> int:
    """Delete every key of the job but ``keep``; how many were deleted."""
    kept = set(keep)
    deleted = 0
    batch: list[str] = []
    with redis_errors("clearing the job's keys"):
        async for raw in redis.scan_iter(match=keys.pattern, count=1000):
            key = raw.decode() if isinstance(raw, bytes) else raw
            if key not in kept:
                batch.append(key)
            if len(batch) >= RESTORE_BATCH:
                deleted += int(await redis.unlink(*batch))
                batch = []
        if batch:
            deleted += int(await redis.unlink(*batch))
    return deleted


async def restart_log(redis: aioredis.Redis, keys: JobKeys, position: str) -> None:
    """Replace the log with an empty one whose last ID is ``position``: the projector reads
    on after it, and every entry added sorts after what is archived."""
    with redis_errors("starting the log again"):
        await redis.delete(keys.events)
        await command(redis, "XGROUP", "CREATE", keys.events, "restore", "$", "MKSTREAM")
        await command(redis, "XGROUP", "DESTROY", keys.events, "restore")
        if position != "0-0":
            await command(redis, "XSETID", keys.events, position)


async def restore_lanes(
    redis: aioredis.Redis, keys: JobKeys, tasks: Iterable[tuple[int, Task]]
) -> int:
    """Create every lane with its group and add each (lane, task) to its lane, each as a
    new entry: a lease of before the loss names an entry no lane holds, and is refused.
    Each task's new entry is noted in `JobKeys.restored`, where a journal flush finds it."""
    by_lane: dict[int, list[str | bytes]] = defaultdict(list)
    for lane, task in tasks:
        by_lane[lane] += (task.task_id, task_encoder.encode(task))
    script = redis.register_script(RESTORE_LANE)
    added = 0
    with redis_errors("restoring the task lanes"):
        for lane in LANES:
            key = keys.tasks(lane)
            try:
                await redis.xgroup_create(key, WORKERS_GROUP, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
            payloads = by_lane.get(lane, [])
            for start in range(0, len(payloads), 2 * RESTORE_BATCH):
                batch = payloads[start : start + 2 * RESTORE_BATCH]
                added += int(await script(keys=[key, keys.restored], args=[lane, *batch]))
    return added


RESTORED_TTL_S = 7 * 24 * 3600
"""How long a restore's entry map (`JobKeys.restored`) is kept: a worker's journal flushed
later than that has its writes of before the loss skipped, not given back."""


async def record_restore(redis: aioredis.Redis, keys: JobKeys, epoch: int, position: str) -> None:
    """Note the restore's epoch and committed position beside its entry map: a journal
    flush gives back the writes of an older epoch acknowledged after that position."""
    with redis_errors("recording the restore"):
        await redis.hset(
            keys.restored, mapping={RESTORED_EPOCH: epoch, RESTORED_POSITION: position}
        )
        await redis.expire(keys.restored, RESTORED_TTL_S)


RESTORE_SEEN_BUCKETS = 256
"""Seen buckets a `RESTORE_SEEN` call fills (of `SEEN_BUCKETS`): a million fingerprints
are some 128 calls of about 8,000 fields each."""


async def restore_seen(
    redis: aioredis.Redis,
    keys: JobKeys,
    fingerprints: Iterable[str],
    *,
    next_pages: int = 0,
    uncounted: int = 0,
) -> int:
    """Mark every fingerprint seen and count them (the seen count starts from what it
    holds: a restore clears it first), with ``next_pages``: the pages past their first that
    tasks took from the count (`TaskQueue.take_page`), less ``uncounted``: how many of the
    fingerprints were marked seen without counting (a recrawl's revisits, enqueued with
    ``counted=False``); how many fingerprints were new."""
    buckets: dict[int, set[bytes]] = defaultdict(set)
    for fingerprint in fingerprints:
        bucket, field = seen_slot(fingerprint)
        buckets[bucket].add(field)
    script = redis.register_script(RESTORE_SEEN)
    added = 0
    items = sorted(buckets.items())
    with redis_errors("restoring the seen fingerprints"):
        for start in range(0, len(items), RESTORE_SEEN_BUCKETS):
            batch = items[start : start + RESTORE_SEEN_BUCKETS]
            keys_ = [keys.seen_count, *(keys.seen_bucket(bucket) for bucket, _ in batch)]
            args: list[bytes | int] = [b"".join(sorted(fields)) for _, fields in batch]
            args.append(SEEN_FIELD_BYTES)
            added += int(await script(keys=keys_, args=args))
        if adjust := next_pages - min(uncounted, added):
            await redis.incrby(keys.seen_count, adjust)
    return added


async def restore_redirects(
    redis: aioredis.Redis, keys: JobKeys, claims: Mapping[str, str]
) -> None:
    """Note each fingerprint -> the task that reached its URL through a redirect, as
    ``CLAIM_URL`` did (its fingerprint is marked seen by `restore_seen`): no task is
    enqueued for that URL, and the task may follow the same redirect again."""
    await _set_fields(redis, keys.redirected, claims)


async def restore_checkpoints(
    redis: aioredis.Redis, keys: JobKeys, checkpoints: Mapping[str, tuple[str, CheckpointSaved]]
) -> None:
    """Point each task's ``ckpt`` at its last checkpoint (stream ID and the event, as
    ``SETTLE`` writes it): a worker reads its resume point from there, and the archive
    holds the event by that ID."""
    fields = {
        task_id: stream_id.encode() + b"|" + encode(event)
        for task_id, (stream_id, event) in checkpoints.items()
    }
    await _set_fields(redis, keys.ckpt, fields)


class Flags(msgspec.Struct, frozen=True, kw_only=True):
    """The pauses, circuits and once-only markers of a job, as its log last set them."""

    job_paused: bool = False
    paused_sites: tuple[str, ...] = ()
    open_circuits: dict[str, float] = msgspec.field(default_factory=dict)
    """Site -> until when (seconds since the epoch) its circuit stays open."""
    paused_tasks: dict[str, str] = msgspec.field(default_factory=dict)
    """Task id -> its site: paused by a pause of its own."""
    awaiting: dict[str, tuple[str, str]] = msgspec.field(default_factory=dict)
    """Task id -> (its site, the action): paused for a person (an uncertain action)."""
    actions: dict[tuple[str, str], str] = msgspec.field(default_factory=dict)
    """(task id, action id) -> "intended" or "done" (``ctx.once`` markers)."""


async def restore_flags(redis: aioredis.Redis, keys: JobKeys, flags: Flags) -> None:
    """Write the control hash, the action markers and the tasks waiting for a person."""
    control: dict[str, str | bytes] = {}
    if flags.job_paused:
        control[JOB_PAUSED] = "paused"
    for site in flags.paused_sites:
        control[site_pause_flag(site)] = "paused"
    for site, until in flags.open_circuits.items():
        control[circuit_flag(site)] = repr(until)
    for task_id, site in flags.paused_tasks.items():
        control[task_pause_flag(task_id)] = site
    await _set_fields(redis, keys.control, control)
    await _set_fields(
        redis,
        keys.actions,
        {action_field(task, action): state for (task, action), state in flags.actions.items()},
    )
    await _set_fields(
        redis,
        keys.awaiting,
        {task: awaiting_value(site, action) for task, (site, action) in flags.awaiting.items()},
    )


async def restore_parked(
    redis: aioredis.Redis, keys: JobKeys, tasks: Sequence[tuple[int, Task]]
) -> None:
    """Park again the (lane, task)s paused by a pause of their own or for a person: they
    leave the parked set when that pause is lifted, as before the loss."""
    members = [
        parked_member(task.site, task.task_id, lane, task_encoder.encode(task))
        for lane, task in tasks
    ]
    with redis_errors("restoring the parked tasks"):
        for start in range(0, len(members), RESTORE_BATCH):
            await redis.zadd(keys.parked, dict.fromkeys(members[start : start + RESTORE_BATCH], 0))


async def restore_delayed(
    redis: aioredis.Redis, keys: JobKeys, tasks: Sequence[tuple[int, int, Task]]
) -> None:
    """Hold each (due time in server ms, lane, task) in ``delayed`` until it is due, as its
    retry left it: `PROMOTE` moves it to its lane then."""
    with redis_errors("restoring the delayed retries"):
        for start in range(0, len(tasks), RESTORE_BATCH):
            batch = tasks[start : start + RESTORE_BATCH]
            members = {
                delayed_member(lane, task_encoder.encode(task)): due for due, lane, task in batch
            }
            await redis.zadd(keys.delayed, members)


async def _set_fields(redis: aioredis.Redis, key: str, fields: Mapping[str, str | bytes]) -> None:
    items = list(fields.items())
    with redis_errors("restoring the job's keys"):
        for start in range(0, len(items), RESTORE_BATCH):
            await redis.hset(key, mapping=dict(items[start : start + RESTORE_BATCH]))


async def copy_log_tail(
    source: aioredis.Redis, target: aioredis.Redis, keys: JobKeys, after: str
) -> int:
    """Copy the entries after stream ID ``after`` of the job's log on ``source`` (the old
    server, still answering) to the log on ``target``, with their IDs; how many. Only a log
    that goes on from ``after`` is copied (`log_continues`): 0 otherwise."""
    if not await log_continues(source, keys, after):
        return 0
    copied = 0
    start = after
    with redis_errors("copying the log's tail"):
        while True:
            entries = await command(
                source, "XRANGE", keys.events, f"({start}", "+", "COUNT", RESTORE_BATCH
            )
            if not entries:
                return copied
            pipe = target.pipeline(transaction=False)
            for entry_id, fields in entries:
                pipe.execute_command("XADD", keys.events, entry_id, *fields)
            await pipe.execute()
            copied += len(entries)
            raw = entries[-1][0]
            start = raw.decode() if isinstance(raw, bytes) else str(raw)
