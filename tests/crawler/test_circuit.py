"""The per-site circuit breaker: opening, cooldown, one probe at a time, closing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._circuit import (
    DEFAULT_COOLDOWN_S,
    DEFAULT_FAILURES_TO_OPEN,
    CircuitBreaker,
    SiteCircuits,
    verdict_of,
)
from eventlog._exceptions import ConfigError

SITE = "http://h"


def _opened(circuits: SiteCircuits, now: float = 0.0) -> SiteCircuits:
    for _ in range(circuits.breaker.failures_to_open):
        circuits.record_failure(SITE, now)
    return circuits


def test_the_defaults_open_after_five_failures_for_thirty_seconds() -> None:
    breaker = CircuitBreaker()
    assert (breaker.failures_to_open, breaker.cooldown) == (5, 30.0)
    assert (DEFAULT_FAILURES_TO_OPEN, DEFAULT_COOLDOWN_S) == (5, 30.0)


def test_a_site_never_seen_is_closed_and_allowed() -> None:
    circuits = SiteCircuits()
    assert circuits.state(SITE, 0.0) == "closed"
    assert circuits.allow(SITE, 0.0)


def test_the_fifth_consecutive_failure_opens_the_circuit() -> None:
    circuits = SiteCircuits()
    assert [circuits.record_failure(SITE, 0.0) for _ in range(5)] == [None] * 4 + ["opened"]
    assert circuits.state(SITE, 0.0) == "open"
    assert not circuits.allow(SITE, 0.0)


def test_a_success_breaks_the_run_of_failures() -> None:
    circuits = SiteCircuits()
    for _ in range(4):
        circuits.record_failure(SITE, 0.0)
    assert circuits.record_success(SITE, 0.0) is None
    assert [circuits.record_failure(SITE, 0.0) for _ in range(4)] == [None] * 4
    assert circuits.allow(SITE, 0.0)


def test_sites_have_circuits_of_their_own() -> None:
    circuits = _opened(SiteCircuits())
    assert circuits.allow("http://other", 0.0)


def test_an_open_circuit_refuses_until_the_cooldown_passes_then_allows_one_probe() -> None:
    circuits = _opened(SiteCircuits(CircuitBreaker(cooldown=30.0)), now=100.0)
    assert not circuits.allow(SITE, 129.9)
    assert circuits.state(SITE, 130.0) == "half-open"
    assert circuits.allow(SITE, 130.0)
    assert not circuits.allow(SITE, 130.0)
    assert not circuits.allow(SITE, 150.0)


def test_a_successful_probe_closes_the_circuit() -> None:
    circuits = _opened(SiteCircuits())
    assert circuits.allow(SITE, 30.0)
    assert circuits.record_success(SITE, 31.0) == "closed"
    assert circuits.state(SITE, 31.0) == "closed"
    assert circuits.allow(SITE, 31.0)
    assert circuits.allow(SITE, 31.0)


def test_a_failed_probe_opens_the_circuit_again_with_a_new_cooldown() -> None:
    circuits = _opened(SiteCircuits())
    assert circuits.allow(SITE, 30.0)
    assert circuits.record_failure(SITE, 35.0) == "opened"
    assert not circuits.allow(SITE, 64.0)
    assert circuits.allow(SITE, 65.0)


def test_outcomes_of_fetches_started_before_the_circuit_opened_change_nothing() -> None:
    circuits = _opened(SiteCircuits())
    assert circuits.record_failure(SITE, 1.0) is None
    assert circuits.record_success(SITE, 2.0) is None
    assert circuits.state(SITE, 2.0) == "open"
    assert circuits.allow(SITE, 30.0)


def test_a_probe_never_reported_is_presumed_lost_after_the_probe_timeout() -> None:
    circuits = _opened(SiteCircuits(CircuitBreaker(cooldown=30.0, probe_timeout=60.0)))
    assert circuits.allow(SITE, 30.0)
    assert not circuits.allow(SITE, 89.0)
    assert circuits.allow(SITE, 90.0)


def test_healthy_sites_take_no_memory() -> None:
    circuits = SiteCircuits()
    circuits.record_failure(SITE, 0.0)
    assert len(circuits) == 1
    circuits.record_success(SITE, 0.0)
    assert len(circuits) == 0


@pytest.mark.parametrize(
    "kwargs", [{"failures_to_open": 0}, {"cooldown": -1.0}, {"probe_timeout": float("nan")}]
)
def test_a_bad_breaker_is_a_config_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        CircuitBreaker(**kwargs)  # type: ignore[arg-type]


# An operation on the one site, after the clock moved forward by a step.
operations = st.lists(
    st.tuples(
        st.sampled_from(["allow", "success", "failure"]),
        st.floats(min_value=0.0, max_value=20.0, allow_nan=False),
    ),
    max_size=60,
)
breakers = st.builds(
    CircuitBreaker,
    failures_to_open=st.integers(1, 6),
    cooldown=st.sampled_from([0.0, 5.0, 30.0]),
    probe_timeout=st.sampled_from([10.0, 60.0]),
)


@given(breakers, operations)
def test_never_more_than_one_probe_is_in_flight(
    breaker: CircuitBreaker, steps: list[tuple[str, float]]
) -> None:
    circuits = SiteCircuits(breaker)
    now = 0.0
    probe_granted_at: float | None = None  # the last probe allowed with no outcome since
    for operation, step in steps:
        now += step
        if operation == "allow":
            state = circuits.state(SITE, now)
            allowed = circuits.allow(SITE, now)
            if state == "open":
                assert not allowed
            if state == "half-open" and allowed:
                assert probe_granted_at is None or now >= probe_granted_at + breaker.probe_timeout
                probe_granted_at = now
        else:
            record = circuits.record_success if operation == "success" else circuits.record_failure
            if record(SITE, now) is not None:
                probe_granted_at = None


@given(breakers, operations, st.floats(min_value=0.0, max_value=100.0, allow_nan=False))
def test_enough_consecutive_failures_always_open_the_circuit(
    breaker: CircuitBreaker, steps: list[tuple[str, float]], later: float
) -> None:
    circuits = SiteCircuits(breaker)
    now = 0.0
    for operation, step in steps:
        now += step
        if operation == "allow":
            circuits.allow(SITE, now)
        elif operation == "success":
            circuits.record_success(SITE, now)
        else:
            circuits.record_failure(SITE, now)
    now += later
    before = circuits.state(SITE, now)
    transitions = [circuits.record_failure(SITE, now) for _ in range(breaker.failures_to_open)]
    if before != "open":
        assert "opened" in transitions
    if breaker.cooldown > 0:
        assert transitions.count("opened") <= 1
        assert circuits.state(SITE, now) == "open"
        assert not circuits.allow(SITE, now)


@given(breakers, operations)
def test_a_closed_circuit_always_allows(
    breaker: CircuitBreaker, steps: list[tuple[str, float]]
) -> None:
    circuits = SiteCircuits(breaker)
    now = 0.0
    for operation, step in steps:
        now += step
        if operation == "allow":
            closed = circuits.state(SITE, now) == "closed"
            assert circuits.allow(SITE, now) or not closed
        elif operation == "success":
            circuits.record_success(SITE, now)
        else:
            circuits.record_failure(SITE, now)


@pytest.mark.parametrize(
    ("status", "error", "permanent", "verdict"),
    [
        (200, False, False, "success"),
        (404, False, False, "success"),
        (410, False, False, "success"),
        (301, True, True, "success"),
        (429, False, False, "failure"),
        (503, False, False, "failure"),
        (599, False, False, "failure"),
        (0, True, False, "failure"),
        (0, True, True, None),
    ],
)
def test_only_a_struggling_site_counts_against_its_circuit(
    status: int, error: bool, permanent: bool, verdict: str | None
) -> None:
    assert verdict_of(status, error=error, permanent=permanent) == verdict
