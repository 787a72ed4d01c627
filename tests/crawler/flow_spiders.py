"""The flow of the browser tests (``tests.crawler.flow_spiders:ShipOrders``): on the test
site's order console, filter the open orders through the page, then walk their pages and
confirm each one's shipment once, an item per order confirmed.

``FLOW_POLICY`` in the worker's environment is the confirmation's policy for an unknown
outcome (verify by default); ``FLOW_STEPS=changed`` gives the flow another step, as a
changed spider deployed between a kill and its resume would."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any, cast

from crawler import Flow, FlowState, Item, Output, Policy, Response, Spider
from crawler.testsite._orders import ORDERS_PATH

STEPS = ("filter", "ship")
CHANGED_STEPS = ("filter", "review", "ship")
ROWS = "tr.order"


async def back_to(page: Any, state: FlowState) -> None:
    """The recovery path: the console, its filter set through the page, then page N."""
    await set_filter(page)
    if state.page > 1:
        await page.goto(page.url.replace("page=1", f"page={state.page}"))


async def set_filter(page: Any) -> None:
    origin = page.url.split(ORDERS_PATH)[0]
    await page.goto(origin + ORDERS_PATH)
    await page.select_option("#status", "open")
    async with page.expect_navigation():
        await page.click("#apply")


def _flow() -> Flow:
    steps = CHANGED_STEPS if os.environ.get("FLOW_STEPS") == "changed" else STEPS
    return Flow("ship-orders", steps=steps, recover=back_to)


class ShipOrders(Spider):
    name = "ship-orders"
    browser = True

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        page: Any = response.browser_page
        run = await _flow().enter(response)
        policy = cast(Policy, os.environ.get("FLOW_POLICY", "verify"))
        if run.resumed is None:
            await set_filter(page)
            await run.checkpoint("filter", page=1)
        number = run.state.page
        while True:
            keys = await page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.id)")
            for key in run.remaining(keys, number):
                row = page.locator(f'{ROWS}[data-id="{key}"]')

                async def confirm(row: Any = row) -> None:
                    await row.locator("button.confirm").click()
                    await row.locator("td.state", has_text="confirmed").wait_for()

                async def confirmed(row: Any = row) -> bool:
                    # Read-only: the row as the console shows it after the recovery path.
                    return bool(await row.locator("td.state").inner_text() == "confirmed")

                await run.once(f"confirm:{key}", confirm, policy=policy, verify=confirmed)
                item = Item(key, {"order": key, "page": number})
                await run.checkpoint("ship", page=number, last_key=key, items=[item])
            if not await page.locator("#next").count():
                break
            number += 1
            async with page.expect_navigation():
                await page.click("#next")
            await run.checkpoint("ship", page=number)
        if False:  # pragma: no cover - the flow's items are written with its checkpoints
            yield Item("")
