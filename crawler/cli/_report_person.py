"""The report's "needs a person" section: the tasks a flow (or an uncertain action) handed
to a person, each with its flow's last events (`crawler.ops.flow_tail`).

The rest of ``crawlog report`` reads the committed archive; which tasks wait for a
decision is the server's (their pause and markers), so the section is read from it, with
the stream after the archive: none when the server cannot be asked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from eventlog import REDIS_URL_ENV, CrawlogError, JobKeys, connect, require_data_dir, server_status

if TYPE_CHECKING:
    from crawler.ops import FlowTail
    from projector import Store


class Waiting(msgspec.Struct, frozen=True, kw_only=True):
    """A task waiting for a person, as the report lists it."""

    task_id: str
    waits_on: str
    """The action or step (``step:NAME:ITEM``) the decision is about."""
    flow: FlowTail | None = None


def server_url(job: str, data_dir: Path | None) -> str:
    """The job's server: ``REDIS_URL``, else the data directory's running private server
    (`CrawlogError` if it is not running: a report starts none)."""
    url = os.environ.get(REDIS_URL_ENV)
    if url:
        return url
    running = server_status(require_data_dir(data_dir, job=job))
    if running is None:
        raise CrawlogError("its server is not running")
    return running.url


def waiting_for_a_person(job: str, data_dir: Path | None, store: Store) -> list[Waiting] | None:
    """The tasks waiting for a person with their flows' tails; None if the server cannot
    be asked."""
    from crawler.ops import flow_tails, needs_a_person

    async def read(url: str) -> list[Waiting]:
        async with connect(url) as client:
            waiting = await needs_a_person(client, JobKeys(job))
            tails = await flow_tails(client, store, [t for t, _ in waiting])
        return [Waiting(task_id=t, waits_on=w, flow=tails.get(t)) for t, w in waiting]

    try:
        return anyio.run(read, server_url(job, data_dir))
    except CrawlogError:
        return None


def waiting_json(waiting: list[Waiting] | None) -> Any:
    return None if waiting is None else msgspec.to_builtins(waiting)
