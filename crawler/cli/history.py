"""``crawlog history``: every event of one task, in log order, and why a URL was never fetched."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import anyio
import click
import msgspec

from crawler._recrawl import run_fingerprint
from crawler.cli._exit import EXIT_NO
from crawler.cli._operator import echo_json
from crawler.cli._options import data_dir_option, job_option, json_option
from crawler.ops import (
    detail_of,
    evidence_summary,
    export_command_line,
    flow_tail,
    flow_tail_lines,
    last_failure,
    open_log,
    request_summary,
    table_lines,
    task_id_of,
)
from eventlog import (
    FIRST_RUN,
    JobKeys,
    LogEntry,
    PageFetched,
    TaskEvent,
    TaskFailed,
    stream_id_key,
    tag_of,
)
from projector import TaskState, clock_offset, clock_skew, fold

# A task of thousands of pages (a long listing, a loop up to its page cap): its history
# stays a few screens, not megabytes; ``--json`` has every attempt and event.
ATTEMPTS_NAMED = 20
"""Fetch attempts a task's history names one by one: the first and the last halves."""
EVENTS_LISTED = 400
"""Events a task's history lists: the first and the last halves."""

T = TypeVar("T")


def elided(items: Sequence[T], shown: int) -> tuple[list[T], int, list[T]]:
    """``items`` as a bounded summary shows them: the first and the last halves of
    ``shown`` of them, and how many are left out between (all of them, and 0, if there
    are no more than ``shown``)."""
    if len(items) <= shown:
        return list(items), 0, []
    tail = shown // 2
    head = shown - tail
    return list(items[:head]), len(items) - shown, list(items[len(items) - tail :])


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
    task_id, url = task_id_of(target)

    async def run() -> tuple[list[LogEntry], bool, list[str]]:
        from eventlog import is_seen, read_run
        from projector import task_history

        async with open_log(data_dir, job) as (client, store):
            entries = await task_history(client, store, [task_id], page_url=url)
            ids = [task_id]
            if url is not None:
                # A URL is a task in each run that asked for it (`run_fingerprint`): the
                # runs are the record's and those whose fetches of the URL the log has.
                record = await read_run(client, JobKeys(job))
                ids = run_task_ids(task_id, latest_run_of(entries, record.run))
                if len(ids) > 1:
                    entries = await task_history(client, store, ids, page_url=url)
            return entries, await is_seen(client, JobKeys(job), task_id), ids

    entries, seen, ids = anyio.run(run)
    tasks = {t: fold(_of_task(entries, t)).tasks.get(t) for t in ids}
    runs = [task for task in tasks.values() if task is not None]
    task = runs[0] if runs else None
    if as_json:
        from projector import fetch_attempts

        # The earliest run's task (the first run's, unless the URL was new to a later one).
        task_id = task.task_id if task else task_id
        echo_json(
            {
                "task_id": task_id,
                "url": task.url if task else url,
                "status": task.status if task else None,
                "attempt": task.attempt if task else None,
                "fetch_attempts": [
                    msgspec.to_builtins(a) for a in fetch_attempts(task_id, entries)
                ],
                "flow_tail": msgspec.to_builtins(flow_tail(entries, task_id)),
                "events": [
                    {
                        "stream_id": e.stream_id,
                        "type": tag_of(type(e.event)),
                        **msgspec.to_builtins(e.event),
                    }
                    for e in entries
                ],
                "runs": [
                    {"run": t.run, "task_id": t.task_id, "status": t.status, "attempt": t.attempt}
                    for t in runs
                ],
            }
        )
        if task is None:
            ctx.exit(EXIT_NO)
        return
    if task is None:
        click.echo(_never(job, task_id, url, seen, entries))
        ctx.exit(EXIT_NO)
    if len(runs) == 1:
        click.echo("\n".join(_history_text(task, entries, job)))
        return
    blocks = []
    for each in runs:
        # Each run's task with its own events: another run's fetch of the URL is in that
        # run's block, not listed here as a fetch "by another task".
        others = {t.task_id for t in runs} - {each.task_id}
        mine = [e for e in entries if getattr(e.event, "task_id", None) not in others]
        blocks.append("\n".join([f"run {each.run}:", *_history_text(each, mine, job)]))
    click.echo(f"{url}: a task in each of {len(runs)} runs\n\n" + "\n\n".join(blocks))


def run_task_ids(task_id: str, runs: int) -> list[str]:
    """The task ids of a request in runs 1 to ``runs``, ``task_id`` being its first run's."""
    return [run_fingerprint(task_id, run) for run in range(FIRST_RUN, runs + 1)]


def latest_run_of(entries: Sequence[LogEntry], recorded: int) -> int:
    """The latest run ``entries`` have an event of, or ``recorded`` if later."""
    return max([recorded, *(e.event.run for e in entries if isinstance(e.event, TaskEvent))])


def _of_task(entries: Sequence[LogEntry], task_id: str) -> list[LogEntry]:
    return [e for e in entries if getattr(e.event, "task_id", None) == task_id]


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
    fetched = [(e, e.event) for e in entries if isinstance(e.event, PageFetched)]
    lines = [f"job {job} has no {what}: {why}"]
    if fetched:
        lines.append(
            f"it was fetched {len(fetched)} time(s) by other tasks (after a redirect, or as a "
            "request with another method or body: give that task's id):"
        )
        lines += [f"  {_when(_server_time(e))}  {f.actor}  task {f.task_id}" for e, f in fetched]
    return "\n".join(lines)


def _when(epoch: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def _server_time(entry: LogEntry) -> float:
    """When the server wrote the entry (its stream ID's milliseconds): whatever the clock
    of the worker that made the event, the times of a history are the server's."""
    return stream_id_key(entry.stream_id)[0] / 1000


def _clock_lines(entries: list[LogEntry]) -> list[str]:
    """A line for each actor whose clock is off the server's (``projector.clock_skew``)."""
    offsets: dict[str, float] = {}
    for entry in entries:
        actor, offset = entry.event.actor, clock_offset(entry)
        offsets[actor] = max(offsets.get(actor, offset), offset)
    return [
        f"warning: {s.worker}'s clock is {abs(s.offset_s):,.0f} s "
        f"{'ahead of' if s.offset_s > 0 else 'behind'} the server's: the times below are the "
        "server's"
        for s in clock_skew(offsets)
    ]


def _history_text(task: TaskState, entries: list[LogEntry], job: str) -> list[str]:
    from projector import fetch_attempts

    attempts = fetch_attempts(task.task_id, entries)
    first, left_out, last = elided(attempts, ATTEMPTS_NAMED)
    named = [
        f"attempt {a.attempt} page {a.page} by {a.actor}: "
        + (a.result if a.outcome == "fetched" else f"interrupted, no fetch recorded ({a.result})")
        + ("" if a.task_id == task.task_id else f" (task {a.task_id})")
        for a in [*first, *last]
    ]
    if left_out:
        named.insert(len(first), f"… {left_out} more …")
    by_attempt = ", ".join(named)
    cut = sum(a.outcome == "interrupted" for a in attempts)
    lines = [
        f"task {task.task_id}  {task.url}",
        f"site {task.site}, depth {task.depth}"
        + (f", parent task {task.parent_task_id}" if task.parent_task_id else ""),
        *([f"request {request_summary(task.spec)}"] if task.spec is not None else []),
        f"now {task.status} at attempt {task.attempt}; {len(attempts)} fetch attempt(s)"
        + (f": {by_attempt}" if attempts else "")
        + (f"; {task.recoveries} lease(s) lost" if task.recoveries else ""),
    ]
    if cut:
        lines.append(
            f"{cut} attempt(s) ended with no fetch recorded (a kill or a lost lease): the "
            "page may have been requested all the same"
        )
    lines += _evidence_lines(task.task_id, entries, job)
    tail = flow_tail(entries, task.task_id)
    if tail is not None:
        lines += flow_tail_lines(tail)
    lines += _clock_lines(entries)
    lines.append("")
    first_events, not_listed, last_events = elided(entries, EVENTS_LISTED)
    rows = [_event_row(e) for e in first_events]
    if not_listed:
        rows.append(["…", "", "", "", f"{not_listed} events not listed (--json has them all)"])
    rows += [_event_row(e) for e in last_events]
    lines += table_lines([["server time (UTC)", "stream id", "who", "what", "why / detail"], *rows])
    return lines


def _event_row(entry: LogEntry) -> list[str]:
    event = entry.event
    return [
        _when(_server_time(entry)),
        entry.stream_id,
        event.actor,
        tag_of(type(event)),
        detail_of(event),
    ]


def _evidence_lines(task_id: str, entries: list[LogEntry], job: str) -> list[str]:
    """What the task's last failure kept of the response it failed on, and how to get it."""
    found = last_failure(task_id, entries)
    if found is None:
        return []
    entry, failure = found
    ended = "failed" if isinstance(failure, TaskFailed) else "aborted"
    if failure.evidence is None:
        return [f"evidence: none ({ended} at {entry.stream_id} with no response to keep)"]
    return [
        f"evidence ({ended} at {entry.stream_id}, {failure.evidence.url}): "
        f"{evidence_summary(failure.evidence)}",
        f"  export it: {export_command_line(job, task_id)}",
    ]
