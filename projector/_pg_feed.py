"""``crawlog export --what items --to postgresql://... --table T [--follow]``: a job's items
in a PostgreSQL table, one row per item key, each written once across kills.

The feed reads what the projector committed (the ``item_events`` view, as the file feed
`projector._feed` does) after its position, and upserts it into the table: one row per key
(``INSERT ... ON CONFLICT (key) DO UPDATE``), laid out as `projector._pg_columns` says.

**Its position lives in PostgreSQL**, in the table ``crawlog_feed_positions`` of the target
table's schema, one row per job and table: the last stream ID written, the rows, and which
column each item field goes into. Each batch is one transaction that locks the position
row, reads it, adds the columns new fields need, upserts the rows and moves the position:
all of it commits, or none of it. A feed killed at any point (SIGKILL included) loses its
open transaction with its connection, and the same command run again goes on from the
position that committed: every item exactly once. Two feeds of one job into one table wait
for each other on the position row, and neither writes an item twice.

Several jobs may feed one table (a position each): a key already there is updated to the
later write, its meta columns and the feeding job's field columns.

psycopg (``pip install 'crawlog[postgresql]'``) is imported by `PostgresFeed` only: no worker
or other command loads it. Its errors become `FeedDatabaseError` (or `ConfigError`, for a
URL or a table that cannot be used), one line that says what to do.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

import msgspec

from eventlog import ConfigError, CrawlogError
from projector._feed import FEED_BATCH, after_position, job_ended
from projector._item_changes import (
    SUB_SEQ,
    ItemChange,
    ItemChangeFold,
    changes_after,
    recrawled,
)
from projector._pg_columns import (
    CREATED_META,
    MAX_IDENTIFIER_BYTES,
    META_COLUMNS,
    cell,
    plan_columns,
    scrub,
    shape_problem,
)
from projector._store import Store
from projector._views import ITEM_EVENTS, Committed, NoProjectedData, run_on_committed

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

POSITIONS_TABLE: Final = "crawlog_feed_positions"
"""The feeds' positions, one row per job and table, in the schema of the table fed."""
CONNECT_TIMEOUT_S: Final = 10
SCHEMES: Final = ("postgresql://", "postgres://")
URL_SHAPE: Final = "postgresql://USER[:PASSWORD]@HOST:PORT/DB"
APPLICATION_NAME: Final = "crawlog export"
"""How the feed's connection shows in ``pg_stat_activity``."""
_SELECT: Final = "SELECT key, task_id, data, worker, epoch_s, stream_id FROM {view} WHERE {after}"


class FeedDatabaseError(CrawlogError):
    """The PostgreSQL database a feed writes to cannot be reached, or refused its writes:
    nothing of the batch in hand was written; the same command goes on once it can."""


class PostgresPosition(msgspec.Struct, kw_only=True):
    """Where a PostgreSQL feed is: its row of ``crawlog_feed_positions``."""

    stream_id: str = "0-0"
    rows: int = 0
    fields: list[tuple[str, str]] = msgspec.field(default_factory=list)
    """Each item field with a column, and that column, in the order they were added."""


def _psycopg() -> ModuleType:
    try:
        import psycopg
    except ImportError:
        raise ConfigError(
            "feeding PostgreSQL needs psycopg: pip install 'crawlog[postgresql]'"
        ) from None
    return psycopg


def describe_url(url: str) -> str:
    """``url`` without its password, as messages show it: ``USER@HOST:PORT/DB``; a
    ConfigError if it is not a PostgreSQL URL."""
    if not url.startswith(SCHEMES):
        raise ConfigError(f"--to {url!r} is not a PostgreSQL URL: give {URL_SHAPE}")
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except _psycopg().ProgrammingError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(
            f"--to is not a usable PostgreSQL URL ({reason}): give {URL_SHAPE}"
        ) from None
    port = str(parts.get("port") or "5432")
    if not all(p.isdigit() for p in port.split(",")):
        raise ConfigError(f"--to has the port {port!r}, not a number: give {URL_SHAPE}")
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"{user}{parts.get('host') or 'localhost'}:{port}/{parts.get('dbname') or ''}"


def parse_table(name: str) -> tuple[str | None, str]:
    """``--table`` as (schema or None, table): ``T`` or ``SCHEMA.T``, each kept exactly."""
    parts = name.split(".")
    if len(parts) > 2 or any(
        not part or "\x00" in part or len(part.encode()) > MAX_IDENTIFIER_BYTES for part in parts
    ):
        raise ConfigError(
            f"--table {name!r} is not a table name: give T or SCHEMA.T, each at most "
            f"{MAX_IDENTIFIER_BYTES} bytes"
        )
    return (parts[0] if len(parts) == 2 else None), parts[-1]


def postgres_target(url: str, table: str) -> str:
    """What ``--to URL --table T`` names, as messages say it (``table T of USER@HOST:PORT/DB``,
    no password); a ConfigError for a URL or a table name that cannot be used, or without
    psycopg."""
    _psycopg()
    parse_table(table)
    return f"table {table} of {describe_url(url)}"


class PostgresFeed:
    """The feed of ``store``'s items into the table ``table`` of the database at ``url``.

    `open` connects, makes or checks the table and reads the position; `poll` writes what
    was committed since; `job_ended` says whether every task has ended; `close`.
    """

    what: Final = "items"

    def __init__(self, store: Store, *, url: str, table: str) -> None:
        self.name = postgres_target(url, table)
        """What the feed writes to, as its messages say."""
        self.store, self.url, self.table = store, url, table
        self.schema, self.table_name = parse_table(table)
        self.positions_table = ".".join([*([self.schema] if self.schema else []), POSITIONS_TABLE])
        """Where its position is kept, in the same database."""
        self.position = PostgresPosition()
        self._con: psycopg.Connection[Any] | None = None
        self._changes: ItemChangeFold | None = None
        """Set once the job is found recrawled: the feed follows its item changes."""

    @property
    def unit(self) -> str:
        """What a row it writes is: an item, or a run's change to one."""
        return "items" if self._changes is None else "item changes"

    def _ident(self, name: str) -> sql.Identifier:
        from psycopg import sql

        return sql.Identifier(*([self.schema] if self.schema else []), name)

    @property
    def con(self) -> psycopg.Connection[Any]:
        assert self._con is not None, "open the feed first"
        return self._con

    def open(self) -> PostgresPosition:
        """Connect, make the table (and the positions table) if missing or check that it
        can take the feed, and read the position (a new one starts at the beginning)."""
        psycopg = _psycopg()
        with self._driver_errors("connecting to"):
            self._con = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name=APPLICATION_NAME,
            )
        with self._driver_errors("preparing"), self.con.transaction(), self.con.cursor() as cur:
            self._create_tables(cur)
            self._check_shape(cur)
            self.position = self._lock_position(cur)
        return self.position

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def poll(self, stop: Callable[[], bool] = lambda: False, *, need_data: bool = False) -> int:
        """Write everything committed after the position, a transaction per batch; the
        rows written (0 while nothing is committed yet: NoProjectedData if ``need_data``).
        ``stop`` is asked between batches."""
        written = 0
        while not stop():
            try:
                count = run_on_committed(
                    self.store, self._batch, read_state=False, doing=f"feeding {self.name}"
                )
            except NoProjectedData:
                if need_data:
                    raise
                return written
            written += count
            if count < FEED_BATCH:
                return written
        return written

    def job_ended(self) -> bool:
        """Every task of the job (as the projector last committed it) has ended."""
        return job_ended(self.store)

    # --- in PostgreSQL ---------------------------------------------------------------------

    @contextmanager
    def _driver_errors(self, doing: str) -> Iterator[None]:
        """psycopg's errors as ours, one line that says what to do."""
        psycopg = _psycopg()
        try:
            yield
        except psycopg.OperationalError as exc:
            said = " ".join(str(exc).split())
            raise FeedDatabaseError(
                f"{doing} {self.name} failed ({said}): check the URL and that the server "
                "runs and lets this user in, then run the same command again"
            ) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise FeedDatabaseError(
                f"{doing} {self.name} was refused ({exc.diag.message_primary}): grant the "
                "user the right, or give a table it may write"
            ) from None
        except psycopg.Error as exc:
            said = exc.diag.message_primary or " ".join(str(exc).split())
            raise FeedDatabaseError(
                f"{doing} {self.name} failed ({said}); nothing of this batch was written: "
                "fix it and run the same command again"
            ) from None

    def _create_tables(self, cur: psycopg.Cursor[Any]) -> None:
        from psycopg import sql

        cur.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (job text NOT NULL, table_name text NOT NULL, "
                "stream_id text NOT NULL DEFAULT '0-0', rows bigint NOT NULL DEFAULT 0, "
                "fields jsonb NOT NULL DEFAULT '[]', updated timestamptz NOT NULL DEFAULT "
                "now(), PRIMARY KEY (job, table_name))"
            ).format(self._ident(POSITIONS_TABLE))
        )
        meta = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(kind))
            for name, kind in CREATED_META.items()
        )
        cur.execute("SELECT to_regclass(%s) IS NULL", (self._regclass(),))
        missing = cur.fetchone()
        cur.execute(
            sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(self._ident(self.table_name), meta)
        )
        positions = self._ident(POSITIONS_TABLE)
        if missing and missing[0]:
            # Made now, while positions may say rows were written to it: it was dropped
            # since, with those rows. Every feed of it starts again from the beginning.
            cur.execute(
                sql.SQL(
                    "UPDATE {} SET stream_id = '0-0', rows = 0, fields = '[]', updated = now() "
                    "WHERE table_name = %s"
                ).format(positions),
                (self.table_name,),
            )
        cur.execute(
            sql.SQL(
                "INSERT INTO {} (job, table_name) VALUES (%s, %s) ON CONFLICT DO NOTHING"
            ).format(positions),
            (self.store.job, self.table_name),
        )

    def _regclass(self) -> str:
        return self._ident(self.table_name).as_string(self.con)

    def _columns(self, cur: psycopg.Cursor[Any]) -> dict[str, str]:
        """The table's columns now: name → type."""
        cur.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (self._regclass(),),
        )
        return {str(name): str(kind) for name, kind in cur.fetchall()}

    def _check_shape(self, cur: psycopg.Cursor[Any]) -> None:
        cur.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = "
            "i.indrelid AND a.attnum = i.indkey[0] WHERE i.indrelid = %s::regclass AND "
            "i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS "
            "NULL AND a.attname = 'key')",
            (self._regclass(),),
        )
        row = cur.fetchone()
        problem = shape_problem(self._columns(cur), key_unique=bool(row and row[0]))
        if problem:
            raise ConfigError(
                f"{self.name} cannot take a feed of items: {problem}; give another --table "
                "(the feed makes a missing one), or change the table"
            )

    def _lock_position(self, cur: psycopg.Cursor[Any]) -> PostgresPosition:
        """The position, its row locked until the transaction ends."""
        from psycopg import sql

        cur.execute(
            sql.SQL(
                "SELECT stream_id, rows, fields FROM {} WHERE job = %s AND table_name = %s "
                "FOR UPDATE"
            ).format(self._ident(POSITIONS_TABLE)),
            (self.store.job, self.table_name),
        )
        row = cur.fetchone()
        if row is None:
            raise ConfigError(
                f"the position of job {self.store.job} in {POSITIONS_TABLE} was deleted while "
                "the feed ran: run the same command again (it starts over, updating the rows)"
            )
        fields = [(str(field), str(column)) for field, column in row[2]]
        return PostgresPosition(stream_id=str(row[0]), rows=int(row[1]), fields=fields)

    # --- one batch ---------------------------------------------------------------------------

    def _batch(self, committed: Committed) -> int:
        if self._changes is not None or recrawled(committed.con):
            self._changes = self._changes or ItemChangeFold()
            return self._changes_batch(committed, self._changes)
        with self._driver_errors("writing to"), self.con.transaction(), self.con.cursor() as cur:
            position = self._lock_position(cur)
            select = _SELECT.format(view=ITEM_EVENTS, after=after_position(position.stream_id))
            rows = committed.con.execute(
                f"{select} ORDER BY stream_ms, stream_seq LIMIT {FEED_BATCH}"
            ).fetchall()
            if not rows:
                self.position = position
                return 0
            items = [_item(str(row[2]) if row[2] is not None else "") for row in rows]
            fields, columns = self._fitted(cur, items, position)
            self._upsert(cur, rows, items, fields, columns)
            position = PostgresPosition(
                stream_id=str(rows[-1][5]), rows=position.rows + len(rows), fields=fields
            )
            self._record(cur, position)
        self.position = position
        return len(rows)

    def _fitted(
        self,
        cur: psycopg.Cursor[Any],
        items: list[tuple[dict[str, Any], str]],
        position: PostgresPosition,
    ) -> tuple[list[tuple[str, str]], dict[str, str]]:
        """The batch's fields with their columns (``plan_columns``), the columns the new
        fields need added to the table; and the table's columns then."""
        values: dict[str, list[Any]] = {}
        for item, _ in items:
            for field, value in item.items():
                values.setdefault(field, []).append(value)
        columns = self._columns(cur)
        fields, add = plan_columns(values, position.fields, columns)
        if add:
            self._add_columns(cur, add)
            columns = self._columns(cur)
        return fields, columns

    def _changes_batch(self, committed: Committed, fold: ItemChangeFold) -> int:
        """A recrawled job's next changes (whole log entries), as the table's rows: the
        last change of each key in the batch upserted, or its row deleted if removed."""
        with self._driver_errors("writing to"), self.con.transaction(), self.con.cursor() as cur:
            position = self._lock_position(cur)
            pending = changes_after(
                fold, self.store, committed.manifest, _after_entry(position.stream_id)
            )
            batch = _whole_entries(pending, FEED_BATCH)
            if not batch:
                self.position = position
                return 0
            latest = {change.key: change for change in batch}
            kept = [c for c in latest.values() if c.change != "removed"]
            rows = [
                (c.key, c.task_id, None, c.worker, c.time, _entry_of(c.stream_id)) for c in kept
            ]
            items = [_item(msgspec.json.encode(c.data).decode()) for c in kept]
            fields, columns = self._fitted(cur, items, position)
            if rows:
                self._upsert(cur, rows, items, fields, columns)
            if gone := [scrub(c.key) for c in latest.values() if c.change == "removed"]:
                self._delete(cur, gone)
            position = PostgresPosition(
                stream_id=_entry_of(batch[-1].stream_id),
                rows=position.rows + len(batch),
                fields=fields,
            )
            self._record(cur, position)
        self.position = position
        return len(batch)

    def _delete(self, cur: psycopg.Cursor[Any], keys: list[str]) -> None:
        from psycopg import sql

        cur.execute(
            sql.SQL("DELETE FROM {} WHERE key = ANY(%s)").format(self._ident(self.table_name)),
            (keys,),
        )

    def _add_columns(self, cur: psycopg.Cursor[Any], add: list[tuple[str, str]]) -> None:
        from psycopg import sql

        cur.execute(
            sql.SQL("ALTER TABLE {} {}").format(
                self._ident(self.table_name),
                sql.SQL(", ").join(
                    sql.SQL("ADD COLUMN IF NOT EXISTS {} {}").format(
                        sql.Identifier(column), sql.SQL(kind)
                    )
                    for column, kind in add
                ),
            )
        )

    def _upsert(
        self,
        cur: psycopg.Cursor[Any],
        rows: list[tuple[Any, ...]],
        items: list[tuple[dict[str, Any], str]],
        fields: list[tuple[str, str]],
        columns: dict[str, str],
    ) -> None:
        from psycopg import sql

        meta = [name for name in META_COLUMNS if name in columns]
        fed = [(field, column) for field, column in fields if column in columns]
        names = [*meta, *(column for _, column in fed)]
        statement = sql.SQL(
            "INSERT INTO {table} ({names}) VALUES ({values}) ON CONFLICT (key) DO UPDATE SET {set}"
        ).format(
            table=self._ident(self.table_name),
            names=sql.SQL(", ").join(map(sql.Identifier, names)),
            values=sql.SQL(", ").join(sql.Placeholder() * len(names)),
            set=sql.SQL(", ").join(
                sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(name))
                for name in names
                if name != "key"
            ),
        )
        params = []
        for (key, task_id, _, worker, epoch_s, stream_id), (item, data) in zip(
            rows, items, strict=True
        ):
            at = dt.datetime.fromtimestamp(epoch_s, dt.UTC) if epoch_s is not None else None
            own = {
                "key": scrub(key),
                "data": data,
                "task_id": task_id,
                "worker": worker,
                "scraped_at": at,
                "stream_id": stream_id,
            }
            params.append(
                [own[name] for name in meta]
                + [cell(item.get(field), columns[column]) for field, column in fed]
            )
        cur.executemany(statement, params)

    def _record(self, cur: psycopg.Cursor[Any], position: PostgresPosition) -> None:
        from psycopg import sql

        cur.execute(
            sql.SQL(
                "UPDATE {} SET stream_id = %s, rows = %s, fields = %s::jsonb, updated = now() "
                "WHERE job = %s AND table_name = %s"
            ).format(self._ident(POSITIONS_TABLE)),
            (
                position.stream_id,
                position.rows,
                msgspec.json.encode(position.fields).decode(),
                self.store.job,
                self.table_name,
            ),
        )


def _entry_of(change_id: str) -> str:
    """The stream ID of the log entry a change (`ItemChange.stream_id`) was made by."""
    ms, _, placed = change_id.partition("-")
    return f"{ms}-{int(placed or 0) // SUB_SEQ}"


def _after_entry(stream_id: str) -> str:
    """The change ID after which come the changes of the entries after ``stream_id``."""
    ms, _, seq = stream_id.partition("-")
    return f"{ms}-{int(seq or 0) * SUB_SEQ + SUB_SEQ - 1}"


def _whole_entries(changes: list[ItemChange], size: int) -> list[ItemChange]:
    """The first ``size`` of ``changes``, and the rest of the last one's entry: the
    position is an entry's, so a batch ends where an entry does (a gone page's removals
    are one entry's)."""
    end = min(size, len(changes))
    while end < len(changes) and _entry_of(changes[end].stream_id) == _entry_of(
        changes[end - 1].stream_id
    ):
        end += 1
    return changes[:end]


def _item(data: str) -> tuple[dict[str, Any], str]:
    """An item's fields (an item that is not an object has none) and its JSON text, with
    every NUL as U+FFFD."""
    item = msgspec.json.decode(data) if data else {}
    if "\\u0000" in data:
        item = scrub(item)
        data = msgspec.json.encode(item).decode()
    return (item if isinstance(item, dict) else {}), data or "{}"
