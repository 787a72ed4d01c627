"""A recrawl of a paginated listing whose first page changed walks its next pages again
(``NextPage``, fetched in full as a spider's next pages are); pages the earlier run fetched
are not counted against ``--max-pages`` a second time (`Task.revisit_pages`). Before, each run counted them
again: with a bound that left room for the listing once, the run stopped after its second
page, the rest refused as past the bound."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio
LISTING_SPIDER = "tests.crawler.spiders:ListingSpider"
STEP_TIMEOUT_S = 90


async def _run(valkey_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": valkey_url}
    with anyio.fail_after(STEP_TIMEOUT_S):
        result = await anyio.run_process(crawlog_command(*args), env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    return result.stdout.decode()


async def test_a_changed_listing_is_walked_again_to_its_last_page_under_its_bound(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    where = ("--job", job, "--data-dir", str(data_dir))
    async with serve_testsite(pages=200, seed=3) as site:
        listing = [
            site.sitemap.listing_path(0, p) for p in range(1, site.sitemap.listing_pages(0) + 1)
        ]
        assert len(listing) >= 3
        bound = len(listing) + 1  # room for the listing once, and one page more
        await _run(
            valkey_url, "crawl", site.url + listing[0], *where, "--spider", LISTING_SPIDER,
            "--depth", "0", "--ignore-robots", "--max-pages", str(bound),
        )  # fmt: skip
        first = len(site.requests)
        site.edit(listing[0])
        said = await _run(valkey_url, "recrawl", *where)
        second = [(r.path, r.status) for r in site.requests[first:]]

    assert [path for path, _ in second] == listing, "every page of the listing, once, in order"
    assert {status for _, status in second} == {200}
    assert "bound reached" not in said, said
