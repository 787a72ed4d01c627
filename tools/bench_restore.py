"""Benchmark ``crawlog restore``: a job of N tasks, its store flushed, its keys rebuilt.

    python tools/bench_restore.py [--tasks 1000000]

Builds a job through the public API on a private valkey-server (``ensure_server``) in a
fresh data directory: N tasks enqueued (``TaskEnqueued``), one in two of them claimed and
done, one in ten of the rest checkpointed after page 1, appended with `EventLog.append_many`
and archived by a real ``crawlog project --once``. Then the server is really flushed
(``FLUSHALL``), ``crawlog restore --job J --yes`` is timed, and what it rebuilt is counted
in the store: every unfinished task must be in a lane once, every task seen.

Prints a table, then one JSON line: ``restore_1m_s`` (the restore's seconds, scaled to a
million tasks when N is smaller: ``restore_extrapolated`` says so) and
``restore_lost_tasks`` (unfinished tasks not back in a lane, plus tasks not seen).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis.asyncio as aioredis

from eventlog import (
    AnyEvent,
    CheckpointSaved,
    Cursor,
    EventLog,
    JobKeys,
    TaskClaimed,
    TaskDone,
    TaskEnqueued,
    create_identity,
    ensure_server,
    stop_server,
)

JOB = "restore-bench"
SITE = "bench.example"
APPEND_BATCH = 5_000
MILLION = 1_000_000


def crawlog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "crawler.cli", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


def task_events(t: int) -> list[AnyEvent]:
    task_id = f"{t:016x}"
    url = f"http://{SITE}/page-{t}.html"
    events: list[AnyEvent] = [TaskEnqueued(actor="seed", task_id=task_id, url=url, site=SITE)]
    if t % 2 == 0:
        events += [
            TaskClaimed(actor="w1", task_id=task_id, attempt=1),
            TaskDone(actor="w1", task_id=task_id, attempt=1),
        ]
    elif t % 10 == 1:
        events += [
            TaskClaimed(actor="w1", task_id=task_id, attempt=1),
            CheckpointSaved(actor="w1", task_id=task_id, attempt=1, cursor=Cursor(page=1)),
        ]
    return events


async def build(url: str, tasks: int) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        keys = JobKeys(JOB)
        await create_identity(client, keys)
        log = EventLog(client, keys)
        batch: list[AnyEvent] = []
        for t in range(tasks):
            batch += task_events(t)
            if len(batch) >= APPEND_BATCH:
                await log.append_many(batch)
                batch = []
        if batch:
            await log.append_many(batch)
    finally:
        await client.aclose()


async def flush(url: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        await client.flushall()
    finally:
        await client.aclose()


async def count(url: str, tasks: int) -> tuple[int, int]:
    """(tasks in a lane, fingerprints seen) after the restore."""
    client = aioredis.Redis.from_url(url)
    try:
        keys = JobKeys(JOB)
        queued = sum([int(await client.xlen(lane)) for lane in keys.lanes])
        seen = int(await client.get(keys.seen_count) or 0)
        return queued, seen
    finally:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=MILLION)
    args = parser.parse_args()
    tasks: int = args.tasks
    unfinished = tasks // 2
    with tempfile.TemporaryDirectory(prefix="crawlog-restore-") as tmp:
        data_dir = Path(tmp)
        url = ensure_server(data_dir).url
        env = {**os.environ, "REDIS_URL": url, "CRAWLOG_DATA_DIR": str(data_dir)}
        try:
            started = time.monotonic()
            asyncio.run(build(url, tasks))
            built_s = time.monotonic() - started
            started = time.monotonic()
            projected = crawlog("project", "--job", JOB, "--data-dir", tmp, "--once", env=env)
            if projected.returncode != 0:
                sys.exit(f"project failed: {projected.stderr}")
            project_s = time.monotonic() - started
            asyncio.run(flush(url))
            started = time.monotonic()
            restored = crawlog("restore", "--job", JOB, "--data-dir", tmp, "--yes", env=env)
            restore_s = time.monotonic() - started
            if restored.returncode != 0:
                sys.exit(f"restore failed: {restored.stderr}")
            queued, seen = asyncio.run(count(url, tasks))
        finally:
            stop_server(data_dir)
    lost = max(0, unfinished - queued) + max(0, tasks - seen)
    rows = [
        ("tasks", f"{tasks:,}"),
        ("unfinished", f"{unfinished:,}"),
        ("build s (append)", f"{built_s:.1f}"),
        ("project s", f"{project_s:.1f}"),
        ("restore s", f"{restore_s:.2f}"),
        ("queued after restore", f"{queued:,}"),
        ("seen after restore", f"{seen:,}"),
        ("lost tasks", str(lost)),
    ]
    for name, value in rows:
        print(f"{name:<24}{value:>14}")
    print(
        json.dumps(
            {
                "tasks": tasks,
                "restore_s": round(restore_s, 3),
                "restore_1m_s": round(restore_s * MILLION / tasks, 3),
                "restore_extrapolated": tasks < MILLION,
                "restore_lost_tasks": lost,
            }
        )
    )


if __name__ == "__main__":
    main()
