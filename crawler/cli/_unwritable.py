"""A crawl whose server cannot write (Redis's ``MISCONF``, most often a full disk): said once.

When the disk under the data directory fills up, Valkey cannot append to its append-only
file and refuses every write, PING included, until it can again (it retries by itself).
Every process of the crawl then meets the same refusal: each worker and the projector
stop with :class:`ServerCannotPersist`, which used to be one line per process and a
warning per task handed back, followed by a summary from the projector's last commit
("no tasks; 0 pages") although the log said otherwise.

Now the processes a crawl started leave the saying to the crawl (``CRAWL_PID_ENV`` names
it); the crawl, once its workers have stopped, asks the server whether it still refuses
writes, says so once in plain words, and sums up from the log itself (the committed
state plus the stream's tail, as the progress display does), since the projector could
not commit. Nothing is lost: the refused writes were not applied, and the same command,
run again once there is room, carries on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click
import msgspec
import redis.exceptions

from crawler.cli._exit import EXIT_CANNOT_PERSIST, EXIT_DISK_FULL
from crawler.cli._lifeline import PARENT_ENV
from eventlog import (
    REDIS_URL_ENV,
    CrawlogError,
    ServerCannotPersist,
    cannot_persist,
    cannot_persist_because,
    client_for,
)

if TYPE_CHECKING:
    from crawler.cli._processes import CrawlSummary

CRAWL_PID_ENV = PARENT_ENV
"""Set by ``crawlog crawl`` to its pid for the processes it starts (``_lifeline``)."""


def said_by_the_crawl() -> bool:
    """Whether this process was started by a crawl, which reports a server that cannot
    write itself (once, for all of its processes)."""
    return os.environ.get(CRAWL_PID_ENV) == str(os.getppid())


_SAID_BY_EXIT = {EXIT_DISK_FULL: True, EXIT_CANNOT_PERSIST: False}


def exit_status(refusal: ServerCannotPersist) -> int:
    """What a process of a crawl exits with, leaving the crawl to say why."""
    return EXIT_DISK_FULL if refusal.disk_full else EXIT_CANNOT_PERSIST


def said_once_if_unwritable(
    url: str, data_dir: Path, summary: CrawlSummary
) -> tuple[CrawlSummary, bool]:
    """After a crawl: if its processes stopped because the server refused writes (or it
    still does), say so on stderr once for all of them, and return the summary counted
    from the log, which the projector could not commit; whether it did."""
    disk = None if os.environ.get(REDIS_URL_ENV) else f"the data directory {data_dir}"
    # Asked of the server too: a process may have died of it before saying so. Its answer
    # alone is not enough: once a stopped process's files are gone, the server may be able
    # to write again, the disk still all but full.
    refusal = anyio.run(lambda: writes_refused(url, where=disk))
    said = [_SAID_BY_EXIT[code] for code in summary.exits if code in _SAID_BY_EXIT]
    if refusal is None and said:
        refusal = cannot_persist_because(disk_full=any(said), where=disk)
    if refusal is None:
        return summary, False
    click.echo(f"crawlog: error: {refusal}", err=True)
    return anyio.run(lambda: summary_from_log(url, summary, data_dir)), True


async def writes_refused(url: str, *, where: str | None) -> ServerCannotPersist | None:
    """The server's refusal to write, in plain words, or None if it writes (or is gone)."""
    client = client_for(url, health_check_s=0)  # its PING would be refused, as a lost link
    try:
        # PING is refused along with writes, and changes nothing when it is not.
        await client.ping()
    except redis.exceptions.ResponseError as exc:
        return cannot_persist(exc, where=where)
    except (redis.exceptions.RedisError, OSError):
        return None
    finally:
        await client.aclose()
    return None


async def summary_from_log(url: str, summary: CrawlSummary, data_dir: Path) -> CrawlSummary:
    """``summary`` with its counts taken from the log, not from the projector's commit."""
    from crawler.ops import LiveProgress

    client = client_for(url, health_check_s=0)  # its PING would be refused
    try:
        source = LiveProgress(client, summary.job, data_dir)
        await source.refresh()
    except (CrawlogError, redis.exceptions.RedisError, OSError):
        return summary  # the commit's, then: better than none
    finally:
        await client.aclose()
    job = source.tracker.state.job
    return msgspec.structs.replace(
        summary,
        tasks={k: v for k, v in job.tasks.items() if v},
        pages=job.pages,
        refetches=job.refetches,
        items=job.items,
        duplicate_items=job.duplicate_items,
        anomalies=job.refused,
        orphaned=job.orphaned,
    )
