"""Workers' copies of a shared jar: whatever order cookies are set, changed and deleted in
through whichever worker, each worker's next request sends exactly what the jar holds — the
version check never lets a stale copy pass for a current one, nor a write be lost."""

from __future__ import annotations

import uuid

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler._cookies import SharedCookies
from eventlog import CookieStore, JobKeys, connect

SITE = "http://127.0.0.1:8000"
WORKERS = 3
NAMES = ("a", "b", "c")

# (worker, whether it asks for the jar first, cookie name, value or None to delete it,
# whether every worker then makes a request that is checked)
steps = st.lists(
    st.tuples(
        st.integers(0, WORKERS - 1),
        st.booleans(),
        st.sampled_from(NAMES),
        st.none() | st.sampled_from(("1", "2", "3")),
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)


def set_cookie(name: str, value: str | None) -> httpx.Response:
    header = f"{name}={value}; Path=/" if value is not None else f"{name}=x; Path=/; Max-Age=0"
    request = httpx.Request("GET", SITE + "/page")
    return httpx.Response(200, headers=[("Set-Cookie", header)], request=request)


async def sent(copy: SharedCookies) -> dict[str, str]:
    request = httpx.Request("GET", SITE + "/page")
    await copy.add_to(request)
    header = request.headers.get("cookie", "")
    return dict(pair.split("=", 1) for pair in header.split("; ") if pair)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_each_worker_sends_the_jar_as_the_writes_left_it(
    valkey_url: str, plan: list[tuple[int, bool, str, str | None, bool]]
) -> None:
    async def run() -> None:
        async with connect(valkey_url) as redis:
            store = CookieStore(redis, JobKeys(f"test-{uuid.uuid4().hex[:12]}"))
            copies = [SharedCookies(store) for _ in range(WORKERS)]
            model: dict[str, str] = {}
            for worker, ask_first, name, value, check in plan:
                copy = copies[worker]
                if ask_first:  # as a fetch does; without, the response finds a copy that
                    # may be stale (another worker wrote while this request was in flight)
                    await copy.add_to(httpx.Request("GET", SITE + "/page"))
                await copy.keep_from(set_cookie(name, value))
                if value is None:
                    model.pop(name, None)
                else:
                    model[name] = value
                if check:
                    for other in copies:
                        assert await sent(other) == model

    anyio.run(run)


def test_writes_racing_from_every_worker_are_all_kept(valkey_url: str) -> None:
    async def run() -> None:
        async with connect(valkey_url) as redis:
            store = CookieStore(redis, JobKeys(f"test-{uuid.uuid4().hex[:12]}"))
            copies = [SharedCookies(store) for _ in range(WORKERS)]

            async def write(copy: SharedCookies, n: int) -> None:
                await copy.add_to(httpx.Request("GET", SITE + "/page"))
                await copy.keep_from(set_cookie(f"c{n}", str(n)))

            async with anyio.create_task_group() as group:
                for n in range(30):
                    group.start_soon(write, copies[n % WORKERS], n)
            expected = {f"c{n}": str(n) for n in range(30)}
            for copy in copies:
                assert await sent(copy) == expected

    anyio.run(run)
