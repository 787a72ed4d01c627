"""A take-back pairs each entry it read with its delivery count from the XPENDING beside
it: by position when both list the same entries, by id otherwise.

Both read the consumer's pending list after the same id, in one MULTI: XPENDING lists a
run of it (up to COUNT), XREADGROUP the same run or, should a server skip deleted
entries, the run without them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eventlog._take_back import _delivery_counts

PEL = st.lists(st.integers(1, 200), unique=True, max_size=30).map(sorted)


@given(PEL, st.data())
def test_every_entry_gets_the_count_of_its_own_id(pel: list[int], data: st.DataObject) -> None:
    counts = {entry: data.draw(st.integers(1, 9)) for entry in pel}
    start = data.draw(st.integers(0, len(pel)))
    listed = pel[start : start + data.draw(st.integers(0, len(pel)))]
    run = pel[start : start + data.draw(st.integers(0, len(pel)))]
    skipped = data.draw(st.sets(st.sampled_from(run))) if run else set()
    read = [entry for entry in run if entry not in skipped]
    entries = [[f"{entry}-0".encode(), [b"t", b"x"]] for entry in read]
    pending = [[f"{entry}-0".encode(), b"w1", 5, counts[entry]] for entry in listed]
    expected = [counts[entry] if entry in listed else 1 for entry in read]
    assert _delivery_counts(entries, pending) == expected
