"""A fetch result carries every header of the response (a spider sees them all in
``response.headers``), by lowercase name."""

from __future__ import annotations

import pytest

from crawler._fetch import FetchConfig, Fetcher
from crawler.testsite import JSON_PATH, OTHER_TYPE_ITEMS, serve_testsite

pytestmark = pytest.mark.anyio


async def test_every_header_reaches_the_result_by_lowercase_name() -> None:
    async with serve_testsite(pages=5, seed=1) as site, Fetcher(FetchConfig()) as fetcher:
        result = await fetcher.fetch(site.url + JSON_PATH)
    assert result.error is None
    assert result.headers["x-items"] == str(OTHER_TYPE_ITEMS)
    assert result.headers["server"] == "crawlog-testsite"
    assert result.headers["content-type"] == "application/json"
    assert {"date", "content-length"} <= set(result.headers)
