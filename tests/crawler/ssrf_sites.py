"""Sites that try to make a crawler reach a cloud metadata address, and a witness on it.

Run inside the network namespace a test creates (``python -m tests.crawler.ssrf_sites``),
where ``www.shop.test`` and ``blog.shop.test`` are 10.9.9.9 and ``meta.shop.test`` is
169.254.169.254 (the namespace's own ``/etc/hosts``): prints ``ready`` once every server
listens, and, when its stdin closes, what each server saw as one JSON line.

- www.shop.test:80: its robots.txt redirects to blog.shop.test (another host, as RFC 9309
  allows), which redirects to the metadata address.
- blog.shop.test:81: its robots.txt names sitemaps on the metadata address, directly, under
  a name in the crawl's domain, and through a redirect; its sitemap index lists one there;
  its sitemap lists a page there; its home page links there and redirects there.
- 169.254.169.254:80: the witness; every connection it accepts is counted.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tests.crawler.hostile_site import Route, serve_hostile

SITE_ADDRESS = "10.9.9.9"
WITNESS_ADDRESS = "169.254.169.254"
HOSTS = {
    "www.shop.test": SITE_ADDRESS,
    "blog.shop.test": SITE_ADDRESS,
    "meta.shop.test": WITNESS_ADDRESS,
}
WWW = "http://www.shop.test"
BLOG = "http://blog.shop.test:81"
META = "http://meta.shop.test"
METADATA = f"http://{WITNESS_ADDRESS}"
CREDENTIALS = METADATA + "/latest/meta-data/iam/security-credentials/"

XML = "application/xml"


def _moved(url: str) -> Route:
    return Route(status=302, headers=(("Location", url),))


def _sitemap_index(*urls: str) -> Route:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return Route(f"<sitemapindex>{entries}</sitemapindex>".encode(), content_type=XML)


def _urlset(*urls: str) -> Route:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return Route(f"<urlset>{entries}</urlset>".encode(), content_type=XML)


WWW_ROUTES = {
    "/robots.txt": _moved(BLOG + "/hop"),
    "/": Route(b"<title>www</title>"),
}
BLOG_ROUTES = {
    "/hop": _moved(CREDENTIALS),
    "/robots.txt": Route(
        "\n".join(
            [
                "User-agent: *",
                "Allow: /",
                f"Sitemap: {METADATA}/direct.xml",
                f"Sitemap: {META}/named.xml",
                f"Sitemap: {BLOG}/moved.xml",
                f"Sitemap: {BLOG}/index.xml",
            ]
        ).encode(),
        content_type="text/plain",
    ),
    "/moved.xml": _moved(META + "/moved.xml"),
    "/index.xml": _sitemap_index(META + "/child.xml", BLOG + "/urls.xml"),
    "/urls.xml": _urlset(BLOG + "/", META + "/listed", METADATA + "/listed"),
    "/": Route(f'<a href="/go">go</a> <a href="{META}/linked">on</a>'.encode()),
    "/go": _moved(META + "/go"),
}


async def _serve() -> None:
    async with (
        serve_hostile(WWW_ROUTES, host=SITE_ADDRESS, port=80) as www,
        serve_hostile(BLOG_ROUTES, host=SITE_ADDRESS, port=81) as blog,
        serve_hostile({}, host=WITNESS_ADDRESS, port=80) as witness,
    ):
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        seen = {
            "witness": {"connections": witness.connections, "requests": witness.requests},
            "www": www.requests,
            "blog": blog.requests,
        }
        print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    asyncio.run(_serve())
