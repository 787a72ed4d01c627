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
    DEFAULT_DOWN_AFTER_MS,
    REDIS_URL_ENV,
    ConfigError,
    Fsync,
    MemberStatus,
    ServerStatus,
    ensure_server,
    primary_of,
    redacted,
    replica_set_password_path,
    replica_set_status,
    replica_set_url,
    resolve_data_dir,
    server_status,
    server_status_at,
    start_replica_set,
    stop_replica_set,
    stop_server,
)


@click.group(epilog="Example:  crawlog server status --json")
def server() -> None:
    """Start, stop and inspect crawlog's private valkey-server."""


@server.command(epilog="Example:  crawlog server start --data-dir ~/crawls --fsync always")
@data_dir_option
@fsync_option
@click.option(
    "--replica",
    is_flag=True,
    help="Run a primary, a replica and three Sentinels (TCP on 127.0.0.1, with a password "
    "generated into the data directory) instead of one server on a unix socket.",
)
@click.option(
    "--down-after-ms",
    type=click.IntRange(min=1),
    default=DEFAULT_DOWN_AFTER_MS,
    show_default=True,
    help="With --replica, for a new set: how long the primary may not answer before the "
    "Sentinels promote the replica.",
)
def start(data_dir: Path | None, fsync: Fsync | None, replica: bool, down_after_ms: int) -> None:
    """Start the server of a data directory, unless it is running."""
    _refuse_external("start")
    directory = resolve_data_dir(data_dir)
    if replica:
        if fsync not in (None, "everysec"):
            raise ConfigError("--replica runs its servers with --fsync everysec only")
        _start_replica_set(directory, down_after_ms)
        return
    if replica_set_url(directory) is not None:
        raise ConfigError(
            f"{directory} holds a replica set: start it with `crawlog server start --replica`"
        )
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


def _start_replica_set(directory: Path, down_after_ms: int) -> None:
    if server_status(directory) is not None:
        raise ConfigError(
            f"the single valkey-server of {directory} runs: stop it (`crawlog server stop`) "
            "before starting a replica set there, or use another --data-dir"
        )
    info = start_replica_set(
        directory, down_after_ms=down_after_ms, failover_timeout_ms=6 * down_after_ms
    )
    if info.started:
        click.echo(f"started {', '.join(info.started)} of the replica set of {directory}")
    else:
        click.echo(f"the replica set of {directory} is already running")
    click.echo(f"primary: {info.primary[0]}:{info.primary[1]}")
    click.echo(f"url: {redacted(info.url)}")
    click.echo(
        f"(the password is in {replica_set_password_path(directory)}; crawlog commands "
        "with this data directory use the set by themselves)"
    )


@server.command(epilog="Example:  crawlog server stop --data-dir ~/crawls")
@data_dir_option
def stop(data_dir: Path | None) -> None:
    """Stop the server of a data directory (its data stays on disk)."""
    _refuse_external("stop")
    directory = resolve_data_dir(data_dir)
    if stop_replica_set(directory):
        click.echo(f"stopped the replica set of {directory}")
    elif stop_server(directory):
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
    members = None if url else replica_set_status(directory)
    if members is not None:
        _replica_set_status(ctx, directory, members, as_json)
        return
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


def _replica_set_status(
    ctx: click.Context, directory: Path, members: list[MemberStatus], as_json: bool
) -> None:
    """The replica set's members; exit 1 unless the Sentinels name a primary."""
    primary = primary_of(directory)
    url = replica_set_url(directory)
    if as_json:
        found = {
            "running": primary is not None,
            "replica_set": True,
            "data_dir": str(directory),
            "url": redacted(url) if url else None,
            "primary": f"{primary[0]}:{primary[1]}" if primary else None,
            "members": [asdict(member) for member in members],
        }
        click.echo(json.dumps(found, indent=2))
    else:
        click.echo(f"replica set: data dir {directory}")
        click.echo(f"url:      {redacted(url) if url else 'unknown'}")
        click.echo(
            f"primary:  {f'{primary[0]}:{primary[1]}' if primary else 'none (no Sentinel answers)'}"
        )
        for member in members:
            pid = f"pid {member.pid}" if member.pid is not None else "not running"
            click.echo(f"  {member.name:<11} 127.0.0.1:{member.port:<5}  {member.role:<8} {pid}")
    if primary is None:
        ctx.exit(EXIT_NO)


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
