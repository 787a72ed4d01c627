"""The PostgreSQL feed's layout (`projector._pg_columns`): a field's new column is typed so
that every value it was typed from fits it, a column name is one PostgreSQL keeps as it is
(at most 63 bytes, no NUL) and clashes with no meta column or other field's, a value that
does not fit a column's type is NULL, and a table lacking the key or data is refused."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from projector._pg_columns import (
    MAX_IDENTIFIER_BYTES,
    META_COLUMNS,
    cell,
    column_name,
    column_type,
    plan_columns,
    scrub,
    shape_problem,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@given(st.lists(json_values, min_size=1, max_size=8))
def test_every_value_a_new_column_was_typed_from_fits_it(values: list[Any]) -> None:
    typed = column_type(values)
    if all(v is None for v in values):
        assert typed is None
        return
    assert typed is not None
    assert all(cell(v, typed) is not None for v in values if v is not None)


def test_a_column_is_typed_by_its_values() -> None:
    assert column_type(["a", None, "b"]) == "text"
    assert column_type([True, False]) == "boolean"
    assert column_type([1, -(2**63)]) == "bigint"
    assert column_type([1, 2**64]) == "numeric"
    assert column_type([1, 2.5]) == "double precision"
    assert column_type([[1], {"a": 1}]) == "jsonb"
    assert column_type(["1", 1]) == "jsonb"
    assert column_type([True, 1]) == "jsonb"  # a boolean is not a number here
    assert column_type([None, None]) is None


def test_a_value_that_does_not_fit_its_column_is_null_and_text_takes_any_as_json() -> None:
    assert cell(3, "text") == "3" and cell({"a": [1]}, "text") == '{"a":[1]}'
    assert cell("x", "character varying(10)") == "x"
    assert cell("x", "bigint") is None and cell(True, "bigint") is None
    assert cell(2**40, "integer") is None and cell(2**31 - 1, "integer") == 2**31 - 1
    assert cell(2.5, "bigint") is None and cell(2, "double precision") == 2
    assert cell(1, "boolean") is None and cell(False, "boolean") is False
    assert cell("1.5", "numeric(6,2)") is None and cell(1.5, "numeric(6,2)") == 1.5
    assert cell(None, "jsonb") is None and cell("a", "jsonb") == '"a"'
    assert cell("2024-01-01", "date") is None  # a type the feed does not write


@given(st.text(), st.sets(st.text(max_size=70), max_size=5))
def test_a_column_name_is_kept_by_postgresql_and_free(field: str, taken: set[str]) -> None:
    name = column_name(field, taken)
    assert name not in taken and "\x00" not in name and name
    assert len(name.encode()) <= MAX_IDENTIFIER_BYTES


def test_a_long_name_is_cut_on_a_character_and_a_taken_one_numbered() -> None:
    assert column_name("é" * 40, set()) == "é" * 31  # 62 bytes: a 2-byte character fits no more
    assert column_name("x" * 70, {"x" * 63}) == "x" * 61 + "_2"
    assert column_name("", set()) == "_"
    assert column_name("key", set(META_COLUMNS)) == "key_2"


def test_a_batch_adds_a_column_for_each_new_field_with_a_value_in_order() -> None:
    values = {"title": ["a", "b"], "key": [1], "note": [None], "price": [3, 4.5]}
    plan, add = plan_columns(values, [("url", "url")], {"key": "text", "data": "jsonb"})
    assert plan == [("url", "url"), ("title", "title"), ("key", "key_2"), ("price", "price")]
    assert add == [("title", "text"), ("key_2", "bigint"), ("price", "double precision")]
    # A column the table has already (made beforehand, or by another job's feed) is used.
    plan, add = plan_columns({"title": [1]}, [], {"title": "text"})
    assert (plan, add) == ([("title", "title")], [])
    # A mapped column dropped from the table is added again, once a value needs it.
    plan, add = plan_columns({"url": ["u"]}, [("url", "url")], {})
    assert (plan, add) == ([("url", "url")], [("url", "text")])


def test_a_nul_becomes_the_replacement_character_in_values_and_names() -> None:
    assert scrub({"a\x00": ["b\x00", 1, {"c": "\x00"}]}) == {
        "a\ufffd": ["b\ufffd", 1, {"c": "\ufffd"}]
    }


def test_a_table_without_a_text_key_of_its_own_or_json_data_is_refused() -> None:
    good = {"key": "text", "data": "jsonb"}
    assert shape_problem(good, key_unique=True) is None
    assert (
        shape_problem(
            {**good, "data": "json", "scraped_at": "timestamp(3) with time zone"}, key_unique=True
        )
        is None
    )
    assert 'no column "data"' in str(shape_problem({"key": "text"}, key_unique=True))
    assert "is integer, not text" in str(shape_problem({**good, "key": "integer"}, key_unique=True))
    assert "is text, not timestamptz" in str(
        shape_problem({**good, "scraped_at": "text"}, key_unique=True)
    )
    assert "unique index" in str(shape_problem(good, key_unique=False))
