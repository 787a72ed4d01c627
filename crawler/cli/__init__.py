"""The ``crawlog`` command line: one module per command or command group.

``crawlog`` (the console script) and ``python -m crawler.cli`` (how a crawl starts its
workers and projector) both run :func:`main`. The commands use the crawler, the event log and
the projector through their public APIs; what they share (options, settings, logging, exit
statuses, progress) lives in this package's private modules. ``crawlog_command`` builds
a command line that runs crawlog; what the tools use to stop crawlog processes loads on
first use (``_LAZY``), as no command but ``crawl`` and ``demo`` needs it. What the
commands read and do about a job (opening it, retries, pauses, progress, how durations and
tables are written) is the library's, ``crawler.ops``, shared with the web console
(``crawler.console``), which this package imports only to start it (``console.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from crawler.cli._argv import crawlog_command
from crawler.cli._main import cli, main

if TYPE_CHECKING:
    from crawler.cli._processes import stop_processes

_LAZY: dict[str, str] = {
    "stop_processes": "crawler.cli._processes",
}
"""Each name loaded on first use → the module that defines it."""

__all__ = [
    "cli",
    "crawlog_command",
    "main",
    "stop_processes",
]

if not TYPE_CHECKING:
    # Hidden from mypy, so that a name missing from the imports above is an error there
    # rather than an ``Any``.

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
