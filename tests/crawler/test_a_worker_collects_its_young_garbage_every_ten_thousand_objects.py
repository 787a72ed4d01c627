"""`tune_worker_gc`: a worker's young generation is collected every `WORKER_GC_YOUNG` new
objects, not CPython's 700; the older generations' thresholds are left as they were."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from crawler._gc import WORKER_GC_YOUNG, tune_worker_gc


@pytest.fixture
def thresholds_restored() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 11, 12)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*before)


def test_the_young_threshold_is_raised_and_the_older_ones_kept(
    thresholds_restored: tuple[int, int, int],
) -> None:
    tune_worker_gc()
    assert gc.get_threshold() == (WORKER_GC_YOUNG, 11, 12)
    assert thresholds_restored[0] < WORKER_GC_YOUNG
