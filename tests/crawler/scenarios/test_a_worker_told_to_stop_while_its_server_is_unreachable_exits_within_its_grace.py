"""A worker told to stop (SIGTERM) while its server does not answer exits within its grace
period: what it could not hand back stays leased and expires, as after a kill."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import pytest

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler._worker import enqueue_seeds
from crawler.cli._argv import crawlog_command
from crawler.testsite import Faults, serve_testsite
from eventlog import JobKeys, TaskQueue, connect
from tests.crawler.conftest import ROOT
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio

GRACE_S = 3.0
EXIT_MARGIN_S = 2.0
"""The interpreter's own exit, on a loaded 2-core machine."""


@pytest.mark.parametrize("outage", ["stopped", "killed"])
async def test_a_worker_told_to_stop_while_its_server_is_unreachable_exits_within_its_grace(
    tmp_path: Path, outage: str
) -> None:
    job = "unreachable"
    with running_valkey(tmp_path / "valkey", "--save", "", "--appendonly", "no") as server:
        # Slow pages: the worker has pages in flight (and leases to give back) at the stop.
        faults = Faults(slow_rate=1.0, slow_s=0.5)
        async with serve_testsite(pages=60, seed=5, faults=faults) as site:
            async with connect(server.url) as client:
                config = JobConfig(seeds=(site.url + "/",), politeness=Politeness(per_host=8))
                await save_config(client, JobKeys(job), config)
                await enqueue_seeds(TaskQueue(client, job, "test"), [site.url + "/"], actor="t")
            command = crawlog_command(
                "worker", "--job", job, "--name", "w1",
                "--data-dir", str(tmp_path / "data"), "--concurrency", "4",
                "--grace", str(GRACE_S),
            )  # fmt: skip
            env = {**os.environ, "REDIS_URL": server.url}
            worker = await anyio.open_process(command, env=env, cwd=ROOT, stdout=None, stderr=None)
            async with worker:
                with anyio.fail_after(60):
                    while site.request_count < 8:  # well into the crawl, pages in flight
                        await anyio.sleep(0.02)
                assert server.process is not None
                if outage == "stopped":
                    server.process.send_signal(signal.SIGSTOP)
                else:
                    server.kill()
                try:
                    stopped_at = time.monotonic()
                    worker.send_signal(signal.SIGTERM)
                    with anyio.move_on_after(GRACE_S + 30):
                        await worker.wait()
                    took = time.monotonic() - stopped_at
                    if worker.returncode is None:
                        worker.kill()
                    assert took < GRACE_S + EXIT_MARGIN_S, f"stopped after {took:.1f} s"
                finally:
                    if outage == "stopped":
                        server.process.send_signal(signal.SIGCONT)
