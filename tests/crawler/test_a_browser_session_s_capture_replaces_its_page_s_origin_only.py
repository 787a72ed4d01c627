"""What a step read from a page (`crawler._browser_session:merged`): the context's cookies
replace the session's, the page's origin's two storages replace that origin's, other
origins are kept, and a page without an origin (about:blank) changes no storage."""

from __future__ import annotations

from crawler._browser_session import RESTORED_MARK, merged, restore_script
from eventlog import BrowserCookie, OriginStorage, SessionIdentity, SessionState

ME = SessionIdentity(user_agent="crawlog-test/1")
A, B = "http://127.0.0.1:8000", "http://127.0.0.1:9000"
KEPT = SessionState(
    identity=ME,
    cookies=(BrowserCookie(name="old", value="1", domain="127.0.0.1"),),
    origins={A: OriginStorage(local={"t": "old"}), B: OriginStorage(session={"t": "b"})},
)
COOKIE = {"name": "sid", "value": "2", "domain": "127.0.0.1", "path": "/", "expires": -1,
          "httpOnly": True, "secure": False, "sameSite": "Lax"}  # fmt: skip


def test_the_page_s_origin_is_replaced_and_the_others_kept() -> None:
    state = merged(KEPT, [COOKIE], [A, {"t": "new"}, {"t": "new"}])
    assert [c.name for c in state.cookies] == ["sid"]
    assert state.cookies[0].http_only
    assert state.origins[A] == OriginStorage(local={"t": "new"}, session={"t": "new"})
    assert state.origins[B] == KEPT.origins[B]
    assert state.identity == ME


def test_a_page_without_an_origin_changes_no_storage() -> None:
    for seen in (None, ["null", {}, {}]):
        assert merged(KEPT, [], seen).origins == KEPT.origins


def test_the_restore_script_names_each_origin_and_its_mark() -> None:
    script = restore_script(KEPT.origins)
    assert A in script and B in script and RESTORED_MARK in script
