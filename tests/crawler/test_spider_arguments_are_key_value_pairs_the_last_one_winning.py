"""``spider_arguments``: ``-a KEY=VALUE`` options as (key, value) pairs in order, a key
given twice keeping its last value; a malformed one is a ConfigError saying the form."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._spider import spider_arguments
from eventlog import ConfigError

keys = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
values = st.text(max_size=12)


@given(st.lists(st.tuples(keys, values), max_size=6))
def test_the_last_value_of_each_key_is_kept_in_the_order_last_given(
    pairs: list[tuple[str, str]],
) -> None:
    parsed = spider_arguments([f"{k}={v}" for k, v in pairs])
    expected: dict[str, str] = {}
    for key, value in pairs:
        expected.pop(key, None)
        expected[key] = value
    assert parsed == tuple(expected.items())


@pytest.mark.parametrize("given_text", ["novalue", "=x", "1a=b", "_private=1", "a-b=1"])
def test_a_malformed_argument_is_refused(given_text: str) -> None:
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        spider_arguments([given_text])
