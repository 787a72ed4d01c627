"""``crawlog console``: the web console of a job (or of every job), on 127.0.0.1.

The command binds its port, prints the URL with the token (as Jupyter does) and serves
``crawler.console`` with uvicorn until Ctrl-C. Starlette and uvicorn are the ``console``
extra: they load only in this command's body, and a missing extra is one line saying how
to install it.
"""

from __future__ import annotations

from pathlib import Path

import click

from crawler.cli._operator import default_operator
from crawler.cli._options import data_dir_option
from eventlog import ConfigError

DEFAULT_HOST = "127.0.0.1"
"""Only this machine, unless told: another host needs the token as well."""
DEFAULT_PORT = 8777


@click.command(
    "console",
    epilog="Example:  crawlog console --job shop   (then open the URL it prints)",
)
@click.option(
    "--job",
    default=None,
    metavar="NAME",
    help="The job the home page opens (default: the list of jobs).",
)
@data_dir_option
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
@click.option(
    "--user",
    default=default_operator,
    show_default="the OS user",
    metavar="NAME",
    help="Who the console's actions are recorded as (NAME@console).",
)
def console_command(
    job: str | None, data_dir: Path | None, host: str, port: int, user: str
) -> None:
    """Serve a web page to watch a job and act on it: progress, sites with pause and
    resume, every task's story with retry, what needs a person, dead letters.

    Prints the URL to open, with a token: a request from another host needs it, and
    every action needs it (the pages carry it). Every action is an event with who
    (--user, as NAME@console) and why, as with `crawlog pause`, `resume` and `retry`.
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError(
            "the console needs Starlette and uvicorn: pip install 'crawlog[console]'"
        ) from None
    import anyio

    from crawler.console import (
        ConsoleSettings,
        bind_socket,
        is_loopback_address,
        new_token,
        serve,
        url_of,
    )
    from eventlog import JobKeys, resolve_data_dir, resolve_url

    if job is not None:
        JobKeys(job)  # a bad name is a one-line error before anything starts
    settings = ConsoleSettings(
        data_dir=resolve_data_dir(data_dir),
        # Reading jobs starts no server of its own, as `status` and `jobs` do not.
        redis_url=resolve_url(data_dir, create=False),
        token=new_token(),
        user=user,
        job=job,
    )
    sock = bind_socket(host, port)
    click.echo(f"crawlog console: {url_of(sock, settings.token)}")
    if not is_loopback_address(sock.getsockname()[0]):
        click.echo("listening beyond this machine: other hosts need the token in that URL")
    click.echo("Ctrl-C to stop", err=True)
    try:
        anyio.run(serve, settings, sock)
    finally:
        sock.close()
