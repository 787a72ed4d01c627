"""A compact set of 64-bit hashes: what the projector knows is in its stores.

The projector asks, for every task id and item key a batch names that is not in memory,
whether the store may have it. A Python ``set`` of ints costs 60 to 80 bytes an entry (the
int objects and the table); at ten million tasks and as many item keys that alone was more
than a gigabyte. Here each hash is 8 bytes in a sorted ``array('q')`` bucket, picked by the
hash's low bits; buckets are split four ways once they hold ``SPLIT_AT`` entries on
average, so a lookup stays a short binary search and an insert a short move.

Almost every lookup is of a hash that is not there (a new task, a new key). Once the set
holds millions of hashes, its buckets no longer fit in the CPU's caches and each such
lookup pays several misses (the bucket list, the bucket, its binary search). So the set
keeps a bit filter beside its buckets, one bit a hash picked by bits of the hash the
buckets do not use, ``2 ** FILTER_BITS`` bits a bucket (1 to 4 bytes an entry): a hash
whose bit is clear is not there, found with one read.
"""

from __future__ import annotations

import sys
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
FILTER_BITS: Final = 10
"""The filter has 2 ** FILTER_BITS bits a bucket: 8 to 32 bits an entry between two splits,
so that about one lookup of an absent hash in 30 to one in 8 goes on to its bucket."""
_FILTER_SHIFT: Final = 24
"""The filter's bit of a hash is picked by its bits from here up (the buckets use those
below ``MAX_BITS``); 3 more pick the bit in its byte."""


class HashSet64:
    """A set of 64-bit signed ints (Python's ``hash`` of a string), 8 bytes an entry."""

    def __init__(self, hashes: Iterable[int] = ()) -> None:
        self._bits = FIRST_BITS
        self._mask = (1 << self._bits) - 1
        self._buckets: list[array[int] | None] = [None] * (1 << self._bits)
        self._filter, self._filter_mask = _empty_filter(self._bits)
        self._len = 0
        self.update(hashes)

    def __len__(self) -> int:
        return self._len

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        if not self._filter[(value >> _FILTER_SHIFT) & self._filter_mask] & 1 << (value & 7):
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
        bits, bits_mask = self._filter, self._filter_mask
        found = []
        for string in strings:
            value = hash(string)
            if not bits[(value >> _FILTER_SHIFT) & bits_mask] & 1 << (value & 7):
                continue
            bucket = buckets[value & mask]
            if bucket is not None:
                at = bisect_left(bucket, value)
                if at < len(bucket) and bucket[at] == value:
                    found.append(string)
        return found

    def add(self, value: int) -> bool:
        """Add ``value``; False if it was there already."""
        return self.update((value,)) == 1

    def update(self, values: Iterable[int]) -> int:
        """Add every one of ``values``; returns how many were not there already."""
        if not self._len:
            return self._fill(values)
        # One loop, its lookups in locals: the projector adds every task id and item key
        # that leaves its memory.
        buckets, mask, bits, bits_mask = self._buckets, self._mask, self._filter, self._filter_mask
        length = self._len
        limit = SPLIT_AT << self._bits if self._bits < MAX_BITS else sys.maxsize
        added = 0
        for value in values:
            index = value & mask
            bucket = buckets[index]
            if bucket is None:
                buckets[index] = array("q", (value,))
            else:
                at = bisect_left(bucket, value)
                if at < len(bucket) and bucket[at] == value:
                    continue
                bucket.insert(at, value)
            bits[(value >> _FILTER_SHIFT) & bits_mask] |= 1 << (value & 7)
            length += 1
            added += 1
            if length > limit:
                self._len = length
                self._split()
                buckets, mask = self._buckets, self._mask
                bits, bits_mask = self._filter, self._filter_mask
                limit = SPLIT_AT << self._bits if self._bits < MAX_BITS else sys.maxsize
        self._len = length
        return added

    def _fill(self, values: Iterable[int]) -> int:
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
        seen, seen_mask = _empty_filter(bits)
        for value in flat:
            bucket = buckets[value & mask]
            if bucket is None:
                buckets[value & mask] = array("q", (value,))
            else:
                bucket.append(value)
            seen[(value >> _FILTER_SHIFT) & seen_mask] |= 1 << (value & 7)
        del flat
        length = 0
        for index, bucket in enumerate(buckets):
            if bucket is not None:
                # Sorted without repeats (a task stored twice has its hash twice).
                buckets[index] = bucket = array("q", sorted(set(bucket)))
                length += len(bucket)
        self._bits, self._mask, self._buckets, self._len = bits, mask, buckets, length
        self._filter, self._filter_mask = seen, seen_mask
        return length

    def nbytes(self) -> int:
        """Bytes its buckets and filter hold (entries, the bucket list, the filter), for
        the benchmarks."""
        arrays = sum(b.buffer_info()[1] * b.itemsize for b in self._buckets if b is not None)
        return arrays + 8 * len(self._buckets) + len(self._filter)

    def _split(self) -> None:
        # Each old bucket is sorted, so each new one receives its values in order: appended,
        # not inserted. The filter is made again at the new size in the same pass.
        bits = min(self._bits + 2, MAX_BITS)
        mask = (1 << bits) - 1
        buckets: list[array[int] | None] = [None] * (1 << bits)
        seen, seen_mask = _empty_filter(bits)
        for old in self._buckets:
            if old is None:
                continue
            for value in old:
                index = value & mask
                bucket = buckets[index]
                if bucket is None:
                    buckets[index] = bucket = array("q")
                bucket.append(value)
                seen[(value >> _FILTER_SHIFT) & seen_mask] |= 1 << (value & 7)
        self._bits, self._mask, self._buckets = bits, mask, buckets
        self._filter, self._filter_mask = seen, seen_mask


def _empty_filter(bucket_bits: int) -> tuple[bytearray, int]:
    """A clear filter for 2 ** ``bucket_bits`` buckets, and the mask of its byte index."""
    size = 1 << (bucket_bits + FILTER_BITS - 3)
    return bytearray(size), size - 1
