"""The test site: generated pages with opt-in faults, a log of every request, and the checks
a crawl of it must pass.

The demo, the chaos tool, the benchmarks and the tests crawl it; the crawler itself never
imports it. The crash-safety checks (:func:`check_crawl`, :func:`tasks_held`) read the
projector's committed state, so they load on first use: ``import crawler.testsite`` stays
free of Arrow and DuckDB, as the command line that serves the site needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.testsite._app import (
    APP_LOGIN_PATH,
    APP_PAGES,
    APP_PASSWORD,
    APP_PREFIX,
    APP_TOKEN,
    APP_USER,
)
from crawler.testsite._interactive import (
    ECHO_PREFIX,
    LOGIN_PASSWORD,
    LOGIN_PATH,
    LOGIN_USER,
    MEMBER_PAGES,
    MEMBERS_PREFIX,
    SESSION_COOKIE,
    SET_COOKIE_PARAM,
)
from crawler.testsite._revisions import MUTATE_PATH, Mutation, Revisions
from crawler.testsite._site import (
    DEFAULT_PAGES,
    FLUSH_INTERVAL_S,
    JSON_PATH,
    OTHER_TYPE_ITEMS,
    SITEMAP_PATH,
    TEXT_PATH,
    Request,
    RunningSite,
    read_request_log,
    run_testsite,
    serve_testsite,
    sitemap_changefreq,
    sitemap_children,
    sitemap_lastmod,
)
from crawler.testsite._sitegen import (
    DEFAULT_HUGE_PAGE_BYTES,
    GO_PREFIX,
    HUGE_PATH,
    ITEM_PREFIX,
    LAYOUTS,
    LOOP_PATHS,
    MAX_LINKS,
    MAX_PAGE_BYTES,
    MAX_PAGES,
    MAX_SEED,
    MIN_LINKS,
    MIN_PAGE_BYTES,
    MOVED_PREFIX,
    NO_FAULTS,
    Faults,
    Layout,
    SiteMap,
)
from eventlog import install_lazy_importer as _install_lazy_importer

if TYPE_CHECKING:
    from crawler.testsite._invariants import CrawlCheck, check_crawl, tasks_held


__all__ = [
    "APP_LOGIN_PATH",
    "APP_PAGES",
    "APP_PASSWORD",
    "APP_PREFIX",
    "APP_TOKEN",
    "APP_USER",
    "DEFAULT_HUGE_PAGE_BYTES",
    "DEFAULT_PAGES",
    "ECHO_PREFIX",
    "FLUSH_INTERVAL_S",
    "GO_PREFIX",
    "HUGE_PATH",
    "ITEM_PREFIX",
    "JSON_PATH",
    "LAYOUTS",
    "LOGIN_PASSWORD",
    "LOGIN_PATH",
    "LOGIN_USER",
    "LOOP_PATHS",
    "MAX_LINKS",
    "MAX_PAGES",
    "MAX_PAGE_BYTES",
    "MAX_SEED",
    "MEMBERS_PREFIX",
    "MEMBER_PAGES",
    "MIN_LINKS",
    "MIN_PAGE_BYTES",
    "MOVED_PREFIX",
    "MUTATE_PATH",
    "NO_FAULTS",
    "OTHER_TYPE_ITEMS",
    "SESSION_COOKIE",
    "SET_COOKIE_PARAM",
    "SITEMAP_PATH",
    "TEXT_PATH",
    "CrawlCheck",
    "Faults",
    "Layout",
    "Mutation",
    "Request",
    "Revisions",
    "RunningSite",
    "SiteMap",
    "check_crawl",
    "read_request_log",
    "run_testsite",
    "serve_testsite",
    "sitemap_changefreq",
    "sitemap_children",
    "sitemap_lastmod",
    "tasks_held",
]

_install_lazy_importer(globals())
