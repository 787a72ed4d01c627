"""A recrawl of a paginated listing whose first page changed walks its next pages again
(``NextPage``, fetched in full as a spider's next pages are); pages the earlier run fetched
are not counted against ``--max-pages`` a second time (`Validators.pages`). Before, each
run counted them again: with a bound that left room for the listing once, the run stopped
after its second page, the rest refused as past the bound."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from crawler.testsite import serve_testsite
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio
LISTING_SPIDER = "tests.crawler.spiders:ListingSpider"


async def test_a_changed_listing_is_walked_again_to_its_last_page_under_its_bound(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    where = ("--job", job)
    run = partial(crawlog_ok, valkey_url, data_dir)
    async with serve_testsite(pages=200, seed=3) as site:
        listing = [
            site.sitemap.listing_path(0, p) for p in range(1, site.sitemap.listing_pages(0) + 1)
        ]
        assert len(listing) >= 3
        bound = len(listing) + 1  # room for the listing once, and one page more
        await run(
            "crawl", site.url + listing[0], *where, "--spider", LISTING_SPIDER,
            "--depth", "0", "--ignore-robots", "--max-pages", str(bound),
        )  # fmt: skip
        first = len(site.requests)
        site.edit(listing[0])
        said = await run("recrawl", *where)
        second = [(r.path, r.status) for r in site.requests[first:]]

    assert [path for path, _ in second] == listing, "every page of the listing, once, in order"
    assert {status for _, status in second} == {200}
    assert "bound reached" not in said, said
