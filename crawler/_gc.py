"""The cyclic garbage collector paused where what is built stays alive.

Importing crawlog allocates some sixty thousand objects that live as long as the process
(functions, classes, their dictionaries), and a worker's take-back of its pending list
hundreds of thousands more (the replies, the leases). The collector, counting
allocations, ran over and over meanwhile, each time walking what had been built so far and
finding almost nothing to free: a share of every crawlog process's start-up
(``tools/bench_tiny_crawl.py``), a large share of a take-back (``tools/bench_resume.py``).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


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
