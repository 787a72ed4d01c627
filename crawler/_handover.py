"""When a worker may hand a host slot it is done with to its next request of the same host.

Without it, a worker's request that ends frees its slot and the next request of the same
host takes one: a script call per page (the free rides on it), and one more, a poll that
can only say "full", whenever the worker holds every slot of the host itself. A handover
keeps the slot held on the server, under the same token, and lets the request next in
line go on it without taking one. The rules that make that as polite as asking
(`crawler._politeness`):

- the slot stays counted on the server the whole time, so no more than ``per_host``
  requests of all workers are ever in flight on the host;
- only where no delay applies (`may_hand_over`): with one, the server decides when the
  host's next request may start, for every worker, so a slot taken under a delay is
  freed and asked for again as before;
- only while the slot is young: the server frees it ``slot_ttl_s`` after it was taken,
  whoever holds it, so a request on a handed-over slot still has most of a fresh slot's
  life before another worker can take it; a dead worker's slots free themselves as ever;
- the request that gets it records its start in the worker's fetches started first
  (`eventlog.HostSlots.record_started`, one ``HSET`` where a take is a script with a
  dozen keys and arguments), as a slot taken from the server records it: a request never
  goes without its record, so a kill counts what may have reached the site twice as
  exactly as before.

Paused sites, open circuits and stopped jobs are checked before a task asks for a slot,
as they are for a slot the server hands out: a handover changes who holds the slot, not
what may run.
"""

from __future__ import annotations

from typing import NamedTuple

HANDOVER_AGE_SHARE = 0.1
"""A slot is handed over only within this share of its ttl after it was taken: the
request that gets it has at least the rest of a fresh slot's life before it expires."""


class HeldSlot(NamedTuple):
    """A slot this process holds on a host, as it was taken."""

    token: str
    at_ms: int
    """Server time (ms) at which it was taken."""
    taken_s: float
    """This process's clock (anyio time) before it asked: the server took it later."""
    delay_ms: int
    """The delay that applied to the host as it was taken; -1 if unknown."""


def may_hand_over(slot: HeldSlot, *, now_s: float, ttl_s: float, stopping: bool) -> bool:
    """Whether ``slot``, done with at ``now_s``, may go on to the next request of its host
    without asking the server: no delay applied to the host, it is young enough, and the
    gate is not stopping (a stopping worker frees its slots)."""
    age_s = now_s - slot.taken_s
    return slot.delay_ms == 0 and not stopping and 0.0 <= age_s <= ttl_s * HANDOVER_AGE_SHARE


def must_ask(held_here: int, per_host: int) -> bool:
    """Whether a request waiting for a host asks the server for a slot: not while this
    process holds every slot of the host itself (the answer could only be "full"); a
    release of one of them wakes it."""
    return held_here < per_host


def started_ms(slot: HeldSlot, now_s: float) -> int:
    """The server time (ms) at which a request handed ``slot`` at ``now_s`` starts, as near
    as this process can tell without asking."""
    return slot.at_ms + max(0, round((now_s - slot.taken_s) * 1000))
