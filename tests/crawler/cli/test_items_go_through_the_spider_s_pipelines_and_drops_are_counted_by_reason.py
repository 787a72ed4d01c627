"""A spider's pipelines run in order on every item it yields (an Item or a dict), before
the item is recorded: a step may change the item, or drop it with a reason (``DropItem``)
or by returning None; ``report``, ``status`` and ``history`` say how many were dropped and
why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, PageFetched, TaskDone
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.operator_cli import crawlog
from tests.crawler.pipeline_spiders import CALLS_ENV, DIVISIBLE_BY_THREE

pytestmark = pytest.mark.anyio
CATEGORY = 0


@pytest.mark.timeout(150)  # several crawlog processes, on a loaded machine
async def test_pipelines_tag_and_drop_items_and_the_drops_are_reported_by_reason(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls"
    async with serve_testsite(pages=120, seed=3) as site:
        numbers = list(site.sitemap.category_items(CATEGORY))
        seed = site.url + site.sitemap.listing_path(CATEGORY, 1)
        await start_job(
            [seed], spider="tests.crawler.pipeline_spiders:PipelineListingSpider", max_depth=0
        )
        with anyio.fail_after(140):
            worker = await worker_process("w1", "--exit-when-done", env={CALLS_ENV: str(calls)})
            assert await worker.wait() == 0
            await run_projector(valkey_url, job, data_dir)
            report = await crawlog(valkey_url, data_dir, "report", "--job", job)
            status = await crawlog(valkey_url, data_dir, "status", "--job", job)
            as_json = await crawlog(valkey_url, data_dir, "status", "--job", job, "--json")
            history = await crawlog(valkey_url, data_dir, "history", "--job", job, seed)
            await replay_verify(valkey_url, job, data_dir)
        origin = site.url

    events = [e.event for e in await log.read_range()]
    assert [type(e) for e in events if isinstance(e, TaskDone)] == [TaskDone]
    # Every item went through the first step once, Items and dicts alike.
    assert sorted(calls.read_text().split()) == sorted(f"{origin}/item/{n}" for n in numbers)
    kept = [n for n in numbers if n % 3 and n % 5]
    items = [e for e in events if isinstance(e, ItemScraped)]
    assert [e.key for e in items] == [f"{origin}/item/{n}" for n in kept]
    # Tag (a class, made once) ran after the spider and before the record.
    assert all(e.data["label"] == "tagged" and e.data["page"] >= 1 for e in items)
    assert all(e.data["n"] == n for e, n in zip(items, kept, strict=True))
    dropped: Counter[str] = Counter()
    for event in events:
        if isinstance(event, PageFetched):
            dropped.update(event.items_dropped)
    threes = sum(1 for n in numbers if n % 3 == 0)
    fives = sum(1 for n in numbers if n % 5 == 0 and n % 3)
    assert threes and fives
    assert dropped == {DIVISIBLE_BY_THREE: threes, "dropped by drop_fives": fives}

    assert report.returncode == 0, report.stderr
    assert (
        f"Items dropped by pipelines: {threes + fives}, {DIVISIBLE_BY_THREE} {threes}, "
        f"dropped by drop_fives {fives}"
    ) in report.stdout
    assert status.returncode == 0, status.stderr
    assert (
        f"items dropped by pipelines: {threes + fives} ({DIVISIBLE_BY_THREE} {threes}, "
        f"dropped by drop_fives {fives})"
    ) in status.stdout
    assert as_json.json()["items_dropped"] == {
        DIVISIBLE_BY_THREE: threes,
        "dropped by drop_fives": fives,
    }
    assert history.returncode == 0, history.stderr
    assert "; items dropped by pipelines, " in history.stdout
    assert f" {DIVISIBLE_BY_THREE}" in history.stdout
