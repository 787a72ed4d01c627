"""The test site's order console: a shop's back office a browser flow drives.

Served beside every layout, linked from no page (a crawl of the site is unchanged):

* ``/orders``: the console. A filter (``select#status``: all, open, hold) set through the
  page — its button ``#apply`` is a script that loads the filtered list — and the orders
  as rows (``tr.order[data-id]``, their state in ``td.state``), `ORDERS_PER_PAGE` a page,
  ``a#next`` to the next page of the same filter (``/orders?status=open&page=2``). An open
  order has a "Confirm shipment" button (``button.confirm``) whose script POSTs to
  ``/orders/confirm`` and shows the order confirmed once answered (or ``refused``).
* ``/orders/confirm`` (POST ``id``): records one confirmation of the order (counted:
  `OrderConsole.confirmations`, for tests) and answers JSON — or refuses it with a 503,
  recording nothing, for an order in `OrderConsole.refused`.
* ``/orders/ID``: one order and its state (a read-only check of a confirmation).

Every fifth order is on hold (no button). Unlike the other pages this one keeps state:
the confirmations, and `OrderConsole.delays`, which a test sets to answer a path late —
the request recorded (a confirmation counted) as it arrives, answered after the delay: a
worker killed meanwhile has sent what it has not heard back from.
"""

from __future__ import annotations

import html
import json
from typing import Final
from urllib.parse import parse_qs, parse_qsl

from crawler.testsite._sitegen import HTML, Page

ORDERS_PATH: Final = "/orders"
CONFIRM_PATH: Final = "/orders/confirm"
ORDER_PREFIX: Final = "/orders/"
ORDERS_PER_PAGE: Final = 10
DEFAULT_ORDERS: Final = 120
HOLD_EVERY: Final = 5
"""Every fifth order is on hold: the filter ``open`` leaves it out."""
STATUSES: Final = ("all", "open", "hold")
JSON: Final = "application/json"
FORM_TYPE: Final = "application/x-www-form-urlencoded"


def order_id(n: int) -> str:
    return f"O{n:04d}"


class OrderConsole:
    """The console's orders, the confirmations it received, and its late answers."""

    def __init__(self, orders: int = DEFAULT_ORDERS) -> None:
        self.orders = orders
        self.confirmations: dict[str, int] = {}
        """Order id → how many times its shipment was confirmed (a good flow: 1 each)."""
        self.refused: set[str] = set()
        """Orders whose confirmation the console refuses (503): a step that keeps failing."""
        self.delays: dict[str, float] = {}
        """Path (with its query), or an order id for its confirmation → seconds before it
        is answered, for a test to kill in."""

    def ids(self, status: str = "all") -> list[str]:
        """The orders the filter ``status`` lists, in order."""
        picked = range(1, self.orders + 1)
        if status == "open":
            return [order_id(n) for n in picked if n % HOLD_EVERY]
        if status == "hold":
            return [order_id(n) for n in picked if not n % HOLD_EVERY]
        return [order_id(n) for n in picked]

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[Page, float] | None:
        """The page for a request of ``path`` and how late it is answered; None if the
        path is not the console's."""
        route, _, query = path.partition("?")
        if route != ORDERS_PATH and not route.startswith(ORDER_PREFIX):
            return None
        delay = self.delays.get(path, 0.0)
        if route == CONFIRM_PATH:
            page, oid = self._confirm(method, headers, body)
            return page, self.delays.get(oid, delay)
        if route == ORDERS_PATH:
            return self._listing(query), delay
        return self._order(route[len(ORDER_PREFIX) :]), delay

    def _state(self, oid: str) -> str:
        if self.confirmations.get(oid):
            return "confirmed"
        return "hold" if oid in self.ids("hold") else "open"

    def _confirm(self, method: str, headers: dict[str, str], body: bytes) -> tuple[Page, str]:
        """The answer to a confirmation, and the order it confirmed ("" if none)."""
        if method != "POST":
            return Page(405, b"POST an id\n", "text/plain"), ""
        kind = headers.get("content-type", "").partition(";")[0].strip().lower()
        form = dict(parse_qsl(body.decode("utf-8", "replace"))) if kind == FORM_TYPE else {}
        oid = form.get("id", "")
        if oid not in self.ids("open"):
            return Page(404, b'{"error": "no such open order"}', JSON), ""
        if oid in self.refused:
            return Page(503, b'{"error": "try again later"}', JSON), oid
        self.confirmations[oid] = self.confirmations.get(oid, 0) + 1
        answer = json.dumps({"id": oid, "state": "confirmed"}).encode()
        return Page(200, answer, JSON), oid

    def _order(self, oid: str) -> Page:
        if oid not in self.ids():
            return Page(404, b"no such order\n", "text/plain")
        body = f'<!doctype html><title>{oid}</title><p id="state">{self._state(oid)}</p>'
        return Page(200, body.encode(), HTML)

    def _listing(self, query: str) -> Page:
        asked = parse_qs(query)
        status = asked.get("status", ["all"])[0]
        page_text = asked.get("page", ["1"])[0]
        if status not in STATUSES or not page_text.isdigit() or int(page_text) < 1:
            return Page(404, b"no such page\n", "text/plain")
        page, ids = int(page_text), self.ids(status)
        shown = ids[(page - 1) * ORDERS_PER_PAGE : page * ORDERS_PER_PAGE]
        if not shown and page > 1:
            return Page(404, b"no such page\n", "text/plain")
        rows = "".join(self._row(oid) for oid in shown)
        more = len(ids) > page * ORDERS_PER_PAGE
        nxt = f'<a id="next" href="{ORDERS_PATH}?status={status}&page={page + 1}">next</a>'
        options = "".join(
            f"<option{' selected' if s == status else ''}>{s}</option>" for s in STATUSES
        )
        body = (
            "<!doctype html><html><head><title>Orders</title></head><body>"
            f'<select id="status">{options}</select><button id="apply">Apply</button>'
            f'<table id="orders">{rows}</table><p id="page">{page}</p>{nxt if more else ""}'
            f"<script>{_SCRIPT}</script></body></html>"
        )
        return Page(200, body.encode(), HTML)

    def _row(self, oid: str) -> str:
        state = self._state(oid)
        button = '<button class="confirm">Confirm shipment</button>' if state == "open" else ""
        return (
            f'<tr class="order" data-id="{html.escape(oid)}"><td>{oid}</td>'
            f'<td class="state">{state}</td><td>{button}</td></tr>'
        )


_SCRIPT: Final = f"""
document.getElementById('apply').addEventListener('click', () => {{
  const status = document.getElementById('status').value;
  location.href = '{ORDERS_PATH}?status=' + status + '&page=1';
}});
for (const button of document.querySelectorAll('button.confirm')) {{
  button.addEventListener('click', async () => {{
    const row = button.closest('tr');
    const answer = await fetch('{CONFIRM_PATH}', {{
      method: 'POST',
      headers: {{'content-type': '{FORM_TYPE}'}},
      body: 'id=' + encodeURIComponent(row.dataset.id),
    }});
    if (answer.ok) {{
      row.querySelector('td.state').textContent = 'confirmed';
      button.remove();
    }} else {{
      row.querySelector('td.state').textContent = 'refused';
    }}
  }});
}}
"""
