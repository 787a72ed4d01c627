"""A circuit breaker per site: stop fetching from a site that keeps failing, then probe it.

A pure state machine over the caller's clock (``now``, any monotonic clock)::

    closed --N consecutive failures--> open --cooldown passes--> half-open
    half-open: one probe is allowed; its success --> closed, its failure --> open again

The worker reports each fetch's outcome and appends a CircuitOpened event when
`SiteCircuits.record_failure` returns "opened" (and a closing one on "closed").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from eventlog import ConfigError

DEFAULT_FAILURES_TO_OPEN = 5
DEFAULT_COOLDOWN_S = 30.0
DEFAULT_PROBE_TIMEOUT_S = 60.0
"""A probe not reported within this long is presumed lost (a cancelled fetch): another goes."""

CircuitState = Literal["closed", "open", "half-open"]
Transition = Literal["opened", "closed"]
Verdict = Literal["failure", "success"]

SITE_FAILURE_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Answers that say the site is struggling. Any other answer (a 404 too) shows it is up."""


def verdict_of(status: int, *, error: bool, permanent: bool) -> Verdict | None:
    """What one fetch says about its site's health (``status`` 0: no answer), or None.

    A dead link (404, 410) is the page's problem, not the site's: counted as a failure, a
    few broken links opened a site's circuit and held back all its pages. A network error
    or a timeout is a failure; a permanent error (a redirect loop, a page over the size
    cap) came with an answer, unless nothing was sent at all (a malformed URL).
    """
    if (error and not permanent) or status in SITE_FAILURE_STATUSES or status >= 500:
        return "failure"
    return "success" if status else None


@dataclass(frozen=True, slots=True)
class CircuitBreaker:
    """When a site's circuit opens, and for how long."""

    failures_to_open: int = DEFAULT_FAILURES_TO_OPEN
    """Consecutive failures that open the circuit."""
    cooldown: float = DEFAULT_COOLDOWN_S
    """Seconds an open circuit refuses every fetch before it lets one probe through."""
    probe_timeout: float = DEFAULT_PROBE_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.failures_to_open < 1:
            raise ConfigError(f"failures to open {self.failures_to_open} is not 1 or more")
        for name in ("cooldown", "probe_timeout"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"circuit {name.replace('_', ' ')} {value} is not >= 0 seconds")


class _Site:
    """One site's circuit; a closed circuit with no failures is not kept at all."""

    __slots__ = ("failures", "opened_at", "probe_at")

    def __init__(self) -> None:
        self.failures = 0
        self.opened_at: float | None = None
        self.probe_at: float | None = None


class SiteCircuits:
    """The circuits of every site a worker fetches from, under one `CircuitBreaker`."""

    def __init__(self, breaker: CircuitBreaker | None = None) -> None:
        self.breaker = breaker or CircuitBreaker()
        self._sites: dict[str, _Site] = {}

    def __len__(self) -> int:
        """Sites with failures on record or a circuit that is not closed."""
        return len(self._sites)

    def state(self, site: str, now: float) -> CircuitState:
        """The circuit's state at ``now`` (half-open once the cooldown has passed)."""
        circuit = self._sites.get(site)
        if circuit is None or circuit.opened_at is None:
            return "closed"
        return "open" if now < circuit.opened_at + self.breaker.cooldown else "half-open"

    def allow(self, site: str, now: float) -> bool:
        """Whether to fetch from ``site`` now; when half-open, True for one probe at a time."""
        circuit = self._sites.get(site)
        if circuit is None or circuit.opened_at is None:
            return True
        if now < circuit.opened_at + self.breaker.cooldown:
            return False
        if circuit.probe_at is not None and now < circuit.probe_at + self.breaker.probe_timeout:
            return False
        circuit.probe_at = now
        return True

    def record_success(self, site: str, now: float) -> Transition | None:
        """A fetch from ``site`` succeeded: "closed" if that closes its circuit."""
        circuit = self._sites.get(site)
        if circuit is None:
            return None
        if circuit.opened_at is None:
            del self._sites[site]  # the run of failures is broken
            return None
        if now < circuit.opened_at + self.breaker.cooldown:
            return None  # a fetch started before the circuit opened: it proves nothing
        del self._sites[site]
        return "closed"

    def record_failure(self, site: str, now: float) -> Transition | None:
        """A fetch from ``site`` failed: "opened" if that opens its circuit (again)."""
        circuit = self._sites.setdefault(site, _Site())
        if circuit.opened_at is None:
            circuit.failures += 1
            if circuit.failures < self.breaker.failures_to_open:
                return None
        elif now < circuit.opened_at + self.breaker.cooldown:
            return None  # a fetch started before the circuit opened: already counted
        # Closed with one failure too many, or half-open with a failed probe: a new cooldown.
        circuit.opened_at = now
        circuit.probe_at = None
        return "opened"
