"""The crawler: spiders, fetching, workers, and the `crawlog` command line.

What a spider needs is re-exported here: ``from crawler import Spider, Item, Follow, NextPage``.
"""

from crawler._spider import (
    Follow,
    Item,
    NextPage,
    Output,
    Response,
    SiteSpider,
    Spider,
    SpiderOutputError,
)

__all__ = [
    "Follow",
    "Item",
    "NextPage",
    "Output",
    "Response",
    "SiteSpider",
    "Spider",
    "SpiderOutputError",
]
