"""The storage seam's contract (``log.backend``), run against every backend.

Written once, as eventsourcing writes its recorder test cases: each test takes
``open_backend_handle`` (tests/conftest.py), parametrized by backend, and asks only what
the ``Backend`` protocol promises. A new backend passes these before any suite above it.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.errors import ForklineError
from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.log.rows import LOG_COLUMNS
from forkline_es.log.schema import SLOTS_PER_EVENT
from forkline_es.testing.backends import BackendOpener

from .rows import chain, new_row

PAYLOAD = b'{"kind":"int","value":1}'


def _count(backend: Backend, table: str) -> int:
    with backend.snapshot() as cur:
        return int(cur.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])


def _mark(cur: Cursor, name: str) -> None:
    """A write of the fold's own (``then``): a projector row, a log-level table every backend has."""
    cur.execute("INSERT INTO projector (name, version, position) VALUES (?, 1, 0)", (name,))


# -- append ----------------------------------------------------------------------------------


def test_append_returns_increasing_positions_and_stores_rows_and_payloads(
    open_backend_handle: BackendOpener,
) -> None:
    backend = open_backend_handle()
    rows = [new_row("r", 1, [("arguments", PAYLOAD)]), new_row("r", 2, [("result", PAYLOAD)])]
    positions, nothing = backend.append(rows)
    assert nothing is None
    assert len(positions) == 2 and positions[0] < positions[1]
    log = EventLog(backend)
    stored = list(log.read_run("r"))
    assert [(r.position, r.seq, r.digest) for r in stored] == [
        (p, r.seq, r.digest) for p, r in zip(positions, rows, strict=True)
    ]
    assert stored[0].body == rows[0].body.decode()  # bodies are text, byte for byte
    assert log.payloads(positions) == {
        (positions[0], "arguments"): PAYLOAD.decode(),
        (positions[1], "result"): PAYLOAD.decode(),
    }


@pytest.mark.parametrize("fold", [False, True])
def test_more_payload_values_than_an_event_has_slots_is_refused_before_anything_is_written(
    open_backend_handle: BackendOpener, fold: bool
) -> None:
    backend = open_backend_handle()
    fine = new_row("r", 1, [("arguments", PAYLOAD)])
    crowded = new_row("r", 2, [(f"s{k}", PAYLOAD) for k in range(SLOTS_PER_EVENT + 1)], prev=fine.digest)
    with pytest.raises(
        fe.StoreError, match=f"at most {SLOTS_PER_EVENT} payload values, not {SLOTS_PER_EVENT + 1}"
    ):
        backend.append([fine, crowded], (lambda cur: _mark(cur, "folded")) if fold else None)
    assert (_count(backend, "log"), _count(backend, "payload"), _count(backend, "projector")) == (0, 0, 0)


def test_then_runs_on_the_appends_cursor_sees_its_rows_and_commits_with_them(
    open_backend_handle: BackendOpener,
) -> None:
    backend = open_backend_handle()
    other = open_backend_handle()

    def then(cur: Cursor) -> int:  # no positions: a backend may fold before it has them
        _mark(cur, "folded")
        assert _count(other, "log") == 0  # another handle sees nothing before the commit
        return int(cur.execute("SELECT count(*) FROM log WHERE run_id = 'r'").fetchall()[0][0])

    positions, seen = backend.append(chain("r", 2), then)
    assert seen == 2
    assert (_count(other, "log"), _count(other, "projector")) == (2, 1)
    assert positions == [r.position for r in EventLog(other).read_run("r")]


@pytest.mark.parametrize("failure", [KeyError("late"), fe.InvalidRequest("refused by the fold")])
def test_a_then_that_raises_keeps_nothing_of_the_batch_nor_of_its_writes(
    open_backend_handle: BackendOpener, failure: Exception
) -> None:
    backend = open_backend_handle()

    def then(cur: Cursor) -> None:
        _mark(cur, "folded")
        raise failure

    with pytest.raises(type(failure)):
        backend.append([new_row("r", 1, [("arguments", PAYLOAD)]), *chain("r", 1, first=2)], then)
    assert (_count(backend, "log"), _count(backend, "payload"), _count(backend, "projector")) == (0, 0, 0)
    positions, _ = backend.append(chain("r", 2))  # the handle is usable afterwards
    assert len(positions) == 2


def test_a_taken_run_and_seq_is_a_conflict_and_writes_nothing_of_the_batch(
    open_backend_handle: BackendOpener,
) -> None:
    a, b = open_backend_handle(), open_backend_handle()
    a.append(chain("r", 1))
    b.append([new_row("r", 2, [("arguments", PAYLOAD)])])
    with pytest.raises(fe.Conflict) as info:
        # the fold may run (PostgreSQL sends it with the rows) but nothing of it is kept
        a.append([new_row("s", 1), new_row("r", 2, [("result", PAYLOAD)])], lambda c: _mark(c, "folded"))
    assert info.value.code == "conflict"
    assert not isinstance(info.value, b.errors)  # translated: never the driver's own exception
    assert [r.run_id for r in EventLog(a).read_from(0)] == ["r", "r"]
    assert (_count(a, "payload"), _count(a, "projector")) == (1, 0)


def test_positions_are_never_reused_after_the_newest_run_is_evicted(
    open_backend_handle: BackendOpener,
) -> None:
    backend = open_backend_handle()
    backend.append(chain("old", 1))
    (last,), _ = backend.append(chain("new", 1))
    with backend.transaction("evict") as cur:
        cur.execute(
            "INSERT INTO eviction (run_id, position, at, reason) VALUES ('new', ?, 'now', 'test')", (last,)
        )
        cur.execute("DELETE FROM log WHERE run_id = 'new'")
    (position,), _ = backend.append(chain("later", 1))
    assert position > last


# -- horizon and snapshots -----------------------------------------------------------------


def test_the_horizon_covers_every_committed_position_and_no_uncommitted_one(
    open_backend_handle: BackendOpener,
) -> None:
    backend, other = open_backend_handle(), open_backend_handle()
    with backend.snapshot(following=True) as cur:
        assert backend.horizon(cur) == 0
    positions, _ = backend.append(chain("r", 3))
    with other.snapshot(following=True) as theirs:
        assert other.horizon(theirs) == positions[-1]
    backend.append(chain("s", 2))
    with other.snapshot(following=True) as cur:
        horizon = other.horizon(cur)
        assert horizon >= max(r.position for r in EventLog(other).read_from(0, cur=cur))
        followed = [r.position for r in EventLog(other).read_from(0, upto=horizon, cur=cur)]
    assert len(followed) == 5 and followed == sorted(followed)


def test_a_snapshot_sees_one_state_while_another_handle_appends(open_backend_handle: BackendOpener) -> None:
    reader, writer = open_backend_handle(), open_backend_handle()
    writer.append(chain("r", 2))
    log = EventLog(reader)
    with reader.snapshot(following=True) as cur:
        before = (reader.horizon(cur), [r.seq for r in log.read_run("r", cur)])
        writer.append(chain("r", 2, first=3))
        writer.append(chain("s", 1))
        assert (reader.horizon(cur), [r.seq for r in log.read_run("r", cur)]) == before
    with reader.snapshot(following=True) as cur:
        assert reader.horizon(cur) > before[0]
        assert [r.seq for r in log.read_run("r", cur)] == [1, 2, 3, 4]


def test_a_transaction_that_raises_keeps_nothing(open_backend_handle: BackendOpener) -> None:
    backend = open_backend_handle()
    with pytest.raises(RuntimeError), backend.transaction("test") as cur:
        _mark(cur, "kept?")
        raise RuntimeError("stop")
    assert _count(backend, "projector") == 0


# -- translate ------------------------------------------------------------------------------


def test_driver_errors_leave_the_seam_as_forkline_errors(open_backend_handle: BackendOpener) -> None:
    backend = open_backend_handle()
    with pytest.raises(fe.StoreError) as info, backend.transaction("break") as cur:
        cur.execute("INSERT INTO no_such_table VALUES (1)")
    assert not isinstance(info.value, backend.errors)
    with pytest.raises(fe.StoreError), backend.snapshot() as cur:
        cur.execute("SELECT * FROM no_such_table").fetchall()
    try:
        backend.cursor().execute("SELECT * FROM no_such_table").fetchall()
    except backend.errors as e:  # a read outside a transaction: the caller translates
        error = backend.translate(e, "read")
        assert isinstance(error, ForklineError) and "read" in str(error)
    else:
        pytest.fail("a statement on a missing table was accepted")


def test_updating_or_deleting_a_log_row_is_refused_by_the_database(
    open_backend_handle: BackendOpener,
) -> None:
    backend = open_backend_handle()
    backend.append(chain("r", 1))
    for sql in ("UPDATE log SET kind = 'x'", "DELETE FROM log"):
        with pytest.raises(fe.StoreError), backend.transaction("tamper") as cur:
            cur.execute(sql)
    assert _count(backend, "log") == 1


def test_appending_to_an_evicted_run_is_run_not_retained(open_backend_handle: BackendOpener) -> None:
    backend = open_backend_handle()
    (last,), _ = backend.append(chain("r", 1))
    with backend.transaction("evict") as cur:
        cur.execute(
            "INSERT INTO eviction (run_id, position, at, reason) VALUES ('r', ?, 'now', 'test')", (last,)
        )
    with pytest.raises(fe.RunNotRetained):
        backend.append(chain("r", 1, first=2))


def test_a_read_only_handle_refuses_every_write_before_the_database(
    open_backend_handle: BackendOpener,
) -> None:
    open_backend_handle().append(chain("r", 1))
    reader = open_backend_handle(read_only=True)
    assert reader.read_only
    with pytest.raises(fe.StoreError, match="read-only"):
        reader.append(chain("r", 1, first=2))
    with pytest.raises(fe.StoreError, match="read-only"), reader.transaction("write"):
        pass
    assert _count(reader, "log") == 1


# -- dialect and catalogue -------------------------------------------------------------------


_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))


def test_a_list_parameter_round_trips(open_backend_handle: BackendOpener) -> None:
    backend = open_backend_handle()
    d = backend.dialect

    @given(ints=st.lists(st.integers(0, 2**62)), texts=st.lists(_TEXT))
    def round_trip(ints: list[int], texts: list[str]) -> None:
        with backend.snapshot() as cur:
            got_ints = [
                int(v) for (v,) in cur.execute(f"SELECT j.value FROM {d.each('j')}", (d.array(ints),))
            ]
            sql = f"SELECT j.value FROM {d.each('j', 'text')}"
            got_texts = [v for (v,) in cur.execute(sql, (d.array(texts),))]
        assert sorted(got_ints) == sorted(ints)
        assert sorted(got_texts) == sorted(texts)

    round_trip()


def test_json_text_reads_a_member_of_a_stored_body(open_backend_handle: BackendOpener) -> None:
    backend = open_backend_handle()
    backend.append(chain("r", 2))
    member = backend.dialect.json_text("body", "path")
    with backend.snapshot() as cur:
        paths = [p for (p,) in cur.execute(f"SELECT {member} FROM log ORDER BY seq")]
    assert paths == ["s1", "s2"]


def test_the_catalogue_names_columns_and_keys(open_backend_handle: BackendOpener) -> None:
    backend = open_backend_handle()
    with backend.snapshot(following=True) as cur:
        assert backend.columns(cur, "log") == tuple(LOG_COLUMNS.split(", "))
        assert backend.primary_key(cur, "log") == ("position",)
        assert backend.primary_key(cur, "consumer") == ("name",)
        assert backend.columns(cur, "no_such_table") == ()
        assert backend.trigger_differences(cur) == []
        assert backend.horizon(cur) == int(
            cur.execute(f"SELECT {backend.dialect.end_of_log}").fetchall()[0][0]
        )


def test_projection_ddl_in_the_dialects_words_creates_the_tables(open_backend_handle: BackendOpener) -> None:
    from forkline_es.projections.sql import DDL, TABLES

    backend = open_backend_handle()
    with backend.transaction("create") as cur:
        cur.execute(backend.dialect.ddl(DDL))
        assert all(backend.columns(cur, t) for t in TABLES)


def test_a_scratch_copy_is_one_writable_snapshot_apart_from_the_live_store(
    open_backend_handle: BackendOpener,
) -> None:
    backend = open_backend_handle()
    backend.append(chain("r", 2))
    with backend.scratch_copy() as copy:
        with copy.transaction("write the copy") as cur:
            _mark(cur, "copy only")
        backend.append(chain("s", 1))
        assert [r.run_id for r in EventLog(copy).read_from(0)] == ["r", "r"]
        assert _count(copy, "projector") == 1
    assert [r.run_id for r in EventLog(backend).read_from(0)] == ["r", "r", "s"]
    assert _count(backend, "projector") == 0


# -- dropping derived tables (a rebuild) -------------------------------------------------------


def _tables(backend: Backend) -> set[str]:
    probe = "SELECT name FROM sqlite_schema WHERE type = 'table'"
    if backend.dialect.name == "postgresql":
        probe = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    with backend.snapshot() as cur:
        return {str(name) for (name,) in cur.execute(probe).fetchall()}


def test_drop_derived_drops_in_the_transaction_and_a_failure_keeps_every_table(
    open_backend_handle: BackendOpener,
) -> None:
    backend = open_backend_handle()
    with backend.transaction("make") as cur:
        for name in ("derived_a", "derived_b"):
            cur.execute(f"CREATE TABLE {name} (k INTEGER PRIMARY KEY, v TEXT)")
            cur.execute(f"INSERT INTO {name} (k, v) VALUES (1, 'x')")
    with pytest.raises(ForklineError), backend.transaction("drop") as cur:
        backend.dialect.drop_derived(cur, ["derived_a", "derived_b"])
        cur.execute("SELECT no_such_column FROM log")  # the rebuild fails after its drops
    assert {"derived_a", "derived_b"} <= _tables(backend)
    with backend.transaction("drop") as cur:
        backend.dialect.drop_derived(cur, ["derived_a", "derived_b", "never_made"])
    assert not {"derived_a", "derived_b"} & _tables(backend)
