"""An append's fold on PostgreSQL (``log.postgres.fold``): the writes one statement can carry
ride in the append's statement, anything else opens the transaction where it comes, and the
tables end as if every statement had run in order inside one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.log.backend import Cursor
from forkline_es.log.events import StepBegun, encode_body, kind_of
from forkline_es.log.postgres.backend import PostgresBackend
from forkline_es.log.postgres.cursor import MAX_PARAMS
from forkline_es.log.postgres.fold import FoldCursor, carried
from forkline_es.log.rows import NewRow, row_digest
from forkline_es.testing.postgres import PostgresServer

_UPSERT = "INSERT INTO fold_t (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
_NOTE = "INSERT INTO fold_n (run_id, i) VALUES (?, ?)"


@pytest.mark.parametrize(
    ("sql", "rows", "text"),
    [
        (_NOTE, [("r", 1)], "INSERT INTO fold_n (run_id, i) VALUES (%s, %s)"),
        (_NOTE, [("r", 1), ("r", 1)], "INSERT INTO fold_n (run_id, i) VALUES (%s, %s), (%s, %s)"),
        (
            _UPSERT,
            [("a", 1), ("b", 2)],
            "INSERT INTO fold_t (k, v) VALUES (%s, %s), (%s, %s) "
            "ON CONFLICT (k) DO UPDATE SET v = excluded.v",
        ),
        (
            "INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT (a, b) DO NOTHING",
            [(1, "x"), (1, "y")],
            "INSERT INTO t (a, b) VALUES (%s, %s), (%s, %s) ON CONFLICT (a, b) DO NOTHING",
        ),
        ("INSERT INTO t (a) VALUES (?) -- 5%", [(1,)], None),  # a comment: more than a conflict clause
    ],
)
def test_plain_inserts_and_upserts_are_carried_as_one_write(
    sql: str, rows: list[tuple[Any, ...]], text: str | None
) -> None:
    write = carried(sql, rows, MAX_PARAMS)
    if text is None:
        assert write is None
        return
    assert write is not None
    assert (write.sql, write.rows, write.params) == (text, len(rows), tuple(v for r in rows for v in r))


@pytest.mark.parametrize(
    ("sql", "rows"),
    [
        ("UPDATE fold_t SET v = ? WHERE k = ?", [(1, "a")]),  # reads the table
        ("DELETE FROM fold_t WHERE k = ?", [("a",)]),
        ("INSERT INTO fold_t (k, v) SELECT ?, ?", [("a", 1)]),
        ("INSERT INTO fold_t (k, v) VALUES (?, ?) RETURNING k", [("a", 1)]),
        ("INSERT INTO fold_t (k, v) VALUES (?2, ?1)", [(1, "a")]),  # numbered
        ("INSERT INTO fold_t (k, v) VALUES (?, ?) ON CONFLICT DO NOTHING", [("a", 1)]),  # no target
        ("INSERT INTO fold_t (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = (SELECT 1)", [("a", 1)]),
        ("INSERT INTO fold_t (k, v) VALUES (?, 1) ON CONFLICT (k) DO UPDATE SET v = ?", [("a", 2)]),
        (_UPSERT, [("a", 1), ("a", 2)]),  # one key twice: ON CONFLICT would touch its row twice
        (_UPSERT, [("a", 1, 2)]),  # not the statement's width
        (_UPSERT, []),
    ],
)
def test_what_one_statement_cannot_carry_is_refused(sql: str, rows: list[tuple[Any, ...]]) -> None:
    assert carried(sql, rows, MAX_PARAMS) is None


def test_a_write_past_the_parameters_left_is_not_carried() -> None:
    assert carried(_NOTE, [("r", i) for i in range(10)], 20) is not None
    assert carried(_NOTE, [("r", i) for i in range(11)], 20) is None


def _row(run_id: str, seq: int = 1) -> NewRow:
    """The run's row at ``seq``, naming the one ``_row`` gives at ``seq - 1`` as its prev."""
    body = encode_body(StepBegun(path="s"))
    kind, at, key = kind_of(StepBegun(path="")), "2026-01-01T00:00:00Z", f"begin:0:s{seq}"
    prev = _row(run_id, seq - 1).digest if seq > 1 else None
    digest = row_digest(run_id, seq, seq, 0, kind, at, key, prev, body)
    value = (("arguments", b'{"t":"int","v":1}'),)
    return NewRow(run_id, seq, seq, 0, kind, at, key, body, digest, prev, value)


@pytest.fixture(scope="module")
def backend(pg_server: PostgresServer) -> Iterator[PostgresBackend]:
    """One store for the module (hypothesis runs many examples on it), with two plain tables."""
    b = PostgresBackend(pg_server.create_database("fold_module"))
    b.connection().execute(
        "CREATE TABLE fold_t (k text PRIMARY KEY, v bigint NOT NULL); "
        "CREATE TABLE fold_n (run_id text NOT NULL, i bigint NOT NULL, PRIMARY KEY (run_id, i))"
    )
    try:
        yield b
    finally:
        b.close()


_KEYS = st.sampled_from("abc")
_OPS = st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.tuples(_KEYS, st.integers(0, 9)), min_size=1, max_size=3)),
    st.tuples(st.just("update"), st.tuples(_KEYS, st.integers(0, 9))),
    st.tuples(st.just("delete"), _KEYS),
    st.tuples(st.just("note"), st.integers(1, 3)),
    st.tuples(st.just("read"), st.none()),
)

_runs = iter(range(1_000_000))


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(_OPS, max_size=8), fail=st.booleans())
def test_a_fold_leaves_the_tables_as_its_statements_in_order_would(
    backend: PostgresBackend, ops: list[tuple[str, Any]], fail: bool
) -> None:
    conn = backend.connection()
    conn.execute("DELETE FROM fold_t; DELETE FROM fold_n")
    run_id = f"r{next(_runs)}"
    model: dict[str, int] = {}
    notes: list[int] = []

    def fold(cur: Cursor) -> list[Any]:
        seen = []
        for op, arg in ops:
            if op == "upsert":
                cur.executemany(_UPSERT, arg) if len(arg) > 1 else cur.execute(_UPSERT, arg[0])
                model.update(arg)
            elif op == "update":
                cur.execute("UPDATE fold_t SET v = ? WHERE k = ?", (arg[1], arg[0]))
                if arg[0] in model:
                    model[arg[0]] = arg[1]
            elif op == "delete":
                cur.execute("DELETE FROM fold_t WHERE k = ?", (arg,))
                model.pop(arg, None)
            elif op == "note":
                new = list(range(len(notes), len(notes) + arg))
                cur.executemany(_NOTE, [(run_id, i) for i in new])
                notes.extend(new)
            else:  # a read sees the rows and every write before it
                rows = cur.execute("SELECT count(*) FROM log WHERE run_id = ?", (run_id,)).fetchall()
                seen.append((rows, sorted(cur.execute("SELECT k, v FROM fold_t").fetchall())))
                assert seen[-1] == ([(1,)], sorted(model.items()))
        if fail:
            raise RuntimeError("the fold failed")
        return seen

    if fail:
        with pytest.raises(RuntimeError, match="the fold failed"):
            backend.append([_row(run_id)], fold)
        model, notes = {}, []
    else:
        backend.append([_row(run_id)], fold)
    assert sorted(conn.execute("SELECT k, v FROM fold_t").fetchall()) == sorted(model.items())
    assert [i for (i,) in conn.execute("SELECT i FROM fold_n ORDER BY i").fetchall()] == notes
    logged = conn.execute("SELECT count(*) FROM log WHERE run_id = %s", (run_id,)).fetchall()
    assert logged == [(0 if fail else 1,)]


def test_a_taken_seq_keeps_none_of_the_writes_the_statement_carried(backend: PostgresBackend) -> None:
    conn = backend.connection()
    conn.execute("DELETE FROM fold_t")
    backend.append([_row("taken")])

    def fold(cur: Cursor) -> None:
        cur.execute(_UPSERT, ("a", 1))
        cur.executemany(_NOTE, [("taken", 1), ("taken", 2)])

    with pytest.raises(fe.Conflict):
        backend.append([_row("taken")], fold)
    assert conn.execute("SELECT count(*) FROM fold_t").fetchall() == [(0,)]
    assert conn.execute("SELECT count(*) FROM fold_n WHERE run_id = 'taken'").fetchall() == [(0,)]
    assert backend.append([_row("taken", 2)], fold)[0]  # the handle goes on
    assert conn.execute("SELECT k, v FROM fold_t").fetchall() == [("a", 1)]


def test_a_carried_write_keeps_its_percent_signs_and_literals(backend: PostgresBackend) -> None:
    conn = backend.connection()
    conn.execute("DELETE FROM fold_t")
    sql = "INSERT INTO fold_t (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = length('a%b ?')"
    assert carried(sql, [("p", 1)], MAX_PARAMS) is not None
    backend.append([_row("percent", 1)], lambda cur: cur.execute(sql, ("p", 1)))
    backend.append([_row("percent", 2)], lambda cur: cur.execute(sql, ("p", 1)))
    assert conn.execute("SELECT k, v FROM fold_t").fetchall() == [("p", 5)]


def test_an_executemany_of_no_rows_sends_nothing_and_opens_nothing(backend: PostgresBackend) -> None:
    opened: list[bool] = []

    def fold(cur: Cursor) -> None:
        cur.executemany("DELETE FROM fold_t WHERE k = ?", [])  # nothing to delete: nothing sent
        cur.execute(_UPSERT, ("e", 1))
        fold_cursor = backend.cursor()  # the fold's own, while it runs
        assert isinstance(fold_cursor, FoldCursor)
        opened.append(fold_cursor.opened)

    backend.append([_row("empty")], fold)
    assert opened == [False]
    assert backend.connection().execute("SELECT v FROM fold_t WHERE k = 'e'").fetchall() == [(1,)]
