"""The cyclic garbage collector paused where what is built stays alive.

Importing crawlog allocates some sixty thousand objects that live as long as the process
(functions, classes, their dictionaries), and a worker's take-back of its pending list
hundreds of thousands more (the replies, the leases). The collector, counting
allocations, ran over and over meanwhile, each time walking what had been built so far and
finding almost nothing to free: a share of every crawlog process's start-up
(``tools/bench_tiny_crawl.py``), a large share of a take-back (``tools/bench_resume.py``).

A worker's young generation is collected every `WORKER_GC_YOUNG` new container objects
rather than CPython's 700 (`tune_worker_gc`): what a page leaves behind for a while (its
task, its futures, entries of the link resolver's and the dedup keys' caches) is examined
by every young collection it lives through and again by the middle generation's. With the
default threshold a worker crawling half the docs test site (610 pages) made 83 young and
7 middle collections, ~36 ms of its thread's CPU; at 10,000, 3 young and none of the
middle, ~8 ms, its peak memory the same (docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["WORKER_GC_YOUNG", "collector_paused", "tune_worker_gc"]

WORKER_GC_YOUNG = 10_000
"""New container objects (allocations less deallocations) between a worker's young
collections."""


@contextlib.contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """The collector paused within the block, then as it was (another pause of an
    enclosing block, or one the program asked for, is left alone).

    ``freeze``: on the way out, what is alive is frozen (``gc.freeze``), out of every later
    collection: else the first collection after the block walks all it built, and every
    full one after. For a program's own start-up (the command line) and a worker's
    take-back, never for a library's import (it would freeze its importer's objects too).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


def tune_worker_gc() -> None:
    """Collect the youngest generation every `WORKER_GC_YOUNG` objects; the older
    generations' thresholds (counted in younger collections) stay as they are. A worker
    process's alone (`crawler.cli.crawl`'s ``worker_command``): the crawl and the projector
    keep CPython's."""
    _young, middle, oldest = gc.get_threshold()
    gc.set_threshold(WORKER_GC_YOUNG, middle, oldest)
