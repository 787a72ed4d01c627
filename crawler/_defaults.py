"""Defaults the command line shows, importable without the heavy modules that use them.

``crawlog --help`` and every command's options are built when ``crawler.cli`` is imported,
so their defaults and choices must not import the worker's HTTP clients, Prometheus,
Arrow or DuckDB. The worker's and the metrics' defaults are defined here (``_worker`` and
``_metrics`` import them from here); the projector's are in ``projector._defaults``.
"""

from __future__ import annotations

from typing import Literal, get_args

DEFAULT_CONCURRENCY = 32
DEFAULT_GRACE_S = 10.0
"""On SIGTERM, in-flight tasks get this long to finish their page before being released."""
DEFAULT_METRICS_HOST = "127.0.0.1"
DEFAULT_MAX_TASK_PAGES = 10_000
"""Pages one task may fetch (its first and its `NextPage`s): generous for a real listing,
a bound for a pagination that never ends."""

FailOn = Literal["none-done", "aborted", "failed", "never"]
"""When a finished crawl exits non-zero, from the most lenient to the strictest: ``never``;
``none-done``: no task ended done; ``aborted``: that, or a task was aborted (recovered too
often: it kills its workers); ``failed``: that, or any task failed."""
FAIL_ON_CHOICES: tuple[str, ...] = get_args(FailOn)
DEFAULT_FAIL_ON: FailOn = "aborted"
"""A few dead links on a real site are not a failed crawl; nothing done, or a task that
kills workers, is."""
