"""``crawlog export``: the ``pages`` or ``items`` view of a job's archive, written to a file."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from eventlog import CrawlogError
from projector._defaults import EXPORT_FORMATS, EXPORT_WHAT, ExportFormat, ExportWhat
from projector._store import Store
from projector._views import Committed, run_on_committed, sql_string

_COPY_OPTIONS: Final[dict[str, str]] = {
    "jsonl": "FORMAT json",
    "csv": "FORMAT csv, HEADER true",
    "parquet": "FORMAT parquet, COMPRESSION zstd",
}


def export(store: Store, *, what: ExportWhat, fmt: ExportFormat, out: Path) -> int:
    """Write the ``pages`` or ``items`` view, in log order, to ``out``; the rows written.

    Only the archive is read (no state), so an export of a large job starts at once.
    """
    if what not in EXPORT_WHAT or fmt not in EXPORT_FORMATS:
        raise CrawlogError(f"cannot export {what!r} as {fmt!r}")
    copy = (
        f"COPY (SELECT * EXCLUDE (stream_ms, stream_seq) FROM {what} "
        f"ORDER BY stream_ms, stream_seq) TO {sql_string(str(out))} ({_COPY_OPTIONS[fmt]})"
    )

    def run(committed: Committed) -> int:
        written = committed.con.execute(copy).fetchone()
        return int(written[0]) if written else 0

    return run_on_committed(store, run, read_state=False, doing=f"exporting {what} to {out}")
