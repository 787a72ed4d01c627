"""A page that failed during a recrawl, retried by the operator once the site is back, is
still that run's revisit: fetched with the validators the earlier run left (answered 304
when it did not change), its events and verdict the run's. Before, a retry rebuilt the
task from a state that kept neither: the page came again in full, as the first run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.testsite import Faults, serve_testsite
from projector import Store, read_committed
from tests.crawler.cli_run import crawlog_done
from tests.server_helpers import stop_or_kill

pytestmark = pytest.mark.anyio
PAGES = 6
SEED = 3
EVERY_PAGE_FAILS = Faults(error_500_rate=1.0, error_500_times=1_000)
OPTIONS = ("--retries", "0", "--ignore-robots", "--circuit-cooldown", "0")
"""Each failure final at once; the site's circuit, opened by run 2's failures, probed as
soon as the retried pages come (its wait is not what is tested here)."""


async def test_a_recrawl_s_failed_page_retried_is_asked_conditionally_as_its_run(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    where = ("--job", "again", "--data-dir", str(data_dir))
    try:
        async with serve_testsite(pages=PAGES, seed=SEED) as site:
            port = int(site.url.rsplit(":", 1)[1])
            await crawlog_done("crawl", site.url + "/", *where, *OPTIONS)
            first = {r.path for r in site.requests if r.status == 200}
        # The same site, failing every request: each revisit of run 2 fails.
        async with serve_testsite(pages=PAGES, seed=SEED, port=port, faults=EVERY_PAGE_FAILS):
            await crawlog_done("recrawl", *where)
        async with serve_testsite(pages=PAGES, seed=SEED, port=port) as back:
            await crawlog_done("retry", *where, "--failed", "--reason", "site back", "--yes")
            await crawlog_done("crawl", back.url + "/", *where, *OPTIONS)  # the seed is seen
            answered = [(r.path, r.status) for r in back.requests]
    finally:
        stop_or_kill(data_dir)

    assert first and {path for path, _ in answered} == first, "each page asked once more"
    assert {status for _, status in answered} == {304}, answered
    _, state = read_committed(Store(data_dir, "again"))
    second = [t for t in state.tasks.values() if t.run == 2]
    assert len(second) == len(first)
    assert all(t.revisit is not None and t.status == "done" and t.attempt == 2 for t in second)
