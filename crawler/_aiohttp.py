"""aiohttp, imported without reading CA certificates for contexts the crawl may never use.

aiohttp's connector module builds two TLS contexts as it is imported, each reading the
system's CA certificates: CPU before a worker's first request, spent again in every worker
and for no purpose where the crawl has no https URL (the fetcher gives the connector its own
context). Imported here under ``crawler._tls.ca_loading_deferred``, they read them at their
first connection, if they ever make one. Every crawlog module imports aiohttp from here.
"""

from __future__ import annotations

from crawler._tls import ca_loading_deferred

with ca_loading_deferred():
    import aiohttp
    from aiohttp import DefaultResolver
    from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = ["AbstractResolver", "DefaultResolver", "ResolveResult", "aiohttp"]
