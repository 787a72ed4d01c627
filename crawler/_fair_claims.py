"""Claims shared between sites: a worker's free places do not go to a site that is busy.

A site is busy for a worker when at least ``per_host`` of the worker's requests to its host
already wait for a politeness slot (`PolitenessGate.busy_hosts`): one more task of it would
only wait too, holding a place (and a lease) another site could use now. The worker then
claims with `TaskQueue.claim_around`, which moves such sites' entries to the end of their
lane instead of handing them out. Nothing is shared but the lanes: each worker judges from
its own requests, so several workers together keep a few tasks of each busy site each.

When a claim around busy sites finds nothing else, the lanes' fronts are all busy sites'
tasks (moved behind if more follow them): the worker claims around them again only a
little later (`ClaimPause`), longer each time it finds nothing, so that a crawl of one
slow site does not move entries round and round. Meanwhile it claims as usual as soon as
no site of its is busy any more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import anyio

LEASES_PER_PLACE = 4
"""A task waiting for its host's politeness slot takes none of a worker's ``concurrency``
places; but a worker holds at most this many leases per place."""
FIRST_PAUSE_S = 0.01
LONGEST_PAUSE_S = 0.1
"""A site's tasks newly enqueued behind busy ones wait at most about this long to be claimed."""


def busy_sites(sites: Iterable[str], busy_hosts: set[str]) -> set[str]:
    """The sites (``scheme://host[:port]``) among ``sites`` whose host is busy."""
    if not busy_hosts:
        return set()
    return {site for site in sites if site.partition("://")[2] in busy_hosts}


class ClaimPause:
    """When the next claim around busy sites may be made: after one that found nothing, a
    pause doubling from `FIRST_PAUSE_S` to `LONGEST_PAUSE_S`; none once one finds work."""

    __slots__ = ("_next", "_until")

    def __init__(self) -> None:
        self._next = FIRST_PAUSE_S
        self._until = 0.0

    def found(self) -> None:
        """A claim around busy sites found work: the next may follow at once."""
        self._next = FIRST_PAUSE_S
        self._until = 0.0

    def empty(self, now: float) -> None:
        """A claim around busy sites found nothing at ``now`` (any monotonic clock)."""
        self._until = now + self._next
        self._next = min(self._next * 2, LONGEST_PAUSE_S)

    def wait_s(self, now: float) -> float:
        """Seconds from ``now`` before the next claim around busy sites (0: at once)."""
        return max(self._until - now, 0.0)


async def first_of(*waits: Callable[[], Awaitable[object]]) -> None:
    """Return as soon as one of ``waits`` returns (the others are cancelled)."""
    async with anyio.create_task_group() as either:

        async def until(wait: Callable[[], Awaitable[object]]) -> None:
            await wait()
            either.cancel_scope.cancel()

        for wait in waits:
            either.start_soon(until, wait)
