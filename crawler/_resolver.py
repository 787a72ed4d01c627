"""The fetcher's address check (`crawler._addresses`) applied where no site can slip past it.

A name is checked in aiohttp's DNS resolver: :class:`GuardedResolver` hands the connector
only the addresses the policy allows, and the connector opens its connection to one of
those, so there is no moment between the check and the connect in which a second DNS
answer (a rebinding) could be used instead. A name only on refused addresses fails the
connect with :class:`~crawler._addresses.AddressRefused`; a name on a public address and a
private one keeps the public one. aiohttp does not resolve a URL whose host is an address
(``http://169.254.169.254/``): the transport asks :meth:`GuardedResolver.check_host` before
each request. Through a proxy, the proxy resolves the name: the transport resolves it here
too, and checks it, before the request is sent (a proxy is trusted to answer as DNS here
does); the proxies' own hosts, like the crawl's own, are allowed.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable

from crawler._addresses import (
    AddressKind,
    AddressPolicy,
    AddressRefused,
    IPAddress,
    parse_address,
    refusal,
)
from crawler._aiohttp import AbstractResolver, DefaultResolver, ResolveResult

__all__ = ["GuardedResolver"]

_MAX_HOSTS_PASSED = 65_536
"""Hosts remembered as passing `GuardedResolver.check_host` (past that it starts afresh):
telling a name from an address costs more than a set lookup, on every request."""


class GuardedResolver(AbstractResolver):
    """aiohttp's default resolver, its answers filtered by an :class:`AddressPolicy`."""

    def __init__(self, policy: AddressPolicy, *, trusted_hosts: Iterable[str] = ()) -> None:
        self.policy = policy
        self._inner = DefaultResolver()
        self._trusted = frozenset(h.lower() for h in (*policy.own_hosts, *trusted_hosts))
        """Hosts connected to whatever their addresses: the crawl's own, its proxies'."""
        self._own: frozenset[IPAddress] | None = None
        self._passed: set[str] = set()
        """Hosts ``check_host`` let through without resolving them: it would again."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The addresses of ``host`` the policy allows; AddressRefused if none."""
        answers = await self._inner.resolve(host, port, family)
        if self.policy.allow_private or _bare(host) in self._trusted:
            return answers
        kept: list[ResolveResult] = []
        refused: tuple[IPAddress, AddressKind] | None = None
        for answer in answers:
            address = parse_address(answer["host"])
            if address is None:
                continue
            kind = await self._refusal(address)
            if kind is None:
                kept.append(answer)
            elif refused is None:
                refused = (address, kind)
        if not kept and refused is not None:
            raise AddressRefused(host, *refused)
        return kept

    async def check_host(self, host: str, port: int, *, resolve: bool) -> None:
        """AddressRefused unless ``host`` may be connected to: checked here if it is an
        address; if it is a name, only with ``resolve`` (the connect will not resolve it
        here: a proxy's request), else the connect's own resolution checks it."""
        if host in self._passed:
            return
        if self.policy.allow_private or _bare(host) in self._trusted:
            self._remember(host)
            return
        address = parse_address(host)
        if address is None:
            if resolve:
                # A name only the proxy knows (no answer here) is the proxy's to resolve.
                with contextlib.suppress(socket.gaierror):
                    await self.resolve(host, port, socket.AF_UNSPEC)
            else:
                self._remember(host)  # a name: the connect's own resolution checks it
            return
        if (kind := await self._refusal(address)) is not None:
            raise AddressRefused(host, address, kind)
        self._remember(host)

    def _remember(self, host: str) -> None:
        if len(self._passed) >= _MAX_HOSTS_PASSED:
            self._passed.clear()
        self._passed.add(host)

    async def _refusal(self, address: IPAddress) -> AddressKind | None:
        kind = refusal(address, self.policy)
        if kind is None:
            return None
        return refusal(address, self.policy, await self._own_addresses())

    async def _own_addresses(self) -> frozenset[IPAddress]:
        """The addresses the crawl's own hosts are on, looked up the first time a special
        address is met (a crawl of public sites never asks)."""
        if self._own is None:
            own: set[IPAddress] = set()
            for host in self.policy.own_hosts:
                literal = parse_address(host)
                if literal is not None:
                    own.add(literal)
                    continue
                try:
                    answers = await self._inner.resolve(host, 0, socket.AF_UNSPEC)
                except OSError:
                    continue  # a seed whose name does not resolve is on no address
                own.update(a for answer in answers if (a := parse_address(answer["host"])))
            self._own = frozenset(own)
        return self._own

    async def close(self) -> None:
        """Release the resolver underneath."""
        await self._inner.close()


def _bare(host: str) -> str:
    """A host as the policy's lists spell it: lowercase, without an FQDN's final dot."""
    return host.lower().rstrip(".")
