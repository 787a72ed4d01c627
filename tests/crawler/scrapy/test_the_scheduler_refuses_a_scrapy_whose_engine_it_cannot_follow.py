"""The plug-in follows Scrapy's engine to know when a request is done (the installed Scrapy
has no ``finish_request`` hook): opened where that engine is not there to follow, the
scheduler refuses to run, naming what is missing, rather than ack requests too early."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.scrapy import Scheduler
from eventlog import ConfigError


class Shop(Spider):
    name = "shop"


def test_opening_without_the_engine_s_slot_is_a_clear_error() -> None:
    crawler = get_crawler(Shop, {"CRAWLOG_JOB": "shop"})
    scheduler = Scheduler.from_crawler(crawler)
    with pytest.raises(ConfigError, match=r"lacks ExecutionEngine\._slot\.remove_request"):
        scheduler.open(Shop())


def test_a_missing_job_setting_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRAWLOG_JOB", raising=False)
    with pytest.raises(ConfigError, match="needs the CRAWLOG_JOB setting"):
        Scheduler.from_crawler(get_crawler(Shop, {}))
