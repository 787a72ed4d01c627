"""robots.txt: rules for one user agent (parsed by protego, Scrapy's parser), and a cache.

What a response means follows RFC 9309 (and Google's reading of it):

- 2xx: the body is the rules, its first `MAX_ROBOTS_BYTES` (500 KiB) of a longer one (the
  line cut there dropped). Lines that do not parse are skipped, so a body that is not a
  robots.txt at all (an HTML error page) allows everything.
- Redirects are followed as section 2.3.1.2 says: `ROBOTS_MAX_REDIRECTS` (five) of them, to
  other hosts too, each hop through the crawl's address check (`crawler._addresses`).
- 3xx left unfollowed (a sixth redirect, a loop), 4xx other than 429: there are no rules;
  everything is allowed.
- 429, 5xx, no response (``status`` 0), a 2xx whose body broke off (connection closed,
  bad content encoding), a redirect to a refused address: the rules are unreachable for
  now, so nothing is allowed; the cache keeps this verdict only briefly
  (`DEFAULT_UNREACHABLE_TTL_S`), and then the worker asks again. The worker does not fail
  a task as "disallowed" for this: it retries it (waiting at least that long), so a
  robots.txt that comes back lets the crawl go on, and one that stays down fails the task,
  after the job's attempts, with the reason "robots.txt unreachable: ...".

RFC 9309 (section 2.3.1.4) and Google read a 5xx as a complete disallow for a while;
Scrapy instead parses whatever body a 5xx had (an error page: allow all), and allows all
when the download fails. crawlog follows the RFC: a site in trouble is not crawled harder.

Fetching robots.txt is the worker's job, once per site and job for all the job's workers
(``eventlog.SharedRobots``); everything here is pure.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Mapping
from enum import Enum
from typing import Final

from protego import Protego

from crawler._addresses import ERROR_REFUSED_ADDRESS_PREFIX
from eventlog import ConfigError

ROBOTS_USER_AGENT = "crawlog"
"""The product token robots.txt groups are matched against."""
NO_RESPONSE: Final = 0
"""The ``status`` to pass when the fetch got no HTTP response at all."""
MAX_ROBOTS_BYTES = 500 * 1024
"""RFC 9309 has parsers read at least 500 KiB; what follows is ignored."""
ROBOTS_MAX_REDIRECTS = 5
"""RFC 9309 section 2.3.1.2: at least five consecutive redirects, across hosts too."""
ROBOTS_PATH: Final = "/robots.txt"
MAX_CRAWL_DELAY_S = 60.0
"""A longer Crawl-delay is read as this: one page a minute is slow enough for any site."""
DEFAULT_ROBOTS_TTL_S = 86_400.0
"""RFC 9309: a cached robots.txt should not be used for more than 24 hours."""
DEFAULT_UNREACHABLE_TTL_S = 10.0
"""Below the retry policy's longest wait: a task held back by unreachable rules is retried
after this long, and must find the verdict expired (robots.txt asked again)."""
MIN_ROBOTS_TTL_S = 60.0
"""The shortest a fetched robots.txt is kept, whatever its Cache-Control says (``no-cache``,
``max-age=0``): asking a site for it before each page would be no politeness at all."""
DEFAULT_ROBOTS_CACHE_SITES = 10_000


class RobotsVerdict(Enum):
    """Where a site's rules came from."""

    PARSED = "parsed"
    """A robots.txt was served: its rules apply."""
    UNAVAILABLE = "unavailable"
    """There is no robots.txt (4xx): everything is allowed."""
    UNREACHABLE = "unreachable"
    """It could not be read (5xx, 429, no response): nothing is allowed for now."""


class RobotsRules:
    """A site's robots.txt rules, as they apply to one user agent."""

    __slots__ = ("_parser", "reason", "user_agent", "verdict")

    def __init__(
        self,
        verdict: RobotsVerdict,
        parser: Protego | None = None,
        *,
        user_agent: str,
        reason: str | None = None,
    ) -> None:
        self.verdict = verdict
        self.user_agent = user_agent
        self.reason = reason
        """Why unreachable rules could not be read ("HTTP 503", "read timeout")."""
        self._parser = parser

    def __repr__(self) -> str:
        return f"RobotsRules({self.verdict.value}, user_agent={self.user_agent!r})"

    def allowed(self, url: str) -> bool:
        """Whether the user agent may fetch ``url`` (a URL of this site)."""
        if self.verdict is RobotsVerdict.UNREACHABLE:
            return False
        if self._parser is None:
            return True
        return self._parser.can_fetch(url, self.user_agent)

    def crawl_delay(self) -> float | None:
        """Seconds between requests that the site asks for, at most `MAX_CRAWL_DELAY_S`."""
        if self._parser is None:
            return None
        delay = self._parser.crawl_delay(self.user_agent)
        if delay is None or not math.isfinite(delay) or delay < 0:
            return None
        return min(delay, MAX_CRAWL_DELAY_S)


def parse_robots(
    body: bytes | None,
    status: int,
    *,
    user_agent: str = ROBOTS_USER_AGENT,
    error: str | None = None,
) -> RobotsRules:
    """The rules a robots.txt response gives ``user_agent``; never raises.

    ``status`` is the response's HTTP status, or `NO_RESPONSE` when there was none;
    ``error`` says why the fetch failed, if it did (the reason unreachable rules give): a
    2xx with an error is a body that broke off, as unreachable as no response.
    """
    if 200 <= status < 300 and error is None:
        if not body:
            return RobotsRules(RobotsVerdict.UNAVAILABLE, user_agent=user_agent)
        if len(body) >= MAX_ROBOTS_BYTES:
            # Read up to the limit (the fetch stops there): the line it cut is dropped.
            body = body[:MAX_ROBOTS_BYTES].rpartition(b"\n")[0]
        # utf-8-sig: a byte-order mark would otherwise glue itself to the first directive.
        text = body.decode("utf-8-sig", errors="replace")
        return RobotsRules(RobotsVerdict.PARSED, Protego.parse(text), user_agent=user_agent)
    if 300 <= status < 500 and status != 429 and not _refused(error):
        return RobotsRules(RobotsVerdict.UNAVAILABLE, user_agent=user_agent)
    reason = error or (f"HTTP {status}" if status != NO_RESPONSE else "no response")
    return RobotsRules(RobotsVerdict.UNREACHABLE, user_agent=user_agent, reason=reason)


def robots_note(rules: RobotsRules, *, truncated: bool) -> str | None:
    """What the report says of a robots.txt not taken whole (None: it was): one that could
    not be read, or one cut at `MAX_ROBOTS_BYTES`."""
    if rules.verdict is RobotsVerdict.UNREACHABLE:
        return f"could not be read ({rules.reason}): nothing of the site fetched until it can be"
    if truncated:
        kib = MAX_ROBOTS_BYTES // 1024
        return f"longer than {kib} KiB: only its first {kib} KiB read, as RFC 9309 allows"
    return None


def _refused(error: str | None) -> bool:
    """A redirect to an address the crawl may not reach: not a redirect left unfollowed
    (which allows all), or a site could open itself up by redirecting there."""
    return error is not None and error.startswith(ERROR_REFUSED_ADDRESS_PREFIX)


_MAX_AGE = re.compile(r"(?:^|[,\s])(?:s-)?max-age\s*=\s*\"?(\d+)", re.IGNORECASE)
_NO_CACHE = re.compile(r"(?:^|[,\s])(?:no-cache|no-store)(?:$|[,\s=])", re.IGNORECASE)


def robots_lifetime(
    rules: RobotsRules,
    headers: Mapping[str, str],
    *,
    unreachable_s: float = DEFAULT_UNREACHABLE_TTL_S,
) -> float:
    """How long a robots.txt response is kept, in seconds: an unreachable verdict briefly
    (``unreachable_s``); otherwise RFC 9309's 24 hours, or less if the response's
    ``Cache-Control`` says less (``max-age``; ``no-cache`` or ``no-store``: the shortest),
    never under `MIN_ROBOTS_TTL_S`. ``headers``: the response's, names lowercase."""
    if rules.verdict is RobotsVerdict.UNREACHABLE:
        return unreachable_s
    control = headers.get("cache-control", "")
    if _NO_CACHE.search(control):
        return MIN_ROBOTS_TTL_S
    ages = [int(age) for age in _MAX_AGE.findall(control)]
    lifetime = min([DEFAULT_ROBOTS_TTL_S, *ages])
    return max(MIN_ROBOTS_TTL_S, float(lifetime))


class RobotsCache:
    """Rules per site until they expire; the least recently used site goes when full.

    Time is the caller's ``now`` (any clock, as long as it is always the same one).
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_ROBOTS_TTL_S,
        unreachable_ttl: float = DEFAULT_UNREACHABLE_TTL_S,
        max_sites: int = DEFAULT_ROBOTS_CACHE_SITES,
    ) -> None:
        if not (ttl >= 0 and unreachable_ttl >= 0):
            raise ConfigError(f"robots.txt cache times {ttl}, {unreachable_ttl} are not >= 0")
        if max_sites < 1:
            raise ConfigError(f"robots.txt cache size {max_sites} is not 1 or more")
        self.ttl = ttl
        self.unreachable_ttl = unreachable_ttl
        self.max_sites = max_sites
        self._entries: OrderedDict[str, tuple[float, RobotsRules]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, site: str, now: float) -> RobotsRules | None:
        """The cached rules of ``site``; None if there are none or they expired (fetch them)."""
        entry = self._entries.get(site)
        if entry is None:
            return None
        expires, rules = entry
        if now >= expires:
            del self._entries[site]
            return None
        self._entries.move_to_end(site)
        return rules

    def put(
        self, site: str, rules: RobotsRules, now: float, *, expires: float | None = None
    ) -> None:
        """Keep ``rules`` for ``site`` from ``now`` until ``expires`` (the lifetime the job
        keeps them for), but no longer than this cache's ttl (unreachable ones': shorter)."""
        ttl = self.unreachable_ttl if rules.verdict is RobotsVerdict.UNREACHABLE else self.ttl
        until = now + ttl if expires is None else min(expires, now + ttl)
        self._entries[site] = (until, rules)
        self._entries.move_to_end(site)
        while len(self._entries) > self.max_sites:
            self._entries.popitem(last=False)
