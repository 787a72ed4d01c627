"""A Scrapy spider of the test site, run as its own process by the plug-in's tests and
benchmark: ``python site_spider.py START_URL [plain|plugin] [CONCURRENCY]``.

It follows every in-site link and yields an item per page. ``plugin`` crawls through
crawler.scrapy (the job and server from CRAWLOG_JOB / REDIS_URL / CRAWLOG_HOME in the
environment); ``plain`` is Scrapy as it comes; ``jobdir`` is Scrapy with JOBDIR set to
$SCRAPY_JOBDIR. With RAISE_ON set, the callback raises on the URL ending with it; with
POLITE set, crawler.scrapy.PolitenessMiddleware holds the job's shared host slots.
The last line printed is the number of items Scrapy scraped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor

START = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "plugin"
CONCURRENCY = int(sys.argv[3]) if len(sys.argv) > 3 else 16
HOST = urlsplit(START).netloc
RAISE_ON = os.environ.get("RAISE_ON")


class Site(scrapy.Spider):
    name = "site"
    start_urls: ClassVar[list[str]] = [START]
    links = LinkExtractor()

    def parse(self, response: Any) -> Iterator[Any]:
        if RAISE_ON and response.url.endswith(RAISE_ON):
            raise RuntimeError(f"a bug on {response.url}")
        yield {"url": response.url, "status": response.status, "bytes": len(response.body)}
        for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc == HOST:
                yield response.follow(link.url, self.parse)


SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": os.environ.get("SCRAPY_LOG_LEVEL", "ERROR"),
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": CONCURRENCY,
    "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
}
if MODE == "plugin":
    SETTINGS |= {
        "SCHEDULER": "crawler.scrapy.Scheduler",
        "DUPEFILTER_CLASS": "crawler.scrapy.DupeFilter",
        "ITEM_PIPELINES": {"crawler.scrapy.ItemPipeline": 900},
    }
    if os.environ.get("POLITE"):
        SETTINGS["DOWNLOADER_MIDDLEWARES"] = {"crawler.scrapy.PolitenessMiddleware": 950}
elif MODE == "jobdir":
    SETTINGS["JOBDIR"] = os.environ["SCRAPY_JOBDIR"]

items = 0


def count(item: Any, response: Any, spider: Any) -> None:
    global items
    items += 1


process = CrawlerProcess(SETTINGS)
crawler = process.create_crawler(Site)
crawler.signals.connect(count, signal=scrapy.signals.item_scraped)
process.crawl(crawler)
process.start()
print(items, flush=True)
