"""After a Sentinel promotion: the job's epoch is raised once, and its holders follow it.

A replica promoted by the Sentinels may lack what the old primary acknowledged last (with
``--durability local``, or a write in the replication window). Nothing in the store says
so, except that the server changed: each primary has a replication id, and a promoted
replica keeps its old primary's id as its *previous* one (``master_replid2``). The job's
epoch is bound to the primary's id (`JobKeys.primary`); a ``SETTLE`` on a server of
another id is refused (``stale``), so no write lands on the new primary before its writer
has followed the promotion (`follow_primary`):

* the first process to notice raises the job's epoch by one (``FOLLOW_PRIMARY``, fenced on
  the binding it read: one raise per promotion, whoever notices), and records the
  projector's published position at the raise (`failover_field`);
* a holder of the epoch before (a worker's queue, the projector's lease) may take the new
  one (`may_follow`), unlike after a ``crawlog restore``, whose leases are void: the new
  primary has the leases the old one had replicated;
* a worker, before it takes the new epoch, gives back from its journal the writes the old
  primary acknowledged after that position (`eventlog.TaskQueue.follow_promotion`): those
  the new primary has are found in its log by their marker event and not sent again;
  the others are sent again, fenced by their own lease, or recorded once as orphaned.

A server whose id changed with no previous id was restarted (on its own append-only file,
say), not promoted: the binding moves to it, the epoch stays (`primary_verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec
import redis.asyncio as aioredis

from eventlog._connection import redis_errors
from eventlog._keys import FAILOVER_PREFIX, JobKeys
from eventlog._scripts import FOLLOW_PRIMARY, PRIMARY_FACTS

PrimaryVerdict = Literal["unbound", "same", "promoted", "restarted"]
"""How the server that answers relates to the primary the epoch is bound to: no binding
yet, the same one, a replica promoted in its place, or another server with no past as a
replica (restarted)."""
_FOLLOW_TRIES = 3


class PrimaryFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the server that answers says of itself and of the job's binding."""

    replid: str
    replid2: str
    """Its previous replication id: all zeros unless a promotion gave it one."""
    bound: str
    """The id the job's epoch is bound to ('' for none)."""
    epoch: int
    """The job's epoch (0: the job has no identity)."""
    failovers: dict[int, str] = msgspec.field(default_factory=dict)
    """Epoch -> the projector's published position when a promotion raised it."""


def primary_verdict(bound: str, replid: str, replid2: str) -> PrimaryVerdict:
    """How the server of ``replid`` (previous id ``replid2``) relates to the ``bound`` one.

    A previous id that is not the bound one is still a promotion: the bound primary's
    replica was promoted, then another failover came before anyone looked."""
    if not bound:
        return "unbound"
    if replid == bound:
        return "same"
    if replid2.strip("0"):
        return "promoted"
    return "restarted"


def failover_chain(epoch: int, failovers: Mapping[int, str]) -> tuple[int, str] | None:
    """If promotions raised ``epoch`` (and the epochs just before it), the lowest epoch a
    holder may follow from and the position recorded at the first of those raises; None if
    ``epoch`` was not raised by a promotion (a restore, or never raised)."""
    if epoch not in failovers:
        return None
    first = epoch
    while first - 1 in failovers:
        first -= 1
    return first - 1, failovers[first]


def may_follow(held: int, epoch: int, failovers: Mapping[int, str]) -> bool:
    """Whether a holder of epoch ``held`` may take the job's ``epoch``: the same, or only
    promotions raised it since (a restore in between voids what it holds)."""
    if held == epoch:
        return True
    chain = failover_chain(epoch, failovers)
    return chain is not None and chain[0] <= held < epoch


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def _failovers(pairs: list[object]) -> dict[int, str]:
    found: dict[int, str] = {}
    for field, value in zip(pairs[::2], pairs[1::2], strict=True):
        name = _text(field)
        if name.startswith(FAILOVER_PREFIX) and name[len(FAILOVER_PREFIX) :].isdigit():
            found[int(name[len(FAILOVER_PREFIX) :])] = _text(value)
    return found


async def primary_facts(redis: aioredis.Redis, keys: JobKeys) -> PrimaryFacts:
    """What the server that answers says of itself and of the job's binding, in one look."""
    with redis_errors("reading which primary answers"):
        reply = await redis.register_script(PRIMARY_FACTS)(keys=[keys.identity, keys.primary])
    replid, replid2, bound, epoch, pairs = reply
    return PrimaryFacts(
        replid=_text(replid),
        replid2=_text(replid2),
        bound=_text(bound),
        epoch=int(_text(epoch) or 0),
        failovers=_failovers(list(pairs)),
    )


async def follow_primary(redis: aioredis.Redis, keys: JobKeys) -> PrimaryFacts:
    """Bind the job's epoch to the primary that answers, raising it once if that primary
    was promoted in place of the bound one; the facts as they stand then. A job with no
    identity is left as it is (nothing to fence)."""
    script = redis.register_script(FOLLOW_PRIMARY)
    facts = await primary_facts(redis, keys)
    if not facts.replid:
        return facts  # the server would not say which it is (INFO refused): nothing to bind
    for _ in range(_FOLLOW_TRIES):
        verdict = primary_verdict(facts.bound, facts.replid, facts.replid2)
        if verdict == "same" or not facts.epoch:
            return facts
        action = "raise" if verdict == "promoted" else "bind"
        with redis_errors("following the promoted primary"):
            what, _ = await script(
                keys=[keys.identity, keys.primary, keys.projector],
                args=[facts.bound, facts.replid, action],
            )
        facts = await primary_facts(redis, keys)
        if _text(what) != "moved":
            return facts
    return facts
