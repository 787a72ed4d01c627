"""The guard's pure parts: a session is found by its own id only (and the oldest forgotten
past the number kept), the token compares equal to itself only, and who a login acts as
is the name given, else the console's user, and never something that is not a name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.console._guard import OPERATOR_NAME, Sessions, operator_name, same_token
from eventlog import ConfigError

NAMES = st.from_regex(OPERATOR_NAME, fullmatch=True)


@given(st.lists(st.sampled_from(["alice", "bob", "tester"]), min_size=1, max_size=20))
def test_each_session_is_found_by_its_own_id_and_the_oldest_are_forgotten(
    operators: list[str],
) -> None:
    sessions = Sessions(kept=5)
    ids = [sessions.open(name) for name in operators]
    assert len(set(ids)) == len(ids)
    for index, (session_id, name) in enumerate(zip(ids, operators, strict=True)):
        found = sessions.get(session_id)
        if index < len(ids) - 5:
            assert found is None
        else:
            assert found is not None and found.operator == name
    kept = [s for s in map(sessions.get, ids) if s is not None]
    assert len({s.csrf for s in kept}) == len(kept)  # a form token per session
    assert sessions.get(None) is None and sessions.get("") is None
    assert sessions.get(ids[-1] + "x") is None and sessions.get(ids[-1][:-1]) is None


@given(st.text(max_size=40), st.text(min_size=1, max_size=40))
def test_a_token_is_the_same_as_itself_only(given_: str, token: str) -> None:
    assert same_token(token, token)
    assert same_token(given_, token) == (given_ == token)
    assert not same_token(None, token)


@given(NAMES)
def test_a_name_given_is_who_acts(name: str) -> None:
    assert operator_name(name, "tester") == name
    assert operator_name(f"  {name} ", "tester") == name


@pytest.mark.parametrize("nobody", [None, "", "   "])
def test_a_login_naming_nobody_acts_as_the_console_s_user(nobody: str | None) -> None:
    assert operator_name(nobody, "tester") == "tester"


@given(
    st.text(min_size=1, max_size=80).filter(lambda t: OPERATOR_NAME.fullmatch(t.strip()) is None)
)
def test_what_is_not_a_name_is_refused(text: str) -> None:
    if not text.strip():
        assert operator_name(text, "tester") == "tester"
        return
    with pytest.raises(ConfigError, match="not an operator name"):
        operator_name(text, "tester")
