"""The crawler: spiders, fetching, workers, and the `crawlog` command line.

What a spider needs is re-exported here: ``from crawler import Spider, Item, Follow, NextPage``
(``DropItem`` for its pipelines, ``DropRequest`` and ``OutgoingRequest`` for its
middlewares, ``Flow`` for a long browser interaction).
The spider API and the URL helpers load with the package; the fetcher, the worker, the job
settings and politeness load on first use, so that a spider module or the command line
importing ``crawler`` does not pull in the HTTP stack: the names imported under
``TYPE_CHECKING`` are what :func:`eventlog.install_lazy_importer` loads when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._flow import Flow, FlowAborted, FlowChanged, FlowRun, FlowState, Policy
from crawler._links import LinkResolver, extract_links
from crawler._middlewares import DropRequest, OutgoingRequest
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
    TaskProgress,
)
from crawler._urls import BASE_PARTS, base_key, base_part, clean_href, join_href
from eventlog import install_lazy_importer as _install_lazy_importer

if TYPE_CHECKING:
    from crawler._fetch import AiohttpTransport, FetchConfig, Fetcher
    from crawler._job import JobConfig, save_config
    from crawler._politeness import Politeness, PolitenessGate
    from crawler._scraper import ActionAborted, UncertainAction
    from crawler._worker import enqueue_seeds


__all__ = [
    "BASE_PARTS",
    "ActionAborted",
    "AiohttpTransport",
    "DropItem",
    "DropRequest",
    "FetchConfig",
    "Fetcher",
    "Flow",
    "FlowAborted",
    "FlowChanged",
    "FlowRun",
    "FlowState",
    "Follow",
    "Item",
    "JobConfig",
    "LinkResolver",
    "NextPage",
    "OutgoingRequest",
    "Output",
    "Policy",
    "Politeness",
    "PolitenessGate",
    "Response",
    "SiteSpider",
    "Spider",
    "SpiderOutputError",
    "TaskProgress",
    "UncertainAction",
    "base_key",
    "base_part",
    "clean_href",
    "enqueue_seeds",
    "extract_links",
    "join_href",
    "save_config",
]

_install_lazy_importer(globals())
