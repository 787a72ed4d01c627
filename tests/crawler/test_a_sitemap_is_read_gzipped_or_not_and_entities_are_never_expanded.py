"""Sitemaps and sitemap indexes parse with their ``lastmod`` and ``changefreq``, gzipped
or not, with or without the protocol's namespace; entity expansion (a billion laughs) is
refused, and neither a huge decompressed body nor garbage raises: each is a reason."""

from __future__ import annotations

import gzip

from crawler._sitemaps import (
    MAX_SITEMAP_BYTES,
    SitemapEntry,
    parse_sitemap,
    robots_sitemaps,
)

URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> http://shop.test/item/1 </loc><lastmod>2026-11-30</lastmod></url>
  <url><loc>http://shop.test/item/2</loc><changefreq>daily</changefreq></url>
  <url><lastmod>2026-11-30</lastmod></url>
</urlset>"""


def test_a_urlset_gives_its_locations_and_their_lastmod() -> None:
    expected = [
        SitemapEntry("http://shop.test/item/1", "2026-11-30"),
        SitemapEntry("http://shop.test/item/2", None, "daily"),
    ]
    assert parse_sitemap(URLSET).urls == expected
    assert parse_sitemap(gzip.compress(URLSET)).urls == expected
    bare = URLSET.replace(b' xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"', b"")
    assert parse_sitemap(bare).urls == expected


def test_an_index_gives_its_sitemaps() -> None:
    index = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
    <sitemap><loc>http://shop.test/s1.xml.gz</loc><lastmod>2026-01-01</lastmod></sitemap>
    <sitemap><loc>http://shop.test/s2.xml</loc></sitemap></sitemapindex>"""
    sitemap = parse_sitemap(index)
    assert sitemap.sitemaps == ["http://shop.test/s1.xml.gz", "http://shop.test/s2.xml"]
    assert sitemap.urls == [] and sitemap.error is None


def test_entities_are_refused_not_expanded() -> None:
    laughs = b"""<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa">
    <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
    <urlset><url><loc>http://shop.test/&c;</loc></url></urlset>"""
    sitemap = parse_sitemap(laughs)
    assert sitemap.urls == []
    assert sitemap.error is not None and "refused XML" in sitemap.error
    external = b"""<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>
    <urlset><url><loc>&x;</loc></url></urlset>"""
    assert "refused XML" in str(parse_sitemap(external).error)


def test_what_is_no_sitemap_is_a_reason_never_an_exception() -> None:
    assert "not XML" in str(parse_sitemap(b"<html><body>oops").error)
    assert "not a sitemap (root element <html>)" in str(parse_sitemap(b"<html></html>").error)
    assert "not valid gzip" in str(parse_sitemap(b"\x1f\x8bnot really gzip").error)
    bomb = gzip.compress(b"<urlset>" + b" " * (MAX_SITEMAP_BYTES + 1) + b"</urlset>")
    assert "larger than" in str(parse_sitemap(bomb).error)


def test_robots_txt_names_its_sitemaps() -> None:
    robots = b"User-agent: *\nDisallow: /private/\nSitemap: http://shop.test/sitemap.xml\n"
    assert robots_sitemaps(robots) == ["http://shop.test/sitemap.xml"]
