"""--log-format json: every log line of crawl and of the processes it starts is one object."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite, serve_testsite
from tests.crawler.cli_run import clean_env
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


def json_lines(stderr: bytes) -> list[dict[str, Any]]:
    objects = []
    for line in stderr.decode().splitlines():
        entry = json.loads(line)  # fails the test on any line that is not one object
        assert isinstance(entry, dict), line
        assert {"time", "level", "logger", "pid", "message"} <= set(entry), line
        objects.append(entry)
    return objects


async def test_crawl_and_its_workers_and_projector_log_json(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    # The format is a flag of crawl's; the level reaches the children through the
    # environment, as an operator would set it.
    env = clean_env(REDIS_URL=valkey_url, CRAWLOG_LOG_LEVEL="info")
    async with serve_testsite(pages=40, seed=3) as site:
        command = crawlog_command(
            "--log-format", "json", "crawl",
            site.url + "/", "--job", job, "--workers", "2", "--concurrency", "4",
            "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(60):
            result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr.decode()
    entries = json_lines(result.stderr)
    loggers = {(e["logger"], e["pid"]) for e in entries}
    workers = {pid for name, pid in loggers if name == "crawlog.worker"}
    projectors = {pid for name, pid in loggers if name == "crawlog.projector"}
    assert len(workers) == 2, entries
    assert len(projectors) == 1, entries
    assert any(e["message"].startswith("worker w1 started") for e in entries)


async def test_human_logs_are_the_default(
    valkey_url: str, data_dir: Path, job: str, site: RunningSite, start_job: Callable[..., Any]
) -> None:
    await start_job([site.url + "/"])
    command = crawlog_command(
        "worker", "--job", job, "--log-level", "info",
        "--exit-when-done", "--data-dir", str(data_dir),
    )  # fmt: skip
    with anyio.fail_after(60):
        result = await anyio.run_process(
            command, env=clean_env(REDIS_URL=valkey_url), cwd=ROOT, check=False
        )
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stderr.decode().splitlines()
    started = [line for line in lines if " INFO crawlog.worker[" in line and "started" in line]
    assert started, lines
    assert not any(line.startswith("{") for line in lines)
