"""``crawlog sessions --job J`` lists the browser logins a job keeps — an origin's line with
its version, when it was saved and how many cookies and storage entries it holds, never a
value unless ``--values`` — and ``--clear ORIGIN`` (confirmed, or ``--yes``) drops that
origin's login, so the next page a worker renders there logs in again; the site counts
the logins."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._worker import enqueue_seeds
from crawler.testsite import APP_TOKEN, RunningSite
from eventlog import TaskQueue
from tests.crawler.operator_cli import crawlog

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]
SPIDER = "tests.crawler.browser_spiders:AppPageSpider"


async def test_a_listed_session_hides_its_token_and_a_cleared_origin_logs_in_again(
    chromium: str,
    scripted_site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    site = scripted_site

    async def render(page: str) -> None:
        await enqueue_seeds(TaskQueue(redis_client, job, "test"), [site.url + page], actor="t")
        with anyio.fail_after(90):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0

    await start_job([site.url + "/app/1"], spider=SPIDER, browser=True)
    with anyio.fail_after(90):
        assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
    assert site.logins() == 1

    listed = await crawlog(valkey_url, data_dir, "sessions", "--job", job)
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith(site.url)]
    assert row.split()[-3:] == ["0", "1", "1"]  # no cookie; the token in both storages
    assert APP_TOKEN not in listed.stdout
    (kept,) = (await crawlog(valkey_url, data_dir, "sessions", "--job", job, "--json")).json()[
        "sessions"
    ]
    assert kept["origin"] == site.url and kept["version"] >= 1 and kept["saved_at"]
    assert (kept["local_storage"], kept["session_storage"], kept["values"]) == (1, 1, None)
    shown = await crawlog(valkey_url, data_dir, "sessions", "--job", job, "--values")
    assert f"local_storage token = {APP_TOKEN}" in shown.stdout

    await render("/app/2")
    assert site.logins() == 1, "the kept login serves the next worker"

    host = site.url.split("://", 1)[1]
    unasked = await crawlog(valkey_url, data_dir, "sessions", "--job", job, "--clear", host)
    assert unasked.returncode == 2
    assert (
        unasked.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"crawlog: error: not confirmed; {site.url} not cleared: pass --yes to skip asking"
        )
    )
    cleared = await crawlog(
        valkey_url, data_dir, "sessions", "--job", job, "--clear", host, "--yes"
    )
    assert cleared.returncode == 0, cleared.stderr
    assert f"cleared {site.url} from 1 session(s)" in cleared.stdout

    await render("/app/3")
    assert site.logins() == 2, "the next page logged in again"


async def test_an_origin_no_session_keeps_is_one_line_and_exit_2(
    start_job: Callable[..., Any], job: str, valkey_url: str, data_dir: Path
) -> None:
    await start_job(["http://127.0.0.1:9/app/"], browser=True)
    empty = await crawlog(valkey_url, data_dir, "sessions", "--job", job)
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.strip() == f"no browser sessions kept for job {job}"
    wrong = await crawlog(
        valkey_url, data_dir, "sessions", "--job", job, "--clear", "shop.example", "--yes"
    )
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == (
        "crawlog: error: no browser session keeps 'shop.example' (origins kept: none)"
    )
