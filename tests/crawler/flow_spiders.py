"""The flow of the browser tests (``tests.crawler.flow_spiders:ShipOrders``): on the test
site's order console, filter the open orders through the page, then walk their pages and
confirm each one's shipment once (a step tried up to three times), an item per order
confirmed.

``FLOW_POLICY`` in the worker's environment is the confirmation's policy for an unknown
outcome (verify by default); ``FLOW_STEPS=changed`` gives the flow another step, as a
changed spider deployed between a kill and its resume would."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from typing import Any, cast

from crawler import Flow, FlowState, Item, Output, Policy, Response, Spider
from crawler.testsite._orders import ORDERS_PATH

STEPS = ("filter", "ship")
CHANGED_STEPS = ("filter", "review", "ship")
ROWS = "tr.order"
ANSWERED = re.compile("confirmed|refused")


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
            await run.checkpoint("filter", page=1, data={"status": "open"})
        number = run.state.page
        while True:
            keys = await page.eval_on_selector_all(ROWS, "rows => rows.map(r => r.dataset.id)")
            for key in run.remaining(keys, number):
                row = page.locator(f'{ROWS}[data-id="{key}"]')

                async def confirm(row: Any = row) -> None:
                    state = row.locator("td.state")
                    await row.locator("button.confirm").click()
                    await state.filter(has_text=ANSWERED).wait_for()
                    if await state.inner_text() != "confirmed":
                        raise RuntimeError(f"the console refused: {await state.inner_text()}")

                async def confirmed(row: Any = row) -> bool:
                    # Read-only: the row as the console shows it after the recovery path.
                    return bool(await row.locator("td.state").inner_text() == "confirmed")

                async def ship(
                    key: str = key, confirm: Any = confirm, confirmed: Any = confirmed
                ) -> bool:
                    await run.once(f"confirm:{key}", confirm, policy=policy, verify=confirmed)
                    return True

                # None: a person skipped the order (the step failed K times).
                shipped = await run.step("ship", ship, item=key)
                items = [Item(key, {"order": key, "page": number})] if shipped else []
                await run.checkpoint("ship", page=number, last_key=key, items=items)
            if not await page.locator("#next").count():
                break
            number += 1
            async with page.expect_navigation():
                await page.click("#next")
            await run.checkpoint("ship", page=number)
        if False:  # pragma: no cover - the flow's items are written with its checkpoints
            yield Item("")
