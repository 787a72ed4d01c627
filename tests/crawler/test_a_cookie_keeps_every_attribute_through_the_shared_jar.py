"""A cookie the library parsed (``http.cookiejar``) is stored in Redis field by field and
comes back as the same cookie: same attributes, same absolute expiry, same matching."""

from __future__ import annotations

from http.cookiejar import Cookie

import httpx
from hypothesis import given
from hypothesis import strategies as st

from crawler._cookies import restored, stored
from eventlog._cookies import decode_cookie, encode_cookie

_text = st.text(st.characters(codec="ascii", exclude_characters=";"), max_size=20)
_optional = st.none() | _text


@st.composite
def library_cookies(draw: st.DrawFn) -> Cookie:
    port = draw(_optional)
    return Cookie(
        draw(st.none() | st.integers(0, 1)),
        draw(_text),
        draw(_optional),
        port,
        port is not None and draw(st.booleans()),  # the library: no port, not specified
        draw(_text),
        draw(st.booleans()),
        draw(st.booleans()),
        draw(_text),
        draw(st.booleans()),
        draw(st.booleans()),
        draw(st.none() | st.integers(0, 2**40)),
        draw(st.booleans()),
        draw(_optional),
        draw(_optional),
        # A flag attribute (HttpOnly) has the value None, whatever typeshed says.
        draw(st.dictionaries(_text, _optional, max_size=3)),  # type: ignore[arg-type]
        draw(st.booleans()),
    )


@given(library_cookies())
def test_a_cookie_comes_back_from_its_stored_form_with_every_field(cookie: Cookie) -> None:
    back = restored(decode_cookie(encode_cookie(stored(cookie))))
    assert vars(back) == vars(cookie)


def test_a_parsed_set_cookie_keeps_its_attributes_and_its_matching() -> None:
    jar = httpx.Cookies()
    login = httpx.Request("POST", "http://127.0.0.1:8000/login")
    jar.extract_cookies(
        httpx.Response(
            303,
            headers=[("Set-Cookie", "session=abc; Path=/members/; HttpOnly; Max-Age=3600")],
            request=login,
        )
    )
    (cookie,) = jar.jar
    kept = stored(cookie)
    assert (kept.path, kept.rest, kept.discard) == ("/members/", {"HttpOnly": None}, False)
    assert kept.expires is not None  # Max-Age made absolute: the same moment for every worker
    copy = httpx.Cookies()
    copy.jar.set_cookie(restored(decode_cookie(encode_cookie(kept))))
    member = httpx.Request("GET", "http://127.0.0.1:8000/members/3")
    home = httpx.Request("GET", "http://127.0.0.1:8000/")
    copy.set_cookie_header(member)
    copy.set_cookie_header(home)
    assert member.headers["cookie"] == "session=abc"
    assert "cookie" not in home.headers
