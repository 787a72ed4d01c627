"""``crawlog restore``: a job's keys rebuilt in a store that lost them, from the archive.

The committed state (snapshot, task segments, archived events) and whatever tail of the
log the store still holds after the committed position (`log_continues`) fold into the
state of the whole log; `plan_restore` turns it into what the store must hold (pure);
`restore_job` clears the job's keys and writes them through ``eventlog``:

- every task not ended goes back to a lane once, with its attempt, its request and its
  resume point (``ckpt`` points at its last archived checkpoint); a task running at the
  loss goes to the recovery lane with a ``TaskReclaimed`` (`STORE_RESTORED`), so the fold
  counts the page its worker was fetching as a refetch when it comes again;
- tasks paused by a pause of their own or waiting for a person are parked again; the
  ``ctx.once`` markers are written as the log left them, so an action intended and never
  logged done comes back uncertain (paused for a person), never run again;
- ``seen`` holds every task's fingerprint, the control hash the pauses and open circuits;
- the log goes on after the committed position, and the identity gets a new epoch: a
  process of before the loss stops at its next check (`eventlog.check_identity`), and a
  lease of before names an entry no lane holds, so its writes are refused.

What the log does not hold cannot come back (``crawlog restore`` says what, per site).
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Set
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pyarrow.compute as pc
import redis.asyncio as aioredis

from eventlog import (
    FINISHED,
    FIRST_RUN,
    LANE_RECOVERY,
    RECRAWL_ACTOR,
    CheckpointSaved,
    EventLog,
    Flags,
    JobIdentity,
    JobKeys,
    OperatorRefused,
    PageFetched,
    RetryScheduled,
    RunRecord,
    Task,
    TaskEnqueued,
    TaskReclaimed,
    clear_job_keys,
    copy_log_tail,
    decode,
    holders_after_lapse,
    lane_for,
    log_continues,
    publish_projector_position,
    read_identity,
    read_run,
    record_restore,
    restart_log,
    restore_checkpoints,
    restore_delayed,
    restore_flags,
    restore_lanes,
    restore_parked,
    restore_redirects,
    restore_seen,
    set_identity,
    write_run,
)
from eventlog import RUNNING as RUN_GOING
from projector._archive import read_table
from projector._committed import live_state
from projector._fold import STORE_RESTORED, fold
from projector._history import bring_back_named
from projector._identity import archive_facts, in_flight_at_loss
from projector._state import CIRCUIT_OPEN, PAUSED, PENDING, RUNNING, TERMINAL, State, TaskState
from projector._store import Manifest, Store
from projector._taskstore import iter_task_ids

RESTORE_ACTOR = "restore"
RETRY_TYPE = "task.retry_scheduled"


class RestorePlan(msgspec.Struct, kw_only=True):
    """What the store must hold for a job whose whole log folds into a state."""

    lanes: list[tuple[int, Task]] = msgspec.field(default_factory=list)
    delayed: list[tuple[int, int, Task]] = msgspec.field(default_factory=list)
    """(due time in ms, lane, task) of the retries not due yet."""
    parked: list[tuple[int, Task]] = msgspec.field(default_factory=list)
    checkpoints: dict[str, tuple[str, CheckpointSaved]] = msgspec.field(default_factory=dict)
    flags: Flags = msgspec.field(default_factory=Flags)
    seen: list[str] = msgspec.field(default_factory=list)
    reclaimed: list[TaskReclaimed] = msgspec.field(default_factory=list)
    uncertain: list[str] = msgspec.field(default_factory=list)
    """Tasks with an action intended and never logged done: they come back uncertain."""


class Restored(msgspec.Struct, kw_only=True):
    """What a restore did."""

    job: str
    position: str
    epoch: int
    tasks: int
    """Tasks the log knows (their fingerprints are seen again)."""
    queued: int
    delayed: int
    """Retries not due yet, held until they are."""
    running: int
    """Of the queued, those that were running at the loss (in the recovery lane)."""
    parked: int
    uncertain: int
    tail_events: int
    """Events of the store's tail after the committed position, kept and folded in."""
    dropped_log: bool
    """The store's log did not go on from the archive: what it held was dropped."""
    seconds: float
    redirects: int = 0
    """Redirect claims noted again (their URLs seen): the first pages that landed elsewhere."""
    sites: list[str] = msgspec.field(default_factory=list)
    """The job's sites: what the store kept per site and the log does not (cookie jars,
    robots.txt copies) is lost for each."""


def task_of(task: TaskState) -> Task:
    """The lane entry of a task as the log tells it."""
    return Task(
        task_id=task.task_id,
        url=task.url,
        site=task.site,
        depth=task.depth,
        parent_task_id=task.parent_task_id,
        attempt=task.attempt,
        recoveries=task.recoveries,
        spec=task.spec,
        request=task.request,
        # A recrawl's task stays in its run and asks the site conditionally again: without
        # these, the tasks a restore put back were a first run's, fetched in full.
        run=task.run,
        revisit=task.revisit,
    )


def plan_restore(
    state: State,
    *,
    now: float,
    in_flight: Mapping[str, str] | None = None,
    retries: Mapping[str, RetryScheduled] | None = None,
) -> RestorePlan:
    """What the store must hold to go on from ``state`` (the fold of the whole log).

    ``in_flight``: task id -> worker of the tasks whose workers had sent a request the
    lost store never logged (`in_flight_at_loss`): reclaimed like a running task, so that
    page counts as a refetch when it is fetched again. ``retries``: the last
    ``RetryScheduled`` of tasks that retried (`last_retries`): one that is still the task's
    last event and not due at ``now`` waits in ``delayed`` until it is."""
    in_flight = in_flight or {}
    retries = retries or {}
    plan = RestorePlan()
    actions: dict[tuple[str, str], str] = {}
    awaiting: dict[str, tuple[str, str]] = {}
    paused_tasks: dict[str, str] = {}
    for task in state.tasks.values():
        plan.seen.append(task.task_id)
        if task.status in TERMINAL:
            continue
        intended = []
        for action, marker in (task.actions or {}).items():
            actions[(task.task_id, action)] = marker
            if marker == "intended":
                intended.append(action)
        if intended:
            plan.uncertain.append(task.task_id)
        if task.checkpoint is not None and task.checkpoint_id is not None:
            plan.checkpoints[task.task_id] = (
                task.checkpoint_id,
                CheckpointSaved(
                    actor=RESTORE_ACTOR,
                    task_id=task.task_id,
                    attempt=task.attempt,
                    cursor=task.checkpoint,
                    counts=task.counts,
                ),
            )
        entry = task_of(task)
        if task.status == RUNNING or (task.status == PENDING and task.task_id in in_flight):
            plan.reclaimed.append(
                TaskReclaimed(
                    actor=RESTORE_ACTOR,
                    task_id=task.task_id,
                    attempt=task.attempt,
                    previous_owner=task.owner or in_flight.get(task.task_id, "?"),
                    deliveries=task.deliveries,
                    reason=STORE_RESTORED,
                )
            )
            recovered = msgspec.structs.replace(entry, recoveries=task.recoveries + 1)
            plan.lanes.append((LANE_RECOVERY, recovered))
        elif task.status == PAUSED and not task.parked:
            # Paused by a pause of its own, or for a person: parked until that is lifted.
            plan.parked.append((lane_for(entry), entry))
            if intended:
                awaiting[task.task_id] = (task.site, intended[-1])
            else:
                paused_tasks[task.task_id] = task.site
        elif (due := _retry_due(task, retries.get(task.task_id), now)) is not None:
            entry = msgspec.structs.replace(entry, not_before=due)
            plan.delayed.append((int(due * 1000), lane_for(entry), entry))
        else:
            # Pending, or parked by its site's or the job's pause: a worker that claims it
            # parks it again while that pause holds.
            plan.lanes.append((lane_for(entry), entry))
    plan.flags = Flags(
        job_paused=state.job.paused,
        paused_sites=tuple(sorted(s.site for s in state.sites.values() if s.paused)),
        # Until now: the next request probes the site, and failures open it again.
        open_circuits={s.site: now for s in state.sites.values() if s.circuit == CIRCUIT_OPEN},
        paused_tasks=paused_tasks,
        awaiting=awaiting,
        actions=actions,
    )
    return plan


def _retry_due(task: TaskState, retry: RetryScheduled | None, now: float) -> float | None:
    """When a pending task's retry is due, if its last event is that retry and it is not
    due yet."""
    if retry is None or task.status != PENDING or retry.at != task.updated_at:
        return None
    due = retry.at + retry.delay_s
    return due if due > now else None


Landing = Callable[[str, int], str]
"""The fingerprint a task of run ``run`` claims for a URL it reached through a redirect
(the crawler's ``run_fingerprint(fingerprint(url), run)``)."""

_LANDINGS_SQL = """
SELECT p.task_id, p.payload
FROM read_parquet({files}) AS p
JOIN (SELECT task_id, any_value(url) AS url FROM read_parquet({files})
      WHERE type = 'task.enqueued' GROUP BY task_id) AS e ON p.task_id = e.task_id
WHERE p.type = 'task.page' AND p.page = 1 AND p.url <> e.url
"""


_NEXT_PAGES_SQL = """
WITH enqueued AS (
    SELECT task_id, any_value(url) AS url, bool_or(actor = {revisit_actor}) AS revisit
    FROM read_parquet({files}) WHERE type = 'task.enqueued' GROUP BY task_id
), pages AS (
    SELECT DISTINCT p.task_id, p.page, e.url, coalesce(e.revisit, false) AS revisit
    FROM read_parquet({files}) AS p LEFT JOIN enqueued AS e ON p.task_id = e.task_id
    WHERE p.type = 'task.page' AND p.page > 1
)
SELECT (SELECT count(*) FROM pages WHERE NOT revisit) + (SELECT count(*) FROM (
    SELECT url, page FROM pages WHERE revisit
    EXCEPT SELECT url, page FROM pages WHERE NOT revisit
))
"""
"""Each later page of a first visit, and each later page of a revisit no visit before it
fetched (the same URL and page: a revisit takes from the count only the pages of a
listing grown since, as `TaskQueue.take_page` was asked for them)."""

_REVISITS_SQL = """
SELECT count(DISTINCT task_id) FROM read_parquet({files})
WHERE type = 'task.enqueued' AND actor = {revisit_actor}
"""


def _query_archive(paths: list[Path], sql: str) -> list[Any]:
    """The rows of ``sql`` (its ``{files}``: the archive segments at ``paths``; its
    ``{revisit_actor}``: `RECRAWL_ACTOR`)."""
    import duckdb  # a restore only: the worker never loads it

    files = "[" + ", ".join(_quoted(str(p)) for p in paths) + "]"
    con = duckdb.connect(":memory:")
    try:
        return con.execute(sql.format(files=files, revisit_actor=_quoted(RECRAWL_ACTOR))).fetchall()
    finally:
        con.close()


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def archived_next_pages(paths: list[Path]) -> int:
    """How many pages past their task's first the archive holds a fetch of that took from
    ``--max-pages`` (`_NEXT_PAGES_SQL`): what the tasks counted besides their first pages."""
    return int(_query_archive(paths, _NEXT_PAGES_SQL)[0][0]) if paths else 0


def archived_revisits(paths: list[Path]) -> int:
    """How many tasks the archive has a recrawl's revisit enqueued as (`RECRAWL_ACTOR`):
    pages an earlier run counted, not counted again."""
    return int(_query_archive(paths, _REVISITS_SQL)[0][0]) if paths else 0


_LATEST_RECRAWL_SQL = """
SELECT payload FROM read_parquet({files})
WHERE type = 'task.enqueued' AND actor = {revisit_actor}
ORDER BY CAST(split_part(stream_id, '-', 1) AS BIGINT) DESC,
         CAST(split_part(stream_id, '-', 2) AS BIGINT) DESC
LIMIT 1
"""


def archived_latest_run(paths: list[Path]) -> int:
    """The latest run the archive has a recrawl's revisit of (its last one's run: a run's
    revisits are enqueued before the next run starts); `FIRST_RUN` if none."""
    rows = _query_archive(paths, _LATEST_RECRAWL_SQL) if paths else []
    event = decode(rows[0][0]) if rows else None
    return event.run if isinstance(event, TaskEnqueued) else FIRST_RUN


def restored_run(archived: int, state: State) -> RunRecord | None:
    """The job's run record as its log has it: its latest run (of the archive's revisits,
    ``archived``, and the tasks in ``state``: the live ones and the tail's), running while
    a task of it has not ended; None for a job never run again (it had no record). The
    revisit intervals given to `crawlog recrawl` are not logged: the caller keeps those the
    store still holds."""
    latest = max([archived, *(task.run for task in state.tasks.values())], default=FIRST_RUN)
    if latest <= FIRST_RUN:
        return None
    going = any(t.run == latest and t.status not in TERMINAL for t in state.tasks.values())
    return RunRecord(run=latest, state=RUN_GOING if going else FINISHED)


def archived_landings(paths: list[Path]) -> list[PageFetched]:
    """The archived first-page fetches that landed on another URL than their task's (a
    redirect, or another spelling of the same URL)."""
    if not paths:
        return []
    rows = _query_archive(paths, _LANDINGS_SQL)
    return [event for _, payload in rows if isinstance(event := decode(payload), PageFetched)]


def redirect_claims(fetches: Iterable[PageFetched], landing: Landing) -> dict[str, str]:
    """Fingerprint -> task of each URL a task's first page landed on through a redirect
    (what ``CLAIM_URL`` noted): the fetches whose URL is another than the task's own."""
    claims: dict[str, str] = {}
    for fetch in fetches:
        if fetch.page == 1 and (fp := landing(fetch.url, fetch.run)) != fetch.task_id:
            claims.setdefault(fp, fetch.task_id)
    return claims


def landed_again(fetches: Iterable[PageFetched]) -> int:
    """How many of the redirect claims (`redirect_claims`) are of a URL a first page of an
    earlier run landed on: a revisit following the same redirect claims it without counting
    it (`Validators.landed`), the run before counted it."""
    first_run: dict[str, int] = {}
    claimed: set[tuple[str, int]] = set()
    for fetch in fetches:
        if fetch.page == 1:
            first_run[fetch.url] = min(first_run.get(fetch.url, fetch.run), fetch.run)
            claimed.add((fetch.url, fetch.run))
    return sum(1 for url, run in claimed if run > first_run[url])


def last_retries(store: Store, manifest: Manifest, task_ids: Set[str]) -> dict[str, RetryScheduled]:
    """The last archived ``RetryScheduled`` of each of ``task_ids`` that has one."""
    found: dict[str, RetryScheduled] = {}
    if not task_ids:
        return found
    for path in store.segment_paths(manifest):
        table = read_table(path, ["type", "task_id", "payload"])
        rows = table.filter(pc.equal(table.column("type"), RETRY_TYPE))
        for task_id, payload in zip(
            rows.column("task_id").to_pylist(), rows.column("payload").to_pylist(), strict=True
        ):
            if task_id in task_ids and isinstance(event := decode(payload), RetryScheduled):
                found[task_id] = event
    return found


async def _refuse_live_workers(redis: aioredis.Redis, keys: JobKeys, job: str) -> None:
    """Refused (`OperatorRefused`) while a worker of ``job`` may still write."""
    # A worker killed a moment ago still holds its name until it lapses: waited for.
    if holders := await holders_after_lapse(redis, keys):
        raise OperatorRefused(
            f"workers of job {job!r} are alive and may still write ({', '.join(holders)}): "
            "stop them, then restore"
        )


async def _log_goes_on(
    redis: aioredis.Redis, keys: JobKeys, position: str, tail_from: aioredis.Redis | None
) -> bool:
    """Whether the job's log goes on after the commit at ``position`` (its tail copied
    in from ``tail_from`` first, if given and the log does not)."""
    continues = await log_continues(redis, keys, position)
    if not continues and tail_from is not None:
        await restart_log(redis, keys, position)
        copied = await copy_log_tail(tail_from, redis, keys, position)
        continues = copied > 0 or await log_continues(redis, keys, position)
        continues = continues or copied > 0
    return continues


async def _fold_tail(
    log: EventLog,
    store: Store,
    manifest: Manifest,
    state: State,
    tail_retries: dict[str, RetryScheduled],
    tail_pages: list[PageFetched],
    tail_next: set[tuple[str, int]],
    tail_revisits: set[str],
) -> int:
    """Fold the log's tail after the commit into ``state``; its last retry of each task
    into ``tail_retries``, its first-page fetches into ``tail_pages``, the (task, page)
    of its later pages' into ``tail_next`` and the tasks it enqueued as a recrawl's
    revisits into ``tail_revisits``; how many events it had."""
    # The same log goes on after the commit: its tail is the job's too.
    tail_events = 0
    position = manifest.position
    while entries := await log.read_after(position, 10_000):
        bring_back_named(store, manifest, state, entries)
        fold(entries, state)
        for entry in entries:
            if isinstance(entry.event, RetryScheduled):
                tail_retries[entry.event.task_id] = entry.event
            elif isinstance(entry.event, PageFetched) and entry.event.page == 1:
                tail_pages.append(entry.event)
            elif isinstance(entry.event, PageFetched) and entry.event.page > 1:
                tail_next.add((entry.event.task_id, entry.event.page))
            elif isinstance(entry.event, TaskEnqueued) and entry.event.actor == RECRAWL_ACTOR:
                tail_revisits.add(entry.event.task_id)
        tail_events += len(entries)
        position = entries[-1].stream_id
    return tail_events


async def _redirects(
    store: Store, manifest: Manifest, tail_pages: list[PageFetched], landing: Landing | None
) -> tuple[dict[str, str], int]:
    """The redirect claims the archive and the store's tail show (none without ``landing``),
    and how many of them `landed_again`."""
    if landing is None:
        return {}, 0
    archived = await anyio.to_thread.run_sync(archived_landings, store.segment_paths(manifest))
    fetches = [*archived, *tail_pages]
    return redirect_claims(fetches, landing), landed_again(fetches)


async def _write(
    redis: aioredis.Redis,
    keys: JobKeys,
    store: Store,
    manifest: Manifest,
    plan: RestorePlan,
    claims: dict[str, str],
    next_pages: int,
    uncounted: int,
    *,
    continues: bool,
    identity: JobIdentity,
) -> tuple[int, int]:
    """Write the job's keys as ``plan`` says, the identity last (a restore cut short leaves
    none, and is run again); the fingerprints made seen and the tasks queued."""
    keep = [keys.config, keys.dead, *([keys.events] if continues else [])]
    await clear_job_keys(redis, keys, keep=keep)
    if not continues:
        await restart_log(redis, keys, manifest.position)
    ended = await anyio.to_thread.run_sync(
        lambda: list(iter_task_ids(store.task_segment_paths(manifest)))
    )
    fingerprints = itertools.chain(plan.seen, ended, claims)
    known = await restore_seen(
        redis, keys, fingerprints, next_pages=next_pages, uncounted=uncounted
    )
    await restore_redirects(redis, keys, claims)
    await restore_checkpoints(redis, keys, plan.checkpoints)
    await restore_flags(redis, keys, plan.flags)
    await restore_parked(redis, keys, plan.parked)
    await restore_delayed(redis, keys, plan.delayed)
    # The reclaims before the lanes: a worker that claims a task first must find it
    # pending in the log.
    await EventLog(redis, keys).append_many(plan.reclaimed)
    queued = await restore_lanes(redis, keys, plan.lanes)
    await publish_projector_position(redis, keys, manifest.position)
    await record_restore(redis, keys, identity.epoch, manifest.position)
    await set_identity(redis, keys, identity)
    return known, queued


async def restore_job(
    redis: aioredis.Redis,
    data_dir: Path,
    job: str,
    *,
    tail_from: aioredis.Redis | None = None,
    landing: Landing | None = None,
) -> Restored:
    """Rebuild every key of ``job`` from its archive and the store's tail; refused
    (`OperatorRefused`) while a worker of the job may still write. ``tail_from``: another
    server (the old one) whose log's tail after the archive is copied in first.
    ``landing``: how the crawler fingerprints a URL, to note again the redirects its
    tasks' first pages followed (`redirect_claims`); None: they are not restored."""
    started = time.monotonic()
    keys = JobKeys(job)
    await _refuse_live_workers(redis, keys, job)
    store = Store(data_dir, job)
    archive = archive_facts(data_dir, job)
    if archive.events == 0 and archive.position == "0-0":
        raise OperatorRefused(
            f"job {job!r} has nothing archived under {data_dir}: nothing to restore from"
        )
    with store.lock():
        manifest = store.read_manifest()
        # The live part only: every task not ended is in it; the ended ones in the task
        # store are only seen again, their ids read as a column, not as a million states.
        state = (await anyio.to_thread.run_sync(live_state, store, manifest))[0]
        log = EventLog(redis, keys)
        tail_retries: dict[str, RetryScheduled] = {}
        tail_pages: list[PageFetched] = []
        tail_next: set[tuple[str, int]] = set()
        tail_revisits: set[str] = set()
        continues = await _log_goes_on(redis, keys, manifest.position, tail_from)
        tail_events = 0
        if continues:
            tail_events = await _fold_tail(
                log, store, manifest, state, tail_retries, tail_pages, tail_next, tail_revisits
            )
        stored = await read_identity(redis, keys)
        epoch = max(archive.epoch, stored.epoch if stored is not None else 0) + 1
        job_id = archive.job_id or (stored.job_id if stored is not None else uuid.uuid4().hex)
        in_flight, left_by_workers = in_flight_at_loss(data_dir, job)
        retried = {t.task_id for t in state.tasks.values() if t.status == PENDING and t.retries}
        retries = await anyio.to_thread.run_sync(last_retries, store, manifest, retried)
        retries.update(tail_retries)
        plan = await anyio.to_thread.run_sync(
            lambda: plan_restore(state, now=time.time(), in_flight=in_flight, retries=retries)
        )
        claims, claimed_again = await _redirects(store, manifest, tail_pages, landing)
        segments = store.segment_paths(manifest)
        # A page fetched again in the tail after its archived fetch counts twice (a
        # revisit's too): the bound errs low, never high.
        next_pages = len(tail_next) + await anyio.to_thread.run_sync(archived_next_pages, segments)
        # Pages an earlier run counted, marked seen again without counting them again.
        revisits = len(tail_revisits) + await anyio.to_thread.run_sync(archived_revisits, segments)
        run = restored_run(await anyio.to_thread.run_sync(archived_latest_run, segments), state)
        if run is not None:
            # Intervals a store that still has the record kept (they are not logged).
            given = (await read_run(redis, keys)).intervals
            run = msgspec.structs.replace(run, intervals=given)
        identity = JobIdentity(job_id=job_id, epoch=epoch)
        known, queued = await _write(
            redis, keys, store, manifest, plan, claims, next_pages, revisits + claimed_again,
            continues=continues, identity=identity,
        )  # fmt: skip
        if run is not None:
            # After the keys: the store's were cleared with the job's. Which run is the
            # latest, and whether it ended, is the log's (``crawlog recrawl`` reads it so too).
            await write_run(redis, keys, run)
        for path in left_by_workers:
            path.unlink(missing_ok=True)  # counted: a second restore must not count them again
    return Restored(
        job=job,
        position=manifest.position,
        epoch=epoch,
        tasks=known,
        queued=queued,
        delayed=len(plan.delayed),
        running=len(plan.reclaimed),
        parked=len(plan.parked),
        uncertain=len(plan.uncertain),
        tail_events=tail_events,
        dropped_log=not continues,
        seconds=time.monotonic() - started,
        sites=sorted(state.sites),
        redirects=len(claims),
    )
