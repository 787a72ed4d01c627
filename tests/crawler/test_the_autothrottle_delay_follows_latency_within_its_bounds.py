"""The autothrottle's delay (Scrapy's AutoThrottle): latency / target, averaged with the old
delay, within the floor and the max; only a 200 may lower it; a 429 or 503 raises it."""

from __future__ import annotations

from typing import NamedTuple, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._autothrottle import (
    THROTTLED_MIN_MS,
    SampleKind,
    next_delay_ms,
    sample_kind,
)

KINDS: tuple[SampleKind, ...] = get_args(SampleKind)

delays = st.none() | st.integers(0, 4_000_000)
latencies = st.floats(0, 1e7, allow_nan=False)
targets = st.floats(0.01, 1000, allow_nan=False)
floors = st.integers(0, 100_000)
maxima = st.integers(0, 4_000_000)
kinds = st.sampled_from(KINDS)


def delay(
    old: int | None,
    latency: float,
    kind: SampleKind = "ok",
    *,
    target: float = 1.0,
    floor_ms: int = 0,
    max_ms: int = 60_000,
) -> int:
    return next_delay_ms(old, latency, kind, target=target, floor_ms=floor_ms, max_ms=max_ms)


class Bounds(NamedTuple):
    target: float
    floor_ms: int
    max_ms: int

    def delay(self, old: int | None, latency: float, kind: SampleKind) -> int:
        return next_delay_ms(
            old, latency, kind, target=self.target, floor_ms=self.floor_ms, max_ms=self.max_ms
        )


def test_a_slower_host_is_followed_at_once_and_a_faster_one_half_way() -> None:
    assert delay(None, 800.0) == 800  # the first sample: straight to latency / target
    assert delay(200, 800.0) == 800  # slower: at once, not half way
    assert delay(800, 200.0) == 500  # faster: half way
    assert delay(800, 200.0, target=2.0) == 450  # two in flight: half the wanted delay


def test_the_floor_and_the_max_bound_it() -> None:
    assert delay(None, 10.0, floor_ms=300) == 300
    assert delay(None, 90_000.0, max_ms=60_000) == 60_000
    assert delay(120_000, 90_000.0, max_ms=60_000) == 60_000  # an old delay above a lower max


def test_an_error_or_a_redirect_never_lowers_it_but_may_raise_it() -> None:
    assert delay(800, 5.0, "other") == 800
    assert delay(800, 3000.0, "other") == 3000  # a timeout: the host is slow


def test_a_429_or_503_at_least_doubles_it_from_zero_too() -> None:
    assert delay(None, 5.0, "throttled") == THROTTLED_MIN_MS
    assert delay(800, 5.0, "throttled") == 1600
    assert delay(40_000, 5.0, "throttled") == 60_000  # but never past the max


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (200, "ok"),
        (0, "other"),
        (301, "other"),
        (404, "other"),
        (500, "other"),
        (429, "throttled"),
        (503, "throttled"),
    ],
)
def test_a_status_says_what_its_sample_may_do(status: int, kind: SampleKind) -> None:
    assert sample_kind(status) == kind


@given(delays, latencies, kinds, targets, floors, maxima)
def test_it_stays_between_the_floor_and_the_max(
    old: int | None, latency: float, kind: SampleKind, target: float, floor_ms: int, max_ms: int
) -> None:
    new = delay(old, latency, kind, target=target, floor_ms=floor_ms, max_ms=max_ms)
    assert isinstance(new, int)
    assert new == max_ms if floor_ms > max_ms else floor_ms <= new <= max_ms


@given(delays, latencies, latencies, kinds, targets, floors, maxima)
def test_a_slower_sample_never_gives_a_shorter_delay(
    old: int | None,
    a: float,
    b: float,
    kind: SampleKind,
    target: float,
    floor_ms: int,
    max_ms: int,
) -> None:
    low, high = sorted((a, b))
    bounds = Bounds(target, floor_ms, max_ms)
    assert bounds.delay(old, low, kind) <= bounds.delay(old, high, kind)


@given(delays, delays, latencies, kinds, targets, floors, maxima)
def test_a_longer_delay_before_never_gives_a_shorter_one_after(
    a: int | None,
    b: int | None,
    latency: float,
    kind: SampleKind,
    target: float,
    floor_ms: int,
    max_ms: int,
) -> None:
    low, high = sorted((a or 0, b or 0))
    bounds = Bounds(target, floor_ms, max_ms)
    assert bounds.delay(low, latency, kind) <= bounds.delay(high, latency, kind)


@given(delays, latencies, kinds, targets, targets, floors, maxima)
def test_a_higher_target_concurrency_never_gives_a_longer_delay(
    old: int | None,
    latency: float,
    kind: SampleKind,
    a: float,
    b: float,
    floor_ms: int,
    max_ms: int,
) -> None:
    low, high = sorted((a, b))
    faster, slower = Bounds(high, floor_ms, max_ms), Bounds(low, floor_ms, max_ms)
    assert faster.delay(old, latency, kind) <= slower.delay(old, latency, kind)


@given(st.integers(0, 4_000_000), latencies, targets, floors, maxima)
def test_only_a_200_lowers_it_and_a_throttled_answer_raises_it_unless_at_the_max(
    old: int, latency: float, target: float, floor_ms: int, max_ms: int
) -> None:
    bounds = Bounds(target, floor_ms, max_ms)
    before = min(max(old, floor_ms), max_ms)
    assert bounds.delay(old, latency, "other") >= before
    throttled = bounds.delay(old, latency, "throttled")
    assert throttled > before or throttled == max_ms
