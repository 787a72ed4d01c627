"""The ``crawlog`` command line.

Each subcommand is one function; groups (``server``, later ``crawl``, ``worker``, ``report``...)
hang off the top-level :data:`cli` group, and options that several commands share are
defined once below. Errors crawlog raises on purpose (:class:`CrawlogError`) are printed as
one line, ``crawlog: error: <message>``, with exit status 2; the traceback only with
``--debug``.

The command tree is built at import, but each command imports its machinery (the worker's
HTTP clients, Prometheus, Arrow, DuckDB...) in its body, and the defaults its options show
come from ``_defaults``: a worker started as ``crawlog worker`` pays for this module's
imports, and its start-up time is part of how fast a restarted worker resumes (a crawl
forks its workers, which have it all already, see ``_fork``).
``tests/crawler/cli/test_cli_startup.py`` keeps it so.

Exit status: 0 success, 1 "no" answers (e.g. ``server status`` when nothing runs), 2 errors,
141 when the reader of stdout went away (``crawlog export ... - | head``): silently, with the
status a Unix tool killed by SIGPIPE has, so ``set -o pipefail`` sees an output cut short.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Sequence
from importlib import metadata
from typing import IO, Any

import click

from crawler.cli._exit import EXIT_BROKEN_PIPE, EXIT_DISK_FULL, EXIT_ERROR, EXIT_STORE_LOST
from crawler.cli._logs import LOG_FORMATS, LogFormat, configure_logging
from crawler.cli._settings import ConfigFile, bind, config_path, export_redis_url, load_file
from crawler.cli._unwritable import exit_status, said_by_the_crawl
from crawler.cli.changes import changes_command
from crawler.cli.config import (
    CONFIG_META,
    REDIS_FROM_FILE_META,
    add_setting_options,
    config_command,
)
from crawler.cli.console import console_command
from crawler.cli.cookies import cookies_command
from crawler.cli.crawl import crawl_command, enqueue_command, worker_command
from crawler.cli.dead import dead_group
from crawler.cli.demo import demo_command
from crawler.cli.evidence import evidence_command
from crawler.cli.history import history_command
from crawler.cli.jobs import jobs_command
from crawler.cli.pause import pause_command, resume_command
from crawler.cli.projector import project_command, repair_command, replay_command
from crawler.cli.recrawl import recrawl_command
from crawler.cli.reports import register_report_commands
from crawler.cli.resolve import resolve_command
from crawler.cli.restore import restore_command
from crawler.cli.retry import retry_command
from crawler.cli.server import server
from crawler.cli.sessions import sessions_command
from crawler.cli.shell import shell_command
from crawler.cli.status import status_command
from crawler.cli.testsite import testsite_command
from crawler.cli.workers import workers_command
from eventlog import CrawlogError, ServerCannotPersist, StoreLost, group_lost

HELP_OPTIONS = ("-h", "--help")
"""What asks any command for its help."""

# --- errors -----------------------------------------------------------------------------------


class _ReportedError(click.ClickException):
    """A crawlog error, shown as one line on stderr."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, *, debug: bool) -> None:
        # A message must stay one line: scripts and logs read stderr line by line.
        super().__init__(" ".join(message.split("\n")))
        self.debug = debug

    def show(self, file: IO[Any] | None = None) -> None:
        if self.debug and self.__cause__ is not None:
            traceback.print_exception(self.__cause__)
        click.echo(f"crawlog: error: {self.message}", err=True)


class _CrawlogGroup(click.Group):
    """The top-level group: reads crawlog.toml, turns exceptions into one-line messages."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The context, with crawlog.toml as its ``default_map`` (see ``_settings``)."""
        try:
            file = load_file()
            add_setting_options(config_command, self)
            extra.setdefault("default_map", bind(self, file))
            from_file = export_redis_url(file)
        except CrawlogError as exc:
            if not _asks_for_help(args):
                # Before any parsing, so there is no --debug yet: a config error is one line.
                raise _ReportedError(str(exc), debug=False) from exc
            # Help reads no setting: a broken file must not hide how to use crawlog.
            file = ConfigFile(path=config_path(), values={}, exists=False)
            extra.setdefault("default_map", bind(self, file))
            from_file = False
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[CONFIG_META] = file
        ctx.meta[REDIS_FROM_FILE_META] = from_file
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            # Output a command left buffered must meet a closed pipe here, not at exit.
            sys.stdout.flush()
            return result
        except BrokenPipeError:
            raise _reader_gone() from None
        except CrawlogError as exc:
            raise _reported(exc, debug=bool(ctx.params.get("debug"))) from exc
        except BaseExceptionGroup as group:
            # Task groups wrap what their tasks raise; a crawlog error inside is still ours.
            if group.split(BrokenPipeError)[0] is not None:
                raise _reader_gone() from None
            crawlog_errors, _ = group.split(CrawlogError)
            if crawlog_errors is not None:
                first = _first_leaf(crawlog_errors)
                raise _reported(first, debug=bool(ctx.params.get("debug"))) from first
            if ctx.params.get("debug") or not isinstance(group, Exception):
                raise
            leaf = _first_leaf(group)
            if isinstance(leaf, OSError) and leaf.errno == errno.ENOSPC:
                raise _disk_full(leaf) from group
            if (lost := group_lost(leaf, "the command ran")) is not None:
                raise _reported(lost, debug=False) from group
            raise _internal_error(leaf) from group
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                raise _disk_full(exc) from exc
            # A NOGROUP that no call translated on its way up: the store lost the job all
            # the same, and the user is told what to run, not that crawlog failed.
            if (lost := group_lost(exc, "the command ran")) is not None:
                raise _reported(lost, debug=False) from exc
            raise _internal_error(exc) from exc


def _asks_for_help(args: list[str]) -> bool:
    """Whether this command line only shows help (none of its commands runs)."""
    options = args[: args.index("--")] if "--" in args else args
    return not args or any(arg in HELP_OPTIONS for arg in options)


def _reported(exc: BaseException, *, debug: bool) -> click.ClickException | click.exceptions.Exit:
    if isinstance(exc, ServerCannotPersist) and said_by_the_crawl() and not debug:
        # Every process of the crawl meets the same refusal: the crawl says it, once.
        return click.exceptions.Exit(exit_status(exc))
    if isinstance(exc, StoreLost) and said_by_the_crawl() and not debug:
        # Every process of the crawl meets the same loss: the crawl says it, once.
        return click.exceptions.Exit(EXIT_STORE_LOST)
    return _ReportedError(str(exc), debug=debug)


def _disk_full(exc: OSError) -> click.ClickException | click.exceptions.Exit:
    if said_by_the_crawl():
        # A process of a crawl (a projector started once the disk had filled): the crawl
        # says it once, for all of them.
        return click.exceptions.Exit(EXIT_DISK_FULL)
    where = f" writing {exc.filename}" if exc.filename else ""
    return _ReportedError(
        f"no space left on the device{where}: free some space on that disk (see `df -h`), "
        "then run the same command again to carry on",
        debug=False,
    )


def _reader_gone() -> click.exceptions.Exit:
    # Python ignores SIGPIPE, so a write to a pipe nobody reads raises instead of killing the
    # process. Point stdout at /dev/null: the interpreter's last flush at exit must not fail
    # again (it would print "Exception ignored ... BrokenPipeError").
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return click.exceptions.Exit(EXIT_BROKEN_PIPE)


def _internal_error(exc: BaseException) -> _ReportedError:
    return _ReportedError(
        f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
        "traceback, and please report it)",
        debug=False,
    )


def _first_leaf(group: BaseExceptionGroup[Any]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _version() -> str:
    try:
        return metadata.version("crawlog")
    except metadata.PackageNotFoundError:
        return "unknown"


def _show_version(ctx: click.Context, _param: click.Parameter, asked: bool) -> None:
    """``--version``, as ``click.version_option`` says it; the version is looked up only
    when asked (a look-up searches every installed distribution: a share of each start)."""
    if asked and not ctx.resilient_parsing:
        click.echo(f"crawlog, version {_version()}")
        ctx.exit()


# --- crawlog ----------------------------------------------------------------------------------


@click.group(
    "crawlog",
    cls=_CrawlogGroup,
    context_settings={"help_option_names": list(HELP_OPTIONS)},
    epilog="Example:  crawlog server start",
)
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and exit.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="human",
    show_default=True,
    help="Logs as text lines, or one JSON object per line (this process and those it starts).",
)
def cli(debug: bool, log_format: LogFormat) -> None:
    """crawlog: a crawler whose progress is an event log.

    Settings come from flags, CRAWLOG_* environment variables and ./crawlog.toml, in that
    order of precedence: `crawlog config` shows them (docs/configuration.md).
    """
    configure_logging(log_format)


cli.add_command(server)
cli.add_command(config_command)
cli.add_command(demo_command)
cli.add_command(testsite_command)
cli.add_command(crawl_command)
cli.add_command(recrawl_command)
cli.add_command(changes_command)
cli.add_command(worker_command)
cli.add_command(enqueue_command)
cli.add_command(project_command)
cli.add_command(replay_command)
cli.add_command(restore_command)
cli.add_command(repair_command)
cli.add_command(status_command)
cli.add_command(jobs_command)
cli.add_command(shell_command)
register_report_commands(cli)
# The operator commands (``_operator`` is what they share).
for _command in (
    pause_command, resume_command, retry_command, resolve_command, dead_group,
    history_command, evidence_command, workers_command, cookies_command, sessions_command,
    console_command,
):  # fmt: skip
    cli.add_command(_command)


# --- entry point ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``crawlog`` command line (the console script's entry point)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="crawlog")
