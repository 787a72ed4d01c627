"""The worker's loops run at named shares of the lease, each short enough that no lease of
a live worker (running or waiting in the backlog) goes unrenewed for a whole lease."""

from __future__ import annotations

from crawler._worker import (
    BACKLOG_RENEW_SHARE,
    FRESH_SHARE,
    PENDING_REREAD_SHARE,
    RECOVERY_SHARE,
    RENEW_SHARE,
)


def test_a_backlog_lease_is_renewed_before_its_lease_runs_out() -> None:
    # A backlog lease just under the idle threshold at one renewal is renewed at the next.
    assert RENEW_SHARE + BACKLOG_RENEW_SHARE < 1


def test_a_running_lease_is_renewed_before_a_fetch_finds_it_stale() -> None:
    # The renewal loop keeps a running task's lease fresh: `_hold` renews only after a stall.
    assert 0 < RENEW_SHARE < FRESH_SHARE < 1


def test_recovery_and_the_own_pending_re_read_run_several_times_a_lease() -> None:
    assert 0 < RECOVERY_SHARE <= RENEW_SHARE
    assert 0 < PENDING_REREAD_SHARE <= RENEW_SHARE
