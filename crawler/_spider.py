"""The spider API: what a crawl does with a page.

A spider is a class with a ``name``, ``start_urls`` and ``async def parse(self, response)``
that yields what it found::

    class Listings(Spider):
        name = "listings"
        start_urls = ("https://shop.example/list?page=1",)

        async def parse(self, response):
            for row in rows(response.body):
                yield Item(row.sku, {"price": row.price})   # output, keyed
            for href in detail_links(response.body):
                yield Follow(href)                          # a new task
            if (nxt := next_page(response.body)):
                yield NextPage(nxt)                         # the same task's next page

After each page the worker appends the page's events and a checkpoint (page number, next
URL, last item key) in one fenced step; a task killed at page k resumes at page k + 1,
``response.resume`` telling the spider where it stopped. Output is keyed, so a redone page
writes each key once.

Everything a spider yields is checked where it is yielded (`check_output`): a URL is
resolved against the page (``Follow("/item/1")`` as a browser would), one that is not
http(s) is dropped and counted; a plain ``dict`` is an item keyed by its ``"url"`` (else
the page URL and the dict's position); anything else, or an item msgpack cannot carry,
fails the task with a `SpiderOutputError` naming the spider, the page and the output.
``content_types`` says which responses reach ``parse`` (None: every one).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Mapping,
    Sequence,
)
from pathlib import Path
from types import ModuleType
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Literal,
    Protocol,
    TypeAlias,
    TypeVar,
    get_args,
)
from urllib.parse import urlencode, urljoin

import msgspec
from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from crawler._defaults import DEFAULT_MAX_ITEM_BYTES
from crawler._links import LinkResolver, parse_page
from crawler._recrawl import body_hash
from crawler._rules import DENIED_BY_RULE, LinkRules
from crawler._urls import clean_href, join_href
from eventlog import ConfigError, CrawlogError, Cursor, Evidence, RequestSpec

if TYPE_CHECKING:
    from parsel import Selector, SelectorList

T = TypeVar("T")
HTML_TYPES: Final = ("text/html", "application/xhtml+xml")
XML_TYPES: Final = ("application/xml", "text/xml")
"""With any ``+xml`` type (Atom, RSS): what ``response.css``/``xpath`` read as XML."""
DICT_KEY_FIELD: Final = "url"
"""The field of a yielded ``dict`` that keys the item it becomes (if it is a string)."""
OUTPUT_SHOWN = 80
"""Characters of a refused output's repr quoted in the error."""


class Item(msgspec.Struct, frozen=True):
    """An output record: its ``key`` makes it exactly-once across refetches."""

    key: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
"""The HTTP methods a `Follow` may use."""
METHODS: Final[frozenset[str]] = frozenset(get_args(Method))
FORM_TYPE: Final = "application/x-www-form-urlencoded"
"""The Content-Type of a ``form=`` body (an HTML form's, as Scrapy's ``FormRequest``)."""
DEFAULT_CALLBACK: Final = "parse"


class Follow(msgspec.Struct, frozen=True):
    """A request to crawl as a new task (kept only if in scope and within depth).

    By default a GET of ``url`` whose response goes to the spider's ``parse``. Else:

    * ``callback``: the name of the spider method that parses it instead (an ``async def``
      generator, or a plain generator), called with the response (``self.parse_item``
      is taken as its name);
    * ``data``: a dict the callback gets as ``response.data`` (msgpack- and JSON-encodable);
    * ``meta``: a dict the callback gets as ``response.meta`` (Scrapy's ``Request.meta``,
      encodable as ``data`` is), and ``cb_kwargs``: keyword arguments the callback is
      called with (Scrapy's ``Request.cb_kwargs``), ``parse_item(response, sku="7")``;
    * ``method`` (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS), ``body`` (bytes, or text
      sent as UTF-8) and ``headers`` (sent over the job's default headers);
    * ``form``: fields sent URL-encoded as the body, with that Content-Type, as a POST
      unless ``method`` says otherwise (a GET puts them in the query string).

    All of it travels with the task, so that a task redone after a kill is the same
    request parsed by the same callback with the same data. A request other than a plain
    GET is deduplicated by its method, URL and body together.
    """

    url: str
    priority: int = 0
    callback: str | Callable[..., Any] | None = None
    """A method's name, or (a Scrapy habit) the bound method itself: its name is kept."""
    data: dict[str, Any] | None = None
    method: Method | None = None
    """None: GET, or POST for a ``form``."""
    body: bytes | str | None = None
    form: Mapping[str, str | Sequence[str]] | None = None
    headers: Mapping[str, str] | None = None
    meta: dict[str, Any] | None = None
    cb_kwargs: dict[str, Any] | None = None

    def spec(self) -> RequestSpec | None:
        """The task's `RequestSpec` of a checked Follow (`check_output`); None for a plain
        GET parsed by ``parse``."""
        body = self.body.encode() if isinstance(self.body, str) else self.body
        callback = self.callback
        if callback is not None and not isinstance(callback, str):
            raise TypeError("Follow.spec() of an unchecked Follow (see check_output)")
        spec = RequestSpec(
            callback=None if callback == DEFAULT_CALLBACK else callback,
            data=self.data or None,
            method=self.method or "GET",
            body=body or None,
            headers=dict(self.headers) if self.headers else None,
            meta=self.meta or None,
            cb_kwargs=self.cb_kwargs or None,
        )
        return None if spec == _PLAIN else spec


_PLAIN: Final = RequestSpec()


class NextPage(msgspec.Struct, frozen=True):
    """The next page of this same task; ``cursor`` comes back in ``response.resume.state``.

    Always a GET, whatever the task's first request was (the next page of a search posted
    as a form is a link), with the task's headers, parsed by the task's callback. Its
    ``response.data`` is ``data`` if given (kept in the checkpoint, so a resume has it),
    else the task's; so are its ``response.meta`` and the callback's ``cb_kwargs``.

    A next page the task already fetched ends the task instead (a pagination loop), unless
    ``dont_filter`` (a site whose same URL gives the next page, from a session); a task
    also ends at the job's page cap (``JobConfig.max_task_pages``)."""

    url: str
    cursor: str | None = None
    data: dict[str, Any] | None = None
    dont_filter: bool = False
    meta: dict[str, Any] | None = None
    cb_kwargs: dict[str, Any] | None = None


Output = Item | Follow | NextPage
Once = Callable[[str, Callable[[], Awaitable[T]]], Awaitable[T | None]]
ActionMark = Literal["intended", "done", "aborted"]
"""An action's two-phase marker (``response.once``): its intent logged, or its completion;
or a person's decision to stop the task there (``crawlog resolve --abort``)."""


class TaskProgress(Protocol):
    """What a task's long interaction (`crawler.Flow`) writes while its page is parsed:
    checkpoints in the middle of the page and the two-phase markers of its actions, each
    fenced by the task's lease as the worker's own steps are."""

    async def save(self, state: str, items: Sequence[Item]) -> None:
        """Write ``items`` and a checkpoint whose ``Cursor.state`` is ``state``, in one
        step: a task resumed from it fetches this page again, ``response.resume`` said."""

    async def mark(self, action_id: str) -> ActionMark | None:
        """The action's marker: None (never started), "intended" or "done"."""

    async def intend(self, action_id: str) -> None:
        """Log the action's intent (before it runs)."""

    async def done(self, action_id: str, result: str | None = None) -> None:
        """Log the action's completion (after it ran, or once a check found it had)."""

    async def ask(self, action_id: str, reason: str, evidence: Evidence | None = None) -> None:
        """Pause the task for a person to decide about ``action_id`` (intended: ``crawlog
        resolve``), ``evidence`` the report they see; raises, ending the page's parse: the
        task waits, parked."""


class Response:
    """A fetched page, as a spider sees it."""

    __slots__ = (
        "_base",
        "_body_hash",
        "_encoding",
        "_once",
        "_request",
        "_selector",
        "_spec",
        "_task_url",
        "_text",
        "body",
        "browser_page",
        "cb_kwargs",
        "content_type",
        "data",
        "depth",
        "dropped",
        "elapsed_ms",
        "headers",
        "link_rules",
        "meta",
        "page",
        "progress",
        "resume",
        "status",
        "task_id",
        "url",
    )

    def __init__(
        self,
        *,
        url: str,
        status: int,
        headers: dict[str, str],
        body: bytes,
        elapsed_ms: float,
        task_id: str,
        depth: int,
        page: int,
        resume: Cursor | None,
        data: dict[str, Any] | None = None,
        once: Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]],
        link_rules: LinkRules | None = None,
        browser_page: Any = None,
        spec: RequestSpec | None = None,
        task_url: str | None = None,
        meta: dict[str, Any] | None = None,
        cb_kwargs: dict[str, Any] | None = None,
        progress: TaskProgress | None = None,
        body_hash: str | None = None,
    ) -> None:
        self.url, self.status, self.headers, self.body = url, status, headers, body
        self.progress = progress
        """The task's checkpoints and action markers mid-page, for a `crawler.Flow` (None
        where no worker runs the task: a response made in a test)."""
        self.browser_page = browser_page
        """With ``--browser``: the live Playwright page the body was rendered in, to click,
        fill, scroll and wait in while ``parse`` runs (closed once it returns); else None.
        (``page`` is the page's number in its task.)"""
        self.elapsed_ms, self.task_id, self.depth, self.page = elapsed_ms, task_id, depth, page
        self.resume = resume
        """The checkpoint this task resumed from (None on its first run)."""
        self.data: dict[str, Any] = {} if data is None else data
        """The ``data`` of the `Follow` that made this task, or of the `NextPage` that led
        to this page (``{}`` without any)."""
        self.content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        """The media type, lowercase, without parameters ("" without a Content-Type)."""
        # ``meta``, ``cb_kwargs``: a NextPage's own (from its checkpoint), over the task's.
        if meta is None and spec is not None:
            meta = spec.meta
        if cb_kwargs is None and spec is not None:
            cb_kwargs = spec.cb_kwargs
        self.meta: dict[str, Any] = dict(meta or {})
        """The ``meta`` of the `Follow` that made this task, or of the `NextPage` that led to
        this page (``{}`` without any), as Scrapy's ``response.meta``."""
        self.cb_kwargs: dict[str, Any] = dict(cb_kwargs or {})
        """The keywords the callback is called with (the `Follow`'s or `NextPage`'s)."""
        self._spec, self._task_url = spec, task_url
        self._request: Follow | None = None
        self._once = once
        self._text: str | None = None
        self._encoding: str | None = None
        self._base: URL | None = None
        self._selector: Selector | None = None
        self._body_hash = body_hash
        self.link_rules = link_rules
        """The job's allow/deny rules (None without any): `follow_all` applies them."""
        self.dropped: dict[str, int] = {}
        """Links `follow_all` (or the default spider) left out by a rule, by reason: counted
        in the page's ``dropped`` reasons with the worker's own."""

    def __repr__(self) -> str:
        return f"<{self.status} {self.url}>"

    @property
    def body_hash(self) -> str:
        """The hash of the whole body (128-bit BLAKE2b, hex) a fetch records
        (`eventlog.PageFetched.body_hash`, without a ``change_region``): the default
        spider's ``content_hash``. A worker hands over the one it computed for the page's
        event; else computed once, when first read."""
        if self._body_hash is None:
            self._body_hash = body_hash(self.body)
        return self._body_hash

    @property
    def charset(self) -> str | None:
        """The charset the Content-Type header names, if any (`encoding` is what the body
        is decoded with)."""
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                return value.strip('"')
        return None

    @property
    def encoding(self) -> str:
        """The body's encoding, found as Scrapy finds it (w3lib's rules): a BOM, else the
        Content-Type header's charset, else the body's own declaration (``<meta charset>``,
        ``<meta http-equiv>``, ``<?xml encoding?>``), else the first of ASCII, UTF-8 and
        cp1252 that decodes it (Scrapy 2.19 guesses with charset-normalizer there, which a
        worker does not load)."""
        if self._encoding is None:
            self._decode()
            assert self._encoding is not None
        return self._encoding

    @property
    def text(self) -> str:
        """The body decoded with its `encoding`, never raising (what cannot be decoded
        becomes U+FFFD); what ``css``, ``xpath`` and ``selector`` read."""
        if self._text is None:
            self._decode()
            assert self._text is not None
        return self._text

    def _decode(self) -> None:
        # As Scrapy's TextResponse: the declared encoding (BOM, header, body) if any, else
        # the one w3lib infers; the text is w3lib's decoding with it. Imported here: the
        # default spider never decodes a page as a whole.
        from w3lib.encoding import (
            html_body_declared_encoding,
            html_to_unicode,
            http_content_type_encoding,
            read_bom,
        )

        body = self.body
        try:
            encoding = (
                read_bom(body)[0]
                or http_content_type_encoding(self.headers.get("content-type", ""))
                or html_body_declared_encoding(body)
            )
            if encoding is None:
                # What ``html_to_unicode`` did with Scrapy's ``auto_detect_fun`` and
                # ``default_encoding`` once the BOM, the header and the page named none:
                # w3lib 2.6 deprecated both, and Scrapy still passes them.
                encoding = _auto_detect(body) or _DEFAULT_ENCODING
            text = html_to_unicode(f"charset={encoding}", body)[1]
        except (LookupError, UnicodeError):  # a codec that is no text encoding (``idna``)
            encoding, text = "utf-8", body.decode("utf-8", errors="replace")
        self._encoding, self._text = encoding, text

    def urljoin(self, url: str) -> str:
        """``url`` resolved against the page (its ``<base href>`` first), as Scrapy's
        ``response.urljoin``."""
        return urljoin(str(self.base_url), url)

    @property
    def request(self) -> Follow:
        """The request this page answers, as a `Follow` (Scrapy's ``response.request``):
        its URL (the task's, or the `NextPage`'s), method, body, headers, callback, data,
        ``meta`` and ``cb_kwargs``."""
        if self._request is None:
            spec, resume = self._spec, self.resume
            ahead = resume.url if resume is not None and resume.url else None
            first = spec is not None and ahead is None  # only the first page has its body
            self._request = Follow(
                ahead or self._task_url or self.url,
                callback=spec.callback if spec is not None else None,
                data=self.data or None,
                method=_method(spec.method) if first and spec is not None else "GET",
                body=spec.body if first and spec is not None else None,
                headers=spec.headers if spec is not None else None,
                meta=self.meta or None,
                cb_kwargs=self.cb_kwargs or None,
            )
        return self._request

    def json(self) -> Any:
        """The body parsed as JSON (a `msgspec.DecodeError` if it is not JSON)."""
        return msgspec.json.decode(self.body)

    @property
    def base_url(self) -> URL:
        """What the URLs this page yields are resolved against: its ``<base href>`` (an
        HTML page's, if it is http(s)), else its own URL."""
        if self._base is None:
            page = URL(self.url)
            self._base = page
            # The parse is paid only by a page whose spider yields a relative URL.
            if self.content_type in HTML_TYPES and b"<base" in self.body.lower():
                node = LexborHTMLParser(self.body).css_first("base[href]")
                href = node.attrs.get("href") if node is not None else None
                if href and (based := join_href(clean_href(href), page)) is not None:
                    self._base = URL(based)
        return self._base

    @property
    def selector(self) -> Selector:
        """The page as a parsel `Selector` (Scrapy's), built on first use: XML for an XML
        media type (``application/xml``, ``text/xml``, ``*+xml``), else HTML."""
        if self._selector is None:
            # Imported here: a spider that never selects (the default one) loads no lxml.
            from parsel import Selector

            kind = self.content_type
            xml = kind in XML_TYPES or (kind.endswith("+xml") and kind not in HTML_TYPES)
            self._selector = Selector(
                text=self.text, type="xml" if xml else "html", base_url=self.url
            )
        return self._selector

    def css(self, query: str) -> SelectorList[Selector]:
        """``response.selector.css(query)``, as in Scrapy: ``response.css("h1::text").get()``,
        ``response.css("a::attr(href)").getall()``."""
        return self.selector.css(query)

    def xpath(self, query: str, **variables: Any) -> SelectorList[Selector]:
        """``response.selector.xpath(query)``, as in Scrapy (``$name`` variables as keywords)."""
        return self.selector.xpath(query, **variables)

    def follow(self, url: str | Selector, **follow: Any) -> Follow:
        """A `Follow` of ``url`` resolved against the page (its ``<base href>`` first), as
        Scrapy's ``response.follow``: ``url`` is an href, or a selector of an ``<a>`` or
        ``<link>`` element (its href) or of an attribute or text (its value). Keywords go to
        `Follow` as they are. An href that is not http(s) (``mailto:``) is kept as written:
        the worker drops it and counts why."""
        href = _href(url)
        resolved = join_href(clean_href(href), self.base_url)
        return Follow(href if resolved is None else resolved, **follow)

    def follow_all(
        self,
        urls: Iterable[str | Selector] | None = None,
        *,
        css: str | None = None,
        xpath: str | None = None,
        **follow: Any,
    ) -> list[Follow]:
        """`follow` of each of ``urls``, or of what ``css`` or ``xpath`` selects (exactly one
        of the three), the job's link rules applied: a link a rule leaves out is not in the
        list but counted on the page. Selected elements without an href are skipped, as
        Scrapy does; a URL met again is left out (the crawl would skip it anyway)."""
        if sum(given is not None for given in (urls, css, xpath)) != 1:
            raise SpiderOutputError(
                f"follow_all on {self.url}: give exactly one of urls, css= or xpath="
            )
        lenient = css is not None or xpath is not None or _is_selector_list(urls)
        if css is not None or xpath is not None:
            urls = self._link_values(css, xpath)
        assert urls is not None
        rules, base = self.link_rules, self.base_url
        # Pages repeat hrefs (navigation, anchors): each distinct one is resolved once.
        hrefs: set[str] = set()
        targets: set[str] = set()
        follows: list[Follow] = []
        for url in urls:
            href = _href_or_none(url)
            if href is None:
                if lenient:
                    continue
                _href(url)  # raises, saying what it cannot follow
                continue
            if href in hrefs:
                continue
            hrefs.add(href)
            resolved = join_href(clean_href(href), base)
            target = href if resolved is None else resolved
            if target in targets:
                continue
            targets.add(target)
            if rules is not None and not rules.allows(target):
                self.dropped[DENIED_BY_RULE] = self.dropped.get(DENIED_BY_RULE, 0) + 1
                continue
            follows.append(Follow(target, **follow))
        return follows

    def _link_values(self, css: str | None, xpath: str | None) -> list[str]:
        """The hrefs (or selected values) ``css`` or ``xpath`` picks, as `follow_all` reads
        them: straight from lxml, since a page's hundreds of links wrapped one by one in a
        parsel `Selector` cost more than finding them."""
        selector = self.selector
        try:
            if xpath is None:
                assert css is not None
                xpath = _css_to_xpath(css, selector.type == "html")
            found = selector.root.xpath(
                xpath, namespaces=dict(selector.namespaces), smart_strings=False
            )
        except Exception as exc:  # lxml's XPathError, or cssselect's for a bad css query
            query = css if xpath is None else xpath
            raise SpiderOutputError(f"follow_all on {self.url}: {exc} in {query}") from None
        values: list[str] = []
        for value in found if isinstance(found, list) else [found]:
            if isinstance(value, str):  # an attribute or text selected
                values.append(value)
            elif getattr(value, "tag", None) in _LINK_ELEMENTS:
                href = value.get("href")
                if isinstance(href, str):
                    values.append(href)
        return values

    async def once(self, action_id: str, action: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``action`` exactly once for this task, whatever crashes and resumes happen.

        An intent event is written before it and a done event after. On resume a done
        action is skipped (returns None); an intent without done stops the task as paused
        ("uncertain action") for a person to decide, since it may or may not have run.
        """
        return await self._once(action_id, action)  # type: ignore[no-any-return]


_DEFAULT_ENCODING: Final = "ascii"
"""Scrapy's default encoding of a text response (w3lib reads ASCII as cp1252)."""
_DETECTED: Final = ("ascii", "utf-8", "cp1252")
"""What a body without a declared encoding is tried as, in order (Scrapy's)."""


def _auto_detect(body: bytes) -> str | None:
    from w3lib.encoding import resolve_encoding

    for encoding in _DETECTED:
        try:
            body.decode(encoding)
        except UnicodeError:
            continue
        return resolve_encoding(encoding)
    return None


def _method(name: str) -> Method:
    return name if name in METHODS else "GET"  # type: ignore[return-value]


@functools.lru_cache(maxsize=256)
def _css_to_xpath(css: str, html: bool) -> str:
    # Cached here: a spider asks the same few queries of every page, and translating one
    # costs as much as running it.
    from parsel.csstranslator import GenericTranslator, HTMLTranslator

    return (HTMLTranslator() if html else GenericTranslator()).css_to_xpath(css)


_LINK_ELEMENTS: Final = ("a", "link")
"""The elements `Response.follow` takes the href of, as Scrapy does."""


def _is_selector_list(value: object) -> bool:
    # Duck-typed, so that parsel is imported only where a spider uses it.
    return isinstance(value, list) and type(value).__name__ == "SelectorList"


def _href_or_none(url: object) -> str | None:
    """The href a `follow` argument names; None for a selector that names none."""
    if isinstance(url, str):
        return url
    root = getattr(url, "root", None)
    if isinstance(root, str):  # a selected attribute (``::attr(href)``, ``@href``) or text
        return root
    if getattr(root, "tag", None) in _LINK_ELEMENTS:
        href = url.attrib.get("href")  # type: ignore[attr-defined]
        return href if isinstance(href, str) else None
    return None


def _href(url: object) -> str:
    href = _href_or_none(url)
    if href is not None:
        return href
    if _is_selector_list(url):
        raise SpiderOutputError(
            "response.follow takes one selector, not a SelectorList: use follow_all, or .get()"
        )
    root = getattr(url, "root", None)
    if root is not None and hasattr(url, "attrib"):
        tag = getattr(root, "tag", "?")
        raise SpiderOutputError(
            f"response.follow: only <a> and <link> elements with an href are followed, "
            f"not <{tag}>: select its attribute (::attr(src)) instead"
        )
    raise SpiderOutputError(
        f"response.follow takes an href or a selector, not {type(url).__name__}"
    )


class Spider:
    """Base class of spiders: override ``parse``.

    ``content_types``: the media types (``"application/json"``, or ``"text/*"`` for a
    whole type) whose responses reach ``parse``; None, the default here, for every
    response, whatever its type (or without a Content-Type).

    ``allow`` and ``deny``: regular expressions for the job's link rules (see
    :mod:`crawler._rules`), used when ``--allow``/``--deny`` (or ``crawlog.toml``) set none.
    """

    name: ClassVar[str] = "spider"
    start_urls: ClassVar[Sequence[str]] = ()
    content_types: ClassVar[Collection[str] | None] = None
    pipelines: ClassVar[Sequence[Any]] = ()
    """Steps every item goes through before it is recorded (`crawler._pipelines`)."""
    middlewares: ClassVar[Sequence[Any]] = ()
    """Hooks on each request before it is sent and each response before it is parsed
    (`crawler._middlewares`)."""
    user_agent: ClassVar[str | None] = None
    """The User-Agent of the crawl's requests; ``--user-agent`` (or crawlog.toml) beats it."""
    headers: ClassVar[Mapping[str, str]] = {}
    """Default headers of the crawl's requests; a ``--header`` of the same name beats one."""
    allow: ClassVar[Sequence[str]] = ()
    deny: ClassVar[Sequence[str]] = ()
    browser: ClassVar[bool] = False
    """Render every page in Chromium (as ``crawl --browser``; ``--no-browser`` beats it)."""
    change_region: ClassVar[str | None] = None
    """What of a page ``crawlog recrawl`` compares: a CSS selector of its content or its key
    fields (``"main"``, ``".price, .stock"``); a page whose matched elements are as before
    is unchanged, whatever else moved. None (or no match on a page): its whole body."""
    change_ignore: ClassVar[Sequence[str]] = ()
    """Regular expressions whose matches a recrawl leaves out of what it compares (a
    timestamp, a visitor count)."""

    # A browser spider that logs in also defines two async methods on Playwright's page
    # (docs/crawler.md, "Logged-in browser crawls"): ``is_logged_in(page) -> bool`` and
    # ``log_in(page)``; the login is then kept in the store across kills.

    async def wait_for_page(self, page: Any) -> None:
        """With ``--browser``: awaited with each page (Playwright's) once its DOM is loaded,
        before its HTML is read — wait here for what scripts build later (by default,
        nothing: the DOM at ``domcontentloaded``)."""

    def __init__(self, **arguments: str) -> None:
        """Spider arguments (``crawlog crawl -a key=value``) become attributes, as in
        Scrapy; a subclass's own ``__init__`` may take some by name and pass on the rest."""
        for key, value in arguments.items():
            setattr(self, key, value)

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        """What the page yields: items, links to follow, the next page."""
        if False:  # pragma: no cover - an empty async generator
            yield Item("")


class SiteSpider(Spider):
    """The default spider: follows every link (the worker keeps those in scope and depth)
    and records one item per page: url, status, content type, bytes, title, content hash.

    It parses HTML only (``content_types``): other responses give no item and no links.
    Subclass it with ``content_types = None`` for an item of every response."""

    name = "site"
    content_types: ClassVar[Collection[str] | None] = HTML_TYPES

    @functools.cached_property
    def link_resolver(self) -> LinkResolver:
        """This spider's (so this worker's) resolved hrefs, shared by the pages it parses."""
        return LinkResolver()

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        item, links = self.page_outputs(response)
        yield item
        for link in links:
            yield Follow(link)

    def page_outputs(self, response: Response) -> tuple[Item, list[str]]:
        """What `parse` yields, in bulk: the page's item, and the canonical URLs of the
        links it follows (those the link rules leave out counted in ``response.dropped``).

        A worker whose spider keeps this `parse` takes them from here, without a `Follow`
        per link to build and check: link-dense pages give hundreds each."""
        page = (
            parse_page(
                response.body, response.url, charset=response.charset, resolver=self.link_resolver
            )
            if response.content_type in HTML_TYPES
            else None
        )
        item = Item(
            response.url,
            {
                "url": response.url,
                "status": response.status,
                "content_type": response.content_type,
                "bytes": len(response.body),
                "title": page.title if page else None,
                "content_hash": response.body_hash,
            },
        )
        links = page.links if page else []
        if (rules := response.link_rules) is not None:
            kept = [link for link in links if rules.allows(link)]
            if len(kept) < len(links):
                response.dropped[DENIED_BY_RULE] = len(links) - len(kept)
            links = kept
        return item, links


class SpiderOutputError(CrawlogError):
    """Something a spider yielded that crawlog cannot take: its task fails with this."""


def accepted_types(spider: Spider) -> frozenset[str] | None:
    """The spider's ``content_types``, lowercase; None for every type. ConfigError if one
    is not a media type (``type/subtype`` or ``type/*``)."""
    types = spider.content_types
    if types is None:
        return None
    if isinstance(types, str):
        types = (types,)  # `content_types = "application/json"`: one type, not its letters
    accepted = frozenset(str(t).strip().lower() for t in types)
    for media_type in accepted:
        kind, slash, sub = media_type.partition("/")
        if not (kind and slash and sub) or "/" in sub or ";" in media_type:
            raise ConfigError(
                f"spider {spider.name}: content type {media_type!r} is not a media type "
                "such as application/json or text/*"
            )
    return accepted


def parses(accepted: frozenset[str] | None, media_type: str) -> bool:
    """Whether a response of ``media_type`` reaches a spider accepting ``accepted``."""
    if accepted is None:
        return True
    return media_type in accepted or f"{media_type.partition('/')[0]}/*" in accepted


async def spider_outputs(
    spider: Spider, response: Response, callback: str | None = None
) -> AsyncIterator[tuple[int, Any]]:
    """What ``spider.parse(response)`` (or the method named ``callback``) yields, numbered
    from 0: from an async generator (the API) or, as a Scrapy habit, a plain generator or
    list."""
    method = spider.parse if callback is None else getattr(spider, callback)
    produced: Any = method(response, **response.cb_kwargs)
    if hasattr(produced, "__aiter__"):
        index = 0
        async for output in produced:
            yield index, output
            index += 1
        return
    if isinstance(produced, Awaitable):
        produced = await produced  # an ``async def parse`` that returns a list
    if produced is None:
        return
    if not isinstance(produced, Iterable) or isinstance(produced, str | bytes | Mapping):
        raise SpiderOutputError(
            f"spider {spider.name} on {response.url}: {callback or DEFAULT_CALLBACK} returned "
            f"{type(produced).__name__}, expected an async generator of outputs"
        )
    for index, output in enumerate(produced):
        yield index, output


_decoders: Final[dict[type, msgspec.msgpack.Decoder[Any]]] = {
    cls: msgspec.msgpack.Decoder(cls) for cls in (Item, NextPage)
}
_msgpack: Final = msgspec.msgpack.Encoder()
_MIN_INT, _MAX_INT = -(2**63), 2**64 - 1
"""The integers msgpack carries."""
_json: Final = msgspec.json.Encoder()


def check_output(
    output: object,
    *,
    spider: str,
    url: str,
    index: int,
    max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES,
) -> Output:
    """``output`` as the log can carry it, else SpiderOutputError saying what is wrong.

    ``Item``, ``Follow`` and ``NextPage`` are checked against their field types as an
    event decoder will read them (an item's data must be msgpack and JSON, the archive's
    form); a ``dict`` becomes ``Item(its "url" or "<page url>#<index>", the dict)``. A
    plain ``Follow`` (a GET for ``parse``) is returned as it is, the very object; any other
    ``Follow`` as a new one in the form its task carries (`Follow.spec`). An item larger
    than ``max_item_bytes`` encoded (0: no cap) is refused.
    """
    if (
        isinstance(output, Follow)  # the common case (hundreds a page): checked in full here
        and type(output.url) is str
        and type(output.priority) is int
        and _MIN_INT <= output.priority <= _MAX_INT
        # A plain GET for ``parse``: identity tests only, as cheap as they come.
        and output.callback is None
        and output.data is None
        and output.method is None
        and output.body is None
        and output.form is None
        and output.headers is None
        and output.meta is None
        and output.cb_kwargs is None
    ):
        return output
    where = f"spider {spider} on {url}: output {index}"
    if isinstance(output, Mapping):  # a dict, or a dict-like item of another framework
        key = output.get(DICT_KEY_FIELD)
        key = key if isinstance(key, str) and key else f"{url}#{index}"
        output = Item(key, dict(output))
    elif not isinstance(output, Item | Follow | NextPage):
        if _is_scrapy_request(output):
            raise SpiderOutputError(
                f"{where} is a Scrapy {type(output).__name__} ({_shown(output)}): a crawlog "
                "spider yields response.follow(url, callback=..., meta=..., cb_kwargs=...) "
                "instead, a Follow"
            )
        raise SpiderOutputError(
            f"{where} is {_shown(output)} ({type(output).__name__}): expected an Item, "
            "a Follow, a NextPage or a dict"
        )
    if isinstance(output, Item) and not isinstance(output.key, str):
        raise SpiderOutputError(
            f"{where}, {_shown(output)}: its key is a {type(output.key).__name__}, expected a str"
        )
    if isinstance(output, Follow):
        return _checked_follow(output, where)
    try:
        kind = next(cls for cls in _decoders if isinstance(output, cls))
        encoded = _msgpack.encode(output)
        checked: Output = _decoders[kind].decode(encoded)
        if isinstance(checked, Item):
            _json.encode(checked.data)
        else:  # the checkpoint's, archived as JSON too
            _json.encode([checked.data, checked.meta, checked.cb_kwargs])
    except Exception as exc:  # whatever msgspec says of user data (OverflowError too)
        raise SpiderOutputError(f"{where}, {_shown(output)}, cannot be logged: {exc}") from None
    if isinstance(checked, Item) and 0 < max_item_bytes < len(encoded):
        raise SpiderOutputError(
            f"{where}, {_shown(output)}: the item is {len(encoded):,} bytes encoded, over the "
            f"item size cap of {max_item_bytes:,} bytes (--max-item-bytes)"
        )
    return checked


def _is_scrapy_request(output: object) -> bool:
    """Whether ``output`` is a ``scrapy.Request`` (or a subclass, a ``FormRequest``): told
    by its classes' modules, since a worker never imports Scrapy."""
    return any(
        cls.__module__.partition(".")[0] == "scrapy" and cls.__name__ == "Request"
        for cls in type(output).__mro__
    )


class _FollowCore(msgspec.Struct, frozen=True):
    """A `Follow`'s URL and priority, as a decoder checks them (its other fields are
    checked by `_checked_follow`: a body may be bytes or text, which no decoder takes)."""

    url: str
    priority: int = 0


def _checked_follow(output: Follow, where: str) -> Follow:
    """A Follow other than a plain GET for ``parse``, checked and in the form its task
    carries: a form encoded as its body (or query), the body bytes, the method named.
    SpiderOutputError saying which field is wrong."""
    shown = _shown(output)

    def refused(why: str) -> SpiderOutputError:
        return SpiderOutputError(f"{where}, {shown}: {why}")

    try:
        core = _follow_core.decode(_msgpack.encode(_FollowCore(output.url, output.priority)))
    except Exception as exc:
        raise SpiderOutputError(f"{where}, {shown}, cannot be logged: {exc}") from None
    url, callback, method = core.url, output.callback, output.method
    if callable(callback) and isinstance(getattr(callback, "__self__", None), Spider):
        callback = getattr(callback, "__name__", None)  # self.parse_item, as Scrapy has it
    if callback is not None and (not isinstance(callback, str) or not callback.isidentifier()):
        raise refused(f"callback {callback!r} is not a method name (a str such as 'parse_item')")
    if method is not None and method not in METHODS:
        raise refused(f"method {method!r} is not one of {', '.join(sorted(METHODS))}")
    data = _carried("data", output.data, refused)
    meta = _carried("meta", output.meta, refused)
    cb_kwargs = _carried("cb_kwargs", output.cb_kwargs, refused)
    body = output.body
    if body is not None and not isinstance(body, bytes | str):
        raise refused(f"body must be bytes or str, not {type(body).__name__}")
    headers = _checked_headers(output.headers, refused)
    if output.form is not None:
        if body is not None:
            raise refused("give a body or a form, not both")
        encoded = _encoded_form(output.form, refused)
        if method in ("GET", "HEAD"):
            # As Scrapy's FormRequest: the fields of a GET form are its query.
            url = f"{url}{'&' if '?' in url else '?'}{encoded}" if encoded else url
        else:
            method, body = method or "POST", encoded.encode()
            if not any(name.lower() == "content-type" for name in headers or ()):
                headers = {**(headers or {}), "Content-Type": FORM_TYPE}
    return Follow(
        url,
        core.priority,
        callback=callback,
        data=data,
        method=method,
        body=body.encode() if isinstance(body, str) else body,
        headers=headers,
        meta=meta,
        cb_kwargs=cb_kwargs,
    )


def _carried(
    name: str, value: object, refused: Callable[[str], SpiderOutputError]
) -> dict[str, Any] | None:
    """A Follow's ``data``, ``meta`` or ``cb_kwargs`` as its task carries it (msgpack in
    the lane and the log, JSON in the archive), else why it cannot be."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise refused(f"{name} must be a dict, not {type(value).__name__}")
    try:
        carried = _data_decoder.decode(_msgpack.encode(dict(value)))
        _json.encode(carried)
    except Exception as exc:  # whatever msgspec says of user data (OverflowError too)
        raise refused(f"{name} cannot be carried by its task: {exc}") from None
    return carried


def _checked_headers(
    headers: object, refused: Callable[[str], SpiderOutputError]
) -> dict[str, str] | None:
    if headers is None:
        return None
    if not isinstance(headers, Mapping):
        raise refused(f"headers must be a dict of str to str, not {type(headers).__name__}")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise refused(f"header {name!r}: {value!r}: names and values must be str")
        if not name or not _HEADER_NAME.issuperset(name):
            raise refused(f"header name {name!r} is not an HTTP header name")
        if not _HEADER_VALUE_FORBIDDEN.isdisjoint(value):
            raise refused(f"header {name!r}: its value contains a line break or NUL")
        checked[name] = value
    return checked


def _encoded_form(form: object, refused: Callable[[str], SpiderOutputError]) -> str:
    if not isinstance(form, Mapping):
        raise refused(f"form must be a dict of str to str, not {type(form).__name__}")
    pairs: list[tuple[str, str]] = []
    for name, value in form.items():
        values = [value] if isinstance(value, str) else value
        if not isinstance(name, str) or not isinstance(values, Sequence):
            raise refused(f"form field {name!r}: expected a str name and a str (or list) value")
        for one in values:
            if not isinstance(one, str):
                raise refused(f"form field {name!r}: value {one!r} is not a str")
            pairs.append((name, one))
    return urlencode(pairs)


def check_callback(spider: Spider, callback: str) -> None:
    """SpiderOutputError unless ``callback`` names a method of ``spider`` that can parse a
    page: an ``async def`` (a generator, or returning a list) or a plain generator."""
    method = getattr(spider, callback, None)
    where = f"spider {spider.name}: callback {callback!r}"
    if method is None:
        raise SpiderOutputError(f"{where} is not a method of {type(spider).__name__}")
    function = inspect.unwrap(getattr(method, "__func__", method))  # through decorators
    if not callable(method) or not (
        inspect.isasyncgenfunction(function)
        or inspect.iscoroutinefunction(function)
        or inspect.isgeneratorfunction(function)
    ):
        raise SpiderOutputError(
            f"{where} is not an async method or a generator of {type(spider).__name__}"
        )


_follow_core: Final = msgspec.msgpack.Decoder(_FollowCore)
_data_decoder: Final = msgspec.msgpack.Decoder(dict[str, Any])
_HEADER_NAME: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
"""The characters of an HTTP header name (RFC 9110's token)."""
_HEADER_VALUE_FORBIDDEN: Final = frozenset("\r\n\x00")


def _shown(output: object) -> str:
    text = repr(output)
    return text if len(text) <= OUTPUT_SHOWN else text[: OUTPUT_SHOWN - 1] + "…"


def load_spider(path: str | None, arguments: SpiderArguments = ()) -> Spider:
    """The spider ``MODULE:CLASS`` or ``FILE.py:CLASS`` (the default site spider for None),
    made with the job's spider ``arguments`` (``-a key=value``, see `spider_arguments`).

    MODULE is imported as ``python -m`` would: from the working directory first, then
    PYTHONPATH and the installed packages. FILE is a path to a Python file (relative to the
    working directory), imported by path with its own directory on ``sys.path`` so that it
    can import the modules beside it. ``ConfigError`` naming what to do when either fails.
    """
    if path is None:
        default: Spider = _made(SiteSpider, "the default spider", arguments)
        return default
    source, _, class_name = path.rpartition(":")
    if not source or not class_name:
        raise ConfigError(
            f"--spider {path!r}: expected MODULE:CLASS or FILE.py:CLASS, e.g. myspiders:Shop "
            "or spiders/shop.py:Shop"
        )
    module = _import_file(path, Path(source)) if _is_file(source) else _import(path, source)
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type) or not hasattr(cls, "parse"):
        raise ConfigError(
            f"--spider {path!r}: {source} has no spider class {class_name}; "
            + _classes_hint(module, source)
        )
    spider = _made(cls, f"--spider {path!r}", arguments)
    accepted_types(spider)  # a bad content_types is refused here too, like a bad class
    from crawler._middlewares import middlewares_of  # they import this module
    from crawler._pipelines import pipeline_of
    from crawler._recrawl import spider_change_rule

    pipeline_of(spider)  # and so is a bad pipeline
    middlewares_of(spider)  # or middleware
    spider_change_rule(spider)  # or what a recrawl compares
    return spider  # type: ignore[no-any-return]


SpiderArguments: TypeAlias = tuple[tuple[str, str], ...]
"""A job's spider arguments, (key, value) in the order given (``JobConfig.spider_args``)."""


def spider_arguments(given: Sequence[str]) -> SpiderArguments:
    """``-a key=value`` options as a job's spider arguments (a key given twice: the last
    value); ``ConfigError`` for one without ``=`` or whose key is not a Python name."""
    arguments: dict[str, str] = {}
    for text in given:
        key, equals, value = text.partition("=")
        key = key.strip()
        if not equals or not key.isidentifier() or key.startswith("_"):
            raise ConfigError(
                f"-a {text!r}: expected KEY=VALUE with KEY a name (e.g. -a category=books); "
                "the spider gets it as the attribute self.KEY"
            )
        arguments.pop(key, None)
        arguments[key] = value
    return tuple(arguments.items())


def _made(cls: type[Any], where: str, arguments: SpiderArguments) -> Any:
    """An instance of the spider class, given its arguments: as keywords to an
    ``__init__`` that takes them (Scrapy's way), else set as attributes afterwards."""
    given = dict(arguments)
    for key in given:
        if callable(getattr(cls, key, None)):
            raise ConfigError(f"{where}: -a {key}=...: {key} is a method of the spider")
    try:
        if _takes(cls, given):
            spider = cls(**given)
        else:
            spider = cls()
            for key, value in given.items():
                setattr(spider, key, value)
    except Exception as exc:
        raise ConfigError(f"{where}: {cls.__name__}() failed ({exc})") from None
    return spider


def _takes(cls: type[Any], arguments: Mapping[str, str]) -> bool:
    if not arguments:
        return True  # cls() either way
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return True
    named = {p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    return set(arguments) <= named


def _classes_hint(module: ModuleType, source: str) -> str:
    """The spider classes ``module`` has (those with a ``parse``), else the classes it
    defines, as the end of the error of a ``--spider`` naming none of them."""
    classes = [
        (name, value)
        for name, value in vars(module).items()
        if isinstance(value, type) and not name.startswith("_")
    ]
    spiders = sorted(n for n, c in classes if hasattr(c, "parse") and c is not Spider)
    if spiders:
        return f"its spider classes: {', '.join(spiders)}"
    own = sorted(n for n, c in classes if c.__module__ == module.__name__)
    if own:
        return f"it has no spider class (one with a parse method), only {', '.join(own)}"
    return "it defines no class: a spider is a class with a parse method (see docs/spiders.md)"


def spider_path(path: str | None) -> str | None:
    """``path`` as a job stores it: a spider file made absolute, so that every worker (and a
    resume from another directory) imports the same file; MODULE:CLASS as it is."""
    if path is None:
        return None
    if not is_spider_file(path):
        return path
    source, _, class_name = path.rpartition(":")
    return f"{os.path.abspath(Path(source).expanduser())}:{class_name}"


def is_spider_file(path: str) -> bool:
    """Whether ``--spider`` names a file (``FILE.py:CLASS``) rather than ``MODULE:CLASS``."""
    return _is_file(path.rpartition(":")[0])


def _is_file(source: str) -> bool:
    # A module name has neither a path separator nor a .py suffix; a file path has one.
    return source.endswith(".py") or "/" in source or os.sep in source


def _import(path: str, module_name: str) -> ModuleType:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # The `crawlog` console script has its own bin directory on sys.path, not the
        # working directory that `python -m crawler.cli` (as workers run) has.
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"--spider {path!r}: cannot import {module_name} ({exc}): "
            + _not_found_hint(module_name, exc.name, path.rpartition(":")[2], cwd)
        ) from None
    except Exception as exc:  # an import runs arbitrary code: report anything it raises
        raise ConfigError(f"--spider {path!r}: cannot import {module_name} ({exc})") from None


def _not_found_hint(module_name: str, missing: str | None, class_name: str, cwd: str) -> str:
    top = module_name.partition(".")[0]
    if missing is not None and missing != module_name and not module_name.startswith(f"{missing}."):
        # The spider's module was found; something it imports is not installed.
        return f"{module_name} imports {missing}, which is not installed where crawlog runs"
    where = f"{top}.py" if top == module_name else f"the package {top}/"
    return (
        f"crawlog imports it from the working directory ({cwd}) and PYTHONPATH: run crawlog "
        f"where {where} is, add that directory to PYTHONPATH, or give the file: "
        f"--spider path/to/{module_name.rpartition('.')[2]}.py:{class_name}"
    )


def _import_file(path: str, file: Path) -> ModuleType:
    file = Path(os.path.abspath(file.expanduser()))
    if not file.is_file():
        raise ConfigError(
            f"--spider {path!r}: no such file {file} (a relative path is taken from the "
            f"working directory, {os.getcwd()})"
        )
    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__file__", None) == str(file):
            return loaded  # already imported by this process (crawl checks it, then runs it)
    name = file.stem if file.stem.isidentifier() and file.stem not in sys.modules else None
    name = name or f"crawlog_spider_{hashlib.blake2b(bytes(file)).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"--spider {path!r}: {file} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    if str(file.parent) not in sys.path:
        sys.path.insert(0, str(file.parent))  # its sibling modules, as `python FILE` has
    # Registered before it runs, as an import would: dataclasses and typing look it up.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # an import runs arbitrary code: report anything it raises
        del sys.modules[name]
        raise ConfigError(f"--spider {path!r}: cannot import {file} ({exc})") from None
    return module
