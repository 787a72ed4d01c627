"""The operator's handle on a job: the job opened on its server, task ids from ids or URLs,
sites from what the operator types, and who acts.

What an operator changes is an event like everything else, with who (the actor, by default
the OS user) and why (the reason): pauses and resumes go through ``apply_control`` (the
event and the flag workers poll, in one script), retries through ``TaskQueue.retry`` (the
``TaskRetried`` event and the task back in its lane, in one script, once per ended
attempt). What they read is the log now: the projector's committed state or archive plus
the stream after it (``projector._history``). ``crawlog``'s operator commands and the web
console both act through this package; ``docs/operating.md`` says how each works.
"""

from __future__ import annotations

import getpass
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import redis.asyncio as aioredis

from crawler._job import JobConfig, load_config
from crawler._urls import canonical_url, fingerprint, site_of
from eventlog import (
    START,
    ConfigError,
    EventLog,
    JobKeys,
    UnknownTask,
    connect,
    resolve_data_dir,
    resolve_url,
)
from projector import State, TaskState

if TYPE_CHECKING:
    from projector import Store


def default_operator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in the environment or the password database
        return "operator"


def require_reason(reason: str | None) -> str:
    """The reason given, stripped, or ``ConfigError``: no action without a reason (it is
    the audit trail: the event's ``reason``, what ``history`` shows)."""
    text = (reason or "").strip()
    if not text:
        raise ConfigError("a reason is required: it is recorded in the event, and nothing was done")
    return text


class OpenJob:
    """A connected client and what every operator command needs of one job."""

    def __init__(self, client: aioredis.Redis, keys: JobKeys, config: JobConfig, store: Store):
        self.client = client
        self.keys = keys
        self.config = config
        self.store = store

    async def state(self) -> State:
        """The job's whole state now: the committed state plus the stream after it (every
        task decoded: for a caller that needs them all)."""
        from projector import current_state

        return await current_state(self.client, self.store)

    async def tasks(
        self,
        *,
        task_ids: Iterable[str] | None = None,
        statuses: Iterable[str] | None = None,
        site: str | None = None,
    ) -> tuple[State, dict[str, TaskState]]:
        """The live part of the job's state now (sites, job, unfinished tasks), and the
        tasks now of ``task_ids`` / ``statuses`` / ``site``: only those are read from the
        task store, not the millions of ended tasks of a big job."""
        from projector import TaskFilter, current_tasks

        wanted = TaskFilter(
            task_ids=None if task_ids is None else frozenset(task_ids),
            statuses=None if statuses is None else frozenset(statuses),
            site=site,
        )
        return await current_tasks(self.client, self.store, wanted)

    async def task(self, task_id: str) -> TaskState:
        """One task now; ``UnknownTask`` if the log has none of this id."""
        _, found = await self.tasks(task_ids=[task_id])
        return task_in(found, task_id, self.keys.job)


@asynccontextmanager
async def open_job(data_dir: Path | None, job: str) -> AsyncIterator[OpenJob]:
    """The job on its server; one-line errors for an unknown job or an unreachable server."""
    from projector import Store

    keys = JobKeys(job)  # a bad name is a ConfigError before anything starts
    # Every command here is about an existing job: none creates a data directory or
    # starts a server where there is none.
    url = resolve_url(data_dir, create=False)
    async with connect(url) as client:
        config = await load_config(client, keys)  # ConfigError "no job ..." if never started
        yield OpenJob(client, keys, config, Store(resolve_data_dir(data_dir), job))


@asynccontextmanager
async def open_log(data_dir: Path | None, job: str) -> AsyncIterator[tuple[aioredis.Redis, Store]]:
    """The job's server and projected files, for a command that only reads the log.

    Unlike ``open_job``, a job without a configuration in Redis (a log written by another
    tool) is read too, if its projector committed something or its stream exists.
    """
    from projector import Store

    keys = JobKeys(job)
    url = resolve_url(data_dir, create=False)
    store = Store(resolve_data_dir(data_dir), job)
    async with connect(url) as client:
        if store.read_manifest().position == START and not await EventLog(client, job).length():
            await load_config(client, keys)  # ConfigError "no job ..." if never started
        yield client, store


def task_id_of(value: str) -> tuple[str, str | None]:
    """(task id, canonical URL or None) of a task id or a URL as the crawler keys it."""
    if "://" not in value:
        return value, None
    try:
        url = canonical_url(value)
    except ValueError as exc:
        raise ConfigError(
            f"{value!r} is not a URL the crawler could have fetched ({exc})"
        ) from None
    return fingerprint(url), url


async def resolve_site(job: OpenJob, value: str, *, also: Iterable[str] = ()) -> str:
    """A site (``scheme://host[:port]``) from an origin, a URL, or a bare HOST[:PORT].

    A bare host is matched against the job's seeds, pause flags and ``also``, then every
    site of its log; it must match exactly one.
    """
    if "://" in value:
        try:
            return site_of(value)
        except ValueError as exc:
            raise ConfigError(f"--site {value!r} is not an http(s) origin ({exc})") from None
    wanted = value.lower().rstrip("/")
    known = {site_of(seed) for seed in job.config.seeds} | set(also)
    matches = sorted(s for s in known if s.split("://", 1)[1] == wanted)
    if not matches:
        state, _ = await job.tasks(task_ids=())  # the sites, and no stored task
        known |= set(state.sites)
        matches = sorted(s for s in state.sites if s.split("://", 1)[1] == wanted)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ConfigError(f"--site {value!r} matches {', '.join(matches)}: give one of them")
    listed = ", ".join(sorted(known)[:10]) or "none yet"
    raise ConfigError(
        f"no site {value!r} in job {job.keys.job!r} (sites: {listed}); give scheme://host[:port]"
    )


def task_in(tasks: State | dict[str, TaskState], task_id: str, job: str) -> TaskState:
    """The task ``task_id`` of a state (or of tasks by id); ``UnknownTask`` if none."""
    task = (tasks.tasks if isinstance(tasks, State) else tasks).get(task_id)
    if task is None:
        raise UnknownTask(
            f"job {job!r} has no task {task_id} in its log: `crawlog history` takes a URL "
            "too and says why it was never enqueued"
        )
    return task
