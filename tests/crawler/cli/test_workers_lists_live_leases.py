"""`crawlog workers`: who is alive, which tasks they hold, and for how long."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_workers_shows_a_live_worker_s_leases_and_then_that_it_is_gone(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    # Every page takes 5 s: the worker holds its tasks long enough to be seen holding them.
    faults = Faults(slow_rate=1.0, slow_s=5.0)
    async with serve_testsite(pages=20, seed=1, faults=faults) as site:
        seed = site.url + "/"
        await start_job([seed], max_depth=0)
        args = ("workers", "--job", job, "--json")
        with anyio.fail_after(60):
            worker = await worker_process("w1")
            while True:
                shown = (await crawlog(valkey_url, data_dir, *args)).json()
                if shown["workers"] and shown["workers"][0]["leases"]:
                    break
                await anyio.sleep(0.1)
            (w1,) = shown["workers"]
            assert w1["name"] == "w1" and w1["alive"]
            (lease,) = w1["leases"]
            assert lease["url"] == seed and 0 <= lease["age_ms"] < shown["lease_ms"]
            text = await crawlog(valkey_url, data_dir, "workers", "--job", job)
            assert text.returncode == 0, text.stderr
            assert "w1      alive  1" in text.stdout and seed in text.stdout
            # Killed, its name's lock runs out in seconds; its lease stays until reclaimed.
            worker.send_signal(signal.SIGKILL)
            await worker.wait()
            while (w1 := (await crawlog(valkey_url, data_dir, *args)).json()["workers"][0])[
                "alive"
            ]:
                await anyio.sleep(0.2)
            assert len(w1["leases"]) == 1
