"""The dedup key (and task id) of a request: a plain GET's is its URL's fingerprint, as it
always was (the ``seen`` set of an existing job stays valid); any other request's is the
hash of its method, URL and body together."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler._spider import METHODS
from crawler._urls import canonical_url, fingerprint, fingerprint_canonical, request_fingerprint
from tests.crawler.test_urls import http_urls

methods = st.sampled_from(sorted(METHODS))
bodies = st.none() | st.binary(max_size=40)


@given(http_urls())
def test_a_get_without_a_body_is_keyed_by_its_url_as_before(url: str) -> None:
    canonical = canonical_url(url)
    assert request_fingerprint(canonical) == fingerprint(url) == fingerprint_canonical(canonical)
    assert request_fingerprint(canonical, "GET", None) == fingerprint(url)
    assert request_fingerprint(canonical, "GET", b"") == fingerprint(url)


def test_a_get_s_key_is_the_one_stored_logs_have() -> None:
    assert request_fingerprint("https://example.com/") == "14ba2eb79c27555b"


@given(http_urls(), methods, bodies, methods, bodies)
def test_two_requests_of_a_url_share_a_key_exactly_when_method_and_body_are_the_same(
    url: str, method_a: str, body_a: bytes | None, method_b: str, body_b: bytes | None
) -> None:
    canonical = canonical_url(url)
    a = request_fingerprint(canonical, method_a, body_a)
    b = request_fingerprint(canonical, method_b, body_b)
    assert (a == b) == ((method_a, body_a or b"") == (method_b, body_b or b""))


@given(http_urls(), http_urls(), bodies)
def test_a_post_s_key_differs_from_any_get_s_and_from_another_url_s_post(
    url: str, other: str, body: bytes | None
) -> None:
    canonical, other_canonical = canonical_url(url), canonical_url(other)
    post = request_fingerprint(canonical, "POST", body)
    assert post != fingerprint_canonical(canonical)
    assert post != fingerprint_canonical(other_canonical)
    if other_canonical != canonical:
        assert post != request_fingerprint(other_canonical, "POST", body)
