"""Every job of a data directory and of its server, with its status, as ``crawlog jobs``
and the console's jobs page list them.

A job lives in two places: its settings, queue and log on the server, its projected data
(the committed archive and state) in the data directory. Either may be missing — a job fed
through the API has no projected data until a projector runs, and the data directory keeps
a job whose server is stopped or was wiped — so both are listed, each job once, with where
it was found. Read-only, and it starts no server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
import msgspec

from eventlog import (
    CrawlogError,
    EventLog,
    JobKeys,
    TaskQueue,
    connect,
    job_names,
    read_run,
    read_workers,
    stream_id_key,
)

JobStatus = Literal["running", "done", "unfinished", "empty"]
OPERATOR = "jobs"
"""The consumer name the queue is opened with (it only counts, never reads)."""


class JobRow(msgspec.Struct, kw_only=True):
    """One job as ``crawlog jobs`` shows it."""

    job: str
    status: JobStatus
    done: int | None
    """Tasks ended done, failed, aborted: from the projector's last commit (None: none yet)."""
    failed: int | None
    remaining: int | None
    """Tasks not ended: from the server when it runs, else from the last commit."""
    workers_alive: int | None
    last_activity: float | None
    """Unix time of the job's last event (its stream ID's clock)."""
    on_server: bool
    in_data_dir: bool
    run: int | None = None
    """The job's latest run (past 1: ``crawlog recrawl`` ran it again; a restore puts it
    back from the log), from the server (None: not asked). ``done`` and ``failed`` count
    every run's tasks."""


class _ServerSide(msgspec.Struct):
    remaining: int
    alive: int
    leases: int
    last_ms: int | None
    run: int


async def read_job_rows(directory: Path, url: str | None) -> list[JobRow]:
    """Every job as ``crawlog jobs`` lists it: those on the server at ``url`` (None: no
    server to ask) and those with projected data in ``directory``, each once, by name."""
    from projector import Store, projected_jobs

    server = await _read_server(url) if url else {}

    def committed() -> list[JobRow]:
        rows = []
        for job in sorted(set(server) | set(projected_jobs(directory))):
            try:
                summary = Store(directory, job).read_manifest().summary
            except CrawlogError:
                summary = None  # a damaged manifest: its warning line says what to run
            rows.append(_row(job, server.get(job), summary.job.tasks if summary else None))
        return rows

    return await anyio.to_thread.run_sync(committed)


async def _read_server(url: str) -> dict[str, _ServerSide]:
    found: dict[str, _ServerSide] = {}
    async with connect(url) as client:
        for job in await job_names(client):
            keys = JobKeys(job)
            remaining = await TaskQueue(client, keys, OPERATOR).remaining()
            workers = await read_workers(client, keys)
            last = await EventLog(client, keys).last_id()
            found[job] = _ServerSide(
                remaining=remaining,
                alive=sum(w.alive for w in workers),
                leases=sum(w.leases for w in workers),
                last_ms=stream_id_key(last)[0] if last else None,
                run=(await read_run(client, keys)).run,
            )
    return found


def _row(job: str, server: _ServerSide | None, tasks: dict[str, int] | None) -> JobRow:
    from projector import DONE, TERMINAL

    counts = tasks or {}
    ended = sum(n for status, n in counts.items() if status in TERMINAL)
    failed = ended - counts.get(DONE, 0)
    committed_left = sum(n for status, n in counts.items() if status not in TERMINAL)
    remaining = server.remaining if server is not None else committed_left
    status: JobStatus
    if server is not None and (server.alive or server.leases):
        status = "running"
    elif remaining:
        status = "unfinished"
    elif ended or (server is not None and server.last_ms is not None):
        status = "done"
    else:
        status = "empty"
    return JobRow(
        job=job,
        status=status,
        done=ended if tasks is not None else None,
        failed=failed if tasks is not None else None,
        remaining=remaining,
        workers_alive=server.alive if server is not None else None,
        last_activity=server.last_ms / 1000 if server and server.last_ms else None,
        on_server=server is not None,
        in_data_dir=tasks is not None,
        run=server.run if server is not None else None,
    )
