"""``--durability local|replica``: when a worker's checkpoint or finish counts as written.

The choice reaches the workers through ``$CRAWLOG_DURABILITY`` (`eventlog.DURABILITY_ENV`),
set while the options are parsed: the crawl's forked workers and those it starts as new
processes inherit it, and a ``crawlog worker`` started by hand reads it (or its own flag).
What each mode promises: docs/operating.md, "Durability".
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from eventlog import DURABILITIES, DURABILITY_ENV, Durability, durability_from

F = TypeVar("F", bound=Callable[..., Any])


def _publish(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Durability:
    chosen = durability_from(value)
    os.environ[DURABILITY_ENV] = chosen
    return chosen


def durability_option(command: F) -> F:
    """``--durability local|replica`` (or ``$CRAWLOG_DURABILITY``), published to the
    environment and not passed to the command: read it with `durability_in_force`."""
    return click.option(
        "--durability",
        type=click.Choice(DURABILITIES),
        default=None,
        envvar=DURABILITY_ENV,
        expose_value=False,
        callback=_publish,
        help="local: a checkpoint counts once the primary has it; replica: once a replica "
        "has it too (WAIT; needs `crawlog server start --replica`) [default: local].",
    )(command)


def durability_in_force() -> Durability:
    """The durability this process and its children run with."""
    return durability_from(os.environ.get(DURABILITY_ENV))
