"""The console's actions: pause or resume a site, retry a task, retry a group in bulk.

Each is the same library call as the command line's (``crawler.ops``: ``control_site`` as
``crawlog pause|resume``, ``retry_tasks`` as ``crawlog retry``, ``resolve`` as ``crawlog
resolve``), so each is an event with who (``NAME@console``, NAME the operator named at
login, ``_guard``) and why, and is refused, with a message saying why, when it no longer
applies: the site was paused meanwhile, the
task was retried meanwhile (the form carries the attempt the operator saw), the group no
longer has the count the operator confirmed. A form is applied once: each rendered form
has its own id, and the :class:`FormLedger` answers a second submit of it (a double
click, a reload) with the first outcome instead of acting again.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable

import anyio
import msgspec

import crawler.ops as ops
from crawler.ops import OpenJob, retry_tasks
from eventlog import (
    ConfigError,
    CrawlogError,
    Decision,
    EventLog,
    OperatorRefused,
    find_dead_letter,
    replay_dead_letter,
)
from projector import ABORTED, FAILED, PAUSED, TERMINAL, TaskState

_log = logging.getLogger(__name__)
FORMS_KEPT = 10_000
"""Outcomes of submitted forms remembered, so a late second submit still applies once."""
ACTOR_SUFFIX = "@console"
"""Appended to the operator's name in an action's actor: history shows it came from a page."""
FORM_ID_BYTES = 12


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What an action did, as the page says it."""

    ok: bool
    message: str


def actor_of(operator: str) -> str:
    """The actor an action of ``operator`` from the console is recorded with."""
    return f"{operator}{ACTOR_SUFFIX}"


class FormLedger:
    """Forms submitted, by id, with their outcomes: a form acts once."""

    def __init__(self, kept: int = FORMS_KEPT) -> None:
        self.kept = kept
        self._done: OrderedDict[str, Outcome] = OrderedDict()
        self._running: dict[str, anyio.Event] = {}

    def new_form(self) -> str:
        """An id for a form about to be rendered."""
        return secrets.token_urlsafe(FORM_ID_BYTES)

    def outcome(self, form_id: str) -> Outcome | None:
        """The outcome of a form submitted before, if it was."""
        return self._done.get(form_id)

    async def once(
        self, form_id: str, act: Callable[[], Awaitable[Outcome]]
    ) -> tuple[Outcome, bool]:
        """Run ``act`` for this form unless it ran (or runs) already: (outcome, repeated).

        A refusal (a ``CrawlogError``) is an outcome like any other: submitted again, the
        form is refused again with the same message rather than tried anew.
        """
        if (done := self._done.get(form_id)) is not None:
            return done, True
        if (running := self._running.get(form_id)) is not None:
            await running.wait()
            return self._done[form_id], True
        finished = anyio.Event()
        self._running[form_id] = finished
        try:
            try:
                outcome = await act()
            except CrawlogError as exc:
                outcome = Outcome(ok=False, message=str(exc))
            except BaseException:
                outcome = Outcome(ok=False, message="internal error: see the console's log")
                self._remember(form_id, outcome)
                raise
            self._remember(form_id, outcome)
            return outcome, False
        finally:
            del self._running[form_id]
            finished.set()

    def _remember(self, form_id: str, outcome: Outcome) -> None:
        self._done[form_id] = outcome
        while len(self._done) > self.kept:
            self._done.popitem(last=False)


async def control_site(job: OpenJob, site: str, reason: str, by: str, *, pause: bool) -> Outcome:
    """Pause or resume one site, as ``crawlog pause|resume --site`` does."""
    return Outcome(ok=True, message=await ops.control_site(job, site, reason, by, pause=pause))


async def retry_task(
    job: OpenJob, task_id: str, seen_attempt: int, reason: str, by: str
) -> Outcome:
    """Retry one ended task, as ``crawlog retry TASK`` does, if it is still the attempt
    the operator looked at."""
    _, found = await job.tasks(task_ids=[task_id])
    task = found.get(task_id)
    if task is None:
        raise OperatorRefused(f"job {job.keys.job!r} has no task {task_id}; nothing written")
    if task.attempt != seen_attempt:
        raise OperatorRefused(
            f"task {task_id} was retried meanwhile: it is at attempt {task.attempt} "
            f"({task.status}), not the attempt {seen_attempt} shown; nothing written"
        )
    if task.status not in TERMINAL:
        raise OperatorRefused(
            f"task {task_id} is {task.status} (attempt {task.attempt}), it has not ended: only "
            "a done, failed or aborted task can be retried; nothing written"
        )
    retried, _ = await retry_tasks(job, [task], reason, by)
    if not retried:
        raise OperatorRefused(
            f"task {task_id} was already retried from attempt {task.attempt} (another "
            "operator, or a second submit); nothing written"
        )
    return Outcome(
        ok=True,
        message=f"retried task {task_id} by {by}: {reason} (attempt {task.attempt + 1} queued)",
    )


def needing_a_person(
    tasks: Iterable[TaskState], *, by_site: bool = False
) -> dict[tuple[str, str], list[TaskState]]:
    """Failed and aborted tasks grouped by (status, reason), or by (status, site) with
    ``by_site``; each group sorted by URL."""
    groups: dict[tuple[str, str], list[TaskState]] = {}
    for task in tasks:
        if task.status in (FAILED, ABORTED):
            key = task.site if by_site else task.last_reason
            groups.setdefault((task.status, key), []).append(task)
    for members in groups.values():
        members.sort(key=lambda t: (t.site, t.url))
    return groups


async def retry_group(
    job: OpenJob,
    status: str,
    group: str,
    shown: int,
    typed_job: str,
    reason: str,
    by: str,
    *,
    by_site: bool = False,
) -> Outcome:
    """Retry every task of one group of "needs a person" (tasks of a status with one
    reason, or of one site with ``by_site``), once the operator typed the job name and
    while the group still has the count the page showed."""
    if typed_job.strip() != job.keys.job:
        raise OperatorRefused(
            f"not confirmed: type the job name ({job.keys.job}) to retry {shown} task(s); "
            "nothing retried"
        )
    groups = needing_a_person((await job.state()).tasks.values(), by_site=by_site)
    chosen = groups.get((status, group), [])
    if len(chosen) != shown:
        which = f"of site {group}" if by_site else "have this reason"
        raise OperatorRefused(
            f"{len(chosen)} {status} task(s) now {which}, not the {shown} shown "
            "(some were retried or ended meanwhile): look again; nothing retried"
        )
    retried, refused = await retry_tasks(job, chosen, reason, by)
    extra = f"; {len(refused)} already retried meanwhile" if refused else ""
    return Outcome(
        ok=True,
        message=f"retried {len(retried)} task(s) of job {job.keys.job} by {by}: {reason}{extra}",
    )


def uncertain(tasks: Iterable[TaskState]) -> list[tuple[TaskState, str]]:
    """Paused tasks with an action whose intent is logged and its completion not: (task,
    action id), for a person to decide about, sorted by URL."""
    found = [
        (task, action_id)
        for task in tasks
        if task.status == PAUSED and task.actions
        for action_id, phase in task.actions.items()
        if phase == "intended"
    ]
    return sorted(found, key=lambda pair: (pair[0].url, pair[1]))


async def resolve_task(job: OpenJob, task_id: str, decision: str, reason: str, by: str) -> Outcome:
    """A person's decision about a task's uncertain action, as ``crawlog resolve`` records
    it: ``done`` (it ran: skip it), ``redo`` (run it again) or ``abort`` (the task fails
    when it resumes); the task resumes."""
    if decision not in ("done", "redo", "abort"):
        raise ConfigError(f"decide 'done', 'redo' or 'abort', not {decision!r}")
    chosen: Decision = "done" if decision == "done" else "redo" if decision == "redo" else "abort"
    return Outcome(ok=True, message=await ops.resolve(job, task_id, chosen, reason, by))


async def replay_dead(job: OpenJob, dead_id: str, reason: str, by: str) -> Outcome:
    """Put a dead letter back on its stream, as ``crawlog dead replay`` does: only if it
    decodes now, and once. That library call writes no event of its own; the console's
    log says who asked and why."""
    log = EventLog(job.client, job.keys)
    letter = await find_dead_letter(log, dead_id)
    new_id = await replay_dead_letter(log, letter)
    _log.info("dead letter %s replayed by %s: %s", dead_id, by, reason)
    return Outcome(
        ok=True, message=f"replayed {dead_id} to {letter.stream} as {new_id} (by {by}: {reason})"
    )
