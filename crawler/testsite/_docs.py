"""The test site's docs layout: an ordinary documentation site of small pages.

``SiteMap(pages, seed, layout="docs")`` serves ``pages`` pages ``/<section>/page-<n>.html``
of 10 to 20 KB each, with 40 to 80 links: the same navigation on every page (the home
page, every section's index, the downloads page, a few links out of the site), the page's
own table of contents, a pager, and cross-references to other pages written relative to the
page (``page-7.html``, ``../api/page-8.html#s2``) or as absolute paths. Each section has an
index ``/<section>/`` linking all its pages; ``/downloads/`` links the site's PDFs
(``/_downloads/manual-<k>.pdf``), which a few pages link too; a few pages show a figure
(``<img src="/_images/figure-<k>.png">``), which no ``<a>`` links. It is the shape of a
site where a crawl's cost is the fetch and the per-page bookkeeping, not link resolution
(compare :mod:`crawler.testsite._linkdense`).

Pure and deterministic in (pages, seed, origin), like the other layouts; nothing is stored
per page.
"""

from __future__ import annotations

import math
import random
import struct
import zlib
from collections.abc import Callable

DOCS = "docs"
SECTION_NAMES = (
    "start",
    "tutorial",
    "guide",
    "reference",
    "api",
    "howto",
    "concepts",
    "deployment",
    "operations",
    "faq",
    "internals",
    "changelog",
)
PAGES_PER_SECTION = 100
"""Aimed-for section size: more pages make more sections, up to one per name."""
DOCS_MIN_PAGE_BYTES = 10 * 1024
DOCS_MAX_PAGE_BYTES = 20 * 1024
DOCS_MIN_LINKS = 40
DOCS_MAX_LINKS = 80
MIN_HEADINGS = 3
MAX_HEADINGS = 8
DOWNLOADS_PATH = "/downloads/"
PDF_PATH = "/_downloads/manual-{}.pdf"
PDFS = 6
PDF_EVERY = 100
"""Every hundredth page links one of the PDFs as well."""
IMAGE_PATH = "/_images/figure-{}.png"
IMAGES = 8
IMAGE_EVERY = 25
"""Every twenty-fifth page shows a figure."""
HTML = "text/html; charset=utf-8"
PDF = "application/pdf"
PNG = "image/png"
EXTERNAL_LINKS = (
    '<a href="https://github.com/other/project">source</a>',
    '<a href="https://other.invalid/license.html">license</a>',
    '<a href="mailto:docs@other.invalid">contact</a>',
)
PDF_BYTES = 16 * 1024
IMAGE_SIDE = 48


class DocsSite:
    """The structure and pages of the docs layout; `crawler.testsite.SiteMap` serves them.

    ``title``, ``text`` (a pool of prose, twice over) and ``rng`` come from the `SiteMap`,
    as for the link-dense layout.
    """

    def __init__(
        self,
        pages: int,
        *,
        title: Callable[[int], str],
        text: str,
        rng: Callable[[int, int], random.Random],
    ) -> None:
        self.pages = pages
        self.sections = SECTION_NAMES[
            : min(len(SECTION_NAMES), math.ceil(pages / PAGES_PER_SECTION))
        ]
        self._title = title
        self._pool = text
        self._pool_chars = len(text) // 2
        self._rng = rng
        nav = ['<a href="/">Home</a>', f'<a href="{DOWNLOADS_PATH}">Downloads</a>']
        nav += [
            f'<a href="{self.section_path(s)}">{name.capitalize()}</a>'
            for s, name in enumerate(self.sections)
        ]
        self._header = f"<header><nav>{' | '.join(nav)}</nav></header>\n"
        self._footer = f'<footer><a href="#top">Back to top</a> | {" | ".join(EXTERNAL_LINKS)}'
        self._footer += "</footer>\n"
        self.nav_links = len(nav) + 1 + len(EXTERNAL_LINKS)
        self._pdfs = frozenset(PDF_PATH.format(k) for k in range(1, PDFS + 1))
        self._images = frozenset(IMAGE_PATH.format(k) for k in range(1, IMAGES + 1))
        """Links every page has in its header and footer."""

    # --- the structure -------------------------------------------------------------------

    def section_of(self, page: int) -> int:
        return (page - 1) % len(self.sections)

    def section_pages(self, section: int) -> range:
        return range(section + 1, self.pages + 1, len(self.sections))

    def page_path(self, page: int) -> str:
        return f"/{self.sections[self.section_of(page)]}/page-{page}.html"

    def section_path(self, section: int) -> str:
        return f"/{self.sections[section]}/"

    def page_paths(self) -> frozenset[str]:
        """The documentation pages (not the indexes, nor the PDFs)."""
        return frozenset(self.page_path(p) for p in range(1, self.pages + 1))

    def pdf_paths(self) -> frozenset[str]:
        return self._pdfs

    def image_paths(self) -> frozenset[str]:
        """The figures: served, shown by some pages, linked by none."""
        return self._images

    def pages_ok(self) -> frozenset[str]:
        """Every page and PDF a crawler following ``<a href>`` reaches from ``/``."""
        paths = {"/", DOWNLOADS_PATH, *self.pdf_paths(), *self.page_paths()}
        paths.update(self.section_path(s) for s in range(len(self.sections)))
        return frozenset(paths)

    # --- rendering -----------------------------------------------------------------------

    def render(self, path: str) -> tuple[bytes, str] | None:
        """The body at ``path`` and its content type, or None if there is none."""
        if path == "/":
            return self._home(), HTML
        if path == DOWNLOADS_PATH:
            return self._downloads(), HTML
        if path in self._pdfs:
            return self._pdf(int(path.rpartition("-")[2][: -len(".pdf")])), PDF
        if path in self._images:
            return self._image(int(path.rpartition("-")[2][: -len(".png")])), PNG
        section_name, slash, rest = path[1:].partition("/")
        if not slash or section_name not in self.sections:
            return None
        section = self.sections.index(section_name)
        if rest == "":
            return self._section_index(section), HTML
        number = rest.removeprefix("page-").removesuffix(".html")
        if rest != f"page-{number}.html" or not number.isascii() or not number.isdigit():
            return None
        page = int(number)
        if number.startswith("0") or not 1 <= page <= self.pages:
            return None
        if self.section_of(page) != section:
            return None
        return self._page(page), HTML

    def _document(self, title: str, body: str) -> bytes:
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<title>{title}</title>\n</head>\n<body id="top">\n{self._header}<main>\n'
            f"<h1>{title}</h1>\n{body}</main>\n{self._footer}</body>\n</html>\n"
        ).encode()

    def _home(self) -> bytes:
        rows = [
            f'<li><a href="{self.section_path(s)}">{name.capitalize()}</a> '
            f"({len(self.section_pages(s))} pages)</li>"
            for s, name in enumerate(self.sections)
        ]
        body = f"<p>{self.pages} pages.</p>\n<ul>\n{chr(10).join(rows)}\n</ul>\n"
        return self._document("Documentation", body)

    def _downloads(self) -> bytes:
        rows = [
            f'<li><a href="{PDF_PATH.format(k)}">Manual, part {k} (PDF)</a></li>'
            for k in range(1, PDFS + 1)
        ]
        return self._document("Downloads", f"<ul>\n{chr(10).join(rows)}\n</ul>\n")

    def _section_index(self, section: int) -> bytes:
        rows = [
            f'<li><a href="page-{p}.html">{self._title(p)}</a></li>'
            for p in self.section_pages(section)
        ]
        body = f"<ul>\n{chr(10).join(rows)}\n</ul>\n"
        return self._document(self.sections[section].capitalize(), body)

    def _xref(self, page: int, target: int, form: int, heading: int) -> str:
        """A link from ``page`` to ``target`` in one of the forms generated docs use."""
        path = self.page_path(target)
        same = self.section_of(page) == self.section_of(target)
        relative = path.rpartition("/")[2] if same else ".." + path
        href = (relative, f"{relative}#s{heading}", path, f"{path}#s{heading}")[form % 4]
        return f'<a class="reference" href="{href}">{self._title(target)}</a>'

    def _page(self, page: int) -> bytes:
        rng = self._rng(4, page)
        size = rng.randint(DOCS_MIN_PAGE_BYTES, DOCS_MAX_PAGE_BYTES)
        links = rng.randint(DOCS_MIN_LINKS, DOCS_MAX_LINKS)
        headings = rng.randint(MIN_HEADINGS, MAX_HEADINGS)
        neighbours = self.section_pages(self.section_of(page))
        position = neighbours.index(page)
        pager = ['<a rel="up" href="./">Up</a>']
        if position > 0:
            pager.append(f'<a rel="prev" href="page-{neighbours[position - 1]}.html">Previous</a>')
        if position + 1 < len(neighbours):
            pager.append(f'<a rel="next" href="page-{neighbours[position + 1]}.html">Next</a>')
        extras = []
        if page % PDF_EVERY == 0:
            extras.append(f'<a href="{PDF_PATH.format(page // PDF_EVERY % PDFS + 1)}">PDF</a>')
        xrefs = max(1, links - self.nav_links - len(pager) - headings - len(extras))
        draws = struct.unpack(f"<{3 * xrefs + 1}I", rng.randbytes(4 * (3 * xrefs + 1)))
        anchors = [
            self._xref(page, draws[k] % self.pages + 1, draws[xrefs + k], k % headings + 1)
            for k in range(xrefs)
        ] + extras
        per_heading = math.ceil(len(anchors) / headings)
        for k in range(headings):
            at = min(len(anchors) - 1, k * per_heading)
            anchors[at] = f'</p>\n<h2 id="s{k + 1}">Part {k + 1}</h2>\n<p>' + anchors[at]
        toc = " ".join(f'<a href="#s{k}">{k}</a>' for k in range(1, headings + 1))
        head = f'<nav class="toc">{toc}</nav>\n'
        if page % IMAGE_EVERY == 0:
            figure = IMAGE_PATH.format(page // IMAGE_EVERY % IMAGES + 1)
            head += f'<figure><img src="{figure}" alt="figure"></figure>\n'
        head += "<p>"
        tail = f'</p>\n<nav class="pager">{" ".join(pager)}</nav>\n'
        title = self._title(page)
        fixed = len(self._document(title, "")) + len(head) + len(tail) + 2 * len(anchors)
        fixed += sum(len(anchor.encode()) for anchor in anchors)
        chunk, extra = divmod(max(0, size - fixed), len(anchors) + 1)
        starts = [draw % self._pool_chars for draw in draws[2 * xrefs :]]
        starts += starts[: len(anchors) + 1 - len(starts)]
        pieces = [self._pool[start : start + chunk] for start in starts[: len(anchors)]]
        pieces.append(self._pool[starts[-1] : starts[-1] + chunk + extra])
        body = [""] * (2 * len(anchors) + 1)
        body[0::2] = pieces
        body[1::2] = anchors
        return self._document(title, head + " ".join(body) + tail)

    def _pdf(self, number: int) -> bytes:
        """A small valid PDF of one page whose content stream is prose."""
        start = self._rng(5, number).randrange(self._pool_chars)
        text = self._pool[start : start + PDF_BYTES].replace("(", "").replace(")", "")
        stream = f"BT /F1 10 Tf 40 800 Td ({text}) Tj ET".encode()
        objects = [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
        out = bytearray(b"%PDF-1.4\n")
        offsets = []
        for k, body in enumerate(objects, start=1):
            offsets.append(len(out))
            out += b"%d 0 obj\n" % k + body + b"\nendobj\n"
        xref = len(out)
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
        out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
        out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
        out += b"startxref\n%d\n%%%%EOF\n" % xref
        return bytes(out)

    def _image(self, number: int) -> bytes:
        """A small valid PNG of noise (grey, 8 bits)."""
        rng = self._rng(6, number)
        rows = b"".join(b"\x00" + rng.randbytes(IMAGE_SIDE) for _ in range(IMAGE_SIDE))

        def chunk(kind: bytes, data: bytes) -> bytes:
            crc = zlib.crc32(kind + data)
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

        header = struct.pack(">IIBBBBB", IMAGE_SIDE, IMAGE_SIDE, 8, 0, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9))
            + chunk(b"IEND", b"")
        )
