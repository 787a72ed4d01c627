"""The ``items`` view has a column per item field, whatever the fields are called: each
name distinct as DuckDB compares them (case ignored), none empty (hypothesis); each typed
by what every item holds in it, JSON where they disagree or nest (a real DuckDB)."""

from __future__ import annotations

import duckdb
from hypothesis import given
from hypothesis import strategies as st

from projector._item_fields import EMPTY_NAME, column_names, create_items_view


@given(st.lists(st.text(max_size=4), unique=True, max_size=12))
def test_each_field_gets_a_distinct_non_empty_column(names: list[str]) -> None:
    columns = column_names(names)
    assert len(columns) == len(names)
    assert all(columns)
    assert len({c.lower() for c in columns}) == len(columns)
    for name, column in zip(names, columns, strict=True):
        assert column == (name or EMPTY_NAME) or column.startswith(f"{name or EMPTY_NAME}_")
    first = next((n for n in names if n), None)
    if first is not None:
        assert columns[names.index(first)] == first  # the first named field keeps its name


def test_the_view_types_each_column_by_every_item_s_value() -> None:
    items = [
        '{"": 1, "Title": "a", "n": -1, "tags": ["x"], "price": 2.5, "ok": true}',
        '{"title": "b", "n": 18446744073709551, "mixed": 1, "tags": ["y", "z"],'
        ' "nested": {"k": 1}}',
        '{"mixed": "one", "price": 3, "none": null}',
    ]
    with duckdb.connect(":memory:") as con:
        con.execute(
            "CREATE TABLE item_events AS SELECT * FROM (VALUES "
            + ", ".join(f"({i}, 0, CAST('{d}' AS JSON))" for i, d in enumerate(items))
            + ") AS t(stream_ms, stream_seq, data)"
        )
        create_items_view(con)
        described = {row[0]: row[1] for row in con.execute("DESCRIBE items").fetchall()}
        rows = con.execute("SELECT * FROM items").fetchall()
    assert described == {
        EMPTY_NAME: "BIGINT",
        "Title": "VARCHAR",
        "n": "BIGINT",
        "tags": "VARCHAR[]",
        "price": "DOUBLE",
        "ok": "BOOLEAN",
        "title_2": "VARCHAR",
        "mixed": "JSON",
        "nested": "JSON",
        "none": "JSON",
    }
    assert rows[0][:6] == (1, "a", -1, ["x"], 2.5, True)
    assert rows[1][1:3] == (None, 18446744073709551) and rows[1][6] == "b"
    assert rows[2][7] == '"one"' and rows[2][4] == 3.0
