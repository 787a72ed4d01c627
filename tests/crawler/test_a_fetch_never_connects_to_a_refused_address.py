"""The fetcher's address check, on real servers of this machine: a URL or a redirect whose
host is a refused address (given as one, or a name that resolves to one) is never
connected to, and the result says why; the crawl's own addresses and ``allow_private``
pass. robots.txt follows five redirects, not six."""

from __future__ import annotations

import pytest

from crawler._addresses import AddressPolicy
from crawler._fetch import ERROR_TOO_MANY_REDIRECTS, FetchConfig, Fetcher
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio
WITNESS_HOST = "127.0.0.2"  # loopback too, but not the seed's 127.0.0.1


def _moved(url: str) -> Route:
    return Route(status=302, headers=(("Location", url),))


async def test_a_redirect_to_another_loopback_address_is_never_followed() -> None:
    async with (
        serve_hostile({"/": Route(b"secret")}, host=WITNESS_HOST) as witness,
        serve_hostile({}) as site,
    ):
        site.routes["/go"] = _moved(witness.url + "/")
        own = AddressPolicy(own_hosts=("127.0.0.1",))
        async with Fetcher(FetchConfig(addresses=own)) as fetcher:
            result = await fetcher.fetch(site.url + "/go")
            direct = await fetcher.fetch(witness.url + "/")
        assert result.error == f"refused address {WITNESS_HOST} (loopback)"
        assert direct.error == f"refused address {WITNESS_HOST} (loopback)"
        assert witness.connections == 0
        assert site.requests == ["/go"]
        async with Fetcher(FetchConfig(addresses=AddressPolicy(allow_private=True))) as fetcher:
            allowed = await fetcher.fetch(site.url + "/go")
        assert allowed.status == 200 and allowed.body == b"secret"
        assert witness.connections == 1


async def test_a_name_is_checked_on_the_addresses_it_resolves_to() -> None:
    async with serve_hostile({"/": Route(b"home")}) as site:
        by_name = f"http://localhost:{site.port}/"
        async with Fetcher(FetchConfig(addresses=AddressPolicy())) as fetcher:
            refused = await fetcher.fetch(by_name)
        assert refused.error is not None and refused.error.startswith("refused address ")
        assert site.connections == 0
        # A seed on 127.0.0.1: that address, under any name, is the crawl's own.
        own = AddressPolicy(own_hosts=("127.0.0.1",))
        async with Fetcher(FetchConfig(addresses=own)) as fetcher:
            fetched = await fetcher.fetch(by_name)
        assert fetched.error is None and fetched.body == b"home"


async def test_robots_txt_follows_five_redirects_to_other_hosts_and_not_six() -> None:
    async with (
        serve_hostile({"/robots.txt": Route(b"User-agent: *\nDisallow: /\n")}) as rules,
        serve_hostile({}) as site,
    ):
        for hop in range(6):
            target = rules.url + "/robots.txt" if hop == 5 else f"{site.url}/hop{hop + 1}"
            site.routes["/robots.txt" if hop == 0 else f"/hop{hop}"] = _moved(target)
        policy = AddressPolicy(own_hosts=("127.0.0.1",))
        async with Fetcher(FetchConfig(addresses=policy)) as fetcher:
            six = await fetcher.fetch_robots(site.url)
            site.routes["/hop4"] = _moved(rules.url + "/robots.txt")  # now five
            five = await fetcher.fetch_robots(site.url)
        assert six.error == ERROR_TOO_MANY_REDIRECTS
        assert five.error is None and five.body.startswith(b"User-agent")
        assert len(five.redirects) == 5


async def test_no_spelling_of_a_refused_address_reaches_it() -> None:
    async with serve_hostile({"/": Route(b"secret")}, host=WITNESS_HOST) as witness:
        port = witness.port
        spellings = [
            f"http://[::ffff:{WITNESS_HOST}]:{port}/",  # IPv4-mapped IPv6
            f"http://[0:0:0:0:0:ffff:7f00:2]:{port}/",
            f"http://0x7f.0.0.2:{port}/",  # a name to the resolver, which knows better
            f"http://2130706434:{port}/",  # the address as one number
            f"http://0177.0.0.02:{port}/",  # octal
            f"http://127.2:{port}/",
        ]
        own = AddressPolicy(own_hosts=("127.0.0.1",))
        async with Fetcher(FetchConfig(addresses=own)) as fetcher:
            results = [await fetcher.fetch(url) for url in spellings]
    assert all(r.error is not None and r.status == 0 for r in results), results
    assert witness.connections == 0
