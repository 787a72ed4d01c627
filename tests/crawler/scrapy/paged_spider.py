"""A paginated Scrapy spider of the test site, run as its own process by the plug-in's
tests: ``python paged_spider.py START_URL [plugin] [CONCURRENCY]``.

From the home page it starts each category's listing at page 1; each listing page's
callback (``parse_listing``, not the default one) gets its page number in ``cb_kwargs``
and its category in ``meta``, yields one item saying both, and what the URL says, and
follows the page's ``rel="next"`` link with the next page's number. A request that lost
its callback, cb_kwargs or meta on the way (a resume, a retry) shows in its item, or yields
none. Through crawler.scrapy (CRAWLOG_JOB / REDIS_URL / CRAWLOG_HOME from the environment).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess

START = sys.argv[1]
CONCURRENCY = int(sys.argv[3]) if len(sys.argv) > 3 else 16
LIST_PREFIX = "/list/"


class Paged(scrapy.Spider):
    name = "paged"
    start_urls: ClassVar[list[str]] = [START]

    def parse(self, response: Any) -> Iterator[Any]:
        for href in response.css(f'a[href^="{LIST_PREFIX}"]::attr(href)').getall():
            if href.endswith("?page=1"):
                category = href.removeprefix(LIST_PREFIX).partition("?")[0]
                yield response.follow(
                    href, self.parse_listing, cb_kwargs={"page": 1}, meta={"category": category}
                )

    def parse_listing(self, response: Any, page: int) -> Iterator[Any]:
        url = urlsplit(response.url)
        category = response.meta["category"]
        yield {
            "url": response.url,
            "page": page,
            "category": category,
            "url_page": int(parse_qs(url.query)["page"][0]),
            "url_category": url.path.removeprefix(LIST_PREFIX),
        }
        following = response.css('a[rel="next"]::attr(href)').get()
        if following:
            yield response.follow(
                following,
                self.parse_listing,
                cb_kwargs={"page": page + 1},
                meta={"category": category},
            )


process = CrawlerProcess(
    {
        "LOG_LEVEL": os.environ.get("SCRAPY_LOG_LEVEL", "ERROR"),
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": CONCURRENCY,
        "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
        "AUTOTHROTTLE_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "SCHEDULER": "crawler.scrapy.Scheduler",
        "DUPEFILTER_CLASS": "crawler.scrapy.DupeFilter",
        "ITEM_PIPELINES": {"crawler.scrapy.ItemPipeline": 900},
    }
)
process.crawl(Paged)
process.start()
