"""Loading the CA bundle is most of a fetcher's set-up: the fetchers of a process (and the
workers a crawl forks after building it) share one TLS context per CA setting, and a
different SSL_CERT_FILE still gets its own."""

from __future__ import annotations

import certifi
import pytest

from crawler._fetch import Fetcher


def test_fetchers_share_a_context_until_the_ca_setting_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first, second = Fetcher(), Fetcher()
    assert first._ssl_context is second._ssl_context
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    other = Fetcher()
    assert other._ssl_context is not first._ssl_context
    assert Fetcher()._ssl_context is other._ssl_context
