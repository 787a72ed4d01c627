"""The plug-in's Scrapy settings: which job, which server, which worker name, which item key."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from scrapy.settings import BaseSettings

from crawler._job import DEFAULT_RECOVERY_LIMIT
from crawler._politeness import DEFAULT_SLOT_TTL_S, Politeness
from eventlog import (
    DATA_DIR_ENV,
    DEFAULT_LEASE_MS,
    REDIS_URL_ENV,
    ConfigError,
    check_job_name,
    resolve_data_dir,
)

JOB_SETTING = "CRAWLOG_JOB"
HOME_SETTING = DATA_DIR_ENV
"""``CRAWLOG_HOME``: the data directory, as for crawlog itself (setting, else environment)."""
URL_SETTING = REDIS_URL_ENV
WORKER_SETTING = "CRAWLOG_WORKER"
"""This process's worker name; by default the first free one of ``scrapy-1``, ``scrapy-2``…"""
LEASE_SETTING = "CRAWLOG_LEASE"
"""Seconds a process that stopped renewing keeps its requests (crawlog's ``--lease``)."""
ITEM_KEY_SETTING = "CRAWLOG_ITEM_KEY"
"""The item field whose value keys an item; unset: the request's URL and the item's index."""
RECOVERY_LIMIT_SETTING = "CRAWLOG_RECOVERY_LIMIT"
PER_HOST_SETTING = "CRAWLOG_PER_HOST"
"""With ``PolitenessMiddleware``: requests to one host in flight at once, counted across
every process of the job; default Scrapy's ``CONCURRENT_REQUESTS_PER_DOMAIN``."""
DELAY_SETTING = "CRAWLOG_DELAY"
"""With ``PolitenessMiddleware``: least seconds between two request starts to one host,
across the job; default Scrapy's ``DOWNLOAD_DELAY``."""
SLOT_TTL_SETTING = "CRAWLOG_SLOT_TTL"
"""With ``PolitenessMiddleware``: seconds a held slot counts at most (a process that
vanished without its tasks being recovered); default ``DOWNLOAD_TIMEOUT`` plus
crawlog's own default ttl, so no download outlives its slot."""
PROJECT_SETTING = "CRAWLOG_PROJECT"
"""Whether each process runs the job's projector beside itself (default on: see
``crawler.scrapy._projector``); off: ``crawlog project --job J`` is the user's to run."""
MIN_LEASE_S = 0.5
_OFF = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class PluginSettings:
    """What the scheduler and the item pipeline read from Scrapy's settings."""

    job: str
    url: str | None
    """A server of the user's (``REDIS_URL``); None: crawlog's own, in ``data_dir``."""
    data_dir: Path
    worker: str | None
    lease_ms: int
    item_key: str | None
    recovery_limit: int


def setting(settings: BaseSettings, name: str) -> str | None:
    """A setting from Scrapy's settings, else from the environment variable of its name
    (as crawlog's own CRAWLOG_* variables), else None."""
    value = settings.get(name)
    if value is None or value == "":
        value = os.environ.get(name)
    return None if value is None or value == "" else str(value)


def _number(settings: BaseSettings, name: str, default: float) -> float:
    value = setting(settings, name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {value!r}") from None


def plugin_settings(settings: BaseSettings) -> PluginSettings:
    """The plug-in's settings (Scrapy's, else the environment); ``ConfigError`` naming the
    setting that is wrong."""
    job = setting(settings, JOB_SETTING)
    if not job:
        raise ConfigError(
            f"crawler.scrapy needs the {JOB_SETTING} setting: the crawlog job this spider's "
            "requests belong to (e.g. CRAWLOG_JOB = 'shop')"
        )
    check_job_name(job)
    lease_s = _number(settings, LEASE_SETTING, DEFAULT_LEASE_MS / 1000)
    if lease_s < MIN_LEASE_S:
        raise ConfigError(
            f"{LEASE_SETTING} must be at least {MIN_LEASE_S} seconds, not {lease_s:g}"
        )
    return PluginSettings(
        job=job,
        url=setting(settings, URL_SETTING),
        data_dir=resolve_data_dir(setting(settings, HOME_SETTING)),
        worker=setting(settings, WORKER_SETTING),
        lease_ms=int(lease_s * 1000),
        item_key=setting(settings, ITEM_KEY_SETTING),
        recovery_limit=int(_number(settings, RECOVERY_LIMIT_SETTING, DEFAULT_RECOVERY_LIMIT)),
    )


def politeness_settings(settings: BaseSettings) -> Politeness:
    """The shared per-host limits ``PolitenessMiddleware`` keeps (see the settings above):
    Scrapy's per-process ones by default, now held by all the job's processes together."""
    scrapy_per_domain = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8)
    per_host = _number(settings, PER_HOST_SETTING, scrapy_per_domain)
    if per_host != int(per_host):
        raise ConfigError(f"{PER_HOST_SETTING} must be a whole number, not {per_host:g}")
    delay = _number(settings, DELAY_SETTING, settings.getfloat("DOWNLOAD_DELAY", 0.0))
    timeout = settings.getfloat("DOWNLOAD_TIMEOUT", 180.0)
    ttl = _number(settings, SLOT_TTL_SETTING, timeout + DEFAULT_SLOT_TTL_S)
    return Politeness(per_host=int(per_host), delay_s=delay, slot_ttl_s=ttl)


def projects(settings: BaseSettings) -> bool:
    """Whether the plug-in runs the job's projector (`PROJECT_SETTING`)."""
    value = setting(settings, PROJECT_SETTING)
    return value is None or value.strip().lower() not in _OFF
