"""A CA bundle that cannot be read (SSL_CERT_FILE pointing nowhere, or at something that
is not PEM) stops the fetcher with one clear line naming it, not an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler._fetch import Fetcher
from eventlog import ConfigError


@pytest.mark.parametrize("content", [None, b"not a certificate"], ids=["missing", "not PEM"])
def test_an_unreadable_ca_bundle_names_itself(
    content: bytes | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    if content is not None:
        bundle.write_bytes(content)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with pytest.raises(ConfigError, match=f"SSL_CERT_FILE={bundle}") as raised:
        Fetcher()
    assert "\n" not in str(raised.value)
