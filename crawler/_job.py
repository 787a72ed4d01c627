"""A job's configuration: written once by ``crawlog crawl``, read by every worker."""

from __future__ import annotations

from typing import Final

import msgspec
import redis.asyncio as aioredis

from crawler._addresses import AddressPolicy, own_hosts
from crawler._backoff import (
    DEFAULT_BASE_DELAY_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_DELAY_S,
    RETRYABLE_STATUSES,
    RetryPolicy,
)
from crawler._circuit import DEFAULT_COOLDOWN_S, DEFAULT_FAILURES_TO_OPEN, CircuitBreaker
from crawler._defaults import DEFAULT_MAX_ITEM_BYTES, DEFAULT_MAX_TASK_PAGES
from crawler._fetch_spec import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_READ_TIMEOUT_S,
    DEFAULT_TOTAL_TIMEOUT_S,
    DEFAULT_USER_AGENT,
    FetchConfig,
)
from crawler._identity import DEFAULT_PROXY_ROTATION, Header, ProxyRotation, format_statuses
from crawler._politeness import Politeness
from crawler._rules import LinkRules, link_rules
from crawler._scope import DEFAULT_SCOPE_MODE, Scope, ScopeMode
from eventlog import (
    DEFAULT_LEASE_MS,
    ConfigError,
    JobKeys,
    did_you_mean,
    job_config,
    job_names,
    redacted,
    store_job_config,
)

DEFAULT_RECOVERY_LIMIT = 3
"""Recoveries (lease expiries, restarts mid-task) before a task is aborted, not retried."""
DEFAULT_RETRY_ON: tuple[int, ...] = tuple(sorted(RETRYABLE_STATUSES))


SCRAPY_SPIDER_PREFIX: Final = "scrapy:"
"""The spider of a job a Scrapy process crawls (`crawler.scrapy`), before its name: no
crawlog worker can run it."""


class JobConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What every worker of a job must agree on."""

    seeds: tuple[str, ...]
    scope: ScopeMode = DEFAULT_SCOPE_MODE
    max_depth: int | None = None
    max_pages: int = 0
    """0: no limit. Otherwise no more than this many tasks are ever enqueued."""
    max_task_pages: int = DEFAULT_MAX_TASK_PAGES
    """Pages one task fetches at most (0: no cap): its next page past them is not fetched."""
    max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES
    """An item's encoded size at most (0: no cap): a larger one fails its task."""
    spider: str | None = None
    """MODULE:CLASS, or None for the default site spider; ``scrapy:NAME``
    (`SCRAPY_SPIDER_PREFIX`) for a job a Scrapy spider crawls through `crawler.scrapy`."""
    spider_args: tuple[tuple[str, str], ...] = ()
    """Spider arguments (``-a key=value``), (key, value) in order: every worker makes the
    spider with them (`crawler._spider.load_spider`), as attributes."""
    politeness: Politeness = msgspec.field(default_factory=Politeness)
    lease_ms: int = DEFAULT_LEASE_MS
    recovery_limit: int = DEFAULT_RECOVERY_LIMIT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    obey_robots: bool = True
    cookies: bool = False
    """Keep and send cookies, one jar per site shared by every worker (``--cookies``)."""
    browser: bool = False
    """Render pages in Chromium (``--browser``, `crawler._browser`), not fetch them over HTTP."""
    circuit_failures: int = DEFAULT_FAILURES_TO_OPEN
    """Consecutive failed fetches of a site that open its circuit."""
    circuit_cooldown_s: float = DEFAULT_COOLDOWN_S
    """Seconds an open circuit holds the site's tasks before one probe is let through."""
    allow: tuple[str, ...] = ()
    """Link rules (regular expressions, see :mod:`crawler._rules`): the default spider's
    links and ``follow_all`` keep a URL matching one of ``allow`` (if any) and no ``deny``."""
    deny: tuple[str, ...] = ()
    sitemaps: tuple[str, ...] = ()
    """Sitemap (or index) URLs whose listed URLs are seeds too (see :mod:`crawler._sitemaps`)."""
    sitemaps_from_robots: bool = False
    """Seed from the sitemaps the robots.txt of each seed's site names, as well."""
    record_events: bool = True
    """False only to measure what the log costs (``tools/bench_vs_scrapy.py``): workers
    append no task events, so the job can be neither resumed nor reported."""
    # The job's HTTP identity and retries: here, not in each worker's flags, so that every
    # worker, and one restarted or resuming the job, sends the same requests.
    user_agent: str | None = None
    """None: crawlog's own (`DEFAULT_USER_AGENT`, which names its version)."""
    headers: tuple[Header, ...] = ()
    """Default request headers (the spider's merged under the command line's)."""
    proxies: tuple[str, ...] = ()
    proxy_rotation: ProxyRotation = DEFAULT_PROXY_ROTATION
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    total_timeout_s: float = DEFAULT_TOTAL_TIMEOUT_S
    retry_on: tuple[int, ...] = DEFAULT_RETRY_ON
    """HTTP statuses a fetch is retried on (sorted); network errors and timeouts always are."""
    backoff_base_s: float = DEFAULT_BASE_DELAY_S
    backoff_cap_s: float = DEFAULT_MAX_DELAY_S
    allow_private: bool = False
    """Fetch from loopback, private, link-local... addresses too (``--allow-private``); by
    default only the seeds' own addresses of those kinds are (`crawler._addresses`)."""

    def breaker(self) -> CircuitBreaker:
        """The job's circuit breaker settings."""
        return CircuitBreaker(
            failures_to_open=self.circuit_failures, cooldown=self.circuit_cooldown_s
        )

    def fetch_config(self) -> FetchConfig:
        """How the job's workers fetch (ConfigError for a setting that is not valid)."""
        return FetchConfig(
            user_agent=self.user_agent or DEFAULT_USER_AGENT,
            headers=self.headers,
            proxies=self.proxies,
            proxy_rotation=self.proxy_rotation,
            connect_timeout_s=self.connect_timeout_s,
            read_timeout_s=self.read_timeout_s,
            total_timeout_s=self.total_timeout_s,
            addresses=self.address_policy(),
        )

    def address_policy(self) -> AddressPolicy:
        """The addresses the job's fetches may reach: public ones, those its seeds' (and
        sitemaps') hosts are on, and every other with ``allow_private``."""
        return AddressPolicy(
            allow_private=self.allow_private, own_hosts=own_hosts((*self.seeds, *self.sitemaps))
        )

    def retry_policy(self) -> RetryPolicy:
        """When the job's workers retry a failed fetch (ConfigError if not valid)."""
        return RetryPolicy(
            max_attempts=self.max_attempts,
            base_delay=self.backoff_base_s,
            max_delay=self.backoff_cap_s,
            retryable_statuses=frozenset(self.retry_on),
        )

    def rules(self) -> LinkRules | None:
        """The job's link rules (None without any); ``ConfigError`` for a bad pattern."""
        return link_rules(self.allow, self.deny)

    def scope_rule(self) -> Scope:
        """The job's scope, built from its seeds (from its sitemaps' URLs, if it has no seeds:
        a sitemap at ``/docs/sitemap.xml`` scopes the crawl to ``/docs/``, as the sitemap
        protocol scopes what it may list)."""
        return Scope(self.seeds or self.sitemaps, self.scope, self.max_depth)


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(JobConfig)


async def save_config(redis: aioredis.Redis, keys: JobKeys, config: JobConfig) -> JobConfig:
    """Store the job's configuration, or check that it is the one already stored."""
    data = _encoder.encode(config)
    if await store_job_config(redis, keys, data):
        return config
    stored = await load_config(redis, keys)
    if stored != config:
        differences = _differences(stored, config)
        raise ConfigError(
            f"job {keys.job!r} already exists with other settings ({differences}): "
            "run it with the same options to resume it, or pick a new --job name"
        )
    return stored


async def load_config(redis: aioredis.Redis, keys: JobKeys) -> JobConfig:
    """The job's stored configuration; ``ConfigError`` for a job nobody started."""
    data = await job_config(redis, keys)
    if data is None:
        hint = did_you_mean(keys.job, await job_names(redis))
        raise ConfigError(
            f"no job {keys.job!r} here{hint}: start it with `crawlog crawl SEED --job "
            f"{keys.job}`; `crawlog jobs` lists the jobs"
        )
    return _decoder.decode(data)


_OPTIONS: dict[str, str] = {
    "seeds": "SEEDS",
    "scope": "--scope",
    "max_depth": "--depth",
    "max_pages": "--max-pages",
    "max_item_bytes": "--max-item-bytes",
    "spider": "--spider",
    "spider_args": "-a",
    "politeness.per_host": "--per-host",
    "politeness.delay_s": "--delay",
    "politeness.autothrottle": "--autothrottle",
    "politeness.autothrottle_target": "--autothrottle-target",
    "politeness.autothrottle_max_delay_s": "--autothrottle-max-delay",
    "lease_ms": "--lease",
    "obey_robots": "--ignore-robots",
    "cookies": "--cookies",
    "allow": "--allow",
    "deny": "--deny",
    "sitemaps": "--sitemap",
    "sitemaps_from_robots": "--sitemaps-from-robots",
    "record_events": "--no-events",
    "user_agent": "--user-agent",
    "headers": "--header",
    "proxies": "--proxy",
    "proxy_rotation": "--proxy-rotation",
    "connect_timeout_s": "--connect-timeout",
    "read_timeout_s": "--read-timeout",
    "total_timeout_s": "--timeout",
    "max_attempts": "--retries",
    "retry_on": "--retry-on",
    "backoff_base_s": "--backoff-base",
    "backoff_cap_s": "--backoff-cap",
    "circuit_failures": "--circuit-failures",
    "circuit_cooldown_s": "--circuit-cooldown",
    "allow_private": "--allow-private",
}
"""Setting (dotted path into :class:`JobConfig`) -> the ``crawl`` option that sets it; a
setting with no option is named by its path."""
_INVERTED_FLAGS = frozenset({"obey_robots", "record_events"})
"""Settings whose flag, when given, turns them off."""


def _differences(stored: JobConfig, wanted: JobConfig) -> str:
    a, b = dict(_flatten(stored)), dict(_flatten(wanted))
    return "; ".join(
        f"{_OPTIONS.get(k, k)}: {_shown(k, a[k])} in the job, {_shown(k, b.get(k))} asked"
        for k in a
        if a[k] != b.get(k)
    )


def _flatten(struct: msgspec.Struct, prefix: str = "") -> list[tuple[str, object]]:
    # Nested settings (politeness) are compared field by field, so the message can name the
    # one option that differs rather than print the whole struct.
    fields: list[tuple[str, object]] = []
    for name, value in msgspec.structs.asdict(struct).items():
        if isinstance(value, msgspec.Struct):
            fields += _flatten(value, f"{prefix}{name}.")
        else:
            fields.append((f"{prefix}{name}", value))
    return fields


def _shown(setting: str, value: object) -> str:
    """A setting's value as the user would type it for its option."""
    if setting in _INVERTED_FLAGS:
        return "off" if value else "on"
    if isinstance(value, bool):
        return "on" if value else "off"
    if setting == "lease_ms" and isinstance(value, int):
        return f"{value / 1000:g}"
    if setting == "max_attempts" and isinstance(value, int):
        return str(value - 1)  # --retries counts the fetches after the first
    if setting == "retry_on" and isinstance(value, tuple):
        return format_statuses(value)
    if setting == "user_agent" and value is None:
        return DEFAULT_USER_AGENT
    if setting == "headers" and isinstance(value, tuple):
        return "; ".join(f"{name}: {text}" for name, text in value) or "none"
    if setting == "spider_args" and isinstance(value, tuple):
        return " ".join(f"{key}={text}" for key, text in value) or "none"
    if setting == "proxies" and isinstance(value, tuple):
        return " ".join(redacted(url) for url in value) or "none"
    if isinstance(value, tuple):
        return " ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return "none" if value is None else str(value)
