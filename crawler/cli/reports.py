"""``crawlog report``, ``crawlog sql`` and ``crawlog export``: read what the projector committed.

None of them needs Redis or the projector's lock: they read the committed archive and state
through an in-memory DuckDB connection (``projector._views``), so they work while a
crawl and its projector run. ``docs/reports.md`` documents the views.
"""

from __future__ import annotations

import csv
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from numbers import Number
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
import msgspec

from crawler.cli._options import data_dir_option, job_option, json_option
from crawler.ops import table_lines
from eventlog import (
    DEFAULT_LEASE_MS,
    FIRST_RUN,
    AnyEvent,
    ConfigError,
    CrawlogError,
    did_you_mean,
    require_data_dir,
    resolve_data_dir,
)
from projector import EXPORT_FORMATS, EXPORT_WHAT, ExportFormat, ExportWhat

if TYPE_CHECKING:
    from eventlog import ProjectorHolder
    from projector import Feed, ItemTally, PostgresFeed, QueryResult, Store

DEFAULT_LEASE_S = DEFAULT_LEASE_MS / 1000
FOLLOW_EVERY_S = 1.0
"""How often a feed looks for more: the projector commits about once a second."""
STDOUT = "-"
NULL = "NULL"
SqlFormat = Literal["table", "csv", "json"]


def _store(data_dir: Path | None, job: str) -> Store:
    from projector import Store, job_dir, projected_jobs

    directory = resolve_data_dir(data_dir)
    if not job_dir(directory, job).is_dir() and (elsewhere := _archive_elsewhere(job)):
        raise ConfigError(elsewhere)
    directory = require_data_dir(data_dir, job=job)  # where the data is not, say so
    if not job_dir(directory, job).is_dir():
        # Not "is the projector running?": most often the name is mistyped.
        known = projected_jobs(directory)
        raise ConfigError(
            f"no job {job!r} has data under {directory}{did_you_mean(job, known)}: "
            "`crawlog jobs` lists the jobs; for a job crawled elsewhere, give its --data-dir; "
            "for one whose projector never ran (a Scrapy job with CRAWLOG_PROJECT off), "
            f"`crawlog project --job {job} --once` builds its data"
        )
    return Store(directory, job)


def _archive_elsewhere(job: str) -> str | None:
    """Where ``job``'s archive is, when ``REDIS_URL``'s server has the job and this machine
    none of its data (a second machine that can ``status`` it): one line saying how to
    report it. None without ``REDIS_URL``, or when its server cannot tell."""
    import os

    import anyio

    from eventlog import REDIS_URL_ENV, JobKeys, connect, job_exists, last_committer

    url = os.environ.get(REDIS_URL_ENV)
    if not url:
        return None

    async def read() -> tuple[bool, ProjectorHolder | None]:
        keys = JobKeys(job)
        async with connect(url) as client:
            if not await job_exists(client, keys):
                return False, None
            return True, await last_committer(client, keys)

    try:
        exists, committer = anyio.run(read)
    except CrawlogError:
        return None  # the usual message says where the data was looked for
    if not exists:
        return None
    here = f"no data for job {job!r} on this machine: `crawlog status --job {job}` shows its "
    if committer is None:
        return (
            here + "progress from the server; no projector has committed it yet, "
            f"`crawlog project --job {job}` here would build its data for report, sql and export"
        )
    return (
        here + "progress from the server; report, sql and export read the archive its "
        f"projector writes ({committer.describe()}): run them on host {committer.host} with "
        f"--data-dir {committer.data_dir}"
    )


def _stored_lease_s(job: str, data_dir: Path | None) -> float:
    """The lease the job was crawled with (``--lease`` of its crawl, kept with the job in
    its server); ``DEFAULT_LEASE_S``, said on stderr, if the server cannot tell. A report
    starts no server: a private one that is not running is not asked."""
    import anyio

    from crawler._job import load_config
    from crawler.cli._report_person import server_url
    from eventlog import JobKeys, connect

    async def read(url: str) -> float:
        async with connect(url) as client:
            return (await load_config(client, JobKeys(job))).lease_ms / 1000

    try:
        return anyio.run(read, server_url(job, data_dir))
    except CrawlogError as exc:
        click.echo(
            f"crawlog: warning: the job's lease is unknown ({exc}): stuck means silent for "
            f"{DEFAULT_LEASE_S:g} s (--lease S to say otherwise)",
            err=True,
        )
        return DEFAULT_LEASE_S


@click.command(
    "report", epilog="Example:  crawlog report --job books --lease 60 --data-dir ~/crawls"
)
@job_option
@data_dir_option
@json_option
@click.option(
    "--lease",
    "lease_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="S",
    help="Lease in seconds: a running task silent for longer is reported as stuck "
    f"[default: the job's own lease, or {DEFAULT_LEASE_S:g} if its server cannot be asked].",
)
def report_command(job: str, data_dir: Path | None, as_json: bool, lease_s: float | None) -> None:
    """Report a job's progress: tasks, sites, throughput, failures, recoveries, anomalies.

    Reads what the projector committed, so it works while the crawl runs; it is as recent
    as the projector's last commit.
    """
    from crawler.cli._report_person import waiting_for_a_person, waiting_json
    from crawler.cli._report_text import format_report
    from crawler.ops import needs_a_person_lines
    from projector import build_report, files_warning

    store = _store(data_dir, job)
    warning = files_warning(store)
    if warning:
        click.echo(f"crawlog: warning: {warning}", err=True)
    if lease_s is None:
        lease_s = _stored_lease_s(job, data_dir)
    report = build_report(store, lease_s=lease_s, now=time.time())
    revisits, items = _read_log(
        store, resolve_data_dir(data_dir), revisits=not as_json, items=_maybe_recrawled(store)
    )
    if items is not None and items.runs > FIRST_RUN:
        report = msgspec.structs.replace(report, items_over_runs=items)
    waiting = waiting_for_a_person(job, data_dir, store)
    if as_json:
        body = {**msgspec.to_builtins(report), "needs_a_person": waiting_json(waiting)}
        click.echo(msgspec.json.format(msgspec.json.encode(body)).decode())
    else:
        click.echo(format_report(report), nl=False)
        if revisits:
            click.echo(revisits)
        tails = {w.task_id: w.flow for w in waiting or () if w.flow is not None}
        waits = [(w.task_id, w.waits_on) for w in waiting or ()]
        for line in needs_a_person_lines(job, waits, tails):
            click.echo(line)


def _maybe_recrawled(store: Store) -> bool:
    """Whether the job may have been run more than once, as the projector's figures say
    (`FetchFigures.recrawled`); True where they do not say (committed before they did)."""
    summary = store.read_manifest().summary
    figures = summary.fetches if summary is not None else None
    return figures is None or figures.recrawled is not False


def _read_log(
    store: Store, directory: Path, *, revisits: bool, items: bool
) -> tuple[str, ItemTally | None]:
    """What the report takes from the committed archive read whole, in one pass: its line
    on revisits (the pages due now, if ``revisits``) and the job's items over its runs (if
    ``items``); nothing read for neither. An archive too long to read gives a line saying
    so and no items; one with a committed file that cannot be read, neither (the warning
    above said so)."""
    import anyio

    from crawler.cli._revisit_text import due_line, due_of, stored_policy, too_long_to_scan
    from projector import ItemTallyFold, RevisitPolicy, archived_entries

    if not (revisits or items):
        return "", None
    skipped = too_long_to_scan(store)
    if skipped is not None:
        return skipped, None
    now = time.time()
    policy = anyio.run(stored_policy, store.job, directory) if revisits else RevisitPolicy()
    fold = ItemTallyFold() if items else None

    def events() -> Iterator[AnyEvent]:
        for entry in archived_entries(store, store.read_manifest()):
            if fold is not None:
                fold.add(entry)
            yield entry.event

    try:
        if revisits:
            line = due_line(due_of(events(), policy, now), now)
        else:
            line = ""
            for _ in events():
                pass
        return line, None if fold is None else fold.tally()
    except CrawlogError:
        return "", None


@click.command(
    "sql",
    epilog='Example:  crawlog sql --job books "SELECT site, count(*) FROM pages GROUP BY site"',
)
@job_option
@data_dir_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="Output: an aligned table, CSV with a header, or a JSON array of objects.",
)
@click.option(
    "--unsafe",
    is_flag=True,
    help="Run the query with the full DuckDB: writing (COPY, ATTACH...), reading any file.",
)
@click.argument("sql")
def sql_command(job: str, data_dir: Path | None, fmt: SqlFormat, unsafe: bool, sql: str) -> None:
    """Run a read-only DuckDB SQL query over the job's views.

    Views: events, pages, items (a column per item field: SELECT url, title FROM items),
    item_events (each item in its envelope: key, task_id, data, worker, times), tasks,
    sites, anomalies, job (docs/reports.md lists their columns). Works while the crawl
    runs, on what the projector last committed. Only reading statements run, and they see
    the job's views and nothing else on the machine (no other file, no network, no
    extension) unless --unsafe is given.
    """
    from projector import query

    result = query(_store(data_dir, job), sql, unsafe=unsafe)
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(result.rows)
    elif fmt == "json":
        rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
        click.echo(msgspec.json.encode(rows, enc_hook=str).decode())
    elif result.columns:
        click.echo(format_table(result))


def format_table(result: QueryResult) -> str:
    """A query result as an aligned text table: numbers right-aligned, NULL for nulls."""
    cells = [[_cell(v) for v in row] for row in result.rows]
    right = [
        bool(result.rows)
        and all(isinstance(row[i], Number) for row in result.rows if row[i] is not None)
        for i in range(len(result.columns))
    ]
    lines = table_lines([result.columns, *cells], right, rule=True)
    count = len(result.rows)
    lines.append(f"({count} row{'s' if count != 1 else ''})")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return NULL
    # One row, one line: a value's own line breaks would break the table.
    return " ".join(str(value).split("\n"))


@click.command(
    "export",
    epilog="Example:  crawlog export --job books --what pages --format csv pages.csv\n\n"
    "A feed:   crawlog export --job books --what items --format jsonl --follow items.jsonl\n\n"
    "Into PostgreSQL:  crawlog export --job books --what items "
    "--to postgresql://crawlog@db.example:5432/shop --table books --follow",
)
@job_option
@data_dir_option
@click.option(
    "--what", type=click.Choice(EXPORT_WHAT), required=True, help="Every fetch, or the items."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default=None,
    help="JSON lines, Parquet or CSV with a header (for OUT).",
)
@click.option(
    "--to",
    "to_url",
    metavar="URL",
    default=None,
    help="Items into PostgreSQL instead of OUT: postgresql://USER@HOST:PORT/DB, with --table; "
    "a row per item key, each written once, resuming after a kill (docs/reports.md).",
)
@click.option(
    "--table",
    metavar="T",
    default=None,
    help="With --to: the table, T or SCHEMA.T (made if missing, a column per item field).",
)
@click.option(
    "--with-meta",
    is_flag=True,
    help="Items in their envelope (key, task_id, worker, times, the item as data) rather "
    "than as the spider wrote them.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Keep going: append what the projector commits, each row once, resuming after a "
    "kill from OUT.position (Ctrl-C or SIGTERM stops it).",
)
@click.option(
    "--changes",
    "item_changes",
    is_flag=True,
    help="With --follow --what items: feed each item a run added, changed or removed "
    "(crawlog recrawl), once, rather than each item (docs/recrawls.md).",
)
@click.option(
    "--until-done",
    is_flag=True,
    help="With --follow: stop once every task of the job has ended and all is written.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.05, 3600),
    default=FOLLOW_EVERY_S,
    show_default=True,
    metavar="S",
    help="With --follow: seconds between looks at what the projector committed.",
)
@click.argument("out", metavar="[OUT]", required=False)
def export_command(
    job: str,
    data_dir: Path | None,
    what: ExportWhat,
    fmt: ExportFormat | None,
    to_url: str | None,
    table: str | None,
    with_meta: bool,
    follow: bool,
    item_changes: bool,
    until_done: bool,
    interval: float,
    out: str | None,
) -> None:
    """Export every page fetch (duplicates included) or every item (one per key) to OUT.

    Rows are in log order. OUT "-" writes JSON lines or CSV to stdout. Items are written
    as the spider wrote them (CSV and Parquet: a column per item field), or with
    --with-meta in their envelope. With --follow, OUT is a feed (docs/reports.md): rows are
    appended as the projector commits them, and the command run again after a kill goes
    on where it stopped (Parquet: OUT is a directory of part files). With --to and
    --table, items go into a PostgreSQL table instead, one row per key, the feed's
    position kept in the database with them.
    """
    from projector import CHANGES_FED, Feed, export

    if until_done and not follow:
        raise ConfigError("--until-done goes with --follow")
    if item_changes and (not follow or what != "items" or with_meta or to_url is not None):
        raise ConfigError(
            "--changes is a feed into a file: give --follow --what items and OUT (a change "
            "is written in its envelope: no --with-meta)"
        )
    if with_meta and what != "items":
        raise ConfigError("--with-meta goes with --what items (a page's row is all meta)")
    if to_url is not None or table is not None:
        _check_postgres_options(what, to_url, table, fmt, with_meta, out)
        assert to_url is not None and table is not None
        _export_to_postgres(
            _store(data_dir, job), to_url, table, follow=follow, until_done=until_done,
            every=interval,
        )  # fmt: skip
        return
    if fmt is None or out is None:
        raise ConfigError(
            "give --format jsonl|parquet|csv and OUT (a file, or - for stdout), or --to "
            "postgresql://USER@HOST:PORT/DB --table T"
        )
    store = _store(data_dir, job)
    if follow:
        if out == STDOUT:
            raise ConfigError("--follow writes a file and its position beside it: give OUT, not -")
        _follow(
            Feed(
                store,
                what=CHANGES_FED if item_changes else what,
                fmt=fmt,
                out=Path(out),
                with_meta=with_meta,
            ),
            until_done=until_done,
            every=interval,
        )
        return
    if out != STDOUT:
        rows = export(store, what=what, fmt=fmt, out=Path(out), with_meta=with_meta)
        click.echo(f"exported {rows:,} {what} to {out}")
        return
    if fmt == "parquet":
        raise CrawlogError("Parquet is binary: give a file name as OUT, not -")
    # DuckDB writes to files only: export to a temporary one, then copy it to stdout.
    with tempfile.TemporaryDirectory(prefix="crawlog-export-") as tmp:
        path = Path(tmp) / f"{what}.{fmt}"
        export(store, what=what, fmt=fmt, out=path, with_meta=with_meta)
        with path.open("rb") as source:
            shutil.copyfileobj(source, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def _check_postgres_options(
    what: ExportWhat,
    to_url: str | None,
    table: str | None,
    fmt: ExportFormat | None,
    with_meta: bool,
    out: str | None,
) -> None:
    """Refuse what ``export --to URL --table T`` does not take."""
    if to_url is None or table is None:
        raise ConfigError("--to and --table go together: --to postgresql://... --table T")
    for given, name in ((fmt, "--format"), (out, "OUT"), (with_meta or None, "--with-meta")):
        if given is not None:
            raise ConfigError(
                f"{name} is for a file: --to writes a table, whose columns are the item's "
                "key, data and meta and a column per field"
            )
    if what != "items":
        raise ConfigError("--to feeds items, a row per key: give --what items")
    from projector import postgres_target

    postgres_target(to_url, table)  # a URL or a name that cannot be used, said first


def _export_to_postgres(
    store: Store, to_url: str, table: str, *, follow: bool, until_done: bool, every: float
) -> None:
    """The job's items into the table: everything committed now, or ``follow``ing."""
    from projector import PostgresFeed

    feed = PostgresFeed(store, url=to_url, table=table)
    try:
        if follow:
            _follow(feed, until_done=until_done, every=every)
            return
        feed.open()
        written = feed.poll(need_data=True)
        click.echo(
            f"exported {written:,} {feed.unit} to {feed.name} ({feed.position.rows:,} in all, "
            f"log position {feed.position.stream_id})"
        )
    finally:
        feed.close()


def _follow(feed: Feed | PostgresFeed, *, until_done: bool, every: float) -> None:
    """Run ``feed`` until Ctrl-C or SIGTERM (or, ``until_done``, the job's end), a line on
    stderr per batch of rows written and one when it stops."""
    from projector import Feed, position_path

    if isinstance(feed, Feed):
        out: Path | str = feed.out
        kept = f"position in {position_path(feed.out)}"
    else:
        out = feed.name
        kept = f"position in its table {feed.positions_table}"
    position = feed.open()
    stop = threading.Event()

    def stopping(signum: int, frame: object) -> None:
        stop.set()

    # Between batches only: a batch is written and recorded whole, or not at all.
    previous = {sig: signal.signal(sig, stopping) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if position.rows:
            click.echo(f"feed {out}: resuming after {position.rows:,} {_unit(feed)}", err=True)
        while not stop.is_set():
            ended = until_done and feed.job_ended()
            if written := feed.poll(stop.is_set):
                click.echo(
                    f"feed {out}: {feed.position.rows:,} {_unit(feed)} (+{written:,}), "
                    f"log position {feed.position.stream_id}",
                    err=True,
                )
            if ended and not stop.is_set():
                break
            stop.wait(every)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    why = "the job ended" if not stop.is_set() else "stopped"
    click.echo(f"feed {out}: {why}; {feed.position.rows:,} {_unit(feed)} written, {kept}", err=True)


def _unit(feed: Feed | PostgresFeed) -> str:
    """What a row the feed writes is (a PostgreSQL feed of a recrawled job writes item
    changes, once its first look found the job recrawled)."""
    from projector import Feed

    return feed.what if isinstance(feed, Feed) else feed.unit


def register_report_commands(group: click.Group) -> None:
    """Add ``report``, ``sql`` and ``export`` to the ``crawlog`` group."""
    for command in (report_command, sql_command, export_command):
        group.add_command(command)
