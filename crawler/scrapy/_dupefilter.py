"""``crawler.scrapy.DupeFilter``: Scrapy's duplicate filter in front of crawlog's ``seen``.

The job's real deduplication is the enqueue script, across every process of the job and
every run of it: a fingerprint enters ``seen`` once, with its task. This filter only spares
the round trip for requests this process already enqueued, in a bounded cache, keyed by
Scrapy's own request fingerprint (``REQUEST_FINGERPRINTER_CLASS``), so it never disagrees
with what the scheduler enqueues.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Self

from scrapy import Request, Spider
from scrapy.dupefilters import BaseDupeFilter

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.utils.request import RequestFingerprinterProtocol

log = logging.getLogger("crawlog.scrapy")

SEEN_CACHE_SIZE = 100_000
"""Fingerprints this process remembers; older ones are asked of Redis again (harmless)."""


class DupeFilter(BaseDupeFilter):
    """Scrapy's ``DUPEFILTER_CLASS`` for a crawlog job (see the module docs)."""

    def __init__(self, fingerprinter: RequestFingerprinterProtocol, *, debug: bool = False):
        self.fingerprinter = fingerprinter
        self.debug = debug
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._logged = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        """The filter Scrapy builds from ``DUPEFILTER_CLASS``."""
        assert crawler.request_fingerprinter is not None
        return cls(
            crawler.request_fingerprinter, debug=crawler.settings.getbool("DUPEFILTER_DEBUG")
        )

    def request_seen(self, request: Request) -> bool:
        """Whether this process already enqueued a request with this fingerprint."""
        fp = self.fingerprinter.fingerprint(request)
        if fp in self._seen:
            self._seen.move_to_end(fp)
            return True
        self._seen[fp] = None
        if len(self._seen) > SEEN_CACHE_SIZE:
            self._seen.popitem(last=False)
        return False

    def log(self, request: Request, spider: Spider) -> None:
        """Say (once, or every time with DUPEFILTER_DEBUG) that a duplicate was filtered."""
        if self.debug:
            log.debug("Filtered duplicate request: %s", request)
        elif not self._logged:
            log.debug("Filtered duplicate request: %s (no more duplicates shown)", request)
            self._logged = True
