"""A site's robots.txt is fetched by one holder while the others wait for what it stores;
a holder killed or stalled mid-fetch holds the others back only until its lock, renewed
while it fetches, expires."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import ROBOTS_LOCK_MS, JobKeys, RobotsFile, SharedRobots

pytestmark = pytest.mark.anyio

SITE = "http://127.0.0.1:9"


def _file(body: bytes = b"User-agent: *\nDisallow: /x\n", lifetime_s: float = 60.0) -> RobotsFile:
    return RobotsFile(status=200, body=body, expires_at=time.time() + lifetime_s)


async def test_concurrent_holders_fetch_once_and_all_get_the_stored_file(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    fetches: list[str] = []
    release = anyio.Event()
    got: dict[str, RobotsFile] = {}

    async def run(holder: str) -> None:
        async def fetch() -> RobotsFile:
            fetches.append(holder)
            await release.wait()
            return _file()

        shared = SharedRobots(redis_client, keys, holder)
        got[holder] = await shared.fetch_once(SITE, fetch)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            for n in range(8):
                tasks.start_soon(run, f"w{n}")
            while not fetches:
                await anyio.wait_all_tasks_blocked()
            release.set()
    assert len(fetches) == 1
    assert {f.body for f in got.values()} == {_file().body}
    assert {f.fetched_by for f in got.values()} == set(fetches)
    # Stored for the job: a later holder (a restarted worker) does not fetch.
    later = SharedRobots(redis_client, keys, "w-restarted")

    async def never() -> RobotsFile:
        raise AssertionError("fetched again")

    assert (await later.fetch_once(SITE, never)).fetched_by == fetches[0]


async def test_an_expired_file_is_fetched_again(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    shared = SharedRobots(redis_client, keys, "w1")
    calls = 0

    async def fetch() -> RobotsFile:
        nonlocal calls
        calls += 1
        return _file(lifetime_s=0.2)

    with anyio.fail_after(10):
        await shared.fetch_once(SITE, fetch)
        assert await shared.get(SITE) is not None
        while await shared.get(SITE) is not None:
            await anyio.sleep(0.05)  # polling the server's clock: the lifetime is the event
        await shared.fetch_once(SITE, fetch)
    assert calls == 2


HOLDER = textwrap.dedent(
    """
    import sys, anyio
    from eventlog import JobKeys, SharedRobots, connect

    async def main(url, job, site):
        async with connect(url) as client:
            async def fetch():
                print("FETCHING", flush=True)
                await anyio.sleep_forever()
            await SharedRobots(client, JobKeys(job), "doomed").fetch_once(
                site, fetch
            )

    anyio.run(main, *sys.argv[1:])
    """
)


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stalled"])
async def test_a_holder_killed_or_stalled_mid_fetch_holds_the_others_back_only_briefly(
    redis_client: aioredis.Redis, keys: JobKeys, valkey_url: str, stop: signal.Signals
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, valkey_url, keys.job, SITE],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        with anyio.fail_after(20):
            line = await anyio.to_thread.run_sync(process.stdout.readline)
        assert line.strip() == "FETCHING"
        process.send_signal(stop)
        if stop == signal.SIGKILL:
            process.wait(timeout=10)
        started = time.monotonic()
        shared = SharedRobots(redis_client, keys, "survivor")

        async def fetch() -> RobotsFile:
            return _file()

        with anyio.fail_after(20):
            got = await shared.fetch_once(SITE, fetch)
        waited = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    assert got.fetched_by == "survivor"
    # The lock it held (renewed while it fetched) runs out within its lifetime, and 2 s of a
    # loaded machine's polls and round trips (a second lifetime would be past it).
    assert waited <= ROBOTS_LOCK_MS / 1000 + 2.0
