"""A flow's step that fails K times in a row (the console refuses one order's
confirmation; the recovery path runs between tries) hands the task to a person: paused
with a report — the step and cursor in its reason, the live page's URL, HTML and a
screenshot as its evidence, written out by ``crawlog evidence``; ``crawlog status`` names
it — and, once they decide to skip the item (``crawlog resolve --done``), the flow goes on
after it: every other open order confirmed once, no item for the skipped one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler._flow import DEFAULT_STEP_ATTEMPTS
from crawler.testsite import RunningSite
from eventlog import EventLog, JobKeys, TaskPaused, TaskQueue
from tests.crawler.browser.flow_kills import item_keys, run_crawlog, start_flow

pytestmark = pytest.mark.anyio
REFUSED = "O0004"
JPEG = b"\xff\xd8"


async def test_a_step_failing_k_times_waits_for_a_person_with_a_report_and_skips_on_done(
    chromium: str,
    site: RunningSite,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    with anyio.fail_after(90):
        await start_flow(site, start_job)
        site.orders.refused.add(REFUSED)
        first = await worker_process("w1", "--exit-when-done")
        assert await first.wait() == 0  # nothing left but what waits for a person
        left, asking = await TaskQueue(redis_client, job, "observer").left()
        assert left == 1 and len(asking) == 1
        events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
        paused = [e for e in events if isinstance(e, TaskPaused)]
        assert len(paused) == 1
        reason, evidence = paused[0].reason, paused[0].evidence
        assert f"step ship failed {DEFAULT_STEP_ATTEMPTS} times" in reason
        assert "page 1 after O0003" in reason  # the cursor: the last order done
        assert evidence is not None and evidence.url.startswith(site.url + "/orders")
        assert REFUSED.encode() in evidence.body and evidence.screenshot.startswith(JPEG)

        task = asking[0]
        status = await run_crawlog(valkey_url, "status", "--job", job, "--data-dir", str(data_dir))
        assert "Needs a person: 1 task(s)" in status
        assert f"{task}: step:ship:{REFUSED}" in status

        out = tmp_path / "report"
        shown = await run_crawlog(
            valkey_url, "evidence", "--job", job, "--data-dir", str(data_dir), task,
            "--out", str(out),
        )  # fmt: skip
        assert "screenshot.jpg" in shown
        assert (out / "screenshot.jpg").read_bytes().startswith(JPEG)

        await run_crawlog(
            valkey_url, "resolve", "--job", job, "--data-dir", str(data_dir), "--task", task,
            "--done", "--reason", "refused by the shop: skip it",
        )  # fmt: skip
        again = await worker_process("w1", "--exit-when-done")
        assert await again.wait() == 0
    others = [oid for oid in site.orders.ids("open") if oid != REFUSED]
    assert site.orders.confirmations == dict.fromkeys(others, 1)
    events = [e.event for e in await EventLog(redis_client, JobKeys(job)).read_range()]
    assert sorted(item_keys(events)) == others
