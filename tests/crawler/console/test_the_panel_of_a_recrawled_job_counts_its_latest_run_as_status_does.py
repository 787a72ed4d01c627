"""The panel of a recrawled job counts its latest run's tasks, as ``crawlog status`` does:
a page that failed in the first run (a 404, not asked again) is no failure of the run
after. Before, the panel counted every run's tasks and failures where status, since this
session, counted the run's."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from tests.crawler.conftest import ROOT
from tests.crawler.console.conftest import RunningConsole
from tests.crawler.hostile_site import html_page, serve_hostile

pytestmark = pytest.mark.anyio


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    return result.stdout.decode()


def figure(page: str, ident: str) -> int:
    found = re.search(rf'id="{ident}">([\d,]+)<', page)
    assert found, ident
    return int(found.group(1).replace(",", ""))


async def test_the_panel_counts_the_latest_run_s_tasks_as_status_does(
    valkey_url: str,
    data_dir: Path,
    job: str,
    console: Callable[..., Awaitable[RunningConsole]],
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    routes = {"/": html_page("home", "/a", "/b"), "/a": html_page("a")}  # /b: 404
    with anyio.fail_after(120):
        async with serve_hostile(routes) as site:
            once = ("--workers", "1", "--delay", "0", "--fail-on", "never")
            await _run(valkey_url, "crawl", site.url + "/", *where, *once)
            await _run(valkey_url, "recrawl", *where, "--workers", "1")
        status = json.loads((await _run(valkey_url, "status", *where, "--json")).splitlines()[0])
        running = await console()
        async with running.session(timeout=20) as http:
            panel = (await http.get(f"/jobs/{job}")).text
            while 'id="committed-only"' in panel:  # the state is being read: live next
                await anyio.sleep(0.1)
                panel = (await http.get(f"/jobs/{job}")).text

    total = status["total"]
    assert (total["done"], total["failed"]) == (2, 0), total
    assert figure(panel, "f-done") == total["done"]
    assert figure(panel, "f-failed") + figure(panel, "f-aborted") == total["failed"] == 0
    assert figure(panel, "f-remaining") == total["remaining"] == 0
