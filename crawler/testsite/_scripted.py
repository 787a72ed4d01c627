"""The test site's scripted layout: a shop whose links only scripts write.

``SiteMap(pages, layout="scripted")`` serves a home page ``/`` whose one link, to the first
listing, is written by a script; listings ``/list?page=k`` whose item links and link to
the next listing are written by a script too (a list paginated in JavaScript, ten items a
page); and item pages ``/item/<n>``. A crawler that does not run scripts finds the home
page and nothing else. Beside them, not linked from anywhere, ``/more`` lists the first
items and a "Load more" button (``#more``) that fetches the next ones from
``/api/items?page=k`` (JSON) and adds them, until none are left and the button goes: what a
spider clicks through with the live page.

Pure and deterministic in (pages, origin), like the other layouts; nothing is stored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

SCRIPTED = "scripted"
ITEMS_PER_LIST_PAGE = 10
HOME_PATH = "/"
LIST_PATH = "/list"
ITEM_PREFIX = "/item/"
MORE_PATH = "/more"
API_PATH = "/api/items"
HTML = "text/html; charset=utf-8"
JSON = "application/json"


class ScriptedSite:
    """The structure and pages of the scripted layout; `crawler.testsite.SiteMap` serves them."""

    def __init__(self, pages: int, *, title: Callable[[int], str]) -> None:
        self.pages = pages
        self.list_pages = math.ceil(pages / ITEMS_PER_LIST_PAGE)
        self._title = title

    def list_path(self, page: int) -> str:
        """The listing page ``page`` (from 1)."""
        return f"{LIST_PATH}?page={page}"

    def listed(self, page: int) -> range:
        """The items listing page ``page`` shows."""
        first = (page - 1) * ITEMS_PER_LIST_PAGE + 1
        return range(first, min(first + ITEMS_PER_LIST_PAGE, self.pages + 1))

    def pages_ok(self) -> frozenset[str]:
        """Every page a crawler that runs scripts reaches from ``/``."""
        paths = {HOME_PATH}
        paths.update(self.list_path(k) for k in range(1, self.list_pages + 1))
        paths.update(f"{ITEM_PREFIX}{n}" for n in range(1, self.pages + 1))
        return frozenset(paths)

    def render(self, path: str) -> tuple[str, str] | None:
        """The page at ``path`` (with its query) and its content type, or None."""
        if path == HOME_PATH:
            return _document("Shop", _links_script([self.list_path(1)]), HTML)
        if path == MORE_PATH:
            return self._more()
        route, _, query = path.partition("?")
        if route in (LIST_PATH, API_PATH):
            page = _page_number(query, self.list_pages)
            if page is None:
                return None
            return self._listing(page) if route == LIST_PATH else self._api(page)
        if route == path and path.startswith(ITEM_PREFIX):
            text = path[len(ITEM_PREFIX) :]
            if not text.isdigit() or text.startswith("0") or not 1 <= int(text) <= self.pages:
                return None
            item = int(text)
            body = f"<h1>{self._title(item)}</h1>\n" + _links_script([HOME_PATH])
            return _document(self._title(item), body, HTML)
        return None

    def _listing(self, page: int) -> tuple[str, str]:
        targets = [f"{ITEM_PREFIX}{n}" for n in self.listed(page)]
        if page < self.list_pages:
            targets.append(self.list_path(page + 1))
        return _document(f"Shop, page {page}", _links_script(targets), HTML)

    def _api(self, page: int) -> tuple[str, str]:
        nxt = page + 1 if page < self.list_pages else None
        return json.dumps({"items": list(self.listed(page)), "next": nxt}), JSON

    def _more(self) -> tuple[str, str]:
        first = "".join(
            f'<li><a href="{ITEM_PREFIX}{n}">{self._title(n)}</a></li>' for n in self.listed(1)
        )
        nxt = "2" if self.list_pages > 1 else "null"
        button = '<button id="more">Load more</button>' if self.list_pages > 1 else ""
        script = (
            "<script>\n"
            f"let next = {nxt};\n"
            "const more = document.getElementById('more');\n"
            "if (more) more.addEventListener('click', async () => {\n"
            f"  const answer = await fetch('{API_PATH}?page=' + next);\n"
            "  const data = await answer.json();\n"
            "  const list = document.getElementById('items');\n"
            "  for (const n of data.items) {\n"
            "    const li = document.createElement('li');\n"
            "    const a = document.createElement('a');\n"
            f"    a.setAttribute('href', '{ITEM_PREFIX}' + n);\n"
            "    a.textContent = 'item ' + n;\n"
            "    li.appendChild(a);\n"
            "    list.appendChild(li);\n"
            "  }\n"
            "  next = data.next;\n"
            "  if (next === null) more.remove();\n"
            "});\n"
            "</script>\n"
        )
        return _document("More", f'<ul id="items">{first}</ul>\n{button}\n{script}', HTML)


def _links_script(targets: list[str]) -> str:
    """A script that writes a link to each of ``targets`` into the page as it loads."""
    return (
        '<nav id="links"></nav>\n<script>\n'
        f"for (const target of {json.dumps(targets)}) {{\n"
        "  const a = document.createElement('a');\n"
        "  a.setAttribute('href', target);\n"
        "  a.textContent = target;\n"
        "  document.getElementById('links').appendChild(a);\n"
        "}\n</script>\n"
    )


def _document(title: str, body: str, content_type: str) -> tuple[str, str]:
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
    return page, content_type


def _page_number(query: str, limit: int) -> int | None:
    name, _, value = query.partition("=")
    if name != "page" or not value.isdigit() or value.startswith("0"):
        return None
    number = int(value)
    return number if 1 <= number <= limit else None
