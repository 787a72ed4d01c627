"""`without_origin` drops an origin's storage and exactly the cookies a browser would send
to it (its host's, and its parent domain's), keeping every other origin's."""

from __future__ import annotations

from eventlog import BrowserCookie, OriginStorage, SessionIdentity, SessionState, without_origin

ME = SessionIdentity(user_agent="crawlog-test/1")


def cookie(name: str, domain: str) -> BrowserCookie:
    return BrowserCookie(name=name, value="secret", domain=domain)


def test_an_origin_s_storage_and_the_cookies_sent_to_it_go_and_nothing_else() -> None:
    state = SessionState(
        identity=ME,
        cookies=(
            cookie("host", "shop.example.com"),
            cookie("parent", ".example.com"),
            cookie("sibling", "blog.example.com"),
            cookie("lookalike", "notexample.com"),
        ),
        origins={
            "https://shop.example.com": OriginStorage(local={"token": "t"}),
            "https://blog.example.com": OriginStorage(session={"token": "u"}),
        },
    )
    left = without_origin(state, "https://SHOP.example.com/any/page")
    assert [c.name for c in left.cookies] == ["sibling", "lookalike"]
    assert list(left.origins) == ["https://blog.example.com"]
    assert left.identity == ME


def test_an_origin_the_session_does_not_hold_leaves_it_equal() -> None:
    state = SessionState(
        identity=ME,
        cookies=(cookie("host", "shop.example.com"),),
        origins={"https://shop.example.com": OriginStorage(local={"token": "t"})},
    )
    assert without_origin(state, "https://other.example.org") == state
