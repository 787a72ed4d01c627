"""An archive that lacks what the log no longer holds is refused, never skipped over.

The projector reads the log after its committed position. If the log was trimmed past
that position (by the projector of another data directory, or after this directory was
restored from an older copy), reading on would skip the events in between without a word:
an archive with a hole that ``replay --verify`` calls identical. A projector that finds
its archive behind the trim refuses to start instead, and says where the events are: the
archive of the projector that trimmed them (``last_committer``).
"""

from __future__ import annotations

import socket
from pathlib import Path

from eventlog import CrawlogError, ProjectorHolder


class ArchiveBehind(CrawlogError):
    """The data directory's archive ends before the first event the log still holds."""


def behind_the_trim(archived: int, skipped: int, added: int, held: int) -> bool:
    """Whether the log was trimmed past an archive of ``archived`` events, read up to a
    position where ``skipped`` entries at most were dead-lettered (not archived): of the
    ``added`` entries ever appended the log ``held`` holds, so ``added - held`` were
    trimmed, each at or below some projector's commit. More trimmed than this archive
    went through means some were after its end."""
    return added - held > archived + skipped


def archive_behind(
    job: str,
    root: Path,
    position: str,
    trimmed: int,
    first_left: str | None,
    committer: ProjectorHolder | None,
) -> ArchiveBehind:
    """The refusal of an archive in ``root`` that ends at ``position``, ``trimmed`` events
    having been trimmed from the log (``first_left``: the first it holds) by
    ``committer`` (None if unknown)."""
    ends = "is empty" if position == "0-0" else f"ends at {position}"
    left = f", the first left is {first_left}" if first_left else ""
    here = root.parent.parent.resolve()  # root is <data dir>/jobs/<job>
    if (
        committer is not None
        and committer.host == socket.gethostname()
        and Path(committer.data_dir) == here
    ):
        where = (
            f"They were committed here, by the projector of {committer.describe()}: this "
            f"archive was moved, deleted or restored from an older copy since. Put {root} "
            "back as it was"
        )
    elif committer is not None:
        where = (
            f"The projector that trimmed them has them: {committer.describe()}. Run the "
            f"projector with that data directory (on {committer.host}: --data-dir "
            f"{committer.data_dir}), or stop it and copy its jobs/{job} directory to {root}"
        )
    else:
        where = (
            "Run the projector with the data directory that holds the job's archive, or "
            f"copy that directory's jobs/{job} to {root}"
        )
    return ArchiveBehind(
        f"the archive of job {job!r} in {root} {ends}, but the job's log was trimmed past "
        f"it ({trimmed} events trimmed{left}): this archive lacks events, and projecting "
        f"on would skip them. {where}"
    )
