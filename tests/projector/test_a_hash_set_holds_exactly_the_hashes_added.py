"""``HashSet64``, the projector's compact set of stored task ids' and item keys' hashes,
answers as a Python set would, through its bucket splits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from projector._hashset import FILTER_BITS, FIRST_BITS, SPLIT_AT, HashSet64

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(st.lists(INT64, max_size=300), st.lists(INT64, max_size=50))
def test_a_hash_set_answers_as_a_set_does(added: list[int], asked: list[int]) -> None:
    hashes = HashSet64(added)
    assert len(hashes) == len(set(added))
    for value in added + asked:
        assert (value in hashes) == (value in set(added))


@settings(max_examples=5, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_a_hash_set_keeps_every_hash_through_its_splits(seed: int) -> None:
    strings = [f"{seed}-{n}" for n in range((SPLIT_AT << FIRST_BITS) * 5)]
    hashes = HashSet64(map(hash, strings[::2]))
    assert len(hashes) == len(strings[::2])
    assert hashes.matching(strings) == strings[::2]
    # Added a few at a time: split (buckets and filter) as it grows, not filled at once.
    grown = HashSet64()
    for at in range(0, len(strings), 2_000):
        grown.update(map(hash, strings[at : at + 2_000 : 2]))
    assert len(grown) == len(strings[::2])
    assert grown.matching(strings) == strings[::2]
    assert all(hash(s) in grown for s in strings[::2])
    # 8 bytes an entry, and a list of buckets four times smaller than the entries at most,
    # each bucket with its 2 ** FILTER_BITS bits of the filter.
    buckets = max(1 << FIRST_BITS, 4 * len(hashes) // SPLIT_AT + 4)
    assert hashes.nbytes() <= 8 * len(hashes) + (8 + (1 << FILTER_BITS) // 8) * buckets


@given(st.lists(INT64, max_size=300), st.lists(INT64, max_size=300), st.lists(INT64, max_size=50))
def test_a_hash_set_filled_at_once_answers_as_one_added_to_hash_by_hash(
    filled: list[int], added: list[int], asked: list[int]
) -> None:
    at_once = HashSet64()
    at_once.update(iter(filled + filled[:5]))  # an iterator, with repeats
    one_by_one = HashSet64()
    for value in filled:
        one_by_one.add(value)
    for hashes in (at_once, one_by_one):
        hashes.update(added)  # the second update adds hash by hash
        expected = set(filled) | set(added)
        assert len(hashes) == len(expected)
        for value in filled + added + asked:
            assert (value in hashes) == (value in expected)


@given(st.lists(INT64, max_size=300), st.lists(INT64, max_size=300))
def test_a_hash_set_s_update_counts_the_hashes_it_did_not_hold(
    first: list[int], then: list[int]
) -> None:
    hashes = HashSet64()
    assert hashes.update(first) == len(set(first))
    assert hashes.update(then) == len(set(then) - set(first))
    assert hashes.add(0) == (0 not in set(first) | set(then))
