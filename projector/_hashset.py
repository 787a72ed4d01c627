"""A compact set of 64-bit hashes: what the projector knows is in its stores.

The projector asks, for every task id and item key a batch names that is not in memory,
whether the store may have it. A Python ``set`` of ints costs 60 to 80 bytes an entry (the
int objects and the table); at ten million tasks and as many item keys that alone was more
than a gigabyte. Here each hash is 8 bytes in a sorted ``array('q')`` bucket, picked by the
hash's low bits; buckets are split four ways once they hold ``SPLIT_AT`` entries on
average, so a lookup stays a short binary search and an insert a short move.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable
from typing import Final

FIRST_BITS: Final = 8
"""Buckets of an empty set: 2 ** FIRST_BITS."""
SPLIT_AT: Final = 128
"""Average entries a bucket before the buckets are split four ways."""
MAX_BITS: Final = 22
"""Buckets stop splitting here (four million buckets)."""


class HashSet64:
    """A set of 64-bit signed ints (Python's ``hash`` of a string), 8 bytes an entry."""

    def __init__(self, hashes: Iterable[int] = ()) -> None:
        self._bits = FIRST_BITS
        self._mask = (1 << self._bits) - 1
        self._buckets: list[array[int] | None] = [None] * (1 << self._bits)
        self._len = 0
        self.update(hashes)

    def __len__(self) -> int:
        return self._len

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        bucket = self._buckets[value & self._mask]
        if bucket is None:
            return False
        at = bisect_left(bucket, value)
        return at < len(bucket) and bucket[at] == value

    def matching(self, strings: Iterable[str]) -> list[str]:
        """Those of ``strings`` whose ``hash`` is in the set (the lookup inlined: it runs
        for most task ids and item keys a batch names)."""
        buckets, mask = self._buckets, self._mask
        found = []
        for string in strings:
            value = hash(string)
            bucket = buckets[value & mask]
            if bucket is not None:
                at = bisect_left(bucket, value)
                if at < len(bucket) and bucket[at] == value:
                    found.append(string)
        return found

    def add(self, value: int) -> None:
        """Add ``value`` (a no-op if it is there)."""
        index = value & self._mask
        bucket = self._buckets[index]
        if bucket is None:
            self._buckets[index] = array("q", (value,))
        else:
            at = bisect_left(bucket, value)
            if at < len(bucket) and bucket[at] == value:
                return
            bucket.insert(at, value)
        self._len += 1
        if self._len > SPLIT_AT << self._bits and self._bits < MAX_BITS:
            self._split()

    def update(self, values: Iterable[int]) -> None:
        """Add every one of ``values``."""
        if self._len:
            for value in values:
                self.add(value)
        else:
            self._fill(values)

    def _fill(self, values: Iterable[int]) -> None:
        """Add ``values`` to the empty set: gathered first (so the buckets are split to
        their final number at once), appended to their buckets, then each bucket sorted
        once. A projector's start adds every stored task id's and item key's hash this way,
        at about half the cost of a binary search and an insert each."""
        flat = array("q", values)
        bits = self._bits
        while len(flat) > SPLIT_AT << bits and bits < MAX_BITS:
            bits += 2
        mask = (1 << bits) - 1
        buckets: list[array[int] | None] = [None] * (1 << bits)
        for value in flat:
            bucket = buckets[value & mask]
            if bucket is None:
                buckets[value & mask] = array("q", (value,))
            else:
                bucket.append(value)
        del flat
        length = 0
        for index, bucket in enumerate(buckets):
            if bucket is not None:
                # Sorted without repeats (a task stored twice has its hash twice).
                buckets[index] = bucket = array("q", sorted(set(bucket)))
                length += len(bucket)
        self._bits, self._mask, self._buckets, self._len = bits, mask, buckets, length

    def nbytes(self) -> int:
        """Bytes its buckets hold (entries and the bucket list), for the benchmarks."""
        arrays = sum(b.buffer_info()[1] * b.itemsize for b in self._buckets if b is not None)
        return arrays + 8 * len(self._buckets)

    def _split(self) -> None:
        # Each old bucket is sorted, so each new one receives its values in order: appended,
        # not inserted.
        bits = min(self._bits + 2, MAX_BITS)
        mask = (1 << bits) - 1
        buckets: list[array[int] | None] = [None] * (1 << bits)
        for old in self._buckets:
            if old is None:
                continue
            for value in old:
                index = value & mask
                bucket = buckets[index]
                if bucket is None:
                    buckets[index] = bucket = array("q")
                bucket.append(value)
        self._bits, self._mask, self._buckets = bits, mask, buckets
