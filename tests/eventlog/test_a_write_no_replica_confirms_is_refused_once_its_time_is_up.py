"""``--durability replica``'s confirmation (`run_confirmed`): a script's write is confirmed
at once by a replica in sync; with the replica stopped, it is tried again until its time is
up, then refused with `ReplicaUnconfirmed`, the write left on the primary."""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from eventlog import ReplicaSetInfo, ReplicaUnconfirmed, connect, replica_set_status
from eventlog._durability import run_confirmed
from eventlog._scripts import LOCK_ACQUIRE

pytestmark = pytest.mark.anyio

TTL_MS = 60_000


async def test_a_write_is_confirmed_by_a_live_replica_and_refused_without_one(
    replica_set: ReplicaSetInfo,
) -> None:
    (replica,) = [m for m in replica_set_status(replica_set.data_dir) or [] if m.role == "replica"]
    assert replica.pid is not None
    async with connect(replica_set.url) as client:
        script = client.register_script(LOCK_ACQUIRE)
        with anyio.fail_after(5):
            assert await run_confirmed(client, script, ["lock-a"], ["me", TTL_MS]) == 1
        os.kill(replica.pid, signal.SIGSTOP)
        try:
            with anyio.fail_after(10), pytest.raises(ReplicaUnconfirmed, match="no replica"):
                await run_confirmed(
                    client, script, ["lock-b"], ["me", TTL_MS], confirm_s=1.0, wait_ms=200
                )
        finally:
            os.kill(replica.pid, signal.SIGCONT)
        assert await client.get("lock-b") == b"me"  # written, not confirmed
