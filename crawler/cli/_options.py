"""Options that several ``crawlog`` commands share, defined once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from crawler._defaults import DEFAULT_CONCURRENCY, DEFAULT_METRICS_HOST
from crawler.cli._logs import DEFAULT_LOG_LEVEL, LOG_LEVELS
from eventlog import FSYNC_POLICIES, JobKeys

F = TypeVar("F", bound=Callable[..., Any])


def data_dir_option(command: F) -> F:
    """``--data-dir DIR``: where crawlog keeps its server and data."""
    return click.option(
        "--data-dir",
        type=click.Path(path_type=Path),
        default=None,
        metavar="DIR",
        help="Data directory [default: $CRAWLOG_HOME, else ./.crawlog].",
    )(command)


def fsync_option(command: F) -> F:
    """``--fsync POLICY``: how often the server fsyncs its append-only file."""
    return click.option(
        "--fsync",
        type=click.Choice(FSYNC_POLICIES),
        default=None,
        help="fsync the append-only file every second (loses at most ~1 s of writes on a power "
        "loss) or on every write (slower) [default: everysec].",
    )(command)


def json_option(command: F) -> F:
    """``--json``: machine-readable output."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)


_JOB_KEYS = JobKeys("NAME").pattern


def job_option(command: F) -> F:
    """``--job NAME``: the job to act on."""
    return click.option(
        "--job", required=True, metavar="NAME", help=f"The job (its keys are {_JOB_KEYS})."
    )(command)


def concurrency_option(command: F) -> F:
    """``--concurrency C``: fetches one worker runs at once."""
    return click.option(
        "--concurrency",
        type=click.IntRange(1, 1000),
        default=DEFAULT_CONCURRENCY,
        show_default=True,
        help="Fetches in flight per worker.",
    )(command)


def log_level_option(command: F) -> F:
    """``--log-level LEVEL``: what this process logs (``--log-format`` says how)."""
    return click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS),
        default=DEFAULT_LOG_LEVEL,
        show_default=True,
        help="Log messages of this level and above.",
    )(command)


def metrics_options(command: F) -> F:
    """``--metrics-port P`` and ``--metrics-host H``: serve Prometheus metrics."""
    command = click.option(
        "--metrics-host",
        default=DEFAULT_METRICS_HOST,
        show_default=True,
        metavar="HOST",
        help="Address the metrics endpoint binds (loopback unless you say otherwise).",
    )(command)
    return click.option(
        "--metrics-port",
        type=click.IntRange(1, 65535),
        default=None,
        metavar="P",
        help="Serve Prometheus metrics on http://HOST:P/metrics [default: off].",
    )(command)
