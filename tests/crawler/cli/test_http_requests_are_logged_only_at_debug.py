"""httpx logs every request at INFO: a worker's info log would be one line per page."""

from __future__ import annotations

import logging

import pytest

from crawler.cli._logs import PER_REQUEST_LOGGERS, set_log_level


@pytest.mark.parametrize(("level", "shown"), [("debug", True), ("info", False), ("warning", False)])
def test_each_request_is_logged_only_at_debug(level: str, shown: bool) -> None:
    before = {name: logging.getLogger(name).level for name in ("", *PER_REQUEST_LOGGERS)}
    try:
        set_log_level(level)
        for name in PER_REQUEST_LOGGERS:
            assert logging.getLogger(name).isEnabledFor(logging.INFO) is shown
    finally:
        for name, old in before.items():
            logging.getLogger(name or None).setLevel(old)
