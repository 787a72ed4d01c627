"""The crawl scope: prefix, host and domain modes, several seeds, and the depth limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._scope import SCOPE_MODES, Scope, ScopeMode, registrable_domain
from crawler._urls import canonical_url
from eventlog._exceptions import ConfigError
from tests.crawler.test_urls import http_urls

modes = st.sampled_from(SCOPE_MODES)
# Seeds come from the user, who types no whitespace: their canonical forms stand for them.
seed_urls = http_urls().map(canonical_url)


def test_prefix_mode_allows_paths_under_the_seed_directory() -> None:
    scope = Scope(("http://h/docs/index.html",))
    assert scope.allows("http://h/docs/index.html", 0)
    assert scope.allows("http://h/docs/api/x.html", 1)
    assert scope.allows("http://h/docs/", 1)
    assert not scope.allows("http://h/docs", 1)
    assert not scope.allows("http://h/blog/", 1)
    assert not scope.allows("http://h/docsother/", 1)


def test_prefix_mode_is_the_default() -> None:
    assert Scope(("http://h/",)).mode == "prefix"


def test_a_seed_without_a_trailing_slash_names_a_file_so_its_directory_is_the_parent() -> None:
    scope = Scope(("http://h/a/docs",))
    assert scope.allows("http://h/a/other", 1)
    assert not scope.allows("http://h/b", 1)


def test_prefix_mode_ignores_the_query_and_resolves_dot_segments() -> None:
    scope = Scope(("http://h/docs/",))
    assert scope.allows("http://h/docs/?page=2", 1)
    assert not scope.allows("http://h/docs/../secret", 1)
    assert not scope.allows("http://h/docs/%2e%2e/secret", 1)


def test_prefix_and_host_modes_need_the_same_scheme_host_and_port() -> None:
    for mode in ("prefix", "host"):
        scope = Scope(("http://h/",), mode)
        assert scope.allows("http://H:80/x", 1)
        assert not scope.allows("https://h/x", 1)
        assert not scope.allows("http://h:8080/x", 1)
        assert not scope.allows("http://www.h/x", 1)


def test_host_mode_allows_any_path_on_the_seed_host() -> None:
    scope = Scope(("https://h/docs/index.html",), "host")
    assert scope.allows("https://h/blog/post", 1)


def test_domain_mode_allows_the_registrable_domain_and_its_subdomains() -> None:
    scope = Scope(("https://www.example.co.uk/docs/",), "domain")
    assert scope.allows("https://example.co.uk/", 1)
    assert scope.allows("http://docs.example.co.uk:8080/x", 1)
    assert scope.allows("https://a.b.example.co.uk/", 1)
    assert not scope.allows("https://other.co.uk/", 1)
    assert not scope.allows("https://notexample.co.uk/", 1)
    assert not scope.allows("https://example.co.uk.evil.com/", 1)


def test_domain_mode_keeps_owners_of_a_shared_suffix_apart() -> None:
    scope = Scope(("https://alice.github.io/",), "domain")
    assert scope.allows("https://docs.alice.github.io/", 1)
    assert not scope.allows("https://bob.github.io/", 1)


def test_domain_mode_for_an_ip_address_seed_allows_only_that_address() -> None:
    scope = Scope(("http://127.0.0.1:8000/", "http://[::1]/"), "domain")
    assert scope.allows("http://127.0.0.1:9000/x", 1)
    assert scope.allows("http://[::1]:81/x", 1)
    assert not scope.allows("http://127.0.0.2/", 1)


def test_domain_mode_for_localhost_allows_its_subdomains() -> None:
    scope = Scope(("http://localhost:8000/",), "domain")
    assert scope.allows("http://api.localhost/", 1)
    assert not scope.allows("http://localhost.com/", 1)


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("docs.python.org", "python.org"),
        ("www.example.co.uk", "example.co.uk"),
        ("example.com.", "example.com"),
        ("localhost", "localhost"),
        ("co.uk", "co.uk"),
        ("10.0.0.1", "10.0.0.1"),
        ("a.b.xn--p1ai", "b.xn--p1ai"),
    ],
)
def test_the_registrable_domain_of_a_host(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


def test_with_several_seeds_a_url_is_allowed_if_any_seed_allows_it() -> None:
    scope = Scope(("http://a/docs/", "http://b/blog/"))
    assert scope.allows("http://a/docs/x", 1)
    assert scope.allows("http://b/blog/y", 1)
    assert not scope.allows("http://a/blog/y", 1)


def test_links_deeper_than_the_maximum_depth_are_not_followed() -> None:
    scope = Scope(("http://h/",), max_depth=2)
    assert scope.allows("http://h/x", 2)
    assert not scope.allows("http://h/x", 3)


def test_seeds_are_kept_canonical_and_once() -> None:
    scope = Scope(("HTTP://H:80/a#x", "http://h/a"))
    assert scope.seeds == ("http://h/a",)


@pytest.mark.parametrize(
    "url", ["mailto:a@h", "ftp://h/", "javascript:alert(1)", "/relative", "", "http://["]
)
def test_urls_that_are_not_http_are_never_allowed(url: str) -> None:
    assert not Scope(("http://h/",), "domain").allows(url, 0)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"seeds": ()}, "at least one seed"),
        ({"seeds": "http://h/"}, "not the string"),
        ({"seeds": ("ftp://h/",)}, "not an http(s) URL"),
        ({"seeds": ("http://h/",), "mode": "site"}, "expected one of prefix, host, domain"),
        ({"seeds": ("http://h/",), "max_depth": -1}, "negative"),
    ],
)
def test_a_bad_scope_is_a_config_error_saying_what_is_wrong(
    kwargs: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        Scope(**kwargs)  # type: ignore[arg-type]


@given(st.lists(seed_urls, min_size=1, max_size=3), modes)
def test_every_seed_is_in_its_own_scope(seeds: list[str], mode: ScopeMode) -> None:
    scope = Scope(tuple(seeds), mode)
    assert all(scope.allows(seed, 0) for seed in seeds)


@given(st.lists(seed_urls, min_size=1, max_size=3), modes, http_urls())
def test_allowing_does_not_depend_on_the_spelling_of_a_url(
    seeds: list[str], mode: ScopeMode, url: str
) -> None:
    scope = Scope(tuple(seeds), mode)
    assert scope.allows(url, 1) == scope.allows(canonical_url(url), 1)


@given(seed_urls, st.sampled_from(["prefix", "host"]), http_urls())
def test_prefix_and_host_modes_never_allow_another_scheme_host_or_port(
    seed: str, mode: ScopeMode, url: str
) -> None:
    scope = Scope((seed,), mode)
    if scope.allows(url, 1):
        assert canonical_url(url).startswith(_site_prefix(canonical_url(seed)))


@given(seed_urls, modes, st.sampled_from(["ftp", "file", "mailto", "data", "ws"]))
def test_no_mode_allows_a_scheme_other_than_http(seed: str, mode: ScopeMode, scheme: str) -> None:
    other = scheme + canonical_url(seed).partition(":")[2]
    assert not Scope((seed,), mode).allows(other, 0)


def _site_prefix(canonical: str) -> str:
    scheme, _, rest = canonical.partition("://")
    return f"{scheme}://{rest.partition('/')[0]}/"
