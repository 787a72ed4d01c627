"""The rules of a handover (`crawler._handover`), as plain functions: a slot goes on to the
next request of its host without asking the server only where no delay applied to the
host, while it is young, and in a gate that is not stopping; a request asks the server
only while its process does not hold every slot of the host itself."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler._handover import (
    HANDOVER_AGE_SHARE,
    HeldSlot,
    may_hand_over,
    must_ask,
    started_ms,
)

TTL_S = 30.0

delays = st.integers(min_value=-1, max_value=3_600_000)
ages = st.floats(min_value=-1.0, max_value=100.0, allow_nan=False)


def slot(delay_ms: int, taken_s: float = 100.0) -> HeldSlot:
    return HeldSlot("token", 5_000, taken_s, delay_ms)


@given(delay_ms=delays, age_s=ages, stopping=st.booleans())
def test_a_slot_is_handed_over_exactly_when_no_delay_applied_it_is_young_and_not_stopping(
    delay_ms: int, age_s: float, stopping: bool
) -> None:
    now_s = 100.0 + age_s
    handed = may_hand_over(slot(delay_ms), now_s=now_s, ttl_s=TTL_S, stopping=stopping)
    young = 0.0 <= now_s - 100.0 <= TTL_S * HANDOVER_AGE_SHARE
    assert handed == (delay_ms == 0 and young and not stopping)


@given(delay_ms=st.integers(min_value=1, max_value=3_600_000))
def test_any_delay_keeps_the_slot_from_being_handed_over(delay_ms: int) -> None:
    # The server spaces the host's starts for every worker: the slot is asked for again.
    assert not may_hand_over(slot(delay_ms), now_s=100.0, ttl_s=TTL_S, stopping=False)


def test_a_slot_whose_delay_is_unknown_is_not_handed_over() -> None:
    assert not may_hand_over(slot(-1), now_s=100.0, ttl_s=TTL_S, stopping=False)


def test_an_old_slot_is_not_handed_over_so_the_next_request_has_most_of_a_fresh_one_s_life() -> (
    None
):
    young = 100.0 + TTL_S * HANDOVER_AGE_SHARE
    assert may_hand_over(slot(0), now_s=young, ttl_s=TTL_S, stopping=False)
    assert not may_hand_over(slot(0), now_s=young + 0.001, ttl_s=TTL_S, stopping=False)


@given(held=st.integers(min_value=0, max_value=50), per_host=st.integers(min_value=1, max_value=50))
def test_a_request_asks_the_server_unless_its_process_holds_every_slot_of_the_host(
    held: int, per_host: int
) -> None:
    assert must_ask(held, per_host) == (held < per_host)


@given(age_s=st.floats(min_value=-5.0, max_value=5.0, allow_nan=False))
def test_a_handed_over_request_starts_no_earlier_than_the_slot_was_taken(age_s: float) -> None:
    start = started_ms(slot(0), 100.0 + age_s)
    assert start >= 5_000
    assert abs(start - (5_000 + max(0.0, age_s) * 1000)) <= 1
