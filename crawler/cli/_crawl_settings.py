"""``crawlog crawl``'s options as two typed objects: :class:`CrawlOptions`, what the command
line (or the environment, or crawlog.toml) gave, and :class:`CrawlSettings`, what the crawl's
processes are started with: the job's stored configuration (`crawler._job.JobConfig`) and
the crawl's own settings (how many processes, where its data and metrics go).

The command builds the options from click's parameters, checks them (the spider, the seeds,
the patterns: one line each, here, not an error in every worker) into settings, and hands
the settings on whole: to ``fork_children`` and ``run_crawl`` (``_processes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawler._browser import browser_wanted, check_browser_support
from crawler._defaults import FailOn
from crawler._job import DEFAULT_RECOVERY_LIMIT, JobConfig
from crawler._politeness import Politeness
from crawler._scope import ScopeMode
from crawler._spider import Spider, load_spider, spider_arguments, spider_path
from crawler._urls import check_seed_url
from crawler.cli._identity_options import PARAMS as IDENTITY_PARAMS
from crawler.cli._identity_options import identity_settings
from eventlog import ConfigError, resolve_data_dir


@dataclass(frozen=True, slots=True, kw_only=True)
class CrawlOptions:
    """``crawl``'s parameters as click gives them (checked for range and choice already)."""

    seeds: tuple[str, ...]
    job: str | None
    data_dir: Path | None
    workers: int
    concurrency: int
    per_host: int
    delay: float
    autothrottle: bool
    autothrottle_target: float
    autothrottle_max_delay: float
    depth: int | None
    max_pages: int
    max_item_bytes: int
    scope: ScopeMode
    spider: str | None
    spider_arg: tuple[str, ...]
    """``-a KEY=VALUE``, as given (`spider_arguments` checks them)."""
    lease: float
    ignore_robots: bool
    cookies: bool | None
    browser: bool | None
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    sitemap: tuple[str, ...]
    sitemaps_from_robots: bool
    fail_on: FailOn
    spider_error_share: float
    no_events: bool
    with_console: bool
    console_port: int
    metrics_host: str
    metrics_port: int | None
    identity: Mapping[str, Any] = field(default_factory=dict)
    """The options of `identity_options` (user agent, headers, proxies, timeouts, retries),
    by parameter name, for `identity_settings`."""

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> CrawlOptions:
        """From click's parameters; one it does not know is a TypeError, not dropped."""
        identity = {name: params[name] for name in IDENTITY_PARAMS}
        rest = {name: value for name, value in params.items() if name not in identity}
        return cls(**rest, identity=identity)

    @property
    def metrics(self) -> tuple[str, int] | None:
        """(host, port) of the metrics endpoints, or None without ``--metrics-port``."""
        return None if self.metrics_port is None else (self.metrics_host, self.metrics_port)


@dataclass(frozen=True, slots=True, kw_only=True)
class CrawlSettings:
    """What a crawl's processes are started with."""

    job: str
    data_dir: Path
    config: JobConfig
    """Stored with the job: every worker, and a crawl that resumes it, agrees on it."""
    workers: int
    concurrency: int
    """Fetches in flight per worker."""
    metrics: tuple[str, int] | None = None
    """(host, P): the projector serves metrics on port P, worker wN on P+N."""


def crawl_settings(options: CrawlOptions) -> CrawlSettings:
    """The settings of a crawl, checked: ``ConfigError`` (one line) for what is wrong."""
    spider = spider_path(options.spider)
    arguments = spider_arguments(options.spider_arg)
    loaded = load_spider(spider, arguments)  # fail now, not in every worker
    sitemaps = tuple(dict.fromkeys(check_seed_url(s) for s in options.sitemap))
    # With sitemaps, no seed is needed: the URLs they list are the seeds.
    given = options.seeds or _start_urls(loaded, spider, required=not sitemaps)
    seeds = tuple(check_seed_url(s) for s in given)
    if options.sitemaps_from_robots and not seeds:
        raise ConfigError(
            "--sitemaps-from-robots reads the robots.txt of the seeds' sites: give SEED URLs"
        )
    config = JobConfig(
        seeds=seeds,
        scope=options.scope,
        max_depth=options.depth,
        max_pages=options.max_pages,
        max_item_bytes=options.max_item_bytes,
        spider=spider,
        spider_args=arguments,
        politeness=Politeness(
            per_host=options.per_host,
            delay_s=options.delay,
            autothrottle=options.autothrottle,
            autothrottle_target=options.autothrottle_target,
            autothrottle_max_delay_s=options.autothrottle_max_delay,
        ),
        lease_ms=int(options.lease * 1000),
        recovery_limit=DEFAULT_RECOVERY_LIMIT,
        obey_robots=not options.ignore_robots,
        cookies=_cookies_wanted(options.cookies, loaded),
        browser=_browser_wanted(options.browser, loaded),
        # The spider's own rules unless the command line (or crawlog.toml) sets some.
        allow=tuple(options.allow or loaded.allow),
        deny=tuple(options.deny or loaded.deny),
        sitemaps=sitemaps,
        sitemaps_from_robots=options.sitemaps_from_robots,
        record_events=not options.no_events,
        **identity_settings(loaded, options.identity),
    )
    _check(config)
    return CrawlSettings(
        job=options.job or _job_name((seeds or sitemaps)[0]),
        data_dir=resolve_data_dir(options.data_dir),
        config=config,
        workers=options.workers,
        concurrency=options.concurrency,
        metrics=options.metrics,
    )


def _check(config: JobConfig) -> None:
    """What a worker would build from ``config``, built once here: a bad pattern, scope or
    identity is one line now, not an error in every worker."""
    config.scope_rule()
    config.fetch_config()
    config.retry_policy()
    config.rules()


def _cookies_wanted(cookies: bool | None, spider: Spider) -> bool:
    """Whether the job keeps cookies: ``--cookies``/``--no-cookies``, its environment
    variable or crawlog.toml, else the spider's ``cookies`` attribute, else off (an option
    beats the spider, as for the user agent and headers)."""
    if cookies is not None:
        return cookies
    wanted = getattr(spider, "cookies", None)
    if wanted is None:
        return False
    if not isinstance(wanted, bool):
        raise ConfigError(f"spider {spider.name}: cookies = {wanted!r}: expected True or False")
    return wanted


def _browser_wanted(browser: bool | None, spider: Spider) -> bool:
    """Whether the job renders its pages (``--browser``, else the spider's ``browser``),
    checked now: no Playwright or no Chromium is one line here, not a failure per worker."""
    wanted = browser_wanted(browser, spider)
    if wanted:
        check_browser_support()
    return wanted


def _start_urls(spider: Spider, path: str | None, *, required: bool) -> tuple[str, ...]:
    urls = tuple(spider.start_urls)
    if not urls and required:
        spider_has = f"--spider {path!r} has no start_urls" if path else "no --spider"
        raise ConfigError(
            f"no seeds to crawl ({spider_has}): give SEED URLs, a --sitemap, or a spider "
            "whose start_urls lists them"
        )
    return urls


def _job_name(seed: str) -> str:
    host = seed.split("://", 1)[1].split("/", 1)[0]
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in host)[:64]


def bound_line(max_pages: int) -> str:
    """What a crawl says of its page bound (``--max-pages``) as it starts."""
    if max_pages == 0:
        return "bound: none (--max-pages 0): the crawl runs until no page in scope is left"
    return f"bound: {max_pages:,} pages (raise it with --max-pages N, --max-pages 0 for none)"
