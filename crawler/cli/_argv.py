"""How a crawlog process is started: the one way to build a ``crawlog`` command line.

A crawl starts its workers and projector with it, and the tests and tools start crawlog
with it too, so every one runs the interpreter crawlog is installed in, as
``python -m crawler.cli`` (no console script on PATH needed). It imports nothing: a tool
timing a worker's start-up must not pay for the command line's machinery itself.
"""

from __future__ import annotations

import sys

CLI_MODULE = "crawler.cli"
"""The module ``python -m`` runs: the command line's entry point (``__main__.py``)."""


def crawlog_command(*args: str) -> list[str]:
    """argv running ``crawlog ARGS`` with this interpreter (the one crawlog is installed in)."""
    return [sys.executable, "-m", CLI_MODULE, *args]
