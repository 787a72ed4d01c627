"""The projector's settings and choices that the command line shows: in a module of their
own, without Arrow or DuckDB, because ``crawler.cli`` builds every command's options at
import and a worker process must not pay for the analytics stack."""

from __future__ import annotations

from typing import Final, Literal

DEFAULT_COMMIT_INTERVAL_S = 1.0
DEFAULT_SNAPSHOT_INTERVAL_S = 10.0
DEFAULT_KEEP_TAIL_S = 60.0
"""Events younger than this (by stream ID time) before the committed position stay in Redis."""

ExportWhat = Literal["pages", "items"]
ExportFormat = Literal["jsonl", "parquet", "csv"]
EXPORT_WHAT: Final = ("pages", "items")
EXPORT_FORMATS: Final = ("jsonl", "parquet", "csv")
