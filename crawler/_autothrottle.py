"""Adaptive throttling (``--autothrottle``): a host's delay adapted from observed latency.

Scrapy's AutoThrottle algorithm, shared by every worker of a job: each fetch's latency is
folded into the host's delay on the server, by one script (`eventlog.HostSlots.observe`),
so two workers' samples combine rather than overwrite. This module is the algorithm's
definition, a pure function; the script computes the same thing in Lua, on the same
integer milliseconds, and a test holds the two to the same answers.

For a sample of ``latency`` ms with a target of ``target`` requests in flight per host,
the delay that keeps ``target`` requests in flight is ``latency / target``:

- a 200 answer moves the delay half way to it (never below it: a slower host is
  followed at once, a faster one gradually);
- any other answer, or no answer, only raises the delay: error pages and redirects are
  small and fast, and would otherwise pull the delay down;
- a 429 or 503 (the host asks us to slow down) at least doubles it;

and the result stays between the job's ``--delay`` (the floor) and the max delay. A host
seen for the first time starts from the floor.
"""

from __future__ import annotations

import math
from typing import Literal

DEFAULT_TARGET_CONCURRENCY = 1.0
"""Scrapy's AUTOTHROTTLE_TARGET_CONCURRENCY: requests a host should have in flight on
average (across every worker of the job)."""
DEFAULT_MAX_DELAY_S = 60.0
"""Scrapy's AUTOTHROTTLE_MAX_DELAY: the delay never grows past this, however slow the host."""
MAX_TARGET_CONCURRENCY = 1000.0
THROTTLED_STATUSES = frozenset({429, 503})
"""Answers that ask the client to slow down."""
THROTTLED_FACTOR = 2.0
"""A throttled answer multiplies the delay by at least this."""
THROTTLED_MIN_MS = 250
"""A throttled answer raises the delay to at least this, so that it grows from 0 too."""
OK_STATUS = 200

SampleKind = Literal["ok", "other", "throttled"]
"""What a sample may do to the delay: move it either way, only raise it, raise it hard."""


def sample_kind(status: int) -> SampleKind:
    """The kind of a fetch's sample from its HTTP status (0: no response arrived)."""
    if status in THROTTLED_STATUSES:
        return "throttled"
    return "ok" if status == OK_STATUS else "other"


def next_delay_ms(
    delay_ms: int | None,
    latency_ms: float,
    kind: SampleKind,
    *,
    target: float,
    floor_ms: int,
    max_ms: int,
) -> int:
    """The host's new delay (ms) once a fetch of ``latency_ms`` is folded into ``delay_ms``
    (None: no delay yet, so the floor).

    Always between ``floor_ms`` and ``max_ms`` (``max_ms`` wins if they cross);
    non-decreasing in ``delay_ms`` and ``latency_ms``, non-increasing in ``target``.
    """
    # The order of operations is the script's (POLITENESS_OBSERVE): the same floats, the
    # same rounding, the same answer.
    old = min(max(floor_ms if delay_ms is None else delay_ms, floor_ms), max_ms)
    wanted = latency_ms / target
    if kind == "throttled":
        new = max(old * THROTTLED_FACTOR, wanted, THROTTLED_MIN_MS)
    else:
        new = max(wanted, (old + wanted) / 2)
    rounded = math.floor(min(max(new, floor_ms), max_ms) + 0.5)
    if kind != "ok" and rounded < old:
        return old
    return rounded
