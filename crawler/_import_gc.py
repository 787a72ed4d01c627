"""Imports with the cyclic garbage collector paused.

Importing crawlog allocates some sixty thousand objects that live as long as the process
(functions, classes, their dictionaries), and the collector, counting allocations, ran
over and over meanwhile, each time walking what had been imported so far and finding
almost nothing to free: tens of milliseconds of CPU in every crawlog process's start-up
(``python tools/bench_tiny_crawl.py``). Paused for the imports of a package's
``__init__``, it runs once they are done; a crawl then freezes what it imported
(``crawler.cli._processes:fork_children``) before it forks its children.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """The collector paused within the block, then as it was (another pause of an
    enclosing import, or one the program asked for, is left alone).

    ``freeze``: then what the process holds is frozen (``gc.freeze``), out of every later
    collection; for a program's start-up (the command line), where what it imported lives
    as long as it does, never for a library's import.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
