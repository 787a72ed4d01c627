"""The pure parts of a flow: the keys of a page still to do after its last done one, the hash
of its definition that guards a resume, its state as a checkpoint keeps it, and what
becomes of an action whose outcome is unknown (never a blind retry)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler import Flow, FlowAborted, FlowState
from crawler._flow import (
    after_last,
    decode_state,
    definition_hash,
    encode_state,
    refusal,
    uncertain_outcome,
)

KEYS = st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=30)


@settings(deadline=None)  # a loaded machine is slow, not wrong
@given(KEYS, st.data())
def test_a_page_half_done_goes_on_after_its_last_item_never_repeating_one(
    keys: list[str], data: st.DataObject
) -> None:
    if not keys:
        assert after_last(keys, "x") == []
        return
    done = data.draw(st.integers(0, len(keys) - 1))
    rest = after_last(keys, keys[done])
    assert rest == keys[done + 1 :]
    assert keys[: done + 1] + rest == keys  # nothing skipped, nothing twice


@settings(deadline=None)
@given(KEYS)
def test_a_page_without_its_last_key_is_done_whole(keys: list[str]) -> None:
    assert after_last(keys, None) == keys
    assert after_last(keys, "\x00not on the page") == keys


@settings(deadline=None)
@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True))
def test_the_definition_changes_with_any_step_renamed_added_or_moved(steps: list[str]) -> None:
    base = definition_hash("f", steps)
    assert definition_hash("f", list(steps)) == base
    assert definition_hash("f", [*steps, "another"]) != base
    assert definition_hash("g", steps) != base
    if len(steps) > 1:
        assert definition_hash("f", steps[::-1]) != base


def test_a_changed_flow_is_refused_and_the_same_one_resumes() -> None:
    old = Flow("ship", steps=("filter", "ship"))
    new = Flow("ship", steps=("filter", "review", "ship"))
    state = FlowState(flow="ship", definition=old.definition, step="ship", page=4, last_key="o7")
    assert refusal(state, old.name, old.definition) is None
    why = refusal(state, new.name, new.definition)
    assert why is not None and "changed since its checkpoint" in why
    assert refusal(state, "other", old.definition) is not None


def test_a_flow_s_state_comes_back_from_its_checkpoint_and_nothing_else_does() -> None:
    state = FlowState(flow="f", definition="d", step="s", page=3, last_key="k", data={"n": 1})
    assert decode_state(encode_state(state)) == state
    assert decode_state(None) is None
    assert decode_state("a NextPage cursor of a plain spider") is None


def test_a_flow_s_steps_are_distinct_names() -> None:
    with pytest.raises(ValueError):
        Flow("f", steps=())
    with pytest.raises(ValueError):
        Flow("f", steps=("a", "a"))


@given(st.sampled_from([True, False, None]))
def test_an_unknown_outcome_is_verified_asked_or_aborted_never_run_blind(
    verified: bool | None,
) -> None:
    # verify: the check decides, and a check that could not tell asks a person
    assert (
        uncertain_outcome("verify", verified) == {True: "skip", False: "run", None: "ask"}[verified]
    )
    assert uncertain_outcome("ask", verified) == "ask"
    with pytest.raises(FlowAborted):
        uncertain_outcome("abort", verified)
