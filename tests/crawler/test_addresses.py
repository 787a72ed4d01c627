"""The address policy against SSRF (`crawler._addresses`), as pure functions: which
addresses a crawl refuses, in IPv4 and IPv6, and what lets one through."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

from hypothesis import given
from hypothesis import strategies as st

from crawler._addresses import (
    AddressPolicy,
    address_kind,
    own_hosts,
    parse_address,
    refusal,
)

SPECIAL_V4 = {
    "0.0.0.0/8": "private",
    "10.0.0.0/8": "private",
    "100.64.0.0/10": "private",
    "127.0.0.0/8": "loopback",
    "169.254.0.0/16": "link-local",
    "172.16.0.0/12": "private",
    "192.168.0.0/16": "private",
    "224.0.0.0/4": "multicast",
    "240.0.0.0/4": "reserved",
}
SPECIAL_V6 = {
    "::1/128": "loopback",
    "fe80::/10": "link-local",
    "fc00::/7": "private",
    "ff00::/8": "multicast",
}
PUBLIC_V4 = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "151.101.1.69"]
PUBLIC_V6 = ["2606:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::1"]


def _in(network: str) -> st.SearchStrategy[IPv4Address | IPv6Address]:
    net = IPv4Network(network) if "." in network else IPv6Network(network)
    first = int(net.network_address)
    return st.integers(first, first + net.num_addresses - 1).map(
        lambda n: IPv4Address(n) if net.version == 4 else IPv6Address(n)
    )


special_v4 = st.sampled_from(sorted(SPECIAL_V4)).flatmap(_in)
special_v6 = st.sampled_from(sorted(SPECIAL_V6)).flatmap(_in)


@given(special_v4)
def test_every_special_ipv4_address_is_refused_by_default(address: IPv4Address) -> None:
    assert address_kind(address) is not None
    assert refusal(address, AddressPolicy()) is not None


@given(special_v6)
def test_every_special_ipv6_address_is_refused_by_default(address: IPv6Address) -> None:
    assert refusal(address, AddressPolicy()) is not None


def test_each_range_has_its_kind() -> None:
    for network, kind in (SPECIAL_V4 | SPECIAL_V6).items():
        first = ip_address(network.split("/")[0])
        if network == "0.0.0.0/8":
            first = IPv4Address("0.0.0.1")  # 0.0.0.0 itself is "unspecified"
        assert address_kind(first) == kind, network
    assert address_kind(IPv4Address("0.0.0.0")) == "unspecified"
    assert address_kind(IPv6Address("::")) == "unspecified"
    assert address_kind(IPv4Address("169.254.169.254")) == "link-local"


@given(special_v4)
def test_an_ipv4_address_carried_in_ipv6_is_refused_as_itself(address: IPv4Address) -> None:
    kind = address_kind(address)
    n = int(address)
    mapped = IPv6Address((0xFFFF << 32) | n)  # ::ffff:a.b.c.d
    nat64 = IPv6Address((0x64FF9B << 96) | n)  # 64:ff9b::a.b.c.d
    sixtofour = IPv6Address((0x2002 << 112) | (n << 80))  # 2002:a.b.c.d::
    for carrier in (mapped, nat64, sixtofour):
        assert address_kind(carrier) == kind, carrier
        assert refusal(carrier, AddressPolicy()) is not None


def test_public_addresses_pass_also_when_carried() -> None:
    for text in [*PUBLIC_V4, *PUBLIC_V6, "::ffff:8.8.8.8"]:
        address = ip_address(text)
        assert address_kind(address) is None, text
        assert refusal(address, AddressPolicy()) is None, text


@given(st.one_of(special_v4, special_v6))
def test_allow_private_lets_every_address_through(address: IPv4Address | IPv6Address) -> None:
    assert refusal(address, AddressPolicy(allow_private=True)) is None


@given(st.one_of(special_v4, special_v6), st.one_of(special_v4, special_v6))
def test_the_seeds_own_addresses_pass_and_no_other(
    own: IPv4Address | IPv6Address, other: IPv4Address | IPv6Address
) -> None:
    policy = AddressPolicy(own_hosts=(str(own),))
    assert refusal(own, policy, frozenset({own})) is None
    if other != own:
        assert refusal(other, policy, frozenset({own})) is not None


@given(st.one_of(special_v4, special_v6))
def test_a_url_host_parses_to_its_address_with_or_without_brackets(
    address: IPv4Address | IPv6Address,
) -> None:
    text = str(address)
    assert parse_address(text) == address
    if address.version == 6:
        assert parse_address(f"[{text}]") == address
    assert parse_address("metadata.google.internal") is None


def test_own_hosts_are_the_seeds_hosts_lowercase_each_once() -> None:
    seeds = ["http://Shop.Test/a", "http://shop.test:81/b", "http://[::1]:8000/", "nonsense"]
    assert own_hosts(seeds) == ("shop.test", "::1")
