"""``redis+sentinel://[:password@]host:port[,host:port...]/service``: parsed exactly, written
back the same, refused in one clear error when malformed, and opened as a client whose
connections ask the Sentinels where the primary is on every (re)connect."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import ConfigError, client_for, is_sentinel_url, redacted
from eventlog._sentinel import FollowingConnection, parse_sentinel_url, sentinel_url

hosts = st.sampled_from(["127.0.0.1", "localhost", "sentinel-1.internal"])
ports = st.integers(min_value=1, max_value=65535)
services = st.text(alphabet=string.ascii_lowercase + string.digits + "_-", min_size=1, max_size=16)
passwords = st.none() | st.text(
    alphabet=string.ascii_letters + string.digits, min_size=1, max_size=32
)


@given(st.lists(st.tuples(hosts, ports), min_size=1, max_size=4), services, passwords)
def test_a_sentinel_url_round_trips(
    sentinels: list[tuple[str, int]], service: str, password: str | None
) -> None:
    url = sentinel_url(sentinels, service, password)
    assert is_sentinel_url(url)
    parsed = parse_sentinel_url(url)
    assert parsed.sentinels == tuple(sentinels)
    assert parsed.service == service
    assert parsed.password == password
    if password is not None:
        assert parse_sentinel_url(redacted(url)).password == "***"


def test_a_sentinel_without_a_port_listens_on_26379() -> None:
    assert parse_sentinel_url("redis+sentinel://h/crawlog").sentinels == (("h", 26379),)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel://127.0.0.1:26379", "names no service"),
        ("redis+sentinel://127.0.0.1:26379/", "names no service"),
        ("redis+sentinel://127.0.0.1:port/crawlog", "bad Sentinel address"),
        ("redis+sentinel://127.0.0.1:0/crawlog", "bad Sentinel address"),
        ("redis+sentinel://,127.0.0.1:1/crawlog", "bad Sentinel address"),
    ],
)
def test_a_malformed_sentinel_url_is_refused_saying_what_to_write(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        client_for(url)


def test_the_client_of_a_sentinel_url_follows_the_primary_on_every_connect() -> None:
    client = client_for("redis+sentinel://:secret@127.0.0.1:1,127.0.0.1:2/crawlog")
    assert issubclass(client.connection_pool.connection_class, FollowingConnection)
