"""Indexing the archive of a job written before segment indexes (``index_archive``).

Such a segment is one row group (pyarrow's default of 1Mi rows), so an index could only
name whole segments: history would still read a whole ``payload`` column per segment it
names. Each committed segment without a matching index is therefore written again, the
same rows under the same name (its first and last stream IDs), in row groups of
``ARCHIVE_ROW_GROUP``, then indexed: ``write_table`` as for any segment (temp, fsync,
rename over the old file, then the index). The manifest does not change.

Under the projector lock, like ``replay --from-redis``. A kill at any point leaves each
segment either the old file or the new one, whole, with no index or its own: a temporary
file (deleted by the next projector's start) at worst, and history scans what has no
index. Readers meanwhile read whichever file they opened.
"""

from __future__ import annotations

from eventlog import fsync_dir
from projector._archive import ArchiveCorrupt, read_table, write_table
from projector._segment_index import matching_row_groups
from projector._store import Store


def index_archive(store: Store) -> list[str]:
    """Rewrite and index every committed segment of ``store`` that has no index that
    matches it; the names of those segments, in log order."""
    done: list[str] = []
    with store.lock():
        manifest = store.read_manifest()
        for segment in manifest.segments:
            path = store.archive / segment.name
            if matching_row_groups(path, segment.events, (), None) is not None:
                continue
            table = read_table(path)  # page checksums verified: no damage is copied
            if table.num_rows != segment.events:
                raise ArchiveCorrupt(
                    f"archive segment {path} holds {table.num_rows} events, "
                    f"its manifest says {segment.events}"
                )
            written = write_table(store.archive, table)
            if written.name != segment.name:  # the same first and last stream IDs
                raise AssertionError(f"{segment.name} was written again as {written.name}")
            del table
            fsync_dir(store.archive)
            store.replace_segments([written])  # its size, as written again
            done.append(segment.name)
    return done
