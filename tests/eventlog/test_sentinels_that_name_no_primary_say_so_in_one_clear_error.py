"""Sentinels that answer but name no primary of the service (a failover under way, or a
service name that is not theirs) are a `ServerUnreachable` that says so, not "is the server
running?": the servers are running, and the user waits or fixes the URL."""

from __future__ import annotations

import pytest

from eventlog import ReplicaSetInfo, ServerUnreachable, connect

pytestmark = pytest.mark.anyio


async def test_a_service_the_sentinels_do_not_watch_is_named_in_the_error(
    replica_set: ReplicaSetInfo,
) -> None:
    base, _, service = replica_set.url.rpartition("/")
    assert service
    with pytest.raises(ServerUnreachable) as raised:
        async with connect(f"{base}/elsewhere"):
            pass
    message = str(raised.value)
    assert "name no primary that answers" in message, message
    assert "'elsewhere'" in message, message
    assert "failover may be under way" in message, message
    assert "is the server running" not in message, message
