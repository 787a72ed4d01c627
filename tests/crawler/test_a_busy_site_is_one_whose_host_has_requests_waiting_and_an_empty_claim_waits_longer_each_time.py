"""Which sites a worker claims around (`busy_sites`: those whose host has requests waiting
for a politeness slot), and how long it waits after a claim around them found nothing
(`ClaimPause`: doubling up to a bound, short again once a claim finds work)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._fair_claims import FIRST_PAUSE_S, LONGEST_PAUSE_S, ClaimPause, busy_sites


def test_a_site_is_busy_when_its_host_is_whatever_its_scheme() -> None:
    sites = {"http://a.test", "https://a.test", "http://b.test:8080", "http://c.test"}
    assert busy_sites(sites, {"a.test", "b.test:8080"}) == sites - {"http://c.test"}
    assert busy_sites(sites, {"b.test"}) == set(), "the port is part of the host"
    assert busy_sites(sites, set()) == set()


@given(st.lists(st.booleans(), max_size=40))
def test_each_empty_claim_waits_twice_as_long_up_to_the_bound_and_work_resets_it(
    found: list[bool],
) -> None:
    pause = ClaimPause()
    expected = FIRST_PAUSE_S
    now = 1000.0
    assert pause.wait_s(now) == 0
    for work in found:
        now += 10 * LONGEST_PAUSE_S
        if work:
            pause.found()
            assert pause.wait_s(now) == 0
            expected = FIRST_PAUSE_S
        else:
            pause.empty(now)
            assert pause.wait_s(now) == pytest.approx(expected)
            assert pause.wait_s(now + expected / 2) == pytest.approx(expected / 2)
            assert pause.wait_s(now + 2 * expected) == 0
            expected = min(expected * 2, LONGEST_PAUSE_S)
