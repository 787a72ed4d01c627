"""A fetcher's TLS context reads its CA certificates at its first https connection, not
before: a crawl of http pages never reads them. Deferred, they still decide: the site whose
certificate is in the bundle is fetched, and with a bundle that lacks it the fetch fails
with a TLS error. aiohttp's own contexts, built as it is imported, read nothing until used."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import certifi
import pytest

from crawler._fetch import Fetcher
from crawler._fetch_spec import ERROR_TLS
from crawler._tls import DeferredCAContext, ca_loading_deferred
from crawler.testsite import serve_testsite
from tests.tls_helpers import self_signed

pytestmark = pytest.mark.anyio

PAGE = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"


@contextlib.asynccontextmanager
async def https_site(cert: Path, key: Path) -> AsyncIterator[str]:
    """An https site on 127.0.0.1 answering every request with one page; its URL."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(PAGE)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"https://127.0.0.1:{port}/"
    finally:
        server.close()


def certificates(context: ssl.SSLContext) -> int:
    return context.cert_store_stats()["x509"]


async def test_the_bundle_is_read_at_the_first_https_connection_and_verifies_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # a setting no other test has read
    async with serve_testsite(pages=2, seed=1) as site, Fetcher() as fetcher:
        context = fetcher._ssl_context
        assert isinstance(context, DeferredCAContext)
        assert (await fetcher.fetch(site.url + "/")).status == 200
        assert certificates(context) == 0, "an http page read the CA bundle"
        async with https_site(cert, key) as url:
            fetched = await fetcher.fetch(url)
        assert (fetched.status, fetched.error, fetched.body) == (200, None, b"ok")
        assert certificates(context) == 1


async def test_a_bundle_without_the_site_s_certificate_fails_the_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path)
    other = tmp_path / "other.pem"  # certifi's certificates, none of them the site's
    shutil.copy(certifi.where(), other)
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    async with https_site(cert, key) as url, Fetcher() as fetcher:
        fetched = await fetcher.fetch(url)
    assert fetched.status == 0 and fetched.error is not None
    assert fetched.error.startswith(ERROR_TLS), fetched.error
    assert certificates(fetcher._ssl_context) > 0


def test_contexts_built_while_deferred_read_their_certificates_when_first_used() -> None:
    create = ssl.create_default_context
    with ca_loading_deferred():
        verifying = ssl.create_default_context()
        unverifying = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        unverifying.check_hostname = False
        unverifying.verify_mode = ssl.CERT_NONE
        unverifying.set_default_verify_paths()  # nothing to verify with it: nothing read
        named = ssl.create_default_context(cafile=certifi.where())  # asked for: read now
    assert ssl.create_default_context is create, "the deferral outlived its block"
    assert isinstance(verifying, DeferredCAContext) and certificates(verifying) == 0
    assert (verifying.verify_mode, verifying.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert certificates(unverifying) == 0
    assert certificates(named) > 0 and not isinstance(named, DeferredCAContext)
    verifying.read_cas()
    assert certificates(verifying) == certificates(create())


async def test_a_bundle_that_fails_to_parse_when_read_fails_each_https_fetch_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cert, key = self_signed(tmp_path)
    cut = tmp_path / "cut.pem"  # a PEM marker, then no certificate: read only when needed
    cut.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(cut))
    async with https_site(cert, key) as url, Fetcher() as fetcher:
        with anyio.fail_after(10):
            first, second = await fetcher.fetch(url), await fetcher.fetch(url)
    for fetched in (first, second):
        assert fetched.status == 0 and fetched.error is not None
        assert fetched.error.startswith(ERROR_TLS), fetched.error
    said = [r.getMessage() for r in caplog.records if "CA certificates" in r.getMessage()]
    assert len(said) == 1, said
