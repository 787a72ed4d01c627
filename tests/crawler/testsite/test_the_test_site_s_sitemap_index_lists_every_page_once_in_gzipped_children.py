"""The test site's ``/sitemap.xml`` (named by its robots.txt) is an index of child
sitemaps, gzipped as ``.xml.gz`` files or sent with ``Content-Encoding: gzip``, that
together list every page of the site once, each with its ``lastmod``."""

from __future__ import annotations

import gzip
import re

import httpx
import pytest

from crawler.testsite import SITEMAP_PATH, serve_testsite, sitemap_children, sitemap_lastmod

pytestmark = pytest.mark.anyio


async def test_the_index_s_children_list_every_page_once() -> None:
    async with serve_testsite(pages=450, seed=2) as site, httpx.AsyncClient() as client:
        robots = (await client.get(site.url + "/robots.txt")).text
        index = await client.get(site.url + SITEMAP_PATH)
        children = sitemap_children(site.sitemap)
        responses = [await client.get(site.url + child) for child in children]
    assert f"Sitemap: {site.url}{SITEMAP_PATH}" in robots.splitlines()
    assert index.headers["content-type"] == "application/xml"
    assert re.findall(r"<loc>(.*?)</loc>", index.text) == [site.url + c for c in children]
    assert len(children) > 2
    listed: list[str] = []
    for child, response in zip(children, responses, strict=True):
        assert response.status_code == 200
        if child.endswith(".gz"):
            assert response.headers["content-type"] == "application/gzip"
            xml = gzip.decompress(response.content).decode()
        else:
            assert response.headers["content-encoding"] == "gzip"
            xml = response.text  # httpx decoded it
        for loc, lastmod in re.findall(r"<loc>(.*?)</loc><lastmod>(.*?)</lastmod>", xml):
            assert lastmod == sitemap_lastmod(loc.removeprefix(site.url))
            listed.append(loc.replace("&amp;", "&"))
    assert sorted(listed) == sorted(site.url + p for p in site.sitemap.pages_ok)
