"""A flow handed to a person (a step refused K times) is listed by ``crawlog report`` —
text and ``--json`` — with its flow's last events: the step and cursor it stopped at, the
confirmations done and the one intended, the hand-over; ``crawlog history`` of the task
shows the same tail, and ``crawlog evidence`` writes it in the report's meta.json."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import RunningSite
from eventlog import TaskQueue
from tests.crawler.browser.flow_kills import run_crawlog, start_flow
from tests.crawler.conftest import run_projector

pytestmark = pytest.mark.anyio
REFUSED = "O0004"


async def test_the_report_lists_the_waiting_flow_with_its_last_events(
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
    with anyio.fail_after(60):
        await start_flow(site, start_job)
        site.orders.refused.add(REFUSED)
        assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
    (task,) = (await TaskQueue(redis_client, job, "observer").left())[1]
    await run_projector(valkey_url, job, data_dir)
    where = ("--job", job, "--data-dir", str(data_dir))

    text = await run_crawlog(valkey_url, "report", *where)
    section = text[text.index("Needs a person: 1 task(s)") :]
    assert f"  {task}: step:ship:{REFUSED}" in section
    assert "    flow ship-orders: step ship, page 1 after O0003; its last" in section
    assert "confirm:O0003: done" in section
    assert f"step:ship:{REFUSED}: intended" in section
    assert "to a person  flow ship-orders: step ship failed 3 times" in section

    (waiting,) = json.loads(await run_crawlog(valkey_url, "report", *where, "--json"))[
        "needs_a_person"
    ]
    assert (waiting["task_id"], waiting["waits_on"]) == (task, f"step:ship:{REFUSED}")
    flow = waiting["flow"]
    assert (flow["flow"], flow["step"], flow["page"], flow["last_key"]) == (
        "ship-orders", "ship", 1, "O0003",
    )  # fmt: skip
    assert flow["moments"][-1]["kind"] == "to a person"

    history = await run_crawlog(valkey_url, "history", *where, task)
    assert "flow ship-orders: step ship, page 1 after O0003; its last" in history

    await run_crawlog(valkey_url, "evidence", *where, task, "--out", str(tmp_path / "report"))
    meta = json.loads((tmp_path / "report" / "meta.json").read_text())
    assert meta["outcome"] == "needs a person"
    assert meta["flow"]["last_key"] == "O0003"
    assert meta["flow"]["moments"][-1]["kind"] == "to a person"
