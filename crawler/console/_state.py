"""What one console process keeps: its settings, the sessions logged in, the Redis client,
the jobs opened, the forms submitted and the evidence read.

The app holds one :class:`Console` in ``app.state.console`` (``console_of``); the
endpoints (``_endpoints``) reach everything through it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import anyio
import msgspec
import redis.asyncio as aioredis
from anyio.abc import TaskGroup
from starlette.requests import Request

from crawler._job import load_config
from crawler.console import _pages as pages
from crawler.console._actions import FormLedger
from crawler.console._guard import SESSION_COOKIE, Session, Sessions
from crawler.console._live import JobWatch
from crawler.ops import OpenJob, last_failure
from eventlog import Evidence, JobKeys, LogEntry
from projector import TaskState

EVIDENCE_STORIES_KEPT = 1_000
"""Stories of tasks shown with their evidence kept in memory (the latest)."""


class ConsoleSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What one console process serves, and to whom."""

    data_dir: Path
    redis_url: str
    token: str
    """Opens a session at ``/login?token=...`` (``_guard``)."""
    user: str
    """Who acts when a login names nobody (``&as=NAME`` does)."""
    job: str | None = None
    """The job the home page opens; None: the list of jobs."""


class Console:
    """The process's shared parts: the sessions, the client, the jobs opened, the forms
    submitted."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.sessions = Sessions()
        self.ledger = FormLedger()
        self.evidence = EvidenceCache()
        self.client: aioredis.Redis | None = None
        self.background: TaskGroup | None = None
        """Where a job's state is read while its panel shows the last commit."""
        self._jobs: dict[str, tuple[OpenJob, JobWatch]] = {}
        self._opening = anyio.Lock()

    async def job(self, name: str) -> tuple[OpenJob, JobWatch]:
        """The job ``name`` (``ConfigError`` if it never started), opened once."""
        from projector import Store

        async with self._opening:
            if (found := self._jobs.get(name)) is not None:
                return found
            assert self.client is not None, "the app's lifespan opens the client"
            keys = JobKeys(name)
            config = await load_config(self.client, keys)
            opened = OpenJob(self.client, keys, config, Store(self.settings.data_dir, name))
            watch = JobWatch(self.client, name, self.settings.data_dir, lease_ms=config.lease_ms)
            self._jobs[name] = (opened, watch)
            return opened, watch


class EvidenceCache:
    """The stories of the tasks whose evidence "needs a person" shows, kept while they stay
    ended: the page is redrawn on every event, and a failure's evidence never changes, so
    the archive is read once per task and attempt, not once per redraw."""

    def __init__(self) -> None:
        self._stories: OrderedDict[tuple[str, str, int], list[LogEntry]] = OrderedDict()

    async def _stories_of(
        self, opened: OpenJob, tasks: Sequence[TaskState]
    ) -> dict[str, list[LogEntry]]:
        from projector import task_history

        job = opened.keys.job
        found = {
            t.task_id: self._stories[(job, t.task_id, t.attempt)]
            for t in tasks
            if (job, t.task_id, t.attempt) in self._stories
        }
        missing = [t for t in tasks if t.task_id not in found]
        if missing:
            entries = await task_history(opened.client, opened.store, [t.task_id for t in missing])
            for t in missing:
                own = [e for e in entries if getattr(e.event, "task_id", None) == t.task_id]
                found[t.task_id] = self._stories[(job, t.task_id, t.attempt)] = own
        while len(self._stories) > EVIDENCE_STORIES_KEPT:
            self._stories.popitem(last=False)
        return found

    async def of_groups(
        self, opened: OpenJob, groups: dict[tuple[str, str], list[TaskState]]
    ) -> list[pages.GroupEvidence]:
        """One task of each of the largest groups, with its story."""
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        chosen = ordered[: pages.EVIDENCE_GROUPS_SHOWN]
        stories = await self._stories_of(opened, [tasks[0] for _, tasks in chosen])
        return [
            pages.GroupEvidence(
                status=status,
                reason=reason,
                count=len(tasks),
                task=tasks[0],
                entries=stories[tasks[0].task_id],
            )
            for (status, reason), tasks in chosen
        ]

    async def last(self, opened: OpenJob, task_id: str) -> Evidence | None:
        """The evidence of the task's last failure or abort, if it kept one."""
        from projector import task_history

        entries = await task_history(opened.client, opened.store, [task_id])
        found = last_failure(task_id, entries)
        return None if found is None else found[1].evidence


def session_of(request: Request) -> Session:
    """The request's session (``SessionGuard`` let no request without one through)."""
    session = console_of(request).sessions.get(request.cookies.get(SESSION_COOKIE))
    assert session is not None, "SessionGuard refuses a request without a session"
    return session


def console_of(request: Request) -> Console:
    """The console process's shared parts, as the app keeps them (``app.state.console``)."""
    console = request.app.state.console
    assert isinstance(console, Console), "create_app sets it"
    return console
