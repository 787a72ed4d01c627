"""The test site's app: its token POST logs in only the right user and password, its
content is answered only with the token, and its pages link as documented."""

from __future__ import annotations

import json

from crawler.testsite import APP_PAGES, APP_PASSWORD, APP_TOKEN, APP_USER
from crawler.testsite._app import APP_PAGE_PATH, APP_TOKEN_PATH, FORM_TYPE, app_answer
from crawler.testsite._interactive import accepts_body

FORM = {"content-type": FORM_TYPE}


def test_only_the_right_user_and_password_get_the_token() -> None:
    assert accepts_body(APP_TOKEN_PATH)
    right = f"user={APP_USER}&password={APP_PASSWORD.replace(' ', '+')}".encode()
    page = app_answer("POST", APP_TOKEN_PATH, FORM, right)
    assert page is not None and page.status == 200
    assert json.loads(page.body) == {"token": APP_TOKEN}
    wrong = app_answer("POST", APP_TOKEN_PATH, FORM, b"user=crawler&password=no")
    assert wrong is not None and wrong.status == 403
    got = app_answer("GET", APP_TOKEN_PATH, {}, b"")
    assert got is not None and got.status == 405


def test_the_content_needs_the_token_and_links_every_page() -> None:
    refused = app_answer("GET", f"{APP_PAGE_PATH}?n=0", {}, b"")
    assert refused is not None and refused.status == 403
    index = app_answer("GET", f"{APP_PAGE_PATH}?n=0", {"x-token": APP_TOKEN}, b"")
    assert index is not None and index.status == 200
    assert json.loads(index.body)["links"] == [f"/app/{n}" for n in range(1, APP_PAGES + 1)]
    last = app_answer("GET", f"{APP_PAGE_PATH}?n={APP_PAGES}", {"x-token": APP_TOKEN}, b"")
    assert last is not None and json.loads(last.body)["links"] == []
    for path in ("/app/", "/app/1", f"/app/{APP_PAGES}"):
        shell = app_answer("GET", path, {}, b"")
        assert shell is not None and shell.status == 200, path
    for path in ("/app/0", f"/app/{APP_PAGES + 1}", "/app/x"):
        missing = app_answer("GET", path, {}, b"")
        assert missing is not None and missing.status == 404, path
