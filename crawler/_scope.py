"""The crawl scope: which URLs, found from the seeds, a crawl follows.

Three modes, each applied per seed (a URL is in scope if any seed's rule allows it):

- ``prefix`` (the default): same scheme, host and port, and a path under the seed's
  directory, as ``wget --no-parent`` has it: seed ``http://h/docs/index.html`` allows
  ``http://h/docs/...``; seed ``http://h/docs`` names a file in ``/``, so allows the host.
- ``host``: same scheme, host and port.
- ``domain``: the seed's registrable domain and its subdomains (``www.example.co.uk``
  allows ``docs.example.co.uk``), over http or https and on any port. The public suffix
  list is the snapshot the ``publicsuffixlist`` package ships: nothing is downloaded. A
  seed whose host is an IP address, or a name with no registrable part such as
  ``localhost``, allows that host and (for names) its subdomains.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Final, Literal, get_args

from publicsuffixlist import PublicSuffixList
from yarl import URL

from crawler._urls import HTTP_SCHEMES, DropReason, check_seed_url, parse_url
from eventlog import ConfigError

ScopeMode = Literal["prefix", "host", "domain"]
SCOPE_MODES: Final[tuple[ScopeMode, ...]] = get_args(ScopeMode)
DEFAULT_SCOPE_MODE: Final[ScopeMode] = "prefix"


@cache
def _public_suffixes() -> PublicSuffixList:
    # Parsing the bundled list takes tens of milliseconds: only "domain" scopes pay it, once.
    return PublicSuffixList()


def _is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def registrable_domain(host: str) -> str:
    """The part of ``host`` that one owner registers (``docs.example.co.uk`` → ``example.co.uk``).

    The host itself, without a trailing dot, for IP addresses and names that have no
    registrable part (``localhost``, a bare public suffix).
    """
    host = host.rstrip(".")
    if _is_ip_address(host):
        return host
    return _public_suffixes().privatesuffix(host) or host


@dataclass(frozen=True, slots=True)
class Scope:
    """Which URLs a crawl follows, from its seeds, a mode and an optional maximum depth."""

    seeds: tuple[str, ...]
    mode: ScopeMode = DEFAULT_SCOPE_MODE
    max_depth: int | None = None
    """Seeds are at depth 0; None follows links at any depth."""

    # Lookup tables built once from the seeds, so that `allows` costs a parse and a probe.
    _sites: frozenset[str] = field(init=False, repr=False, compare=False)
    _prefixes: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _domains: frozenset[str] = field(init=False, repr=False, compare=False)
    _ip_hosts: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.seeds, str):
            raise ConfigError(f"seeds must be a sequence of URLs, not the string {self.seeds!r}")
        if not self.seeds:
            raise ConfigError("a crawl needs at least one seed URL")
        if self.mode not in SCOPE_MODES:
            raise ConfigError(
                f"scope mode {self.mode!r} is unknown: expected one of {', '.join(SCOPE_MODES)}"
            )
        if self.max_depth is not None and self.max_depth < 0:
            raise ConfigError(f"max depth {self.max_depth} is negative: expected 0 or more")
        seeds = tuple(dict.fromkeys(check_seed_url(seed) for seed in self.seeds))
        prefixes: dict[str, list[str]] = {}
        domains: set[str] = set()
        ip_hosts: set[str] = set()
        for seed in seeds:
            url = URL(seed)
            path = url.raw_path
            prefixes.setdefault(_site(url), []).append(path[: path.rfind("/") + 1])
            host = url.raw_host
            assert host is not None  # check_seed_url refuses hostless URLs
            if _is_ip_address(host):
                ip_hosts.add(host)
            else:
                domains.add(registrable_domain(host))
        # Frozen: the tables are set once, here, through object's own setattr.
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "_sites", frozenset(prefixes))
        object.__setattr__(
            self, "_prefixes", {site: tuple(paths) for site, paths in prefixes.items()}
        )
        object.__setattr__(self, "_domains", frozenset(domains))
        object.__setattr__(self, "_ip_hosts", frozenset(ip_hosts))

    def allows(self, url: str, depth: int) -> bool:
        """Whether the crawl follows ``url``, found at link ``depth`` from a seed."""
        if self.max_depth is not None and depth > self.max_depth:
            return False
        try:
            parsed = parse_url(url)
        except ValueError:
            return False
        host = parsed.raw_host
        if parsed.scheme not in HTTP_SCHEMES or not host:
            return False
        if self.mode == "domain":
            return self._allows_host(host)
        site = _site(parsed)
        if self.mode == "host":
            return site in self._sites
        path = parsed.raw_path
        return any(path.startswith(prefix) for prefix in self._prefixes.get(site, ()))

    def refusal(self, url: str, depth: int) -> DropReason | None:
        """Why the crawl does not follow ``url`` found at ``depth`` ("out of scope" first,
        then "too deep"), or None if it does."""
        if not self.allows(url, 0):
            return "out of scope"
        if self.max_depth is not None and depth > self.max_depth:
            return "too deep"
        return None

    def _allows_host(self, host: str) -> bool:
        if host in self._ip_hosts:
            return True
        name = host.rstrip(".")
        # Probe the host and each of its parent domains: a few set lookups per URL.
        while True:
            if name in self._domains:
                return True
            dot = name.find(".")
            if dot < 0:
                return False
            name = name[dot + 1 :]


def _site(url: URL) -> str:
    return f"{url.scheme}://{url.host_port_subcomponent}"
