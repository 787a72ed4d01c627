"""``crawlog project``, stopped with SIGTERM, reads to the log's end and commits before it
exits: the crawl that stops it reads its summary from that commit, rather than waiting for
the next regular one."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from eventlog import EventLog, TaskEnqueued
from projector._store import Store

pytestmark = pytest.mark.anyio


def enqueued(n: int) -> TaskEnqueued:
    return TaskEnqueued(actor="seed", task_id=f"t{n}", url=f"http://site.test/{n}", site="x")


async def test_a_stopped_projector_commits_the_log_to_its_end_before_it_exits(
    log: EventLog, valkey_url: str, job: str, tmp_path: Path
) -> None:
    await log.append_many([enqueued(0)])
    command = crawlog_command(
        "project", "--job", job,
        "--data-dir", str(tmp_path), "--commit-interval", "60", "--log-level", "info",
    )  # fmt: skip
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(60):
        async with await anyio.open_process(command, env=env) as process:
            assert process.stderr is not None
            seen = b""
            async for chunk in process.stderr:
                seen += chunk
                if b"started at" in seen:
                    break
            # Stopped while events arrive: when it wakes, the stop and the unread events
            # are both waiting for it; with a 60 s commit interval, only the stop commits.
            process.send_signal(signal.SIGSTOP)
            await log.append_many([enqueued(n) for n in range(1, 500)])
            process.send_signal(signal.SIGTERM)
            process.send_signal(signal.SIGCONT)
            assert await process.wait() == 0
    manifest = Store(tmp_path, job).read_manifest()
    assert manifest.position == await log.last_id()
    assert manifest.events == 500
