"""Logging for every crawlog process: human-readable lines, or one JSON object per line.

The top-level ``--log-format`` (``CRAWLOG_LOG_FORMAT``) picks the format. It is also exported
to the environment, so the worker and projector processes that ``crawlog crawl`` or
``crawlog demo`` start log the same way without each command passing a flag on.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Literal, get_args

LogFormat = Literal["human", "json"]
LOG_FORMATS: tuple[str, ...] = get_args(LogFormat)
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT_ENV = "CRAWLOG_LOG_FORMAT"
DEFAULT_LOG_LEVEL = "warning"
HUMAN_FORMAT = "%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s"
PER_REQUEST_LOGGERS = ("httpx", "httpcore")
"""Libraries that log every HTTP request at INFO: shown only at --log-level debug (a
worker's info log is for its own events, and hundreds of lines a second cost CPU)."""

# Fields every LogRecord has: anything else on a record came from ``extra=`` and is kept.
_STANDARD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (a traceback is a string field, not lines)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object: time, level, logger, pid, message, extras, exc."""
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_FIELDS and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # default=str: an extra that JSON cannot encode is shown, never a logging error.
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(log_format: LogFormat, level: str = DEFAULT_LOG_LEVEL) -> None:
    """Send the root logger to stderr in ``log_format``; children inherit the format."""
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(HUMAN_FORMAT)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    set_log_level(level)
    # Python's own warnings (deprecations in a spider, say) go through logging as well,
    # so a JSON log stays JSON.
    logging.captureWarnings(True)
    os.environ[LOG_FORMAT_ENV] = log_format


def set_log_level(level: str) -> None:
    """Set the level of every crawlog logger (the root logger's)."""
    logging.getLogger().setLevel(level.upper())
    quieter = max(logging.WARNING, logging.getLevelName(level.upper()))
    for name in PER_REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "debug" else quieter)
