"""Which server answers, weighed without a server: the one the job's epoch is bound to, a
replica promoted in its place (it keeps the old primary's id as its previous one), or a
server restarted with no past as a replica. A holder of an older epoch follows it only if
promotions alone raised it since: a restore between voids what it holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eventlog import failover_chain, may_follow, primary_verdict

OLD = "a" * 40
NEW = "b" * 40
NONE = "0" * 40


def test_the_first_look_binds_and_the_same_server_is_the_same() -> None:
    assert primary_verdict("", OLD, NONE) == "unbound"
    assert primary_verdict(OLD, OLD, NONE) == "same"


def test_a_replica_promoted_in_the_bound_primary_s_place_is_a_promotion() -> None:
    assert primary_verdict(OLD, NEW, OLD) == "promoted"


def test_a_promotion_after_one_nobody_saw_is_still_a_promotion() -> None:
    assert primary_verdict(OLD, NEW, "c" * 40) == "promoted"


def test_a_server_with_no_previous_id_was_restarted_not_promoted() -> None:
    assert primary_verdict(OLD, NEW, NONE) == "restarted"
    assert primary_verdict(OLD, NEW, "") == "restarted"


def test_promotions_in_a_row_chain_back_to_the_first_raise_s_position() -> None:
    failovers = {3: "10-0", 4: "20-0"}
    assert failover_chain(4, failovers) == (2, "10-0")
    assert failover_chain(3, failovers) == (2, "10-0")
    assert failover_chain(5, failovers) is None  # raised by a restore


def test_a_restore_after_a_promotion_voids_the_older_epochs() -> None:
    failovers = {2: "10-0"}  # epoch 3: a restore
    assert may_follow(1, 2, failovers)
    assert not may_follow(1, 3, failovers)
    assert not may_follow(2, 3, failovers)


@given(
    held=st.integers(1, 20),
    epoch=st.integers(1, 20),
    raised=st.sets(st.integers(2, 20)),
)
def test_a_holder_follows_exactly_when_promotions_alone_raised_the_epoch_since(
    held: int, epoch: int, raised: set[int]
) -> None:
    failovers = {e: f"{e}-0" for e in raised}
    since = range(held + 1, epoch + 1)
    expected = held == epoch or (held < epoch and all(e in raised for e in since))
    assert may_follow(held, epoch, failovers) == expected
