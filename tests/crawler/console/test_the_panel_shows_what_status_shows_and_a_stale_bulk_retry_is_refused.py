"""The console reads the state the command line reads: after a crawl (projected, then
more events in the tail), the panel's done / remaining / failed are `crawlog status`'s.
A bulk retry confirmed for a count the group no longer has is refused, retrying nothing."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskRetried
from tests.crawler.conftest import run_projector
from tests.crawler.console.conftest import RunningConsole
from tests.crawler.operator_cli import crawlog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def figure(page: str, ident: str) -> int:
    found = re.search(rf'id="{ident}">([\d,]+)<', page)
    assert found, ident
    return int(found.group(1).replace(",", ""))


async def test_the_panel_counts_are_the_status_counts_and_a_stale_count_is_refused(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=30, seed=1) as site:
        missing = [f"{site.url}/no/such/page/{n}" for n in range(2)]
        await start_job([site.url + "/", *missing])
        with anyio.fail_after(90):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            await run_projector(valkey_url, job, data_dir)
            status = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
            assert status.returncode == 0, status.stderr
            total = status.json()["total"]
            running = await console()
            async with running.session(timeout=20) as http:
                panel = (await http.get(f"/jobs/{job}")).text
                assert figure(panel, "f-done") == total["done"] > 0
                assert figure(panel, "f-remaining") == total["remaining"] == 0
                assert figure(panel, "f-failed") + figure(panel, "f-aborted") == total["failed"]
                assert total["failed"] == 2

                attention = (await http.get(f"/jobs/{job}/attention")).text
                by_reason = attention[attention.index('<section class="group">') :]
                by_reason = by_reason[: by_reason.index("</form>")]
                fields = dict(
                    re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', by_reason)
                )
                assert fields["count"] == "2"
                stale = {**fields, "count": "3", "reason": "r", "confirm": job}
                answer = await http.post(
                    f"/jobs/{job}/attention/retry", data=stale, follow_redirects=True
                )
                assert "2 failed task(s) now have this reason, not the 3 shown" in answer.text
    assert [e for e in await log.read_range() if isinstance(e.event, TaskRetried)] == []
