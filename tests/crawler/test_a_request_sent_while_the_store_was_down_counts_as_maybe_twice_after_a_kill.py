"""A worker that goes on while its store stalls sends requests on a slot of its own, which
the store cannot record: it journals each start before the request goes. SIGKILLed with
such a request on its way, and restarted once the store answers, it flushes the start
into its fetches started before it takes its tasks back, so the page fetched again counts
as a request that may have reached the site twice: never fewer than the site's own log
shows."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler.testsite import Faults, RunningSite, serve_testsite
from crawler.testsite._invariants import site_refetches
from eventlog import JobKeys, TaskQueue, connect, journal_directory
from eventlog._journal import JournalAck, JournalSettle, decode_records
from tests.crawler.conftest import run_projector
from tests.crawler.left_behind import item_task
from tests.crawler.operator_cli import crawlog
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio
ATTEMPTS = 4
STALL_S = 3.0
TASKS = 16
SLOW = Faults(slow_rate=1.0, slow_s=0.3)
"""Every page answered after a moment: a kill finds a request on its way."""


def starts_journalled(directory: Path) -> int:
    """Request starts the worker journalled and no flush has sent yet."""
    starts: set[int] = set()
    acked: set[int] = set()
    for segment in sorted(directory.glob("*.journal")):
        for record in decode_records(segment.read_bytes())[0]:
            if isinstance(record, JournalSettle) and record.mode == "started":
                starts.add(record.seq)
            elif isinstance(record, JournalAck):
                acked.add(record.seq)
    return len(starts - acked)


async def stall_until_a_request_goes_on_its_own_slot(
    server: subprocess.Popen[bytes], journal: Path, site: RunningSite
) -> int:
    """SIGSTOP the store until the worker, taking it for down (within a second), sends a
    request of a task it held on a slot of its own (its start journalled) and the site has
    it; then the requests the site has on their way. A stall in which the worker had no
    task left waiting to go on with is ended (SIGCONT) and tried again."""
    for _ in range(ATTEMPTS):
        server.send_signal(signal.SIGSTOP)
        with anyio.move_on_after(STALL_S):
            while not (starts_journalled(journal) and site.in_flight()):
                await anyio.sleep(0.005)
            return site.in_flight()
        server.send_signal(signal.SIGCONT)
        await anyio.sleep(0.2)
    raise AssertionError("the worker never sent a request on its own slot")


async def test_a_request_on_the_worker_s_own_slot_is_counted_after_a_kill(
    worker_process: Callable[..., Any], job: str, data_dir: Path, tmp_path: Path
) -> None:
    async with serve_testsite(pages=TASKS, seed=4, faults=SLOW) as site:
        with running_valkey(tmp_path / "valkey") as server:
            assert server.process is not None
            async with connect(server.url) as client:
                config = JobConfig(
                    seeds=(site.url + "/",),
                    obey_robots=False,
                    max_depth=0,
                    politeness=Politeness(per_host=2, delay_s=0.1),
                )
                await save_config(client, JobKeys(job), config)
                await TaskQueue(client, job, "seed").enqueue(
                    [item_task(site.url, n) for n in range(TASKS)], actor="test"
                )
            journal = journal_directory(data_dir, "w1", job)
            env = {"REDIS_URL": server.url}
            with anyio.fail_after(60):
                first = await worker_process("w1", "--concurrency", "8", env=env)
                while len(site.requests) < 2:
                    await anyio.sleep(0.01)
                in_flight = await stall_until_a_request_goes_on_its_own_slot(
                    server.process, journal, site
                )
                first.send_signal(signal.SIGKILL)
                assert await first.wait() == -signal.SIGKILL
                server.process.send_signal(signal.SIGCONT)
                resumed = await worker_process("w1", "--exit-when-done", env=env)
                assert await resumed.wait() == 0
                await run_projector(server.url, job, data_dir)
                ran = await crawlog(server.url, data_dir, "report", "--job", job, "--json")
        seen_twice = sum(site_refetches(site).values())
    assert ran.returncode == 0, ran.stderr
    twice = ran.json()["totals"]["requests_maybe_twice"]
    assert seen_twice >= 1  # the request on its way at the kill, asked again
    assert seen_twice <= twice <= seen_twice + in_flight, (seen_twice, twice, in_flight)
