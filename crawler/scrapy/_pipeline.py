"""``crawler.scrapy.ItemPipeline``: every item that went through the pipelines, in the log.

Add it to ``ITEM_PIPELINES`` (any order). It records an item once the *whole* pipeline
chain has passed it (Scrapy's ``item_scraped`` signal, which only comes for an item no
pipeline dropped, and which carries the response the item came from: ``process_item``
does not). The item becomes an ``ItemScraped`` event of its request's task, written with
the task's finish, keyed by ``CRAWLOG_ITEM_KEY`` (a field of the item) or, by default,
the request's URL and the item's index in the callback's output: a request redone after a
crash writes each item once in crawlog's outputs (``crawlog export``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from scrapy import Spider, signals
from scrapy.http import Response
from twisted.python.failure import Failure

from crawler.scrapy._scheduler import Scheduler
from crawler.scrapy._settings import ITEM_KEY_SETTING, setting
from eventlog import ConfigError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ItemPipeline:
    """Scrapy item pipeline writing items to the crawlog job (see the module docs)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.key_field = setting(crawler.settings, ITEM_KEY_SETTING)
        crawler.signals.connect(self._scraped, signal=signals.item_scraped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """The pipeline Scrapy builds from ``ITEM_PIPELINES``."""
        return cls(crawler)

    # ``spider`` optional: Scrapy 2.13+ warns of (and will stop passing) a required one.
    def open_spider(self, spider: Spider | None = None) -> None:
        """Refuse to run without the plug-in's scheduler: the items would go nowhere."""
        if not isinstance(self._scheduler(), Scheduler):
            raise ConfigError(
                "crawler.scrapy.ItemPipeline needs SCHEDULER = 'crawler.scrapy.Scheduler': "
                "items are written with the task of the request they came from"
            )

    def process_item(self, item: Any, spider: Spider | None = None) -> Any:
        """Pass the item on: it is recorded once every pipeline has passed it."""
        return item

    def _scheduler(self) -> object:
        engine = self.crawler.engine
        return getattr(engine, "scheduler", None) if engine is not None else None

    def _scraped(
        self, item: Any, response: Response | Failure | None, spider: Spider | None = None
    ) -> None:
        scheduler = self._scheduler()
        if isinstance(scheduler, Scheduler):
            scheduler.item_scraped(item, response, self.key_field)
