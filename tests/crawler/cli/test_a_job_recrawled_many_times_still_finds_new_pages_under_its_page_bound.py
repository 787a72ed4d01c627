"""``--max-pages`` bounds the pages a job knows, not its visits: a recrawl's revisits (and the
pages a ``--due`` run leaves for later) are pages an earlier run counted, so they do not
count again. Before, every run's revisits were counted anew: a site recrawled every day
reached the default bound within days, and from then on each new page a run found was
refused by the bound, missing from ``crawlog changes`` with nothing said. The bound still
refuses pages past it, and the run that met it says so."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest

from crawler.testsite import Request, serve_testsite
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio
PAGES = 20
BOUND = 40
"""Above the site's pages (about 25 with its listings), below two runs' worth of them."""
RECRAWLS_BEFORE = 3


def pages_of(requests: list[Request]) -> set[str]:
    """The pages the site answered with 200 (robots.txt is no task)."""
    return {r.path for r in requests if r.status == 200 and r.path != "/robots.txt"}


async def test_new_pages_of_a_late_run_are_crawled_and_the_bound_still_holds(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    where = ("--job", job)
    run = partial(crawlog_ok, valkey_url, data_dir)
    async with serve_testsite(pages=PAGES, seed=3) as site:
        await run("crawl", site.url + "/", *where, "--max-pages", str(BOUND))
        known = len(pages_of(site.requests))
        assert known < BOUND < 2 * known
        for _ in range(RECRAWLS_BEFORE):
            said = await run("recrawl", *where)
            assert "bound reached" not in said, said
        await run("recrawl", *where, "--due")  # nothing due: marks them all
        added = site.mutate(2, 0, seed=1, added=2).added
        await run("recrawl", *where)
        late = await run("changes", *where, "--format", "jsonl")
        # Far past the bound now: the site grows by more pages than it leaves room for.
        room = BOUND - known - len(added)
        grown = site.mutate(room + 6, 0, seed=2, added=room + 6).added
        said = await run("recrawl", *where)
        report = await run("report", *where)
        fetched = pages_of(site.requests)

    new = {
        row["url"].removeprefix(site.url)
        for row in map(json.loads, late.splitlines())
        if row["change"] == "new"
    }
    assert new == set(added), late
    assert set(grown) - fetched, "some of the new pages past the bound"
    assert len(fetched) == BOUND, "as many pages as the bound allows, each run's counted once"
    assert "Bound reached" in report, report
    # The run says what it left out itself: the links its own pages gave past the bound.
    refused = re.search(r"bound reached: (\d+) link", said)
    assert refused is not None, said
    assert int(refused[1]) >= len(set(grown) - fetched)
