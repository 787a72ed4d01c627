"""Defaults the command line shows, importable without the heavy modules that use them.

``crawlog --help`` and every command's options are built when ``crawler.cli`` is imported,
so their defaults and choices must not import the worker's HTTP clients, Prometheus,
Arrow or DuckDB. The worker's and the metrics' defaults are defined here (``_worker`` and
``_metrics`` import them from here). The projector's are copies, since ``projector`` does
not import ``crawler``: ``tests/crawler/test_cli_startup.py`` checks that they equal the
originals in ``projector._projector`` and ``projector._analytics``.
"""

from __future__ import annotations

from typing import Final

DEFAULT_CONCURRENCY = 32
DEFAULT_GRACE_S = 10.0
"""On SIGTERM, in-flight tasks get this long to finish their page before being released."""
DEFAULT_METRICS_HOST = "127.0.0.1"

# Copies of the projector's (checked by a test).
DEFAULT_COMMIT_INTERVAL_S = 1.0
DEFAULT_SNAPSHOT_INTERVAL_S = 10.0
DEFAULT_KEEP_TAIL_S = 60.0
EXPORT_WHAT: Final = ("pages", "items")
EXPORT_FORMATS: Final = ("jsonl", "parquet", "csv")
