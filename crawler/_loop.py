"""Which event loop a crawlog process runs: uvloop where it is installed, asyncio's own else.

A worker spends a large share of its CPU in the event loop's own callbacks (docs/benchmarks.md),
and uvloop (libuv) runs them for less. ``CRAWLOG_UVLOOP=0`` runs the stock asyncio loop, for
a user who meets a bug of uvloop's; where uvloop cannot be imported (Windows, a build
without it), the stock loop too, without a word. Every ``anyio.run`` that wants uvloop
passes :func:`loop_options` as its ``backend_options``, so this module alone decides.

uvloop, like any loop, does not survive a fork: a crawl forks its children before its own
loop starts (``crawler.cli._fork``), so each child starts its loop from none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

UVLOOP_ENV = "CRAWLOG_UVLOOP"
"""Set to 0 (or false, no, off): run asyncio's own loop rather than uvloop."""
_OFF = frozenset({"0", "false", "no", "off"})

LoopName = Literal["uvloop", "asyncio"]
"""The event loop a process runs (its worker's start line says which)."""


def uvloop_wanted(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` leaves uvloop on (it is, unless ``CRAWLOG_UVLOOP`` turns it off)."""
    return environ.get(UVLOOP_ENV, "").strip().lower() not in _OFF


def loop_options() -> dict[str, object]:
    """``anyio.run``'s ``backend_options`` for this process: uvloop, unless it is turned off
    (:func:`uvloop_wanted`) or cannot be imported."""
    if not uvloop_wanted(os.environ):
        return {}
    try:
        import uvloop  # noqa: F401  # imported here once; anyio imports it again, cached
    except ImportError:
        return {}
    return {"use_uvloop": True}


def running_loop() -> LoopName:
    """The event loop the calling task runs on."""
    import asyncio  # loaded by now: a loop runs

    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.partition(".")[0] == "uvloop" else "asyncio"
