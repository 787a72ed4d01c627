"""A real server answers a conditional request without building the page again: the test
site keeps the validators of each page it served (`Revisions.not_modified`), answers a
request whose validators still hold with that page's 304, and forgets them all when a
mutation edits the site, so an edited or deleted page is never answered 304."""

from __future__ import annotations

from crawler.testsite import ITEM_PREFIX, Revisions, SiteMap

PAGES = 20


def test_a_page_served_once_is_answered_304_from_its_kept_validators_until_a_mutation() -> None:
    sitemap = SiteMap(PAGES, 1, origin="http://127.0.0.1:1")
    revisions = Revisions(sitemap.pages_ok)
    path = f"{ITEM_PREFIX}3"
    assert revisions.not_modified(path, {"if-none-match": "*"}) is None  # never served

    page = sitemap.render(path)
    assert page is not None
    served = revisions.serve(path, page, {})
    validators = dict(served.headers)
    etag, modified = validators["ETag"], validators["Last-Modified"]

    by_tag = revisions.not_modified(path, {"if-none-match": etag})
    by_date = revisions.not_modified(path, {"if-modified-since": modified})
    assert by_tag is not None and by_date is not None
    assert (by_tag.status, by_tag.body) == (304, b"")
    assert dict(by_tag.headers) == {"ETag": etag, "Last-Modified": modified}
    # The same as the answer of a page rendered again.
    assert by_tag == revisions.serve(path, page, {"if-none-match": etag})
    assert revisions.not_modified(path, {"if-none-match": '"other"'}) is None
    assert revisions.not_modified(path, {}) is None
    assert revisions.not_modified(f"{ITEM_PREFIX}4", {"if-none-match": etag}) is None

    revisions.mutate(changed=PAGES, deleted=0, seed=1)  # every item page edited
    assert revisions.not_modified(path, {"if-none-match": etag}) is None
    edited = revisions.serve(path, page, {"if-none-match": etag})
    assert edited.status == 200 and dict(edited.headers)["ETag"] != etag
