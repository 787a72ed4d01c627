"""The projector's own files repair themselves or say the truth. After real projector
runs that trimmed the stream behind them (so Redis cannot give the events back), a manifest
cut short is rebuilt by `crawlog repair` from the segment files on disk, a deleted one by
the next projector's start, and a damaged snapshot by `crawlog replay`: the state is the
one committed before, `replay --verify` calls it identical, and the projector carries on.
Never an empty job over the segments."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from eventlog import EventLog
from projector._committed import committed_state
from projector._continuity import ArchiveBehind
from projector._projector import Projector
from projector._state import canonical
from projector._store import MANIFEST, Store
from tests.projector.test_corrupt_segment_is_named_and_rebuilt_from_redis import crawlog
from tests.projector.test_projector import task_events

pytestmark = pytest.mark.anyio
RUNS = 5
TASKS_A_RUN = 40


async def trimmed_job(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> tuple[Store, bytes]:
    """Five projector runs, each trimming the stream up to what it committed; the store
    and the committed state's bytes."""
    for n in range(RUNS):
        tasks = range(TASKS_A_RUN * n, TASKS_A_RUN * (n + 1))
        await log.append_many([e for t in tasks for e in task_events(t)])
        async with make_projector(keep_tail_s=0) as projector:
            await projector.catch_up()
    info = await log.stream_info()
    assert info is not None and info.length < 10  # Redis lost them
    store = Store(data_dir, job)
    return store, canonical(committed_state(store, store.read_manifest()))


async def carries_on(log: EventLog, make_projector: Callable[..., Projector]) -> None:
    await log.append_many(task_events(999))
    async with make_projector(keep_tail_s=0) as projector:
        await projector.catch_up()
    assert projector.state.job.tasks["done"] == RUNS * TASKS_A_RUN + 1


async def test_a_manifest_cut_short_is_rebuilt_by_repair_from_the_segment_files(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    valkey_url: str,
) -> None:
    store, before = await trimmed_job(log, make_projector, data_dir, job)
    segments = len(store.read_manifest().segments)
    manifest = store.root / MANIFEST
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])

    code, out = await crawlog(valkey_url, data_dir, "report", "--job", job)
    assert code == 2 and f"crawlog repair --job {job}" in out, out
    code, out = await crawlog(valkey_url, data_dir, "jobs")  # the job still listed
    assert code == 0 and f"crawlog repair --job {job}" in out and f"\n{job} " in out, out
    code, out = await crawlog(valkey_url, data_dir, "repair", "--job", job)
    assert code == 0, out
    assert f"damaged manifest rebuilt from {segments} archive segment(s)" in out, out
    assert f"{RUNS * TASKS_A_RUN * 4} events" in out, out
    assert list(store.root.glob(f"{MANIFEST}.damaged-*")), "the damaged file is kept"
    assert canonical(committed_state(store, store.read_manifest())) == before

    code, out = await crawlog(valkey_url, data_dir, "replay", "--job", job, "--verify")
    assert code == 0 and "identical" in out, out
    await carries_on(log, make_projector)


async def test_a_deleted_manifest_is_rebuilt_when_the_projector_starts(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    valkey_url: str,
) -> None:
    store, before = await trimmed_job(log, make_projector, data_dir, job)
    (store.root / MANIFEST).unlink()

    code, out = await crawlog(valkey_url, data_dir, "jobs")
    assert f"crawlog repair --job {job}" in out, out
    async with make_projector(keep_tail_s=0) as projector:  # rebuilds, deletes nothing
        await projector.catch_up()
    assert projector.state.job.events == RUNS * TASKS_A_RUN * 4
    assert canonical(committed_state(store, store.read_manifest())) == before
    await carries_on(log, make_projector)
    code, out = await crawlog(valkey_url, data_dir, "replay", "--job", job, "--verify")
    assert code == 0 and "identical" in out, out


async def test_a_damaged_snapshot_is_written_again_by_replay(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    valkey_url: str,
) -> None:
    store, before = await trimmed_job(log, make_projector, data_dir, job)
    snapshot = store.snapshots / str(store.read_manifest().snapshot)
    snapshot.write_bytes(snapshot.read_bytes()[:100])

    code, out = await crawlog(valkey_url, data_dir, "replay", "--job", job, "--verify")
    assert code == 0, out
    assert "snapshot written again from the archive" in out and "identical" in out, out
    assert canonical(committed_state(store, store.read_manifest())) == before
    await carries_on(log, make_projector)


async def test_a_projector_starting_over_a_damaged_snapshot_writes_it_again(
    log: EventLog, make_projector: Callable[..., Projector], data_dir: Path, job: str
) -> None:
    store, before = await trimmed_job(log, make_projector, data_dir, job)
    damaged = store.snapshots / str(store.read_manifest().snapshot)
    damaged.write_bytes(b"\x00" * 64)
    async with make_projector(keep_tail_s=0) as projector:
        assert store.snapshot_readable(projector.manifest)  # written again, at its position
        await projector.catch_up()
    assert canonical(committed_state(store, store.read_manifest())) == before
    await carries_on(log, make_projector)


async def test_an_archive_rebuilt_empty_after_the_stream_was_trimmed_is_never_identical(
    log: EventLog,
    make_projector: Callable[..., Projector],
    data_dir: Path,
    job: str,
    valkey_url: str,
) -> None:
    store, _ = await trimmed_job(log, make_projector, data_dir, job)
    store.root.rename(store.root.with_name(f"{job}.aside"))  # the old advice
    await log.append_many(task_events(999))
    # A projector does not archive what the stream still holds over the hole: it refuses,
    # saying the archive committed here is gone (``_continuity``).
    with pytest.raises(ArchiveBehind, match="They were committed here") as refused:
        async with make_projector(keep_tail_s=0):
            pass
    assert f"Put {store.root} back" in str(refused.value)
    assert not (store.root / MANIFEST).exists(), "nothing committed"

    code, out = await crawlog(valkey_url, data_dir, "replay", "--job", job, "--verify")
    assert code != 0 and "identical" not in out, out
