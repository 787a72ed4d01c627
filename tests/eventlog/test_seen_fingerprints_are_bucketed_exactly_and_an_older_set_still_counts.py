"""The seen fingerprints live in bucketed hashes, a few bytes a URL: a slot is as exact as
63 bits of a URL fingerprint, the enqueue cap counts them, and a job begun by an older
crawlog (a plain ``seen`` set) enqueues nothing it had seen."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st

from eventlog import JobKeys, TaskQueue, is_seen
from eventlog._keys import SEEN_BUCKETS, SEEN_FIELD_BYTES, seen_slot
from tests.eventlog.helpers import task

fingerprints = st.binary(min_size=8, max_size=8).map(bytes.hex)


@given(fingerprints)
def test_a_url_fingerprint_has_one_slot_in_range(fp: str) -> None:
    bucket, field = seen_slot(fp)
    assert 0 <= bucket < SEEN_BUCKETS
    assert len(field) == SEEN_FIELD_BYTES
    assert seen_slot(fp) == (bucket, field)


@given(fingerprints, fingerprints)
def test_url_fingerprints_differing_beyond_the_one_unused_bit_have_different_slots(
    a: str, b: str
) -> None:
    unused = 1 << 48  # bit 15 from the top of 64: neither bucket nor field
    if int(a, 16) & ~unused != int(b, 16) & ~unused:
        assert seen_slot(a) != seen_slot(b)


@given(st.text(max_size=50))
def test_any_other_fingerprint_is_hashed_to_a_slot(fp: str) -> None:
    bucket, field = seen_slot(fp)
    assert 0 <= bucket < SEEN_BUCKETS and len(field) == SEEN_FIELD_BYTES


@pytest.mark.anyio
async def test_a_seen_fingerprint_is_refused_and_said_seen(
    redis_client: aioredis.Redis, keys: JobKeys, make_queue: Callable[..., TaskQueue]
) -> None:
    queue = make_queue("w1")
    fps = ["0123456789abcdef", "fedcba9876543210", "not-a-url-fingerprint"]
    assert await queue.enqueue([task(1), task(2), task(3)], actor="w1", fingerprints=fps) == [
        True,
        True,
        True,
    ]
    again = await queue.enqueue([task(4), task(5)], actor="w1", fingerprints=fps[1:])
    assert again == [False, False]
    assert all([await is_seen(redis_client, keys, fp) for fp in fps])
    assert not await is_seen(redis_client, keys, "0123456789abcdee")
    assert not await redis_client.exists(keys.seen), "the older set is never written"
    assert int(await redis_client.get(keys.seen_count)) == 3


@pytest.mark.anyio
async def test_the_cap_counts_the_bucketed_fingerprints_and_redirect_claims(
    make_queue: Callable[..., TaskQueue],
) -> None:
    queue = make_queue("w1")
    assert await queue.claim_url("aaaaaaaaaaaaaaaa", "task-9")
    got = await queue.enqueue([task(n) for n in range(1, 5)], actor="w1", cap=3)
    assert got == [True, True, False, False]
    assert await queue.enqueue([task(1)], actor="w1", fingerprints=["aaaaaaaaaaaaaaaa"]) == [False]


@pytest.mark.anyio
async def test_a_job_begun_with_an_older_seen_set_enqueues_nothing_it_had_seen(
    redis_client: aioredis.Redis, keys: JobKeys, make_queue: Callable[..., TaskQueue]
) -> None:
    await redis_client.sadd(keys.seen, "task-1", "task-2")
    queue = make_queue("w1")
    got = await queue.enqueue([task(1), task(2), task(3)], actor="w1", cap=3)
    assert got == [False, False, True]
    assert await queue.enqueue([task(4)], actor="w1", cap=3) == [False]
    assert await is_seen(redis_client, keys, "task-2")
    assert not await queue.claim_url("task-1", "task-3"), "seen in the older set"
