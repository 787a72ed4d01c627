"""Which network addresses a crawl may connect to: the pure policy against SSRF.

A site must not be able to point the crawler at the machine it runs on or at its network: a
robots.txt that redirects to ``http://169.254.169.254/`` (a cloud's metadata service), a
sitemap that lists ``http://10.0.0.5/admin``, a page redirected to ``http://[::1]:6379/``.
So every address a fetch connects to is checked, and one of a special kind
(:data:`AddressKind`: loopback, private, link-local, unspecified, multicast, reserved, in
IPv4 or IPv6, and an IPv4 address carried inside an IPv6 one) is refused, unless

- the crawl's own seeds are on it (a seed's host is one of ``own_hosts``; a crawl of a
  site on 127.0.0.1, as the tests' sites are, may fetch 127.0.0.1), or
- the crawl says so (``allow_private``, ``crawlog crawl --allow-private``).

Everything here is pure; the fetcher applies it where addresses are known: to the answers
of its DNS resolver, before a connection is opened to them (`crawler._resolver`), so what
is checked is what is connected to.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Final, Literal, TypeAlias
from urllib.parse import urlsplit

import msgspec

IPAddress: TypeAlias = IPv4Address | IPv6Address
AddressKind = Literal["unspecified", "loopback", "link-local", "multicast", "private", "reserved"]
"""The kinds of address a crawl refuses by default (a public address has no kind)."""

ERROR_REFUSED_ADDRESS_PREFIX: Final = "refused address "
"""The start of the ``error`` of a fetch whose host is only on refused addresses:
``refused address 169.254.169.254 (link-local)``."""

_SHARED: Final = IPv4Network("100.64.0.0/10")
"""Carrier-grade NAT (RFC 6598): not global, yet not in Python's private list."""
_NAT64: Final = IPv6Network("64:ff9b::/96")
"""RFC 6052's well-known prefix: on a NAT64 network, its last 32 bits are the IPv4 address
that is reached."""
_IPV4_COMPATIBLE: Final = IPv6Network("::/96")
"""Deprecated IPv4-compatible addresses (``::a.b.c.d``; ``::`` and ``::1`` are not)."""


class AddressPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What a crawl's fetches may connect to (see the module's docstring)."""

    allow_private: bool = False
    """Connect to any address (``--allow-private``)."""
    own_hosts: tuple[str, ...] = ()
    """The hosts of the crawl's seeds (and sitemaps), lowercase: whatever they resolve to is
    allowed, and so is that address under any other name."""


class AddressRefused(OSError):
    """Raised inside the fetcher when a host is only on refused addresses; a fetch result
    says it as ``refused address A (KIND)`` (never raised out of a fetch)."""

    def __init__(self, host: str, address: IPAddress, kind: AddressKind) -> None:
        super().__init__(f"{host} is on {address}, a {kind} address")
        self.host = host
        self.address = address
        self.kind = kind

    @property
    def reason(self) -> str:
        """The fetch result's ``error``."""
        return f"{ERROR_REFUSED_ADDRESS_PREFIX}{self.address} ({self.kind})"


def parse_address(host: str) -> IPAddress | None:
    """``host`` (a URL's host: ``[::1]`` or ``::1``, with or without an IPv6 zone) as an
    address, or None if it is a name."""
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ip_address(text)
    except ValueError:
        return None


def address_kind(address: IPAddress) -> AddressKind | None:
    """The special kind of ``address``, or None for a public one.

    An IPv6 address that carries an IPv4 one (IPv4-mapped ``::ffff:a.b.c.d``, the NAT64
    prefix, 6to4, Teredo's client, the deprecated ``::a.b.c.d``) has the kind of the IPv4
    address it reaches, when that is special."""
    if isinstance(address, IPv6Address):
        for inner in _carried(address):
            if (kind := address_kind(inner)) is not None:
                return kind
        if address.ipv4_mapped is not None:
            return None  # what it reaches is public (Python <3.13 calls it reserved)
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_reserved:
        return "reserved"
    if address.is_private or (isinstance(address, IPv4Address) and address in _SHARED):
        return "private"
    if not address.is_global:
        return "reserved"
    return None


def _carried(address: IPv6Address) -> list[IPv4Address]:
    carried: list[IPv4Address] = []
    if address.ipv4_mapped is not None:
        carried.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        carried.append(address.sixtofour)
    if address.teredo is not None:
        carried.append(address.teredo[1])
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        carried.append(IPv4Address(int(address) & 0xFFFF_FFFF))
    return carried


def refusal(
    address: IPAddress, policy: AddressPolicy, own: frozenset[IPAddress] = frozenset()
) -> AddressKind | None:
    """Why a fetch may not connect to ``address`` (its kind), or None if it may.

    ``own``: the addresses the crawl's own hosts are on (``policy.own_hosts`` resolved)."""
    if policy.allow_private:
        return None
    kind = address_kind(address)
    if kind is None:
        return None
    if isinstance(address, IPv6Address) and address.scope_id:
        address = IPv6Address(address.compressed.partition("%")[0])
    if address in own:
        return None
    return kind


def own_hosts(urls: Iterable[str]) -> tuple[str, ...]:
    """The hosts of ``urls`` (a crawl's seeds), lowercase, each once, in order."""
    hosts: dict[str, None] = {}
    for url in urls:
        try:
            host = urlsplit(url).hostname
        except ValueError:
            continue
        if host:
            hosts[host.lower()] = None
    return tuple(hosts)
