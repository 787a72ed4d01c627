"""A pipeline step that raises (other than ``DropItem``) fails its task as a spider's error
does, and what a step returns is checked as a spider's output is; the worker goes on. A
``pipelines`` entry that is no step is refused when the spider loads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler._spider import load_spider
from crawler.testsite import serve_testsite
from eventlog import ConfigError, EventLog, ItemScraped, TaskFailed

pytestmark = pytest.mark.anyio
SPIDERS = "tests.crawler.pipeline_spiders"


@pytest.mark.parametrize(
    ("spider", "reason"),
    [
        ("ExplodingPipelineSpider", "spider error: ValueError: no price on "),
        ("UnloggablePipelineSpider", "spider output: spider unloggable-pipeline on "),
    ],
)
async def test_a_pipeline_that_raises_or_returns_what_the_log_cannot_carry_fails_the_task(
    spider: str,
    reason: str,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
) -> None:
    async with serve_testsite(pages=30, seed=5) as site:
        seeds = [site.url + p for p in sorted(site.sitemap.reachable)[:3]]
        await start_job(seeds, spider=f"{SPIDERS}:{spider}", max_depth=0)
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
    events = [e.event for e in await log.read_range()]
    failed = [e.reason for e in events if isinstance(e, TaskFailed)]
    assert len(failed) == len(seeds) and all(r.startswith(reason) for r in failed), failed
    assert not [e for e in events if isinstance(e, ItemScraped)]


def test_a_pipeline_entry_that_is_no_step_is_refused_when_the_spider_loads() -> None:
    with pytest.raises(ConfigError, match="pipeline 42 is neither a function"):
        load_spider(f"{SPIDERS}:NotAPipelineSpider")
