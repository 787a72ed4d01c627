"""TLS client contexts that read their CA certificates at their first connection.

Reading a CA bundle costs a process real CPU (certifi's, or the system's: a few hundred
certificates parsed), and a worker paid it three times before its
first request, whether or not the crawl had an https URL: aiohttp builds two contexts as
its connector module is imported (one verifying, one not), the fetcher one more. A one-page
crawl of an http site uses none of them. :class:`DeferredCAContext` is a context like
``ssl.create_default_context()``'s whose certificates are read when it first wraps a
connection; :func:`ca_loading_deferred` makes the contexts built while it is open (aiohttp's,
at its import) that way, and ``crawler._fetch`` builds its own so.

Nothing is verified less: a context verifies with the certificates it will have read by
then, and one that verifies nothing (``CERT_NONE``) has no use for them.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "DeferredCAContext",
    "ca_loading_deferred",
    "check_ca_location",
    "deferred_default_context",
]

log = logging.getLogger("crawlog.worker")

_KEYLOG_ENV = "SSLKEYLOGFILE"
_PEM_MARKERS = (b"-----BEGIN CERTIFICATE-----", b"-----BEGIN TRUSTED CERTIFICATE-----")
"""What a PEM bundle holds (``load_verify_locations`` reads no other file format)."""


class DeferredCAContext(ssl.SSLContext):
    """A client context whose CA certificates are read by its first ``wrap_bio`` or
    ``wrap_socket`` (every connection goes through one), or by :meth:`read_cas`."""

    _reader: Callable[[ssl.SSLContext], None] | None
    _reading: threading.Lock

    def defer(self, reader: Callable[[ssl.SSLContext], None]) -> None:
        """Read the certificates with ``reader(self)`` at the first connection."""
        self._reading = threading.Lock()
        self._reader = reader

    def read_cas(self) -> None:
        """Read the certificates now, if they were not read yet (once: a bundle that
        cannot be read leaves the context verifying nothing successfully)."""
        reading = getattr(self, "_reading", None)
        if reading is None:
            return  # nothing was deferred
        with reading:
            reader, self._reader = self._reader, None
            if reader is None:
                return
            try:
                reader(self)
            except (OSError, ValueError) as exc:  # ssl.SSLError included
                # Raised here, inside the event loop's start of a connection, it left the
                # connected socket open: the context goes on with no certificate instead,
                # so each connection fails its own handshake (certificate verify failed),
                # and why is said once.
                log.warning("cannot read the CA certificates for https connections: %s", exc)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.read_cas()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.read_cas()
        return super().wrap_socket(*args, **kwargs)


def deferred_default_context(
    reader: Callable[[ssl.SSLContext], None],
) -> DeferredCAContext:
    """A context as ``ssl.create_default_context()`` makes one for a client (certificates
    and host names verified, ``SSLKEYLOGFILE`` honoured), its CAs read by ``reader`` at its
    first connection."""
    context = DeferredCAContext(ssl.PROTOCOL_TLS_CLIENT)
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    keylog = os.environ.get(_KEYLOG_ENV)
    if keylog and not sys.flags.ignore_environment:
        context.keylog_filename = keylog
    context.defer(reader)
    return context


def check_ca_location(cafile: str | None, capath: str | None) -> None:
    """Raise ``OSError`` (its ``strerror`` says why) unless ``cafile`` is a readable file
    holding a PEM certificate and ``capath`` a directory (each if given): what a deferred
    read would fail on, told before it is deferred. A bundle can still fail to parse when
    read (a certificate cut short): that connection fails, saying so."""
    if cafile:
        with open(cafile, "rb") as bundle:
            if not any(marker in bundle.read() for marker in _PEM_MARKERS):
                raise OSError(errno.EINVAL, "no PEM certificate in it", cafile)
    if capath and not os.path.isdir(capath):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), capath)


@contextlib.contextmanager
def ca_loading_deferred() -> Iterator[None]:
    """While open, ``ssl.create_default_context()`` for a client without CA arguments
    returns a :class:`DeferredCAContext`, and a context that verifies nothing reads no CA
    certificates. For imports that build contexts they may never use (aiohttp's), before any
    thread runs: another thread would get the same deferral, which changes nothing it can
    tell but when the certificates are read."""
    create, set_paths = ssl.create_default_context, ssl.SSLContext.set_default_verify_paths

    def create_deferred(
        purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH,
        *,
        cafile: str | None = None,
        capath: str | None = None,
        cadata: str | bytes | None = None,
    ) -> ssl.SSLContext:
        if purpose != ssl.Purpose.SERVER_AUTH or cafile or capath or cadata:
            return create(purpose, cafile=cafile, capath=capath, cadata=cadata)
        reader = functools.partial(ssl.SSLContext.load_default_certs, purpose=purpose)
        return deferred_default_context(reader)

    def set_paths_if_verifying(context: ssl.SSLContext) -> None:
        if context.verify_mode != ssl.CERT_NONE:
            set_paths(context)

    ssl.create_default_context = create_deferred  # type: ignore[assignment]
    ssl.SSLContext.set_default_verify_paths = set_paths_if_verifying  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        ssl.create_default_context = create
        ssl.SSLContext.set_default_verify_paths = set_paths  # type: ignore[method-assign]
