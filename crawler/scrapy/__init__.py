"""crawlog from Scrapy: a scheduler, a duplicate filter and an item pipeline that make an
existing Scrapy spider a crawlog job, resumable after ``kill -9``::

    SCHEDULER = "crawler.scrapy.Scheduler"
    DUPEFILTER_CLASS = "crawler.scrapy.DupeFilter"
    ITEM_PIPELINES = {"crawler.scrapy.ItemPipeline": 900}
    DOWNLOADER_MIDDLEWARES = {"crawler.scrapy.PolitenessMiddleware": 950}  # shared per-host limits
    CRAWLOG_JOB = "shop"

Needs Scrapy (``pip install 'crawlog[scrapy]'``); nothing else in crawlog imports this
package. See docs/scrapy.md.
"""

from crawler.scrapy._dupefilter import DupeFilter
from crawler.scrapy._pipeline import ItemPipeline
from crawler.scrapy._politeness import PolitenessMiddleware
from crawler.scrapy._scheduler import Scheduler

__all__ = ["DupeFilter", "ItemPipeline", "PolitenessMiddleware", "Scheduler"]
