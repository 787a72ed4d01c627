"""A Redis that dies mid-crawl and comes back on the same data: the worker waits, resumes,
finishes the crawl, and the log holds every event once."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import anyio
import pytest

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler._worker import enqueue_seeds
from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, JobKeys, PageFetched, TaskDone, TaskQueue, connect
from tests.crawler.conftest import ROOT, replay_verify, run_projector
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio

OUTAGE_S = 3.0
"""How long the server stays down: longer than redis-py's own few quick retries."""


async def test_a_worker_rides_out_a_killed_and_restarted_redis(tmp_path: Path) -> None:
    data_dir, job = tmp_path / "data", "outage"
    # appendfsync always: every write the worker was told about survives the SIGKILL.
    aof = ("--appendonly", "yes", "--appendfsync", "always", "--save", "")
    with running_valkey(tmp_path / "valkey", *aof) as server:
        async with serve_testsite(pages=150, seed=11) as site:
            async with connect(server.url) as client:
                config = JobConfig(seeds=(site.url + "/",), politeness=Politeness(per_host=2))
                await save_config(client, JobKeys(job), config)
                await enqueue_seeds(TaskQueue(client, job, "test"), [site.url + "/"], actor="t")
            command = crawlog_command(
                "worker", "--job", job, "--name", "w1",
                "--data-dir", str(data_dir), "--concurrency", "4", "--exit-when-done",
            )  # fmt: skip
            env = {**os.environ, "REDIS_URL": server.url}
            errors = tmp_path / "worker.stderr"
            with errors.open("wb") as sink:
                worker = await anyio.open_process(
                    command, env=env, cwd=ROOT, stdout=None, stderr=sink
                )
            async with worker:
                with anyio.fail_after(60):
                    while len(site.requests) < 30:  # well into the crawl
                        await anyio.sleep(0.02)
                server.kill()
                fetched_at_kill = len(site.requests)
                await anyio.sleep(OUTAGE_S)  # the outage itself, not a wait for anything
                server.start()
                with anyio.fail_after(90):
                    code = await worker.wait()
                assert code == 0, errors.read_text(errors="replace")[-3000:]
            reachable = {u.removeprefix(site.url) for u in site.reachable}
            assert reachable <= {r.path for r in site.requests}
            assert fetched_at_kill < len(reachable)  # the kill really was mid-crawl

        async with connect(server.url) as client:
            entries = await EventLog(client, job).read_range()
        ids = Counter(e.event.event_id for e in entries)
        assert [i for i, n in ids.items() if n > 1] == []
        done = Counter(e.event.task_id for e in entries if isinstance(e.event, TaskDone))
        assert len(done) == len(reachable) and set(done.values()) == {1}
        pages = Counter(e.event.url for e in entries if isinstance(e.event, PageFetched))
        assert set(pages.values()) == {1}
        await run_projector(server.url, job, data_dir)
        await replay_verify(server.url, job, data_dir)
