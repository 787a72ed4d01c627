"""A `crawlog worker` process runs its crawl with the young generation collected every
`WORKER_GC_YOUNG` objects (`tune_worker_gc`, called by the command itself): read in the real
process once its crawl has ended, as it exits."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._gc import WORKER_GC_YOUNG
from crawler.testsite import RunningSite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio

AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: print("young threshold", gc.get_threshold()[0], file=sys.stderr))
from crawler.cli import main
main(sys.argv[1:])
"""


async def test_a_worker_crawls_with_the_young_threshold_raised(
    site: RunningSite,
    start_job: Callable[..., Any],
    valkey_url: str,
    job: str,
    data_dir: Path,
) -> None:
    await start_job([site.url + "/"], obey_robots=False, max_depth=0)
    command = [
        sys.executable, "-c", AT_EXIT,
        "worker", "--job", job, "--name", "w1", "--data-dir", str(data_dir), "--exit-when-done",
    ]  # fmt: skip
    with anyio.fail_after(90):
        done = await anyio.run_process(
            command, env={**os.environ, "REDIS_URL": valkey_url}, cwd=ROOT, check=False
        )
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert f"young threshold {WORKER_GC_YOUNG}" in stderr.splitlines()[-1], stderr
