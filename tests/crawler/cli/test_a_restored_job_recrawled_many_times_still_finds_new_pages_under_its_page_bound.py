"""A job recrawled several times whose store is then lost (a real FLUSHALL of a real Valkey)
and rebuilt by ``crawlog restore`` counts against ``--max-pages`` the pages it knows, not
its visits: a later run still crawls the new pages a changed page links and lists them
new. Before, the restore counted every run's revisits (enqueued uncounted) as pages again:
a job recrawled a few times was past its bound after a restore, and each new page was
refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawler.testsite import Request, serve_testsite
from tests.crawler.cli_run import clean_env, crawlog_done
from tests.valkey_process import running_valkey

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
PAGES = 20
BOUND = 40
"""Above the site's pages (about 25 with its listings), below two runs' worth of them."""
RECRAWLS = 3


def pages_of(requests: list[Request]) -> set[str]:
    """The pages the site answered with 200 (robots.txt is no task)."""
    return {r.path for r in requests if r.status == 200 and r.path != "/robots.txt"}


async def test_new_pages_after_a_restore_of_a_recrawled_job_are_crawled(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with running_valkey(tmp_path / "valkey") as server:
        env = clean_env(REDIS_URL=server.url)

        async def crawlog(*args: str) -> str:
            return await crawlog_done(*args, "--job", "j", "--data-dir", str(data_dir), env=env)

        async with serve_testsite(pages=PAGES, seed=3) as site:
            crawl = ("crawl", site.url + "/", "--max-pages", str(BOUND), "--workers", "1")
            await crawlog(*crawl)
            for _ in range(RECRAWLS):
                await crawlog("recrawl", "--workers", "1")
            server.flushall()
            await crawlog("restore", "--yes")
            await crawlog(*crawl)  # its settings, lost with the store, given again
            added = site.mutate(2, 0, seed=1, added=2).added
            said = await crawlog("recrawl", "--workers", "1")
            listed = await crawlog("changes", "--format", "jsonl")
            # Far past the bound now: the site grows by more pages than it leaves room for.
            known = len(pages_of(site.requests))
            grown = site.mutate(BOUND - known + 6, 0, seed=2, added=BOUND - known + 6).added
            full = await crawlog("recrawl", "--workers", "1")
            fetched = pages_of(site.requests)

    assert "bound reached" not in said, said
    new = {
        row["url"].removeprefix(site.url)
        for row in map(json.loads, listed.splitlines())
        if row["change"] == "new"
    }
    assert new == set(added), listed
    # And the bound still holds: the restore counted each page the job knew once.
    assert set(grown) - fetched, "some of the new pages past the bound"
    assert len(fetched) == BOUND, "as many pages as the bound allows"
    assert "bound reached" in full, full
