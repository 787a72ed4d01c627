"""The fenced steps of a task are a closed set (`SettleMode`): exactly the modes the
``SETTLE`` script's header lists, and those that ack the entry are the ones it says ack."""

from __future__ import annotations

import re
from typing import get_args

from eventlog import ACKING_MODES, SettleMode
from eventlog._scripts import SETTLE

MODE_LINE = re.compile(r"^--\s+(?:mode:\s+)?'(\w+)'\s+(.*)$", re.MULTILINE)


def test_every_settle_mode_is_one_the_script_lists_and_no_other() -> None:
    listed = {mode: what for mode, what in MODE_LINE.findall(SETTLE)}
    assert set(get_args(SettleMode)) == set(listed)
    assert {mode for mode, what in listed.items() if "ack" in what} == ACKING_MODES
