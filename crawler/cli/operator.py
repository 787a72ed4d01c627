"""Operator commands: ``pause``, ``resume``, ``retry``, ``resolve``, ``dead``, ``history``,
``workers``.

What an operator changes is an event like everything else, with who (``--by``, default the
OS user) and why (``--reason``): pauses and resumes go through ``apply_control`` (the event
and the flag workers poll, in one script), retries through ``TaskQueue.retry`` (the
``TaskRetried`` event and the task back in its lane, in one script, once per ended
attempt). What they read is the log now: the projector's committed state or archive plus
the stream after it (``projector._history``). ``docs/operating.md`` says how each works.
"""

from __future__ import annotations

import datetime as dt
import getpass
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click
import msgspec
import redis.asyncio as aioredis

from crawler._job import JobConfig, load_config
from crawler._urls import canonical_url, fingerprint, site_of
from crawler.cli._exit import EXIT_NO
from crawler.cli._options import data_dir_option, job_option, json_option
from eventlog import (
    AnyEvent,
    CheckpointSaved,
    Decision,
    EventLog,
    ItemScraped,
    JobKeys,
    JobPaused,
    JobResumed,
    LogEntry,
    PageFetched,
    RetryScheduled,
    SitePaused,
    SiteResumed,
    Task,
    TaskAborted,
    TaskClaimed,
    TaskEnqueued,
    TaskPaused,
    TaskQueue,
    TaskReclaimed,
    TaskReleased,
    TaskResumed,
    TaskRetried,
    apply_control,
    connect,
    read_controls,
    tag_of,
)
from eventlog._connection import redis_errors
from eventlog._exceptions import ConfigError, OperatorRefused, UnknownTask
from eventlog._log import DeadLetter
from eventlog._operator import (
    LeaseInfo,
    find_dead_letter,
    read_leases,
    read_workers,
    replay_dead_letter,
    resolve_action,
    uncertain_action,
)
from eventlog._queue import Retry
from eventlog._server import resolve_data_dir, resolve_url
from projector._fold import fold
from projector._state import ABORTED, DONE, FAILED, TERMINAL, State, TaskState

if TYPE_CHECKING:
    from projector._store import Store

RETRY_BATCH = 500
"""Tasks per retry script call: one round trip each, short enough not to stall the server."""
SHOWN = 20
"""Tasks or leases listed by name unless ``--all``."""


# --- shared -----------------------------------------------------------------------------------


def _default_operator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in the environment or the password database
        return "operator"


def reason_option(command: Any) -> Any:
    """``--reason TEXT``: why, recorded in the event (required: it is the audit trail)."""
    return click.option(
        "--reason", required=True, help="Why: recorded in the event, shown by `history`."
    )(command)


def by_option(command: Any) -> Any:
    """``--by NAME``: who, recorded as the event's actor."""
    return click.option(
        "--by",
        default=_default_operator,
        show_default="the OS user",
        metavar="NAME",
        help="Who: recorded as the event's actor.",
    )(command)


class _Job:
    """A connected client and what every operator command needs of one job."""

    def __init__(self, client: aioredis.Redis, keys: JobKeys, config: JobConfig, store: Store):
        self.client = client
        self.keys = keys
        self.config = config
        self.store = store

    async def state(self) -> State:
        """The job's state now: the committed state plus the stream after it."""
        from projector._history import current_state

        return await current_state(self.client, self.store)


@asynccontextmanager
async def _open_job(data_dir: Path | None, job: str) -> AsyncIterator[_Job]:
    """The job on its server; one-line errors for an unknown job or an unreachable server."""
    from projector._store import Store

    keys = JobKeys(job)  # a bad name is a ConfigError before anything starts
    # Every command here is about an existing job: none creates a data directory or
    # starts a server where there is none.
    url = resolve_url(data_dir, create=False)
    async with connect(url) as client:
        config = await load_config(client, keys)  # ConfigError "no job ..." if never started
        yield _Job(client, keys, config, Store(resolve_data_dir(data_dir), job))


def _task_id_of(value: str) -> tuple[str, str | None]:
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


async def _resolve_site(job: _Job, value: str, *, also: Iterable[str] = ()) -> str:
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
        state = await job.state()
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


def _task_in(state: State, task_id: str, job: str) -> TaskState:
    task = state.tasks.get(task_id)
    if task is None:
        raise UnknownTask(
            f"job {job!r} has no task {task_id} in its log: `crawlog history` takes a URL "
            "too and says why it was never enqueued"
        )
    return task


def _echo_json(value: Any) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(value)).decode())


def _when(epoch: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def _age(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


# --- pause / resume ---------------------------------------------------------------------------


def _target_options(command: Any) -> Any:
    command = click.option(
        "--task", "task", metavar="ID|URL", help="One task (its id, or its URL)."
    )(command)
    return click.option(
        "--site", metavar="HOST", help="Every task of a site: HOST[:PORT] or scheme://host[:port]."
    )(command)


@click.command(
    "pause",
    epilog="Example:  crawlog pause --job shop --site shop.example.com "
    "--reason 'they asked us to slow down'",
)
@job_option
@data_dir_option
@_target_options
@reason_option
@by_option
def pause_command(
    job: str, data_dir: Path | None, site: str | None, task: str | None, reason: str, by: str
) -> None:
    """Pause the job, one site (--site) or one task (--task), recording who and why.

    Workers see it within a second: a paused job's tasks go back to their lanes, a paused
    site's or task's tasks are parked (the page in flight is finished and checkpointed).
    Pausing what is already paused writes nothing.
    """
    click.echo(anyio.run(_control, data_dir, job, site, task, reason, by, True))


@click.command(
    "resume",
    epilog="Example:  crawlog resume --job shop --site shop.example.com --reason 'rate agreed'",
)
@job_option
@data_dir_option
@_target_options
@reason_option
@by_option
def resume_command(
    job: str, data_dir: Path | None, site: str | None, task: str | None, reason: str, by: str
) -> None:
    """Resume the job, a site (--site) or a task (--task), recording who and why.

    A resumed site's or task's parked tasks go back to their lanes in the same step.
    Resuming what is not paused writes nothing.
    """
    click.echo(anyio.run(_control, data_dir, job, site, task, reason, by, False))


async def _control(
    data_dir: Path | None,
    job_name: str,
    site_arg: str | None,
    task_arg: str | None,
    reason: str,
    by: str,
    pause: bool,
) -> str:
    if site_arg is not None and task_arg is not None:
        raise click.UsageError("give --site or --task, not both")
    verb = "paused" if pause else "resumed"
    async with _open_job(data_dir, job_name) as job:
        controls = await read_controls(job.client, job.keys)
        who = f"by {by}: {reason}"
        if task_arg is not None:
            task_id, _ = _task_id_of(task_arg)
            is_paused = task_id in controls.paused_tasks
            subject = f"task {task_id}"
            if pause == is_paused:
                return f"{subject} is {'already' if pause else 'not'} paused; nothing written"
            if pause:
                task = _task_in(await job.state(), task_id, job_name)
                if task.status in TERMINAL:
                    raise OperatorRefused(
                        f"{subject} has ended ({task.status} at attempt {task.attempt}): "
                        "nothing to pause; `crawlog retry` runs it again"
                    )
                event: Any = TaskPaused(actor=by, task_id=task_id, reason=reason)
                await apply_control(job.client, job.keys, event, task_site=task.site)
                return f"{verb} {subject} ({task.url}) {who}"
            if (uncertain := await uncertain_action(job.client, job.keys, task_id)) is not None:
                # Resumed as it is, it would only be paused again at the same action.
                raise OperatorRefused(
                    f"{subject} waits for a decision about its action {uncertain[1]} (its "
                    "intent is logged, its completion not): `crawlog resolve --job "
                    f"{job_name} --task {task_id} --done|--redo --reason ...`"
                )
            moved = await apply_control(
                job.client, job.keys, TaskResumed(actor=by, task_id=task_id, reason=reason)
            )
            return f"{verb} {subject} {who}; {moved} parked task(s) back in the queue"
        if site_arg is not None:
            site = await _resolve_site(job, site_arg, also=controls.paused_sites)
            if pause == (site in controls.paused_sites):
                return f"site {site} is {'already' if pause else 'not'} paused; nothing written"
            event = (SitePaused if pause else SiteResumed)(actor=by, site=site, reason=reason)
            moved = await apply_control(job.client, job.keys, event)
            back = "" if pause else f"; {moved} parked task(s) back in the queue"
            return f"{verb} site {site} {who}{back}"
        if pause == controls.job_paused:
            return f"job {job_name} is {'already' if pause else 'not'} paused; nothing written"
        event = (JobPaused if pause else JobResumed)(actor=by, reason=reason)
        await apply_control(job.client, job.keys, event)
        return f"{verb} job {job_name} {who}"


# --- retry ------------------------------------------------------------------------------------


@click.command(
    "retry",
    epilog="Examples:  crawlog retry --job shop 3f9c0e4d2a1b7c55 --reason 'fixed the proxy'\n\n"
    "           crawlog retry --job shop --failed --site shop.example.com --reason 'site back' "
    "--yes",
)
@job_option
@data_dir_option
@click.argument("task", metavar="[TASK_ID|URL]", required=False)
@click.option("--failed", is_flag=True, help="Every failed task (of --site, or of the job).")
@click.option("--aborted", is_flag=True, help="Every aborted task (of --site, or of the job).")
@click.option("--site", metavar="HOST", help="Only tasks of this site (with --failed/--aborted).")
@reason_option
@by_option
@click.option("--yes", is_flag=True, help="Do not ask to type the job name to confirm.")
@click.option("--all", "show_all", is_flag=True, help="List every task retried, not the first 20.")
@json_option
def retry_command(
    job: str,
    data_dir: Path | None,
    task: str | None,
    failed: bool,
    aborted: bool,
    site: str | None,
    reason: str,
    by: str,
    yes: bool,
    show_all: bool,
    as_json: bool,
) -> None:
    """Run ended tasks again: one TASK, or every --failed / --aborted task of a site or job.

    Appends TaskRetried (who, why) and puts each task back in its lane, so workers fetch
    it again as its next attempt; a failed or aborted task resumes after its last
    checkpoint, a done one starts over. Only an ended task can be retried, once per ended
    attempt: running the command twice enqueues nothing twice. A bulk retry asks you to
    type the job name unless --yes.
    """
    if task is not None and (failed or aborted or site):
        raise click.UsageError("give a TASK, or --failed/--aborted [--site], not both")
    if task is None and not (failed or aborted):
        raise click.UsageError("give a TASK to retry, or --failed and/or --aborted")
    statuses = frozenset(s for s, on in ((FAILED, failed), (ABORTED, aborted)) if on)
    outcome = anyio.run(_retry, data_dir, job, task, statuses, site, reason, by, yes)
    retried, refused, alive = outcome
    if as_json:
        _echo_json({"retried": [_task_json(t) for t in retried], "refused": refused})
        return
    if not retried and not refused:
        what = " or ".join(sorted(statuses))
        click.echo(f"no {what} tasks to retry in job {job}{f' (site {site})' if site else ''}")
        return
    click.echo(f"retried {len(retried)} task(s) of job {job} by {by}: {reason}")
    for t in retried if show_all else retried[:SHOWN]:
        click.echo(f"  {t.task_id}  {t.status} at attempt {t.attempt} -> attempt "
                   f"{t.attempt + 1}  {t.url}")  # fmt: skip
    if not show_all and len(retried) > SHOWN:
        click.echo(f"  ... and {len(retried) - SHOWN} more (--all lists them)")
    if refused:
        click.echo(f"{len(refused)} already retried meanwhile (by someone else): "
                   f"{', '.join(refused)}")  # fmt: skip
    if retried and not alive:
        click.echo(f"no worker is running: `crawlog worker --job {job}` fetches them")


def _task_json(task: TaskState) -> dict[str, Any]:
    return {
        "task_id": task.task_id, "url": task.url, "site": task.site, "status": task.status,
        "ended_attempt": task.attempt, "attempt": task.attempt + 1,
    }  # fmt: skip


async def _retry(
    data_dir: Path | None,
    job_name: str,
    task_arg: str | None,
    statuses: frozenset[str],
    site_arg: str | None,
    reason: str,
    by: str,
    yes: bool,
) -> tuple[list[TaskState], list[str], bool]:
    async with _open_job(data_dir, job_name) as job:
        state = await job.state()
        if task_arg is not None:
            task_id, _ = _task_id_of(task_arg)
            task = _task_in(state, task_id, job_name)
            if task.status not in TERMINAL:
                raise OperatorRefused(
                    f"task {task_id} is {task.status} (attempt {task.attempt}), it has not "
                    "ended: only a done, failed or aborted task can be retried; nothing written"
                )
            chosen = [task]
        else:
            site = await _resolve_site(job, site_arg) if site_arg is not None else None
            chosen = sorted(
                (
                    t
                    for t in state.tasks.values()
                    if t.status in statuses and (site is None or t.site == site)
                ),
                key=lambda t: (t.site, t.url),
            )
            if not chosen:
                return [], [], True
            if not yes:
                _confirm(job_name, chosen)
        queue = TaskQueue(job.client, job.keys, by)
        retried: list[TaskState] = []
        refused: list[str] = []
        for start in range(0, len(chosen), RETRY_BATCH):
            batch = chosen[start : start + RETRY_BATCH]
            done = await queue.retry([_retry_of(t, reason, by) for t in batch])
            for task, ok in zip(batch, done, strict=True):
                (retried.append(task) if ok else refused.append(task.task_id))
        if task_arg is not None and refused:
            raise OperatorRefused(
                f"task {refused[0]} was already retried from attempt {chosen[0].attempt} "
                "(another operator, or this command run twice); nothing written"
            )
        alive = any(w.alive for w in await read_workers(job.client, job.keys))
        return retried, refused, alive


def _retry_of(task: TaskState, reason: str, by: str) -> Retry:
    again = Task(
        task_id=task.task_id, url=task.url, site=task.site, depth=task.depth,
        parent_task_id=task.parent_task_id, attempt=task.attempt + 1,
    )  # fmt: skip
    return Retry(
        task=again,
        event=TaskRetried(actor=by, task_id=task.task_id, reason=reason),
        ended_attempt=task.attempt,
        # A done task is retried to fetch it again: from the start. A failed or aborted
        # one resumes where its last checkpoint left it, as after a crash.
        resume_after=None if task.status == DONE else task.checkpoint_id,
    )


def _confirm(job: str, tasks: Sequence[TaskState]) -> None:
    by_status = Counter(t.status for t in tasks)
    sites = Counter(t.site for t in tasks)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
    click.echo(f"about to retry {len(tasks)} task(s) of job {job} ({summary}) on "
               f"{len(sites)} site(s):", err=True)  # fmt: skip
    for site, n in sites.most_common(5):
        click.echo(f"  {n:>6}  {site}", err=True)
    try:
        typed = click.prompt(f"type the job name ({job}) to confirm", err=True, default="",
                             show_default=False)  # fmt: skip
    except click.Abort:
        typed = ""
    if typed.strip() != job:
        raise OperatorRefused(
            "not confirmed (the job name was not typed); nothing retried: pass --yes to skip"
        )


# --- resolve ---------------------------------------------------------------------------------


@click.command(
    "resolve",
    epilog="Example:  crawlog resolve --job shop --task 3f9c0e4d2a1b7c55 --done "
    "--reason 'the mail went out: seen in the outbox'",
)
@job_option
@data_dir_option
@click.option("--task", "task", metavar="ID|URL", required=True, help="The task (id or URL).")
@click.option("--done", "decision", flag_value="done", help="The action ran: skip it.")
@click.option("--redo", "decision", flag_value="redo", help="The action did not run: run it.")
@reason_option
@by_option
def resolve_command(
    job: str, data_dir: Path | None, task: str, decision: str | None, reason: str, by: str
) -> None:
    """Decide about a task's uncertain action, recording who and why; the task resumes.

    A worker that died during a `response.once` action leaves its intent in the log and
    not its completion: the next worker pauses the task for a person, who finds out
    whether the action happened. --done: it did, and the task resumes without running it
    again; --redo: it did not, and the task resumes and runs it once more. Refused for a
    task with no action waiting for a decision.
    """
    if decision not in ("done", "redo"):
        raise click.UsageError("give --done (the action ran) or --redo (run it again)")
    chosen: Decision = "done" if decision == "done" else "redo"
    click.echo(anyio.run(_resolve, data_dir, job, task, chosen, reason, by))


async def _resolve(
    data_dir: Path | None, job_name: str, task_arg: str, decision: Decision, reason: str, by: str
) -> str:
    task_id, _ = _task_id_of(task_arg)
    async with _open_job(data_dir, job_name) as job:
        done = await resolve_action(
            job.client, job.keys, task_id, decision, actor=by, reason=reason
        )
        alive = any(w.alive for w in await read_workers(job.client, job.keys))
    what = "done: it will be skipped" if decision == "done" else "to redo: it will run again"
    line = f"resolved action {done.action_id} of task {task_id} as {what} (by {by}: {reason})"
    if not alive:
        line += f"; no worker is running: `crawlog worker --job {job_name}` resumes the task"
    return line


# --- dead letters -----------------------------------------------------------------------------


@click.group("dead", epilog="Example:  crawlog dead list --job shop")
def dead_group() -> None:
    """Entries that could not be decoded, moved aside: list them, put them back."""


@dead_group.command("list", epilog="Example:  crawlog dead list --job shop --json")
@job_option
@data_dir_option
@click.option("--limit", type=click.IntRange(1), default=1000, show_default=True,
              help="Dead letters listed at most, oldest first.")  # fmt: skip
@json_option
def dead_list_command(job: str, data_dir: Path | None, limit: int, as_json: bool) -> None:
    """List dead-lettered entries: where from, why, how often delivered."""

    async def run() -> list[DeadLetter]:
        async with _open_job(data_dir, job) as opened:
            return await EventLog(opened.client, opened.keys).dead_letters(limit)

    letters = anyio.run(run)
    if as_json:
        _echo_json([_dead_json(d) for d in letters])
        return
    if not letters:
        click.echo(f"no dead letters in job {job}")
        return
    prefix = f"crawlog:{JobKeys(job).tag}:"
    rows = [
        [d.dead_id, d.stream.removeprefix(prefix), d.entry_id, str(d.deliveries),
         f"{sum(len(v) for v in d.fields.values())} B", d.reason]
        for d in letters
    ]  # fmt: skip
    for line in _table(["dead id", "from", "entry", "deliveries", "size", "reason"], rows):
        click.echo(line)
    click.echo(f"({len(letters)} dead letter{'s' if len(letters) != 1 else ''}; "
               f"`crawlog dead replay --job {job} ID` puts one back)")  # fmt: skip


def _dead_json(letter: DeadLetter) -> dict[str, Any]:
    return {
        "dead_id": letter.dead_id, "stream": letter.stream, "entry_id": letter.entry_id,
        "reason": letter.reason, "deliveries": letter.deliveries,
        "fields": {k.decode(errors="replace"): v.hex() for k, v in letter.fields.items()},
    }  # fmt: skip


@dead_group.command("replay", epilog="Example:  crawlog dead replay --job shop 1714564800123-0")
@job_option
@data_dir_option
@click.argument("dead_ids", nargs=-1, metavar="[DEAD_ID]...")
@click.option("--all", "replay_all", is_flag=True, help="Every dead letter of the job.")
def dead_replay_command(
    job: str, data_dir: Path | None, dead_ids: tuple[str, ...], replay_all: bool
) -> None:
    """Put dead letters back on the stream they came from, as new entries.

    Only entries that decode now (after an upgrade that reads them) are put back; each is
    removed from the dead letters in the same step, so a replay never happens twice.
    """
    if bool(dead_ids) == replay_all:
        raise click.UsageError("give DEAD_IDs, or --all")

    async def run() -> list[str]:
        refusals: list[str] = []
        async with _open_job(data_dir, job) as opened:
            log = EventLog(opened.client, opened.keys)
            letters = await log.dead_letters(1_000_000) if replay_all else [
                await find_dead_letter(log, dead_id) for dead_id in dead_ids
            ]  # fmt: skip
            for letter in letters:
                try:
                    new_id = await replay_dead_letter(log, letter)
                except OperatorRefused as refused:
                    refusals.append(str(refused))
                    continue
                click.echo(f"replayed {letter.dead_id} to {letter.stream} as {new_id}")
        return refusals

    refusals = anyio.run(run)
    if refusals:
        for line in refusals[:-1]:
            click.echo(f"crawlog: {line}", err=True)
        raise OperatorRefused(refusals[-1])


# --- history ----------------------------------------------------------------------------------


@click.command(
    "history",
    epilog="Examples:  crawlog history --job shop 3f9c0e4d2a1b7c55\n\n"
    "           crawlog history --job shop 'https://shop.example.com/item/7'",
)
@job_option
@data_dir_option
@click.argument("target", metavar="TASK_ID|URL")
@json_option
@click.pass_context
def history_command(
    ctx: click.Context, job: str, data_dir: Path | None, target: str, as_json: bool
) -> None:
    """Every event of one task, in log order: when, who, what, why.

    The answer to "why was this URL fetched twice" (a retry, a lost lease, a restart)
    and "why never" (never enqueued, paused, failed). A URL is canonicalised as the
    crawler does; fetches of it by other tasks (after a redirect) are shown too.
    Reads the projector's archive and the stream after it, so it is up to date.
    """
    task_id, url = _task_id_of(target)

    async def run() -> tuple[list[LogEntry], bool]:
        from projector._history import task_history

        async with _open_job(data_dir, job) as opened:
            entries = await task_history(opened.client, opened.store, [task_id], page_url=url)
            with redis_errors("reading the seen set"):
                seen = bool(await opened.client.sismember(opened.keys.seen, task_id))
            return entries, seen

    entries, seen = anyio.run(run)
    own = [e for e in entries if getattr(e.event, "task_id", None) == task_id]
    state = fold(own)
    task = state.tasks.get(task_id)
    if as_json:
        from projector._history import fetch_attempts

        _echo_json({
            "task_id": task_id, "url": task.url if task else url,
            "status": task.status if task else None, "attempt": task.attempt if task else None,
            "fetch_attempts": [msgspec.to_builtins(a) for a in fetch_attempts(task_id, entries)],
            "events": [{"stream_id": e.stream_id, "type": tag_of(type(e.event)),
                        **msgspec.to_builtins(e.event)} for e in entries],
        })  # fmt: skip
        if task is None:
            ctx.exit(EXIT_NO)
        return
    if task is None:
        click.echo(_never(job, task_id, url, seen, entries))
        ctx.exit(EXIT_NO)
    click.echo("\n".join(_history_text(task, entries)))


def _never(job: str, task_id: str, url: str | None, seen: bool, entries: list[LogEntry]) -> str:
    what = f"{url} (task {task_id})" if url else f"task {task_id}"
    if seen:
        why = (
            "its fingerprint is in the seen set but no event of it is in the log: it was "
            "enqueued in a log since trimmed without an archive (another data dir?)"
        )
    elif url:
        why = (
            "it was never enqueued: no fetched page linked it within the job's scope and "
            "depth, or the job had reached --max-pages"
        )
    else:
        why = "no such task in this job (check the id, or give the URL)"
    fetched = [e.event for e in entries if isinstance(e.event, PageFetched)]
    lines = [f"job {job} has no {what}: {why}"]
    if fetched:
        lines.append(f"it was fetched {len(fetched)} time(s) by other tasks, after a redirect:")
        lines += [f"  {_when(f.at)}  {f.actor}  task {f.task_id}" for f in fetched]
    return "\n".join(lines)


def _history_text(task: TaskState, entries: list[LogEntry]) -> list[str]:
    from projector._history import fetch_attempts

    attempts = fetch_attempts(task.task_id, entries)
    by_attempt = ", ".join(
        f"attempt {a.attempt} page {a.page} by {a.actor}: "
        + (a.result if a.outcome == "fetched" else f"interrupted, no fetch recorded ({a.result})")
        + ("" if a.task_id == task.task_id else f" (task {a.task_id})")
        for a in attempts
    )
    cut = sum(a.outcome == "interrupted" for a in attempts)
    lines = [
        f"task {task.task_id}  {task.url}",
        f"site {task.site}, depth {task.depth}"
        + (f", parent task {task.parent_task_id}" if task.parent_task_id else ""),
        f"now {task.status} at attempt {task.attempt}; {len(attempts)} fetch attempt(s)"
        + (f": {by_attempt}" if attempts else "")
        + (f"; {task.recoveries} lease(s) lost" if task.recoveries else ""),
    ]
    if cut:
        lines.append(
            f"{cut} attempt(s) ended with no fetch recorded (a kill or a lost lease): the "
            "page may have been requested all the same"
        )
    lines.append("")
    rows = [
        [_when(e.event.at), e.stream_id, e.event.actor, tag_of(type(e.event)), _detail(e.event)]
        for e in entries
    ]
    lines += _table(["time (UTC)", "stream id", "who", "what", "why / detail"], rows)
    return lines


def _detail(event: AnyEvent) -> str:
    match event:
        case TaskEnqueued():
            return f"depth {event.depth}" + (
                f", linked from task {event.parent_task_id}" if event.parent_task_id else ""
            )
        case TaskClaimed():
            again = f", delivery {event.deliveries}" if event.deliveries > 1 else ""
            return f"attempt {event.attempt}{again}"
        case TaskReclaimed():
            owner, deliveries = event.previous_owner, event.deliveries
            return f"{event.reason}: taken from {owner} (delivery {deliveries})"
        case PageFetched():
            outcome = event.error or f"HTTP {event.status}"
            dropped = "".join(f", {n} {why}" for why, n in sorted(event.dropped.items()))
            return f"page {event.page} {outcome}, {event.bytes} B, {event.elapsed_ms:.0f} ms" + (
                f"; URLs dropped{dropped}" if dropped else ""
            )
        case CheckpointSaved():
            counts = event.counts
            return f"after page {event.cursor.page} ({counts.pages} pages, {counts.items} items)"
        case ItemScraped():
            return f"item {event.key}"
        case RetryScheduled():
            return f"{event.reason}: attempt {event.attempt + 1} in {event.delay_s:.1f} s"
        case TaskReleased():
            return f"released by {event.actor}: {event.reason} (attempt {event.attempt} kept)"
        case TaskAborted():
            owners = f"; held by {', '.join(event.owners)}" if event.owners else ""
            last = f"; last error {event.last_error}" if event.last_error else ""
            return f"{event.reason}{last}{owners}"
    parts = [str(getattr(event, name)) for name in ("site", "reason", "action_id")
             if getattr(event, name, None)]  # fmt: skip
    return ": ".join(parts)


# --- workers ----------------------------------------------------------------------------------


@click.command("workers", epilog="Example:  crawlog workers --job shop --all")
@job_option
@data_dir_option
@click.option("--all", "show_all", is_flag=True, help="List every lease, not the oldest 20.")
@json_option
def workers_command(job: str, data_dir: Path | None, show_all: bool, as_json: bool) -> None:
    """Workers alive and the leases they hold, with their ages (the server's clock).

    Alive: the process holds its name's lock (renewed every few seconds). A lease older
    than the job's lease time is expired: the next recovery pass of any worker moves its task
    to the recovery lane.
    """

    async def run() -> tuple[list[LeaseInfo], int, set[str], int]:
        async with _open_job(data_dir, job) as opened:
            await TaskQueue(opened.client, opened.keys, "operator").ensure_groups()
            leases, total = await read_leases(opened.client, opened.keys)
            workers = await read_workers(opened.client, opened.keys)
            alive = {w.name for w in workers if w.alive}
            return leases, total, alive, opened.config.lease_ms

    leases, total, alive, lease_ms = anyio.run(run)
    held: dict[str, list[LeaseInfo]] = {}
    for lease in leases:
        held.setdefault(lease.worker, []).append(lease)
    names = sorted(set(alive) | set(held))
    if as_json:
        _echo_json({
            "lease_ms": lease_ms, "leases": total,
            "workers": [{"name": n, "alive": n in alive,
                         "leases": [msgspec.to_builtins(x) for x in held.get(n, [])]}
                        for n in names],
        })  # fmt: skip
        return
    if not names:
        click.echo(f"no worker is alive or holds a lease in job {job}")
        return
    rows = []
    for name in names:
        mine = held.get(name, [])
        oldest = max((x.age_ms for x in mine), default=None)
        expired = sum(x.age_ms > lease_ms for x in mine)
        rows.append([
            name, "alive" if name in alive else "gone", str(len(mine)),
            _age(oldest) if oldest is not None else "-", str(expired),
        ])  # fmt: skip
    for line in _table(["worker", "state", "leases", "oldest", "expired"], rows):
        click.echo(line)
    click.echo(f"{len(alive)} alive, {total} lease(s); lease time {_age(lease_ms)}")
    if leases:
        ordered = sorted(leases, key=lambda x: -x.age_ms)
        shown = ordered if show_all else ordered[:SHOWN]
        click.echo("")
        table = [[x.worker, x.task_id or "?", str(x.lane), _age(x.age_ms), str(x.deliveries),
                  x.url or "(entry deleted)"] for x in shown]  # fmt: skip
        for line in _table(["worker", "task", "lane", "age", "deliveries", "url"], table):
            click.echo(line)
        if len(leases) > len(shown):
            click.echo(f"... and {len(leases) - len(shown)} more (--all lists them)")


# --- registration -----------------------------------------------------------------------------


def register_operator_commands(group: click.Group) -> None:
    """Add ``pause``, ``resume``, ``retry``, ``resolve``, ``dead``, ``history``, ``workers``."""
    for command in (
        pause_command, resume_command, retry_command, resolve_command, dead_group,
        history_command, workers_command,
    ):  # fmt: skip
        group.add_command(command)
