"""The test site's script-run app behind a login kept in the browser's storage.

Linked from no generated page; a browser spider starts at ``/app/``:

* ``/app/login``: a form whose button posts the user and password (`LOGIN_USER`,
  `LOGIN_PASSWORD`) to ``/app/api/token`` from a script; the token answered is kept in
  both ``localStorage`` and ``sessionStorage`` (key ``token``), then the page goes to
  ``/app/``. Each POST answered 200 is a login: `crawler.testsite.RunningSite.logins`
  counts them from the request log.
* ``/app/`` and ``/app/N`` (1 … `APP_PAGES`): the same page for everyone; its script asks
  ``/app/api/page?n=N`` for the content with the token (header ``x-token``) — only when
  both storages hold it, the same — and writes a ``<h1 id="user">`` and the links (the
  index links every page, each page the next); without a good token, ``<p id="anon">``.
  A crawl that restores cookies and ``localStorage`` but not ``sessionStorage`` (as
  Playwright's ``storageState`` does) finds itself logged out.

Pure: a request in, a page out (or None for a path that is not one of these).
"""

from __future__ import annotations

import hashlib
import json
from typing import Final
from urllib.parse import parse_qsl

import msgspec

from crawler.testsite._sitegen import HTML, Page

APP_PREFIX: Final = "/app/"
APP_LOGIN_PATH: Final = "/app/login"
APP_TOKEN_PATH: Final = "/app/api/token"
APP_PAGE_PATH: Final = "/app/api/page"
APP_PAGES: Final = 30
"""App pages behind the login: ``/app/1`` … ``/app/30``."""
APP_USER: Final = "crawler"
APP_PASSWORD: Final = "open sesame"
APP_TOKEN: Final = hashlib.blake2b(b"app:" + APP_USER.encode(), digest_size=12).hexdigest()
"""The one token the app hands out and accepts (deterministic: tests may check it)."""
TOKEN_HEADER: Final = "x-token"
JSON: Final = "application/json"
FORM_TYPE: Final = "application/x-www-form-urlencoded"

_LOGIN: Final = """<!doctype html><html><head><title>App: log in</title></head><body>
<h1>Log in</h1><input id="user"><input id="password" type="password">
<button id="log-in">Log in</button><p id="note"></p>
<script>
document.getElementById('log-in').addEventListener('click', async () => {
  const body = new URLSearchParams({
    user: document.getElementById('user').value,
    password: document.getElementById('password').value,
  });
  const answer = await fetch(TOKEN, {method: 'POST', body,
    headers: {'content-type': 'application/x-www-form-urlencoded'}});
  if (!answer.ok) { document.getElementById('note').textContent = 'wrong'; return; }
  const token = (await answer.json()).token;
  localStorage.setItem('token', token);
  sessionStorage.setItem('token', token);
  location.href = HOME;
});
</script></body></html>
""".replace("TOKEN", json.dumps(APP_TOKEN_PATH)).replace("HOME", json.dumps(APP_PREFIX))

_SHELL: Final = """<!doctype html><html><head><title>App</title></head><body>
<main id="main"></main>
<script>
(async () => {
  const main = document.getElementById('main');
  const kept = localStorage.getItem('token');
  const good = kept && kept === sessionStorage.getItem('token');
  const answer = good ? await fetch(DATA, {headers: {'x-token': kept}}) : null;
  if (!answer || !answer.ok) {
    main.innerHTML = '<p id="anon">log in first</p>';
    return;
  }
  const data = await answer.json();
  main.innerHTML = '<h1 id="user"></h1><nav id="links"></nav>';
  document.getElementById('user').textContent = data.title;
  for (const target of data.links) {
    const a = document.createElement('a');
    a.setAttribute('href', target);
    a.textContent = target;
    document.getElementById('links').appendChild(a);
  }
})();
</script></body></html>
"""


def app_answer(method: str, path: str, headers: dict[str, str], body: bytes) -> Page | None:
    """The app's page for a request, or None if ``path`` (with its query) is not one."""
    route, _, query = path.partition("?")
    if route == APP_TOKEN_PATH:
        return _token(method, headers, body)
    if route == APP_PAGE_PATH:
        return _content(query, headers)
    if route == APP_LOGIN_PATH:
        return Page(200, _LOGIN.encode(), HTML)
    if route == APP_PREFIX.rstrip("/") or route.startswith(APP_PREFIX):
        number = _page(route[len(APP_PREFIX) :] if route.startswith(APP_PREFIX) else "")
        if number is None:
            return Page(404, b"not found\n", "text/plain")
        data = f"{APP_PAGE_PATH}?n={number}"
        return Page(200, _SHELL.replace("DATA", json.dumps(data)).encode(), HTML)
    return None


def _page(rest: str) -> int | None:
    """0 for the index, N for ``/app/N``, None for anything else."""
    if rest == "":
        return 0
    if rest.isdigit() and not rest.startswith("0") and int(rest) <= APP_PAGES:
        return int(rest)
    return None


def _token(method: str, headers: dict[str, str], body: bytes) -> Page:
    if method != "POST":
        return Page(405, b"POST the user and password\n", "text/plain", (("Allow", "POST"),))
    form: dict[str, str] = {}
    if headers.get("content-type", "").partition(";")[0].strip().lower() == FORM_TYPE:
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    if form.get("user") != APP_USER or form.get("password") != APP_PASSWORD:
        return Page(403, b'{"error": "wrong user or password"}', JSON)
    return Page(200, msgspec.json.encode({"token": APP_TOKEN}), JSON)


def _content(query: str, headers: dict[str, str]) -> Page:
    if headers.get(TOKEN_HEADER) != APP_TOKEN:
        return Page(403, b'{"error": "log in first"}', JSON)
    asked = dict(parse_qsl(query)).get("n", "")
    number = 0 if asked == "0" else _page(asked) or None
    if number is None:
        return Page(404, b'{"error": "no such page"}', JSON)
    if number == 0:
        title = "App"
        links = [f"{APP_PREFIX}{n}" for n in range(1, APP_PAGES + 1)]
    else:
        title = f"App page {number}"
        links = [f"{APP_PREFIX}{number + 1}"] if number < APP_PAGES else []
    return Page(200, msgspec.json.encode({"title": title, "links": links}), JSON)
