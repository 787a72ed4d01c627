"""The queue chart's points (``Observed.queue_points``): the archive's slots before the
console's first sample, each at its slot's end (the one the first sample falls in ending
at that sample), then the samples in order; the archive's later slots are left to the
samples."""

from __future__ import annotations

from crawler.console._live import SAMPLE_EVERY_S, Observed
from crawler.ops import Row
from crawler.ops._progress import SiteCounts

SLOT = 100_000_000


def _total(remaining: int) -> Row:
    counts = SiteCounts(site="", discovered=remaining)
    return Row(counts=counts, rate=None, pages_rate=None, eta_s=None, window_s=0.0)


def test_the_archive_s_slots_come_before_the_samples_and_never_after_them() -> None:
    observed = Observed()
    observed.queue_history = {SLOT: 5, SLOT + 1: 40, SLOT + 2: 30, SLOT + 5: 1}
    first = (SLOT + 2) * SAMPLE_EVERY_S + 4.0
    observed.sample(first, _total(28))
    observed.sample(first + SAMPLE_EVERY_S, _total(20))
    assert observed.queue_points() == [
        ((SLOT + 1) * SAMPLE_EVERY_S, 5),
        ((SLOT + 2) * SAMPLE_EVERY_S, 40),
        (first, 30),
        (first, 28),
        (first + SAMPLE_EVERY_S, 20),
    ]


def test_without_samples_the_archive_alone_is_the_queue() -> None:
    observed = Observed()
    observed.queue_history = {SLOT: 3, SLOT + 1: 0}
    assert observed.queue_points() == [
        ((SLOT + 1) * SAMPLE_EVERY_S, 3),
        ((SLOT + 2) * SAMPLE_EVERY_S, 0),
    ]
