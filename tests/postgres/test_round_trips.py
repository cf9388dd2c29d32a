"""The append path's round trips, counted on the wire (docs/postgres.md, "The append path").

libpq's protocol trace of the store's connection lists every message the client sends. The
client waits for the server exactly at a ``Sync`` (extended protocol, pipeline or not) or a
simple ``Query``: their count is the number of round trips, and ``Execute`` the number of
statements. Nothing here is timed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

import forkline_es as fe
from forkline_es.log.backend import Cursor
from forkline_es.log.events import StepBegun, encode_body, kind_of
from forkline_es.log.postgres.backend import PostgresBackend
from forkline_es.log.rows import NewRow, row_digest
from forkline_es.recording import checkpoint
from forkline_es.recording.state import RunState


@contextmanager
def _wire(store: fe.Store, folder: Path) -> Iterator[Counter[str]]:
    """The messages the client sends meanwhile, counted by type (filled in at exit)."""
    backend = store.log.backend
    assert isinstance(backend, PostgresBackend)
    pgconn = backend.conn.pgconn
    trace = folder / f"trace-{len(list(folder.iterdir()))}.txt"
    sent: Counter[str] = Counter()
    with trace.open("w") as f:
        pgconn.trace(f.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield sent
        finally:
            pgconn.untrace()
    for line in trace.read_text().splitlines():
        direction, _, message = line.split("\t")[:3]
        if direction == "F":
            sent[message.split(" ")[0]] += 1


def _round_trips(sent: Counter[str]) -> int:
    return sent["Sync"] + sent["Query"]


def _step(run: fe.Run, i: int) -> None:
    path = f"step/{i}"
    run.begin_step(path, arguments={"i": i})
    run.invoke(path, 1, "compute", "sha256:" + "cd" * 32, "not-dispatched", arguments={"i": i})
    run.result(path, 1, "succeeded", result={"i": i})
    run.end_step(path, "succeeded", result={"i": i})


def test_an_append_nothing_folds_is_one_statement_and_one_round_trip(pg_dsn: str, tmp_path: Path) -> None:
    recorder = fe.RunRecorder(db_path=pg_dsn)
    try:
        run_id = recorder.start_run(entrypoint="job.py", run_id="r")
        recorder.log_event(run_id, "input", {"i": -1})  # the statement prepared (a round trip once)
        with _wire(recorder.store, tmp_path) as sent:
            for i in range(5):
                recorder.log_event(run_id, "input", {"i": i, "text": "hello"})
        assert (_round_trips(sent), sent["Execute"]) == (5, 5)  # no BEGIN, no COMMIT: autocommit
        rows = recorder.store.conn.execute(
            "SELECT l.seq, p.id - l.position * 16, p.slot FROM log AS l JOIN payload AS p "
            "ON p.position = l.position WHERE l.run_id = 'r' AND l.seq > 1 ORDER BY l.seq"
        ).fetchall()
        assert [seq for seq, _, _ in rows] == [2, 3, 4, 5, 6, 7]  # each row with its payload value
        assert {(place, slot) for _, place, slot in rows} == {(0, "payload")}
    finally:
        recorder.close()


@pytest.mark.parametrize(
    ("name", "record", "events"),
    [
        ("one append per event", _step, 4),
        ("one run.batch() per step", lambda run, i: _batched(run, i), 1),
    ],
)
def test_a_folded_append_is_one_round_trip_however_many_rows_and_projection_rows(
    pg_dsn: str, tmp_path: Path, name: str, record: Callable[[fe.Run, int], None], events: int
) -> None:
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        record(run, 0)  # the statements prepared, the run's fold cached
        with _wire(store, tmp_path) as sent:
            for i in range(1, 4):
                record(run, i)
        # The rows, their payload values and the projection rows in one statement, in
        # autocommit (no BEGIN, no COMMIT): one round trip and one statement per append,
        # a batched step's four rows, its entry rows and its step view included.
        assert (_round_trips(sent), sent["Execute"]) == (3 * events, 3 * events), name
        steps = store.get_run_record("r")["steps"]
        assert {path: s["outcome"] for path, s in steps.items()} == {
            f"step/{i}": "succeeded" for i in range(4)
        }
        assert store.check_projections() == []


def _batched(run: fe.Run, i: int) -> None:
    with run.batch():
        _step(run, i)


def test_a_batched_step_that_writes_a_run_checkpoint_is_still_one_statement(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 4)  # every batched step's append carries one
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        _batched(run, 0)
        with _wire(store, tmp_path) as sent:
            for i in range(1, 4):
                _batched(run, i)
        assert (_round_trips(sent), sent["Execute"]) == (3, 3)
        # the append of rows 14 to 17 carries the state after row 16, the last multiple of 4
        assert store.conn.execute("SELECT seq FROM run_checkpoint").fetchall() == [(16,)]
        with store.log.snapshot() as cur:  # the carried checkpoint stands for the log
            assert checkpoint.load(cur, "r", RunState(run_id="r"))


def test_a_fold_that_reads_opens_the_transaction_where_it_reads(pg_dsn: str, tmp_path: Path) -> None:
    """The write before the read rides in the rows' statement; the read and what follows it
    go to the pipeline: BEGIN, the statement, the read (a sync), the write, COMMIT (a sync)."""
    with fe.Store.open(pg_dsn) as store:
        backend = store.log.backend
        assert isinstance(backend, PostgresBackend)
        backend.connection().execute("CREATE TABLE note (run_id text, n bigint)")

        def fold(cur: Cursor) -> list[Any]:
            cur.execute("INSERT INTO note (run_id, n) VALUES (?, ?)", ("r", 1))
            seen = cur.execute("SELECT count(*) FROM note").fetchall()
            cur.execute("INSERT INTO note (run_id, n) VALUES (?, ?)", ("r", 2))
            return seen

        with _wire(store, tmp_path) as sent:
            _, seen = backend.append([_row("r", 1, None, (("arguments", b'{"t":"int","v":1}'),))], fold)
        assert seen == [(1,)]
        assert (_round_trips(sent), sent["Execute"]) == (2, 5)
        assert backend.connection().execute("SELECT n FROM note ORDER BY n").fetchall() == [(1,), (2,)]


def test_a_conflict_in_the_pipeline_is_fe_conflict_and_keeps_nothing(pg_dsn: str) -> None:
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        stale = store.resume_run("r")
        _step(run, 0)
        with pytest.raises(fe.Conflict), stale.batch():
            _step(stale, 1)
        with pytest.raises(fe.Conflict):
            stale.begin_step("step/9")
        assert list(store.get_run_record("r")["steps"]) == ["step/0"]
        assert store.conn.execute("SELECT count(*) FROM log WHERE run_id = 'r'").fetchall() == [(5,)]
        _step(run, 1)  # the connection is usable: the failed transaction was rolled back
        assert store.check_projections() == []


def _row(run_id: str, seq: int, prev: str | None, payloads: tuple[tuple[str, bytes], ...] = ()) -> NewRow:
    body = encode_body(StepBegun(path=f"s{seq}"))
    kind, at, key = kind_of(StepBegun(path="")), "2026-01-01T00:00:00Z", f"begin:0:s{seq}"
    digest = row_digest(run_id, seq, seq, 0, kind, at, key, prev, body)
    return NewRow(run_id, seq, seq, 0, kind, at, key, body, digest, prev, payloads)


def test_a_taken_seq_in_the_one_statement_append_is_fe_conflict_and_keeps_nothing(pg_dsn: str) -> None:
    a, b = PostgresBackend(pg_dsn), PostgresBackend(pg_dsn)
    try:
        first = _row("r", 1, None)
        a.append([first])
        b.append([_row("r", 2, first.digest, (("arguments", b'{"t":"int","v":1}'),))])
        with pytest.raises(fe.Conflict):  # one row, no fold: the autocommit statement
            a.append([_row("r", 2, first.digest, (("result", b'{"t":"int","v":2}'),))])
        assert a.connection().execute("SELECT slot FROM payload").fetchall() == [("arguments",)]
        assert a.append([_row("s", 1, None)])[0]  # the handle is usable afterwards
    finally:
        a.close()
        b.close()


def test_a_fold_whose_queued_write_fails_keeps_nothing_and_says_why(pg_dsn: str) -> None:
    backend = PostgresBackend(pg_dsn)
    try:

        def fold(cur: Cursor) -> None:
            cur.execute("INSERT INTO log_end (id, position) VALUES (2, ?)", (1,))  # queued
            cur.execute("SELECT count(*) FROM log").fetchall()  # the read syncs: the write fails

        with pytest.raises(fe.StoreError, match="log_end"):
            backend.append([_row("r", 1, None, (("arguments", b'{"t":"int","v":1}'),))], fold)
        counts = backend.connection().execute(
            "SELECT (SELECT count(*) FROM log), (SELECT count(*) FROM payload)"
        )
        assert counts.fetchall() == [(0, 0)]
        assert backend.append([_row("r", 1, None)], lambda cur: cur.execute("SELECT 1").fetchall())[1] == [
            (1,)
        ]
    finally:
        backend.close()


def test_reads_inside_a_fold_through_the_backend_see_the_transactions_rows(pg_dsn: str) -> None:
    backend = PostgresBackend(pg_dsn)
    try:

        def fold(cur: Cursor) -> tuple[list[Any], list[Any]]:
            with backend.snapshot() as snap:  # inside the append's transaction: its cursor
                seen = snap.execute("SELECT run_id FROM log WHERE seq = ?", (1,)).fetchall()
            fresh = backend.cursor().execute("SELECT count(*) FROM payload").fetchall()
            return seen, fresh

        _, result = backend.append([_row("r", 1, None, (("arguments", b'{"t":"int","v":1}'),))], fold)
        assert result == ([("r",)], [(1,)])
    finally:
        backend.close()


def test_appends_after_conflicts_find_every_statement_they_prepared(pg_dsn: str) -> None:
    """psycopg prepares a statement at its fifth execution, and in a pipeline that fails
    before it the server skips the preparing too: a refused append must leave psycopg's
    record of prepared statements as the server's (else the next append that uses it is
    "prepared statement does not exist"). Conflicts alternate with good appends until
    every fold statement has crossed that threshold in one or the other."""
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        for i in range(8):
            stale = store.resume_run("r")
            _step(run, i)
            with pytest.raises(fe.Conflict), stale.batch():
                _step(stale, 100 + i)
            with pytest.raises(fe.Conflict):
                stale.begin_step(f"other/{i}")
        assert sorted(store.get_run_record("r")["steps"]) == [f"step/{i}" for i in range(8)]
        assert store.check_projections() == []
