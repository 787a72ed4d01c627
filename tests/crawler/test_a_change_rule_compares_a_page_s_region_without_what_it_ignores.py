"""What a recrawl compares of a page (`crawler._recrawl.change_rule`): the whole body by
default; with a region, the HTML of the elements its selector matches (the whole body where
none do); what the ignored expressions match left out; a selector or expression that does
not compile (or is not of its type) is refused with a line naming it."""

from __future__ import annotations

from typing import Any

import pytest

from crawler._recrawl import body_hash, change_rule
from eventlog import ConfigError

PAGE = b"<html><body><main><p class=price>9</p></main><footer>at 12:01</footer></body></html>"
LATER = PAGE.replace(b"12:01", b"12:02")


def test_no_rule_compares_the_whole_body() -> None:
    assert change_rule(None, ()) is None


def test_a_region_compares_only_its_elements() -> None:
    rule = change_rule("main", ())
    assert rule is not None
    assert rule.content(PAGE) == b'<main><p class="price">9</p></main>'
    assert rule.content(PAGE) == rule.content(LATER)
    assert rule.content(PAGE) != rule.content(PAGE.replace(b">9<", b">8<"))
    assert rule.content(b'{"json": true}') == b'{"json": true}'  # no match: the whole body
    fields = change_rule(".price, footer", ())
    assert fields is not None and b"12:01" in fields.content(PAGE)


def test_ignored_text_is_left_out() -> None:
    rule = change_rule(None, (r"at \d\d:\d\d",))
    assert rule is not None
    assert body_hash(rule.content(PAGE)) == body_hash(rule.content(LATER))
    assert body_hash(PAGE) != body_hash(LATER)


@pytest.mark.parametrize(
    ("region", "ignore", "named"),
    [
        ("main[[", (), "change_region 'main[['"),
        (None, ("(",), "change_ignore '('"),
        (None, "at \\d+", "change_ignore a sequence"),
    ],
)
def test_what_does_not_compile_is_refused(region: str | None, ignore: Any, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace("[", r"\[").replace("(", r"\(")):
        change_rule(region, ignore)
