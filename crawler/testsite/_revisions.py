"""How the test site changes between runs, and how it answers a conditional request.

Every page the site serves with 200 carries an ``ETag`` (a hash of its body) and a
``Last-Modified`` (when the site started, or when the page was last edited), and answers a
request whose ``If-None-Match`` names that tag (or, without one, whose ``If-Modified-Since``
is not older) with ``304 Not Modified`` and no body, as a real server does: from the
validators it keeps of each page it served (`Revisions.not_modified`), without rendering the
page again, until a mutation edits the site.

`Revisions.mutate` edits some item pages (their body gets a revision mark, so their tag and
date change) and deletes others (404 from then on): what a recrawl must find changed and
gone. The site's admin path `MUTATE_PATH` does it for a site served by another process.
"""

from __future__ import annotations

import html
import random
import time
import zlib
from collections.abc import Iterable
from email.utils import formatdate, parsedate_to_datetime
from typing import Final
from urllib.parse import parse_qs, urlsplit

import msgspec

from crawler.testsite._sitegen import HTML, ITEM_PREFIX, TEXT, Page

MUTATE_PATH: Final = "/_admin/mutate"
"""``GET /_admin/mutate?changed=N&deleted=M&added=K&seed=S``: edit N item pages and delete
M (chosen by S among the pages neither edited nor deleted yet), the first K edited pages
each linking a page of its own that did not exist; answers the paths as JSON."""
ADDED_PREFIX: Final = "/fresh/"
"""Where the pages a mutation adds are: each linked from the page whose edit added it."""
OK: Final = 200
NOT_MODIFIED: Final = 304
GONE_STATUS: Final = 404
KEPT_VALIDATORS_MAX: Final = 1_000_000
"""Pages whose validators the site keeps at most (a few hundred bytes each): the pages
served after these are rendered again to answer a conditional request."""


class Mutation(msgspec.Struct, frozen=True):
    """The paths one mutation edited and deleted."""

    changed: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    added: tuple[str, ...] = ()


class Revisions:
    """The site's edits and deletions so far, and the validators of what it serves."""

    def __init__(self, item_paths: frozenset[str]) -> None:
        self._items = sorted(p for p in item_paths if p.startswith(ITEM_PREFIX))
        self._born = int(time.time())
        self._revision: dict[str, int] = {}
        self._edited_at: dict[str, int] = {}
        self._deleted: set[str] = set()
        self._links: dict[str, str] = {}  # an edited page -> the page its edit added
        # A page served with 200 -> its ETag and content type: what a conditional request
        # of it is answered from while the site is not edited.
        self._kept: dict[str, tuple[str, str]] = {}
        self._dates: dict[int, str] = {}  # a Last-Modified second -> its header value

    def mutate(self, changed: int, deleted: int, seed: int, added: int = 0) -> Mutation:
        """Edit ``changed`` item pages and delete ``deleted`` others, chosen by ``seed``
        among those still untouched; the first ``added`` edited pages each link a new page."""
        untouched = [p for p in self._items if p not in self._revision and p not in self._deleted]
        picked = random.Random(seed).sample(untouched, min(changed + deleted, len(untouched)))
        edits, gone = sorted(picked[:changed]), sorted(picked[changed:])
        self.edit(edits)
        self._deleted.update(gone)
        fresh = []
        for path in edits[:added]:
            page = f"{ADDED_PREFIX}{path.rsplit('/', 1)[-1]}-{self._revision[path]}"
            self._links[path] = page
            fresh.append(page)
        return Mutation(changed=tuple(edits), deleted=tuple(gone), added=tuple(fresh))

    def edit(self, paths: Iterable[str]) -> Mutation:
        """Edit these pages, whatever they are (a listing, the home page), as `mutate`
        edits item pages: each served from now on with another body and validators."""
        # Later than anything served before, even within the site's first second.
        at = max(int(time.time()), self._born + 1)
        edits = sorted(set(paths))
        for path in edits:
            self._revision[path] = self._revision.get(path, 0) + 1
            self._edited_at[path] = at
        self._kept.clear()
        return Mutation(changed=tuple(edits))

    def admin(self, target: str) -> Page:
        """The answer to `MUTATE_PATH`: the mutation it asked for, done."""
        query = parse_qs(urlsplit(target).query)

        def number(name: str) -> int:
            values = query.get(name, ["0"])
            return int(values[0]) if values[0].isdigit() else 0

        done = self.mutate(
            number("changed"), number("deleted"), number("seed"), added=number("added")
        )
        return Page(200, msgspec.json.encode(done), "application/json")

    def not_modified(self, path: str, headers: dict[str, str]) -> Page | None:
        """The 304 for a conditional request of a page served since the last mutation whose
        validators still hold, from those it kept (the page is not rendered); None: render
        the page and `serve` it."""
        if (kept := self._kept.get(path)) is None:
            return None
        etag, content_type = kept
        modified_at = self._edited_at.get(path, self._born)
        if not _not_modified(headers, etag, modified_at):
            return None
        return Page(NOT_MODIFIED, b"", content_type, self._validators(etag, modified_at))

    def serve(self, path: str, page: Page, headers: dict[str, str]) -> Page:
        """``page`` as the site serves it now: deleted, edited, or as generated, with its
        validators; 304 if the request's own validators still hold."""
        if path in self._deleted:
            return Page(GONE_STATUS, b"deleted\n", TEXT)
        if path in self._links.values():
            title = html.escape(path)
            page = Page(
                OK,
                f"<html><head><title>{title}</title></head><body></body></html>\n".encode(),
                HTML,
            )
        if page.status != OK:  # only a page's 200 has validators
            return page
        body = page.body
        if (revision := self._revision.get(path)) is not None:
            body += f"\n<!-- revision {revision} -->\n".encode()
        if (link := self._links.get(path)) is not None:
            body += f'<p><a href="{link}">new</a></p>\n'.encode()
        etag = f'"{zlib.crc32(body):08x}-{len(body):x}"'
        modified_at = self._edited_at.get(path, self._born)
        validators = self._validators(etag, modified_at)
        if len(self._kept) < KEPT_VALIDATORS_MAX:
            self._kept[path] = (etag, page.content_type)
        if _not_modified(headers, etag, modified_at):
            return Page(NOT_MODIFIED, b"", page.content_type, validators)
        return Page(page.status, body, page.content_type, page.headers + validators)

    def _validators(self, etag: str, modified_at: int) -> tuple[tuple[str, str], ...]:
        if (date := self._dates.get(modified_at)) is None:
            date = self._dates[modified_at] = formatdate(modified_at, usegmt=True)
        return (("ETag", etag), ("Last-Modified", date))


def _not_modified(headers: dict[str, str], etag: str, modified_at: int) -> bool:
    """RFC 9110 13.2.2: ``If-None-Match`` decides when present, else ``If-Modified-Since``."""
    if (tags := headers.get("if-none-match")) is not None:
        return tags.strip() == "*" or etag in (t.strip() for t in tags.split(","))
    if (since := headers.get("if-modified-since")) is not None:
        try:
            return modified_at <= parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError):
            return False
    return False
