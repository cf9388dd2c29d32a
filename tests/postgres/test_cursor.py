"""The cursor adapter: SQLite's ``?`` statements run unchanged on PostgreSQL, text intact."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from forkline_es.log.postgres.cursor import PgCursor, pg_sql
from forkline_es.testing.postgres import PostgresServer


@pytest.mark.parametrize(
    ("sqlite", "postgres"),
    [
        ("SELECT ?, ?", "SELECT %s, %s"),
        ("SELECT '?', ? WHERE a LIKE 'x%'", "SELECT '?', %s WHERE a LIKE 'x%%'"),
        ('SELECT "a?" FROM t WHERE b = ? -- why?\n', 'SELECT "a?" FROM t WHERE b = %s -- why?\n'),
        ("SELECT 'it''s ?', ? /* ? % */", "SELECT 'it''s ?', %s /* ? %% */"),
        ("SELECT 5 % ?", "SELECT 5 %% %s"),
    ],
)
def test_placeholders_outside_literals_and_every_percent(sqlite: str, postgres: str) -> None:
    assert pg_sql(sqlite) == (postgres, False)


def test_numbered_placeholders_take_their_values_by_number(cur: PgCursor) -> None:
    assert pg_sql("SELECT ?2, ?1, ?2 || '?1'") == ("SELECT %(2)s, %(1)s, %(2)s || '?1'", True)
    assert cur.execute("SELECT ?2::text, ?1::text, ?2::text", ("a", "b")).fetchall() == [("b", "a", "b")]
    with pytest.raises(ValueError, match="not both"):
        pg_sql("SELECT ?1, ?")


@pytest.fixture(scope="module")
def cur(pg_server: PostgresServer) -> Iterator[PgCursor]:
    """One connection for the module: hypothesis runs many examples on it."""
    with psycopg.connect(pg_server.create_database("cursor_module"), autocommit=True) as conn:
        yield PgCursor(conn.cursor())


def test_statements_without_rows_iterate_as_empty(cur: PgCursor) -> None:
    cur.execute("CREATE TEMP TABLE t (a bigint, b text); CREATE TEMP TABLE u (a bigint)")
    assert list(cur.execute("INSERT INTO t VALUES (?, ?)", (1, "x"))) == []
    assert cur.execute("INSERT INTO u VALUES (?)", (2,)).fetchall() == []
    assert cur.execute("SELECT a, b FROM t WHERE b LIKE 'x%' AND a = ?", (1,)).fetchall() == [(1, "x")]
    cur.executemany("INSERT INTO u VALUES (?)", [(3,), (4,)])
    assert [r for r in cur.execute("SELECT a FROM u ORDER BY a")] == [(2,), (3,), (4,)]


literal_text = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]))


@given(literal=literal_text, value=literal_text)
def test_text_round_trips_byte_for_byte_in_literals_and_parameters(
    cur: PgCursor, literal: str, value: str
) -> None:
    quoted = "'" + literal.replace("'", "''") + "'"
    ((got_literal, got_value, octets),) = cur.execute(
        f"SELECT {quoted}, ?::text, octet_length(?::text)", (value, value)
    ).fetchall()
    assert got_literal == literal
    assert got_value.encode() == value.encode()
    assert octets == len(value.encode())


def test_a_plain_insert_of_many_rows_is_one_statement_per_65535_parameters(cur: PgCursor) -> None:
    """executemany of ``INSERT ... VALUES (?, ...)`` sends one many-row statement (a fold's
    entries, a rebuild's batches), split where PostgreSQL's parameter limit would refuse it;
    an upsert still goes row by row (two rows meeting one conflict would refuse a single
    statement). Every row arrives, in order, NULLs and % included."""
    cur.execute(
        "CREATE TEMP TABLE many (a bigint, b text, c text);"
        "CREATE TEMP TABLE up (k bigint PRIMARY KEY, n bigint);"
        "CREATE TEMP TABLE sent (n int); CREATE FUNCTION pg_temp.sent() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN INSERT INTO sent VALUES (1); RETURN NULL; END $$;"
        "CREATE TRIGGER sent AFTER INSERT ON many FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.sent()"
    )
    rows = [(i, f"{i}%", None if i % 7 else "seven") for i in range(30_000)]  # 90,000 parameters
    cur.executemany("INSERT INTO many (a, b, c) VALUES (?, ?, ?)", rows)
    assert cur.execute("SELECT count(*) FROM sent").fetchall() == [(2,)]  # 21,845 rows, then the rest
    assert cur.execute("SELECT a, b, c FROM many ORDER BY a").fetchall() == rows
    cur.executemany(
        "INSERT INTO up (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = up.n + excluded.n",
        [(1, 1), (1, 2)],
    )
    assert cur.execute("SELECT k, n FROM up").fetchall() == [(1, 3)]
    cur.executemany("INSERT INTO many (a, b, c) VALUES (?, ?, ?)", [])
    assert cur.execute("SELECT count(*) FROM many").fetchall() == [(30_000,)]
