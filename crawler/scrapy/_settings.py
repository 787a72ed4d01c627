"""The plug-in's Scrapy settings: which job, which server, which worker name, which item key."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from scrapy.settings import BaseSettings

from crawler._job import DEFAULT_RECOVERY_LIMIT
from eventlog import DATA_DIR_ENV, DEFAULT_LEASE_MS, REDIS_URL_ENV, ConfigError, check_job_name

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


def plugin_settings(settings: BaseSettings) -> PluginSettings:
    """The plug-in's settings; ``ConfigError`` naming the setting that is wrong."""
    job = settings.get(JOB_SETTING) or os.environ.get(JOB_SETTING)
    if not job:
        raise ConfigError(
            f"crawler.scrapy needs the {JOB_SETTING} setting: the crawlog job this spider's "
            "requests belong to (e.g. CRAWLOG_JOB = 'shop')"
        )
    check_job_name(str(job))
    lease_s = settings.getfloat(LEASE_SETTING, DEFAULT_LEASE_MS / 1000)
    if lease_s < 0.5:
        raise ConfigError(f"{LEASE_SETTING} must be at least 0.5 seconds, not {lease_s:g}")
    home = settings.get(HOME_SETTING) or os.environ.get(DATA_DIR_ENV)
    from eventlog import resolve_data_dir

    return PluginSettings(
        job=str(job),
        url=settings.get(URL_SETTING) or os.environ.get(REDIS_URL_ENV) or None,
        data_dir=resolve_data_dir(home),
        worker=settings.get(WORKER_SETTING) or None,
        lease_ms=int(lease_s * 1000),
        item_key=settings.get(ITEM_KEY_SETTING) or None,
        recovery_limit=settings.getint(RECOVERY_LIMIT_SETTING, DEFAULT_RECOVERY_LIMIT),
    )
