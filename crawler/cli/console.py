"""``crawlog console``: the web console of a job (or of every job), on 127.0.0.1.

The command binds its port, prints the login URL with the token (as Jupyter does) and serves
``crawler.console`` with uvicorn until Ctrl-C. Starlette and uvicorn are the ``console``
extra: they load only in this command's body, and a missing extra is one line saying how
to install it.

``crawlog crawl --console`` runs this command beside the crawl (:func:`console_of_crawl`):
a child process, so the crawl itself never loads the web stack, that dies with the crawl
(stopped when it ends, SIGKILLed by the kernel if the crawl is).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from crawler.cli._argv import crawlog_command
from crawler.cli._lifeline import PARENT_ENV, die_with_parent
from crawler.cli._options import data_dir_option
from crawler.ops import default_operator
from eventlog import ConfigError, CrawlogError

DEFAULT_HOST = "127.0.0.1"
"""Only this machine, unless told (every request needs the token, from here as well)."""
DEFAULT_PORT = 8777
URL_PREFIX = "crawlog console: "
"""How the command's first line starts: the URL to open follows."""
JOBS_NAMED = 10
"""Jobs named by the error for a --job that is not there (``crawlog jobs`` lists them all)."""
STOP_GRACE_S = 5.0
"""A crawl's console stopped with SIGTERM is SIGKILLed if still running after this."""


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
    "--beside-crawl",
    is_flag=True,
    hidden=True,
    help="Started by `crawl --console`: the job may not be stored yet, the crawl stores it.",
)
@click.option(
    "--user",
    default=default_operator,
    show_default="the OS user",
    metavar="NAME",
    help="Who actions are recorded as (NAME@console) when the login names nobody "
    "(add &as=NAME to the printed URL to log in as NAME).",
)
def console_command(
    job: str | None, data_dir: Path | None, host: str, port: int, beside_crawl: bool, user: str
) -> None:
    """Serve a web page to watch a job and act on it: progress, sites with pause and
    resume, every task's story with retry, what needs a person, dead letters.

    Prints the URL to open, with a token: every page and action needs it, from this
    machine too (the URL logs the browser in). Every action is an event with who (the
    name given at login with &as=NAME, else --user; as NAME@console) and why, as with
    `crawlog pause`, `resume` and `retry`.
    """
    die_with_parent()  # started by `crawlog crawl --console`: it goes when the crawl goes
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
    if job is not None and not beside_crawl:
        anyio.run(_check_job_is_there, settings.data_dir, settings.redis_url, job)
    sock = bind_socket(host, port)
    click.echo(f"{URL_PREFIX}{url_of(sock, settings.token)}")
    if not is_loopback_address(sock.getsockname()[0]):
        click.echo("listening beyond this machine: keep that URL to yourself")
    click.echo(f"add &as=NAME to it to act as NAME (else {user}); Ctrl-C to stop", err=True)
    try:
        anyio.run(serve, settings, sock)
    finally:
        sock.close()


async def _check_job_is_there(data_dir: Path, redis_url: str, job: str) -> None:
    """``ConfigError`` naming the jobs there are, unless ``job`` is one of those the
    console's home page would list (``crawlog jobs``'s: on the server or projected)."""
    from crawler.ops import read_job_rows
    from eventlog import did_you_mean

    try:
        known = [row.job for row in await read_job_rows(data_dir, redis_url)]
    except CrawlogError:
        return  # no server to ask: the console says so on its pages, as it did
    if job in known:
        return
    there = (
        f"the jobs here: {', '.join(known[:JOBS_NAMED])}{', …' if len(known) > JOBS_NAMED else ''}"
        if known
        else "no job here yet"
    )
    raise ConfigError(
        f"no job {job!r} here{did_you_mean(job, known)} ({there}): `crawlog jobs` lists them, "
        "`crawlog console` without --job opens them all"
    )


@contextmanager
def console_of_crawl(redis_url: str, data_dir: Path, job: str, *, port: int) -> Iterator[str]:
    """``crawlog console --job JOB`` running beside a crawl until the block ends; the login
    URL it printed (token included) is printed as ``console: URL`` and given, once it
    listens.

    The child gets the crawl's pid (``_lifeline``): a SIGKILLed crawl takes it along. Being
    in the crawl's process group, it also gets the terminal's Ctrl-C and stops at once.
    """
    command = crawlog_command(
        "console", "--job", job, "--data-dir", str(data_dir), "--port", str(port), "--beside-crawl"
    )
    env = {**os.environ, "REDIS_URL": redis_url, PARENT_ENV: str(os.getpid())}
    child = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()  # the URL, printed once it is bound (or EOF)
        if not first.startswith(URL_PREFIX):
            child.wait()
            raise ConfigError(f"the console did not start (exit status {child.returncode})")
        address = first.removeprefix(URL_PREFIX).strip()
        click.echo(f"console: {address}")
        yield address
    finally:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if child.stdout is not None:
            child.stdout.close()
