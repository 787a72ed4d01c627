"""Every key of a job lives in one cluster slot; partitions spread over slots."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from eventlog import LANES, ConfigError, JobKeys


def all_keys(keys: JobKeys) -> list[str]:
    return [
        keys.events,
        keys.seen,
        keys.ckpt,
        keys.dead,
        *keys.lanes,
        keys.delayed,
        keys.parked,
        keys.redirected,
        keys.retries,
        keys.actions,
        keys.control,
        keys.config,
        keys.projector,
        keys.projector_lease,
        keys.projector_committer,
        keys.event_ids(7),
        keys.evidence("t-1"),
        keys.worker_lock("w1"),
        keys.host_slots("h:1"),
        keys.host_next("h:1"),
        keys.host_delay("h:1"),
        keys.host_adapted_delay("h:1"),
    ]


@pytest.mark.parametrize("partition", [None, 0, 3])
def test_every_key_of_a_job_hashes_to_one_slot(partition: int | None) -> None:
    keys = JobKeys("shop-crawl", partition)
    slots = {key_slot(k.encode()) for k in all_keys(keys)}
    assert len(slots) == 1
    assert all(k.startswith(f"crawlog:{keys.tag}:") for k in all_keys(keys))


def test_partitions_of_a_job_have_their_own_tag() -> None:
    tags = {JobKeys("shop-crawl", p).tag for p in range(8)}
    assert len(tags) == 8 and "{shop-crawl:5}" in tags


def test_one_stream_per_priority_lane() -> None:
    keys = JobKeys("j")
    assert len(set(keys.lanes)) == len(LANES)
    with pytest.raises(ConfigError, match="no task lane"):
        keys.tasks(len(LANES))


@pytest.mark.parametrize("name", ["", "has space", "br{ace}", "co:lon", "-leading", "x" * 65])
def test_a_bad_job_name_is_refused_with_what_is_allowed(name: str) -> None:
    with pytest.raises(ConfigError, match="use 1-64 letters"):
        JobKeys(name)
