"""A crawl's workers run their event loop on uvloop, and on asyncio's own with
``CRAWLOG_UVLOOP=0``: each worker's start line says which."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
STARTED = re.compile(r"worker (w\d) started on job .* loop (\w+)\)")


@pytest.mark.parametrize(
    ("setting", "loop"), [({}, "uvloop"), ({"CRAWLOG_UVLOOP": "0"}, "asyncio")]
)
async def test_each_worker_says_the_loop_it_runs_on(
    valkey_url: str, data_dir: Path, job: str, setting: dict[str, str], loop: str
) -> None:
    env = clean_env(REDIS_URL=valkey_url, CRAWLOG_LOG_LEVEL="info", **setting)
    async with serve_testsite(pages=10, seed=3) as site:
        command = crawlog_command(
            "crawl", site.url + "/", "--job", job, "--workers", "2", "--concurrency", "4",
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(60):
            result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    assert dict(STARTED.findall(stderr)) == {"w1": loop, "w2": loop}, stderr
