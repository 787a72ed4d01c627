"""The crawler: spiders, fetching, workers, and the `crawlog` command line.

What a spider needs is re-exported here: ``from crawler import Spider, Item, Follow, NextPage``
(and ``DropItem`` for its pipelines).
The spider API and the URL helpers load with the package; the fetcher, the worker, the job
settings and politeness load on first use (a module-level ``__getattr__``, as in
:mod:`projector`), so that a spider module or the command line importing ``crawler`` does not
pull in the HTTP stack. ``_LAZY`` maps each of those names to the module that defines it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from crawler._links import LinkResolver, extract_links
from crawler._pipelines import DropItem
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
from crawler._urls import BASE_PARTS, base_key, base_part, clean_href, join_href

if TYPE_CHECKING:
    from crawler._fetch import AiohttpTransport, FetchConfig, Fetcher
    from crawler._job import JobConfig, save_config
    from crawler._politeness import Politeness, PolitenessGate
    from crawler._scraper import UncertainAction
    from crawler._worker import enqueue_seeds

_LAZY: dict[str, str] = {
    "AiohttpTransport": "crawler._fetch",
    "FetchConfig": "crawler._fetch",
    "Fetcher": "crawler._fetch",
    "JobConfig": "crawler._job",
    "Politeness": "crawler._politeness",
    "PolitenessGate": "crawler._politeness",
    "UncertainAction": "crawler._scraper",
    "enqueue_seeds": "crawler._worker",
    "save_config": "crawler._job",
}
"""Each name loaded on first use → the module that defines it."""

__all__ = [
    "BASE_PARTS",
    "AiohttpTransport",
    "DropItem",
    "FetchConfig",
    "Fetcher",
    "Follow",
    "Item",
    "JobConfig",
    "LinkResolver",
    "NextPage",
    "Output",
    "Politeness",
    "PolitenessGate",
    "Response",
    "SiteSpider",
    "Spider",
    "SpiderOutputError",
    "UncertainAction",
    "base_key",
    "base_part",
    "clean_href",
    "enqueue_seeds",
    "extract_links",
    "join_href",
    "save_config",
]

if not TYPE_CHECKING:
    # Hidden from mypy, so that a name missing from the imports above is an error there
    # rather than an ``Any``.

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
