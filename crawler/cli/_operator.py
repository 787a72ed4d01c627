"""What the operator commands share on the command line: who and why as options, and JSON
output. The job they act on, task and site arguments and the actions themselves are the
library's (``crawler.ops``), shared with the web console.
The commands: ``pause.py`` (and ``resume``), ``retry.py``, ``resolve.py``, ``dead.py``,
``history.py``, ``workers.py``.
"""

from __future__ import annotations

from typing import Any

import click
import msgspec

from crawler.ops import default_operator, require_reason

SHOWN = 20
"""Tasks or leases listed by name unless ``--all``."""


def reason_option(command: Any) -> Any:
    """``--reason TEXT``: why, recorded in the event (required, and not blank, as in the
    console: it is the audit trail). Checked while parsing, before the job is opened."""
    return click.option(
        "--reason",
        required=True,
        callback=lambda _ctx, _param, value: require_reason(value),
        help="Why: recorded in the event, shown by `history`.",
    )(command)


def by_option(command: Any) -> Any:
    """``--by NAME``: who, recorded as the event's actor."""
    return click.option(
        "--by",
        default=default_operator,
        show_default="the OS user",
        metavar="NAME",
        help="Who: recorded as the event's actor.",
    )(command)


def echo_json(value: Any) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(value)).decode())
