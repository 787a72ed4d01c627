"""Retries: full-jitter exponential backoff, Retry-After, and when to give up."""

from __future__ import annotations

import random
from email.utils import formatdate

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._backoff import (
    DEFAULT_BASE_DELAY_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_DELAY_S,
    MAX_RETRY_AFTER_S,
    RETRYABLE_STATUSES,
    RetryPolicy,
    backoff_ceiling,
    backoff_delay,
    retry_after_seconds,
)
from eventlog._exceptions import ConfigError

NOW = 1_700_000_000.0
attempts = st.integers(min_value=1, max_value=5_000)
delays = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
seeds = st.integers(min_value=0, max_value=2**32)


def test_the_default_policy_is_four_attempts_from_half_a_second_up_to_thirty() -> None:
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.base_delay, policy.max_delay) == (4, 0.5, 30.0)
    assert (DEFAULT_MAX_ATTEMPTS, DEFAULT_BASE_DELAY_S, DEFAULT_MAX_DELAY_S) == (4, 0.5, 30.0)
    assert policy.retryable_statuses == RETRYABLE_STATUSES == {429, 500, 502, 503, 504}


def test_the_ceiling_doubles_from_the_base_until_the_cap() -> None:
    ceilings = [backoff_ceiling(attempt, base=0.5, cap=30.0) for attempt in range(1, 9)]
    assert ceilings == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_a_huge_attempt_number_does_not_overflow() -> None:
    assert backoff_ceiling(10**9, base=1e-300, cap=30.0) == 30.0


def test_attempts_are_numbered_from_one() -> None:
    with pytest.raises(ValueError, match="attempt 0"):
        backoff_delay(0, base=0.5, cap=30.0, rng=random.Random(0))


@given(attempts, delays, delays, seeds)
def test_a_delay_is_between_zero_and_the_ceiling_and_never_above_the_cap(
    attempt: int, base: float, cap: float, seed: int
) -> None:
    delay = backoff_delay(attempt, base=base, cap=cap, rng=random.Random(seed))
    assert 0.0 <= delay <= backoff_ceiling(attempt, base=base, cap=cap) <= cap


@given(attempts, delays, delays)
def test_the_ceiling_never_decreases_from_one_attempt_to_the_next(
    attempt: int, base: float, cap: float
) -> None:
    assert backoff_ceiling(attempt, base=base, cap=cap) <= backoff_ceiling(
        attempt + 1, base=base, cap=cap
    )


def test_delays_are_jittered_over_the_whole_range() -> None:
    rng = random.Random(7)
    samples = [backoff_delay(3, base=0.5, cap=30.0, rng=rng) for _ in range(2_000)]
    assert min(samples) < 0.2
    assert max(samples) > 1.8


def test_the_same_seed_gives_the_same_delays() -> None:
    first = [backoff_delay(n, base=0.5, cap=30.0, rng=random.Random(42)) for n in range(1, 6)]
    again = [backoff_delay(n, base=0.5, cap=30.0, rng=random.Random(42)) for n in range(1, 6)]
    assert first == again


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("120", 120.0), (" 7 ", 7.0), ("1.5", 1.5), ("0", 0.0), ("-5", 0.0), ("+3", 3.0)],
)
def test_retry_after_in_seconds_is_read(header: str, seconds: float) -> None:
    assert retry_after_seconds(header, NOW) == seconds


def test_retry_after_as_an_http_date_is_seconds_from_now() -> None:
    assert retry_after_seconds(formatdate(NOW + 90, usegmt=True), NOW) == 90.0
    assert retry_after_seconds(formatdate(NOW + 90), NOW) == 90.0  # "-0000" zone


def test_retry_after_in_the_past_is_zero() -> None:
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", NOW) == 0.0


def test_absurd_retry_after_values_are_capped() -> None:
    assert retry_after_seconds("9" * 400, NOW) == MAX_RETRY_AFTER_S
    assert retry_after_seconds("Fri, 31 Dec 9999 23:59:59 GMT", NOW) == MAX_RETRY_AFTER_S


@pytest.mark.parametrize("header", [None, "", "  ", "soon", "1e9", "--5", ".", "Wed, 99 Foo"])
def test_a_missing_or_unreadable_retry_after_is_none(header: str | None) -> None:
    assert retry_after_seconds(header, NOW) is None


@given(
    st.text(max_size=40) | st.text(st.sampled_from(list("0123456789 ,:+-.GMTWedOct")), max_size=40)
)
def test_any_retry_after_text_gives_none_or_a_delay_within_bounds(header: str) -> None:
    seconds = retry_after_seconds(header, NOW)
    assert seconds is None or 0.0 <= seconds <= MAX_RETRY_AFTER_S


@pytest.mark.parametrize("status", sorted(RETRYABLE_STATUSES))
def test_retryable_statuses_are_retried(status: int) -> None:
    assert RetryPolicy().next_delay(1, status, None, NOW, random.Random(0)) is not None


@pytest.mark.parametrize("status", [200, 301, 400, 403, 404, 410, 501])
def test_other_statuses_are_given_up_on_at_once(status: int) -> None:
    assert RetryPolicy().next_delay(1, status, None, NOW, random.Random(0)) is None


def test_an_error_without_a_status_is_retried_as_the_caller_found_it_retryable() -> None:
    assert RetryPolicy().next_delay(1, None, None, NOW, random.Random(0)) is not None


def test_after_the_last_attempt_the_policy_gives_up() -> None:
    policy = RetryPolicy()
    rng = random.Random(0)
    assert [policy.next_delay(n, 503, None, NOW, rng) is not None for n in range(1, 6)] == [
        True,
        True,
        True,
        False,
        False,
    ]


@given(st.integers(1, 3), st.sampled_from([429, 503, None]), st.integers(0, 300), seeds)
def test_retry_after_is_honoured_when_longer_than_the_backoff(
    attempt: int, status: int | None, asked: int, seed: int
) -> None:
    delay = RetryPolicy().next_delay(attempt, status, str(asked), NOW, random.Random(seed))
    assert delay is not None
    assert delay >= asked
    assert delay <= max(asked, DEFAULT_MAX_DELAY_S)


def test_a_retry_after_longer_than_the_policy_will_wait_gives_up() -> None:
    policy = RetryPolicy(max_retry_after=60.0)
    assert policy.next_delay(1, 429, "61", NOW, random.Random(0)) is None
    assert policy.next_delay(1, 429, "60", NOW, random.Random(0)) == 60.0


def test_an_unreadable_retry_after_falls_back_to_the_backoff() -> None:
    delay = RetryPolicy().next_delay(1, 503, "later", NOW, random.Random(0))
    assert delay is not None
    assert delay <= DEFAULT_BASE_DELAY_S


@given(st.integers(1, 10), st.integers(100, 599) | st.none(), seeds)
def test_a_delay_is_none_or_within_the_cap_without_retry_after(
    attempt: int, status: int | None, seed: int
) -> None:
    delay = RetryPolicy().next_delay(attempt, status, None, NOW, random.Random(seed))
    assert delay is None or 0.0 <= delay <= DEFAULT_MAX_DELAY_S


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"max_attempts": 0}, "max attempts 0"),
        ({"base_delay": -1.0}, "base delay -1.0"),
        ({"max_delay": float("nan")}, "max delay nan"),
        ({"max_retry_after": float("inf")}, "max retry after inf"),
    ],
)
def test_a_bad_policy_is_a_config_error(kwargs: dict[str, float], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
