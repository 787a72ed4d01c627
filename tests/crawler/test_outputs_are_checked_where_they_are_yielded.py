"""`check_output`: what a spider yields either is an output the log carries (a dict
becomes an item) or is refused with a message naming the spider, the page and the fault."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._spider import (
    Follow,
    Item,
    NextPage,
    Output,
    Response,
    Spider,
    SpiderOutputError,
    check_output,
    spider_outputs,
)
from eventlog import CrawlogError, ItemScraped, decode, encode

pytestmark = pytest.mark.anyio
PAGE = "http://shop.test/list?page=1"


def check(output: object, index: int = 4) -> Output:
    return check_output(output, spider="shop", url=PAGE, index=index)


def test_outputs_of_the_right_types_pass_as_the_log_will_hold_them() -> None:
    for output in (Item("k", {"n": 1}), Follow("/a", 2), NextPage("?p=2", "c")):
        assert check(output) == output
    assert check(Item("k", {"at": dt.date(2026, 1, 2)})) == Item("k", {"at": "2026-01-02"})


def test_a_dict_is_an_item_keyed_by_its_url_or_else_by_the_page_and_its_position() -> None:
    assert check({"url": "http://shop.test/i/1", "t": "A"}) == Item(
        "http://shop.test/i/1", {"url": "http://shop.test/i/1", "t": "A"}
    )
    assert check({"t": "B"}, index=7) == Item(f"{PAGE}#7", {"t": "B"})
    # Not a string: not a key.
    assert check({"url": 3}, index=1) == Item(f"{PAGE}#1", {"url": 3})


@pytest.mark.parametrize(
    ("output", "fault"),
    [
        (Item({"url": "u"}), "its key is a dict, expected a str"),  # type: ignore[arg-type]
        (Item("k", {1: "one"}), "Expected `str`, got `int`"),  # type: ignore[dict-item]
        (Item("k", {"x": object()}), "Encoding objects of type object is unsupported"),
        (Item("k", {"n": 2**70}), "can't serialize ints"),
        (Follow(None), "Expected `str`, got `None` - at `$.url`"),  # type: ignore[arg-type]
        (NextPage("?p=2", cursor=2), "at `$.cursor`"),  # type: ignore[arg-type]
        ("http://shop.test/a", "(str): expected an Item, a Follow, a NextPage or a dict"),
        (["a", "b"], "(list): expected an Item"),
    ],
)
def test_what_the_log_cannot_carry_is_refused_naming_spider_page_and_fault(
    output: object, fault: str
) -> None:
    with pytest.raises(SpiderOutputError) as refused:
        check(output)
    message = str(refused.value)
    assert message.startswith(f"spider shop on {PAGE}: output 4")
    assert fault in message
    assert isinstance(refused.value, CrawlogError)


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text() | st.integers(), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.text() | st.integers() | st.none(), st.dictionaries(st.text() | st.integers(), _json_like)
)
def test_an_item_either_is_refused_or_decodes_from_the_log(key: Any, data: dict[Any, Any]) -> None:
    try:
        checked = check(Item(key, data))
    except SpiderOutputError:
        return
    assert isinstance(checked, Item)
    event = ItemScraped(actor="w", task_id="t", key=checked.key, data=checked.data)
    # Compared as bytes: a NaN in the data comes back as NaN, which equals nothing.
    assert encode(decode(encode(event))) == encode(event)


class _Plain(Spider):
    name = "plain"

    def parse(self, response: Response) -> Iterator[Any]:  # type: ignore[override]
        yield {"a": 1}
        yield Follow("/x")


class _Async(Spider):
    async def parse(self, response: Response) -> AsyncIterator[Output]:
        yield Follow("/y")


class _ReturnsNumber(Spider):
    name = "number"

    def parse(self, response: Response) -> Any:
        return 42


def _response() -> Response:
    async def once(action_id: str, action: Any) -> Any:
        return None

    return Response(
        url=PAGE,
        status=200,
        headers={},
        body=b"",
        elapsed_ms=1.0,
        task_id="t",
        depth=0,
        page=1,
        resume=None,
        once=once,
    )


async def test_a_plain_generator_is_taken_as_an_async_one_is() -> None:
    assert [o async for o in spider_outputs(_Plain(), _response())] == [
        (0, {"a": 1}),
        (1, Follow("/x")),
    ]
    assert [o async for o in spider_outputs(_Async(), _response())] == [(0, Follow("/y"))]


async def test_a_parse_that_returns_no_outputs_at_all_is_refused() -> None:
    with pytest.raises(
        SpiderOutputError, match=re.escape(f"spider number on {PAGE}: parse returned int")
    ):
        [o async for o in spider_outputs(_ReturnsNumber(), _response())]


def test_an_item_past_the_size_cap_is_refused_and_a_cap_of_0_takes_any() -> None:
    item = Item("k", {"blob": "x" * 1000})
    assert check_output(item, spider="shop", url=PAGE, index=0, max_item_bytes=2000) == item
    assert check_output(item, spider="shop", url=PAGE, index=0, max_item_bytes=0) == item
    with pytest.raises(SpiderOutputError, match=r"over the item size cap of 999 bytes"):
        check_output(item, spider="shop", url=PAGE, index=0, max_item_bytes=999)
    # Next pages and follows are not items: their size is the checkpoint's business.
    big_page = NextPage("?p=2", "c" * 5000)
    assert check_output(big_page, spider="shop", url=PAGE, index=0, max_item_bytes=10) == big_page
