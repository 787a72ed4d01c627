"""The test site as a recrawl meets it: each page it serves carries an ``ETag`` and a
``Last-Modified``, a request that names them gets ``304`` and no body (``If-None-Match``
first, as RFC 9110 says), and `RunningSite.mutate` (or ``GET /_admin/mutate``) edits some
item pages, whose validators then change (an edit may link a new page), and deletes
others, which answer 404."""

from __future__ import annotations

import httpx
import pytest

from crawler.testsite import ITEM_PREFIX, MUTATE_PATH, Revisions, serve_testsite

pytestmark = pytest.mark.anyio


async def test_a_page_s_validators_get_a_304_until_it_is_edited_and_a_deleted_page_is_404() -> None:
    async with serve_testsite(pages=20, seed=1) as site, httpx.AsyncClient() as client:
        page = f"{site.url}{ITEM_PREFIX}3"
        first = await client.get(page)
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        by_tag = await client.get(page, headers={"If-None-Match": etag})
        by_date = await client.get(page, headers={"If-Modified-Since": modified})
        # A tag that does not match decides, whatever the date says.
        stale = await client.get(
            page, headers={"If-None-Match": '"other"', "If-Modified-Since": modified}
        )
        assert (by_tag.status_code, by_tag.content, by_tag.headers["etag"]) == (304, b"", etag)
        assert by_date.status_code == 304
        assert (stale.status_code, stale.content) == (200, first.content)

        done = site.mutate(changed=20, deleted=0, seed=1)  # every item page
        assert f"{ITEM_PREFIX}3" in done.changed
        edited = await client.get(page, headers={"If-None-Match": etag})
        since = await client.get(page, headers={"If-Modified-Since": modified})
        assert edited.status_code == 200 and edited.content != first.content
        assert edited.headers["etag"] != etag
        assert since.status_code == 200
        assert edited.headers["last-modified"] != modified

        home = await client.get(site.url + "/")
        asked = await client.get(
            f"{site.url}{MUTATE_PATH}?changed=0&deleted=1&seed=1",
        )
        assert asked.json()["changed"] == []
        # Item pages were all edited already: nothing is left to delete among them.
        assert asked.json()["deleted"] == []
        assert home.status_code == 200 and "etag" in home.headers

    async with serve_testsite(pages=20, seed=1) as site, httpx.AsyncClient() as client:
        asked = await client.get(f"{site.url}{MUTATE_PATH}?changed=2&deleted=3&seed=7")
        done = asked.json()
        assert len(done["changed"]) == 2 and len(done["deleted"]) == 3
        assert not set(done["changed"]) & set(done["deleted"])
        for path in done["deleted"]:
            assert (await client.get(site.url + path)).status_code == 404
        # The same seed picks the same pages on a site of the same shape.
        again = Revisions(site.sitemap.pages_ok).mutate(2, 3, seed=7)
        assert (list(again.changed), list(again.deleted)) == (done["changed"], done["deleted"])
        # An edit may link a page that did not exist: it is served from then on.
        linking = site.mutate(1, 0, seed=3, added=1)
        (edited_path,), (new_path,) = linking.changed, linking.added
        assert f'href="{new_path}"' in (await client.get(site.url + edited_path)).text
        assert (await client.get(site.url + new_path)).status_code == 200
