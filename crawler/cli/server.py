"""``crawlog server``: start, stop and inspect the private valkey-server of a data directory."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio
import click

from crawler.cli._exit import EXIT_NO
from crawler.cli._options import data_dir_option, fsync_option, json_option
from crawler.ops import format_duration
from eventlog import (
    REDIS_URL_ENV,
    ConfigError,
    Fsync,
    ServerStatus,
    ensure_server,
    redacted,
    resolve_data_dir,
    server_status,
    server_status_at,
    stop_server,
)


@click.group(epilog="Example:  crawlog server status --json")
def server() -> None:
    """Start, stop and inspect crawlog's private valkey-server."""


@server.command(epilog="Example:  crawlog server start --data-dir ~/crawls --fsync always")
@data_dir_option
@fsync_option
def start(data_dir: Path | None, fsync: Fsync | None) -> None:
    """Start the server of a data directory, unless it is running."""
    _refuse_external("start")
    directory = resolve_data_dir(data_dir)
    info = ensure_server(directory, fsync=fsync or "everysec")
    if info.started:
        click.echo(f"started valkey-server (pid {info.pid}) for {directory}")
    else:
        click.echo(f"valkey-server (pid {info.pid}) is already running for {directory}")
        status = server_status(directory) if fsync else None
        if status is not None and status.appendfsync != fsync:
            click.echo(
                f"crawlog: warning: the running server uses appendfsync {status.appendfsync}; "
                f"run `crawlog server stop` and start it again to use {fsync}",
                err=True,
            )
    click.echo(f"url: {info.url}")


@server.command(epilog="Example:  crawlog server stop --data-dir ~/crawls")
@data_dir_option
def stop(data_dir: Path | None) -> None:
    """Stop the server of a data directory (its data stays on disk)."""
    _refuse_external("stop")
    directory = resolve_data_dir(data_dir)
    if stop_server(directory):
        click.echo(f"stopped the valkey-server of {directory}")
    else:
        click.echo(f"no valkey-server is running for {directory}")


@server.command(epilog="Example:  crawlog server status --json")
@data_dir_option
@json_option
@click.pass_context
def status(ctx: click.Context, data_dir: Path | None, as_json: bool) -> None:
    """Show whether the server runs, and its settings (exit 1 if not running).

    With REDIS_URL set, ping and describe that server instead.
    """
    url = os.environ.get(REDIS_URL_ENV)
    directory = resolve_data_dir(data_dir)
    found = anyio.run(server_status_at, url) if url else server_status(directory)
    if found is None:
        if as_json:
            click.echo(json.dumps({"running": False, "data_dir": str(directory)}))
        else:
            click.echo(f"no valkey-server is running for {directory}")
        ctx.exit(EXIT_NO)
    if as_json:
        click.echo(json.dumps(_status_dict(found), indent=2))
    else:
        click.echo(_status_text(found))


def _refuse_external(action: str) -> None:
    url = os.environ.get(REDIS_URL_ENV)
    if url:
        raise ConfigError(
            f"REDIS_URL is set ({redacted(url)}): that is an external server, which crawlog "
            f"uses but does not {action}; unset REDIS_URL to manage crawlog's own server"
        )


def _status_dict(found: ServerStatus) -> dict[str, Any]:
    fields = asdict(found)
    fields["data_dir"] = str(found.data_dir) if found.data_dir is not None else None
    return {"running": True, "managed": found.data_dir is not None, **fields}


def _status_text(found: ServerStatus) -> str:
    where = f"data dir {found.data_dir}" if found.data_dir is not None else "external (REDIS_URL)"
    lines = [
        f"running:  valkey {found.version}, pid {found.pid}, up {format_duration(found.uptime_s)}",
        f"server:   {where}",
        f"url:      {found.url}",
        f"memory:   {found.used_memory_human}",
        f"aof:      {'on' if found.aof_enabled else 'off'}, "
        f"appendfsync {found.appendfsync or 'unknown'}",
    ]
    return "\n".join(lines)
