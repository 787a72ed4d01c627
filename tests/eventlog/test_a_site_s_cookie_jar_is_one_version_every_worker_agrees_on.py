"""A site's cookie jar in Redis: every change bumps its version in the same step, a copy
whose version is current is told so without the jar, a writer whose copy was stale is told
to read it again, and a clear empties the jar without ever reusing a version."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st

from eventlog import (
    EMPTY_JAR_VERSION,
    NO_JAR_VERSION,
    CookieStore,
    JobKeys,
    StoredCookie,
)
from eventlog._cookies import decode_cookie, encode_cookie

pytestmark = pytest.mark.anyio
SITE = "http://127.0.0.1:8000"
OTHER = "https://shop.example"

_text = st.text(max_size=20)
_optional = st.none() | _text
cookies = st.builds(
    StoredCookie,
    name=_text,
    value=_optional,
    domain=_text,
    path=_text,
    version=st.none() | st.integers(0, 1),
    port=_optional,
    port_specified=st.booleans(),
    domain_specified=st.booleans(),
    domain_initial_dot=st.booleans(),
    path_specified=st.booleans(),
    secure=st.booleans(),
    expires=st.none() | st.integers(0, 2**40),
    discard=st.booleans(),
    comment=_optional,
    comment_url=_optional,
    rest=st.dictionaries(_text, _optional, max_size=3),
    rfc2109=st.booleans(),
)


def cookie(name: str, value: str = "1", path: str = "/") -> StoredCookie:
    return StoredCookie(name=name, value=value, domain="127.0.0.1", path=path)


@given(cookies)
def test_a_stored_cookie_decodes_to_itself_field_by_field(stored: StoredCookie) -> None:
    assert decode_cookie(encode_cookie(stored)) == stored


async def test_a_jar_nobody_wrote_is_empty_at_the_empty_version(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = CookieStore(redis_client, keys)
    assert await store.read(SITE) == (EMPTY_JAR_VERSION, [])
    assert await store.read(SITE, EMPTY_JAR_VERSION) == (EMPTY_JAR_VERSION, None)
    assert await store.sites() == []


async def test_a_current_copy_is_told_so_and_a_stale_one_gets_the_whole_jar(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = CookieStore(redis_client, keys)
    first = await store.write(SITE, EMPTY_JAR_VERSION, [cookie("session", "abc")])
    assert first.current and first.version == EMPTY_JAR_VERSION + 1
    assert await store.read(SITE, first.version) == (first.version, None)
    # A second worker whose copy is still the empty jar writes another cookie.
    second = await store.write(SITE, EMPTY_JAR_VERSION, [cookie("lang", "en")])
    assert not second.current and second.version == first.version + 1
    version, jar = await store.read(SITE, first.version)
    assert version == second.version
    assert sorted(c.name for c in jar or ()) == ["lang", "session"]
    # A cookie is replaced by its field (domain, path, name), dropped by its field.
    replaced = await store.write(SITE, version, [cookie("session", "xyz")], [cookie("lang").field])
    assert replaced.current
    assert await store.cookies(SITE) == [cookie("session", "xyz")]
    # The same name on another path is another cookie.
    await store.write(SITE, replaced.version, [cookie("session", "p", path="/members/")])
    assert len(await store.cookies(SITE)) == 2
    assert await store.read(OTHER) == (EMPTY_JAR_VERSION, [])
    assert await store.sites() == [SITE]


async def test_a_clear_empties_the_jar_and_leaves_every_copy_stale(
    redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    store = CookieStore(redis_client, keys)
    written = await store.write(SITE, EMPTY_JAR_VERSION, [cookie("a"), cookie("b")])
    await store.write(OTHER, EMPTY_JAR_VERSION, [cookie("c")])
    assert await store.clear([SITE]) == 2
    version, jar = await store.read(SITE, written.version)
    assert jar == [] and version > written.version
    assert await store.sites() == [OTHER]
    # A version is never handed out twice: a copy of the old jar at its old version
    # cannot be mistaken for the new jar.
    again = await store.write(SITE, NO_JAR_VERSION, [cookie("a")])
    assert again.version > version
    assert (await store.read(SITE, written.version)).cookies is not None
