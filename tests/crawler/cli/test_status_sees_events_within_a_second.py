"""`crawlog status --watch` shows events within a second, whether or not they are committed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from crawler.cli._argv import crawlog_command
from eventlog import EventLog, RetryScheduled, TaskDone, TaskEnqueued
from projector._store import Store
from tests.crawler.conftest import ROOT, run_projector

pytestmark = pytest.mark.anyio
PROMISE_S = 1.0
LOAD_SLACK_S = 2.0
"""What a loaded 2-core machine may add to the promise (a process waiting for a core): a
status that waited for a commit (none comes) or refreshed every few seconds still fails."""
SITE = "http://127.0.0.1:9"


async def test_status_watch_shows_appended_events_within_a_second_without_the_projector(
    valkey_url: str, job: str, data_dir: Path, start_job: Callable[..., Any], log: EventLog
) -> None:
    await start_job([f"{SITE}/"])
    await run_projector(valkey_url, job, data_dir)  # the seed is committed, nothing else
    committed = Store(data_dir, job).read_manifest().position
    command = crawlog_command(
        "status", "--job", job, "--watch", "--json",
        "--data-dir", str(data_dir),
    )  # fmt: skip
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with await anyio.open_process(command, env=env, cwd=ROOT) as status:
        try:
            assert status.stdout is not None
            lines = BufferedByteReceiveStream(status.stdout)

            async def next_report() -> Any:
                return json.loads(await lines.receive_until(b"\n", 1_000_000))

            with anyio.fail_after(30):
                first = await next_report()
            assert (first["total"]["discovered"], first["tail_events"]) == (1, 0)

            new = [f"t{n}" for n in range(5)]
            events = [
                *(TaskEnqueued(actor="t", task_id=t, url=f"{SITE}/{t}", site=SITE) for t in new),
                *(TaskDone(actor="t", task_id=t, attempt=1) for t in new[:3]),
                RetryScheduled(actor="t", task_id=new[3], attempt=1, delay_s=1, reason="HTTP 503"),
            ]
            await log.append_many(events)
            appended = anyio.current_time()
            with anyio.fail_after(10):
                report = await next_report()
                while report["total"]["discovered"] != 6:
                    report = await next_report()
            seen_after = anyio.current_time() - appended
        finally:
            # --watch runs until stopped: stop it even when the test failed above.
            status.terminate()

    assert seen_after <= PROMISE_S + LOAD_SLACK_S, (
        f"status showed the events after {seen_after:.2f} s"
    )
    total = report["total"]
    assert (total["done"], total["pending"], total["retries"], total["remaining"]) == (3, 3, 1, 3)
    assert report["tail_events"] == len(events)
    assert Store(data_dir, job).read_manifest().position == committed, "nobody committed them"
