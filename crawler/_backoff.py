"""When to retry a failed fetch: full-jitter exponential backoff that honours Retry-After.

Pure functions of the attempt number, the response, the caller's clock and the caller's
random generator, so the async worker decides and tests replay exactly. (tenacity and
backoff were not used: both drive the call and the sleeping themselves, draw jitter from
the global ``random``, and read no Retry-After header.)
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

from eventlog import ConfigError

DEFAULT_MAX_ATTEMPTS = 4
"""Fetches of a page in all, the first included (``--retries`` is this less one)."""
DEFAULT_BASE_DELAY_S = 0.5
DEFAULT_MAX_DELAY_S = 30.0
DEFAULT_MAX_RETRY_AFTER_S = 300.0
"""A server that asks for a longer wait than this is given up on rather than waited for."""
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 86_400.0
"""What `retry_after_seconds` makes of absurd values (a year, 10**100): one day."""

# 2.0 ** 1024 overflows a float; past 1023 doublings any base has long reached any cap.
_MAX_DOUBLINGS = 1023
_DELTA_SECONDS_CHARACTERS = frozenset("0123456789.+-")


def backoff_ceiling(attempt: int, *, base: float, cap: float) -> float:
    """The most `backoff_delay` waits after failed attempt ``attempt`` (1 for the first)."""
    if attempt < 1:
        raise ValueError(f"attempt {attempt} is not a failed attempt's number (1 or more)")
    return min(cap, base * 2.0 ** min(attempt - 1, _MAX_DOUBLINGS))


def backoff_delay(attempt: int, *, base: float, cap: float, rng: random.Random) -> float:
    """Seconds to wait after failed attempt ``attempt``: uniform in [0, base * 2**(attempt-1)].

    Full jitter, capped at ``cap``: clients that failed together do not retry together.
    """
    return rng.uniform(0.0, backoff_ceiling(attempt, base=base, cap=cap))


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait, from ``now`` (Unix time).

    Delta-seconds or an HTTP-date; None when absent or unreadable; 0 for the past or a
    negative number; at most `MAX_RETRY_AFTER_S`.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if _DELTA_SECONDS_CHARACTERS.issuperset(text):
        try:
            seconds = float(text)
        except ValueError:
            return None
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # "-0000": a date in UTC from a sender that cannot say so
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - now
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and after how long a failed fetch is tried again."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    """Fetches of one URL in all, the first included."""
    base_delay: float = DEFAULT_BASE_DELAY_S
    max_delay: float = DEFAULT_MAX_DELAY_S
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER_S
    retryable_statuses: frozenset[int] = RETRYABLE_STATUSES

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max attempts {self.max_attempts} is not 1 or more")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name.replace('_', ' ')} {value} is not a number of seconds")

    def next_delay(
        self,
        attempt: int,
        status: int | None,
        retry_after_header: str | None,
        now: float,
        rng: random.Random,
    ) -> float | None:
        """Seconds to wait before the next attempt, or None to give up (the task fails).

        ``attempt`` is the number of the attempt that just failed (1 for the first);
        ``status`` its HTTP status, or None for an error the caller found retryable (a
        timeout, a reset connection); ``now`` Unix time, for a Retry-After HTTP-date. A
        Retry-After longer than the backoff is honoured, up to ``max_retry_after``.
        """
        if attempt >= self.max_attempts:
            return None
        if status is not None and status not in self.retryable_statuses:
            return None
        delay = backoff_delay(attempt, base=self.base_delay, cap=self.max_delay, rng=rng)
        asked = retry_after_seconds(retry_after_header, now)
        if asked is None:
            return delay
        if asked > self.max_retry_after:
            return None
        return max(delay, asked)
