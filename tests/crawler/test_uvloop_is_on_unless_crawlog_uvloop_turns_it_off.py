"""``CRAWLOG_UVLOOP`` turns uvloop off with 0, false, no or off (any case, spaces around);
unset, empty or anything else leaves it on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler._loop import UVLOOP_ENV, uvloop_wanted

OFF = ("0", "false", "no", "off")


@pytest.mark.parametrize("value", [*OFF, "OFF", " False ", "No"])
def test_these_values_turn_it_off(value: str) -> None:
    assert not uvloop_wanted({UVLOOP_ENV: value})


@given(st.text().filter(lambda v: v.strip().lower() not in OFF))
def test_any_other_value_leaves_it_on(value: str) -> None:
    assert uvloop_wanted({UVLOOP_ENV: value})


def test_unset_leaves_it_on() -> None:
    assert uvloop_wanted({})
