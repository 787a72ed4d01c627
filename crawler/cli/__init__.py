"""The ``crawlog`` command line: one module per command or command group.

``crawlog`` (the console script) and ``python -m crawler.cli`` (how a crawl starts its
workers and projector) both run :func:`main`. The commands use the crawler, the event log and
the projector through their public APIs; what they share (options, settings, logging, exit
statuses, progress) lives in this package's private modules.
"""

from crawler.cli._main import cli, main

__all__ = ["cli", "main"]
