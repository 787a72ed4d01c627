"""A failed task keeps the response it failed on: ``crawlog history`` sums it up and
``crawlog evidence`` writes it out as the site served it, also once the stream is trimmed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from crawler._urls import fingerprint
from crawler.testsite import Faults, serve_testsite
from eventlog import EVIDENCE_BODY_BYTES, EventLog, TaskFailed
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_a_5xx_failure_s_evidence_is_in_history_and_exported_after_the_trim(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    # Every path answers 500 once; with one attempt allowed, the seed fails on it.
    faults = Faults(error_500_rate=1.0, error_500_times=1)
    async with serve_testsite(pages=20, seed=1, faults=faults) as site:
        seed = site.url + "/"
        task_id = fingerprint(seed)
        await start_job([seed], max_depth=0, max_attempts=1)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            # An operator looks into it (an event after the failure), then the failure goes
            # to the archive and the stream is trimmed below the last event.
            paused = await crawlog(
                valkey_url, data_dir, "pause", "--job", job, "--site", site.url,
                "--reason", "look at the 500s",
            )  # fmt: skip
            assert paused.returncode == 0, paused.stderr
            await run_projector(valkey_url, job, data_dir, "--keep-tail", "0")
            left = [e.event for e in await log.read_range()]
            assert not any(isinstance(e, TaskFailed) for e in left)

            history = await crawlog(valkey_url, data_dir, "history", "--job", job, task_id)
            out = tmp_path / "why"
            exported = await crawlog(
                valkey_url, data_dir, "evidence", "--job", job, seed, "--out", str(out)
            )
    assert history.returncode == 0, history.stderr
    assert "evidence (failed at " in history.stdout
    assert "HTTP 500, text/plain; charset=utf-8, 28 B body" in history.stdout
    assert f"crawlog evidence --job {job} {task_id} --out" in history.stdout

    assert exported.returncode == 0, exported.stderr
    response = (out / "response.txt").read_text().splitlines()
    assert response[0] == "HTTP 500 Internal Server Error"
    assert "Content-Type: text/plain; charset=utf-8" in response
    assert (out / "body.txt").read_bytes() == b"injected failure: try again\n"
    meta = json.loads((out / "meta.json").read_text())
    assert (meta["task"], meta["url"], meta["attempt"], meta["error"], meta["worker"]) == (
        task_id,
        seed,
        1,
        "HTTP 500",
        "w1",
    )
    assert meta["status"] == 500 and not meta["truncated"] and meta["when"].startswith("20")


async def test_a_spider_s_failure_keeps_the_page_as_served(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=60, seed=5) as site:
        item = sorted(p for p in site.sitemap.reachable if "/item/" in p)[0]
        url = site.url + item
        await start_job([url], spider="tests.crawler.spiders:FlakySpider", max_depth=0)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            out = tmp_path / "why"
            exported = await crawlog(
                valkey_url, data_dir, "evidence", "--job", job, url, "--out", str(out)
            )
            async with httpx.AsyncClient() as client:
                served = (await client.get(url)).content
    assert exported.returncode == 0, exported.stderr
    assert "HTTP 200, text/html" in exported.stdout
    # The start of the body as served (the test site's item pages are larger than that).
    assert (out / "body.html").read_bytes() == served[:EVIDENCE_BODY_BYTES]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["body_bytes"] == len(served)
    assert meta["truncated"] is (len(served) > EVIDENCE_BODY_BYTES)
    assert meta["error"].startswith("spider error: ValueError: cannot parse")


async def test_an_unknown_task_or_one_without_evidence_is_one_line_and_exit_2(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    async with serve_testsite(pages=20, seed=1) as site:
        seed = site.url + "/"
        await start_job([seed], max_depth=0)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            out = str(tmp_path / "why")
            done = await crawlog(valkey_url, data_dir, "evidence", "--job", job, seed, "--out", out)
            unknown = await crawlog(
                valkey_url, data_dir, "evidence", "--job", job, site.url + "/nope", "--out", out
            )
    for ran, says in ((done, "has not failed nor been aborted"), (unknown, "has no")):
        assert ran.returncode == 2
        assert ran.stderr.count("\n") == 1 and says in ran.stderr, ran.stderr
    assert not (tmp_path / "why").exists()
