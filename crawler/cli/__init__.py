"""The ``crawlog`` command line: one module per command or command group.

``crawlog`` (the console script) and ``python -m crawler.cli`` (how a crawl starts its
workers and projector) both run :func:`main`. The commands use the crawler, the event log and
the projector through their public APIs; what they share (options, settings, logging, exit
statuses, progress) lives in this package's private modules. ``crawlog_command`` builds
a command line that runs crawlog; what the tools use to stop crawlog processes loads on
first use (the ``TYPE_CHECKING`` imports, :func:`eventlog.install_lazy_importer`), as no
command but ``crawl`` and ``demo`` needs it. So do the parts the web console
(``crawler.console``) shows and acts with as the commands do: live progress
(``LiveProgress``, ``Tracker``, ``Progress``), how durations and ETAs are written, and the
operator's handle on a job (``OpenJob``, ``task_id_of``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._gc import collector_paused as _collector_paused

# Why: crawler/_gc.py (every command's tree is built here, and lives as long as the process).
with _collector_paused(freeze=True):
    from crawler.cli._argv import crawlog_command
    from crawler.cli._main import cli, main
    from eventlog import install_lazy_importer as _install_lazy_importer

if TYPE_CHECKING:
    from crawler.cli._processes import stop_processes


__all__ = [
    "cli",
    "crawlog_command",
    "main",
    "stop_processes",
]

_install_lazy_importer(globals())
