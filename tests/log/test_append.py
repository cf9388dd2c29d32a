"""Appends: all or nothing per call, and one winner per (run, seq) across writers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.connection import Connection, open_connection
from forkline_es.log.eventlog import EventLog
from forkline_es.log.rows import NewRow
from forkline_es.log.sqlite import SqliteBackend

from .rows import chain, new_row

PAYLOAD = b'{"kind":"int","value":1}'


@pytest.fixture
def log(db_path: Path) -> Iterator[EventLog]:
    conn = open_connection(db_path)
    yield EventLog(SqliteBackend(conn))
    conn.close()


def _counts(conn: Connection) -> tuple[int, int]:
    return (
        int(conn.execute("SELECT count(*) FROM log").fetchall()[0][0]),
        int(conn.execute("SELECT count(*) FROM payload").fetchall()[0][0]),
    )


def test_a_batch_returns_its_positions_and_writes_its_payloads(log: EventLog) -> None:
    rows = [new_row("r", 1, [("arguments", PAYLOAD)]), new_row("r", 2, [("result", PAYLOAD)])]
    positions, nothing = log.append(rows)
    assert nothing is None
    assert positions == sorted(positions) and len(set(positions)) == 2
    stored = log.payloads(positions)
    assert stored == {
        (positions[0], "arguments"): PAYLOAD.decode(),
        (positions[1], "result"): PAYLOAD.decode(),
    }


def test_then_runs_on_the_same_transaction_and_returns(log: EventLog) -> None:
    def then(cur: Any) -> int:
        # sees the uncommitted rows: same transaction
        return int(cur.execute("SELECT count(*) FROM log WHERE run_id = 'r'").fetchall()[0][0])

    positions, seen = log.append(chain("r", 2), then)
    assert seen == 2 and len(positions) == 2


@pytest.mark.parametrize(
    ("second", "error"),
    [
        (new_row("r", 0), fe.StoreError),  # CHECK (seq >= 1)
        (new_row("r", 1), fe.Conflict),  # the first row's (run, seq) again
    ],
    ids=["check-constraint", "duplicate-seq-in-batch"],
)
def test_a_batch_whose_second_row_is_refused_keeps_nothing(
    log: EventLog, second: NewRow, error: type[Exception]
) -> None:
    log.append([new_row("before", 1, [("arguments", PAYLOAD)])])
    before = _counts(log.backend.connection())
    rows = [new_row("r", 1, [("arguments", PAYLOAD), ("result", PAYLOAD)]), second, new_row("r", 3)]
    with pytest.raises(error):
        log.append(rows)
    assert _counts(log.backend.connection()) == before
    assert not log.backend.connection().in_transaction
    positions, _ = log.append(chain("r", 3))  # the log is usable afterwards
    assert len(positions) == 3


def test_a_batch_whose_then_raises_keeps_nothing(log: EventLog) -> None:
    before = _counts(log.backend.connection())

    def then(cur: Any) -> None:
        raise RuntimeError("projection failed")

    with pytest.raises(RuntimeError, match="projection failed"):
        log.append([new_row("r", 1, [("arguments", PAYLOAD)]), new_row("r", 2, [("result", PAYLOAD)])], then)
    assert _counts(log.backend.connection()) == before
    assert not log.backend.connection().in_transaction


def test_a_then_that_writes_is_rolled_back_with_the_batch(log: EventLog) -> None:
    def then(cur: Any) -> None:
        cur.execute("INSERT INTO projector (name, version, position) VALUES ('p', 1, 1)")
        raise KeyError("late failure")

    with pytest.raises(KeyError):
        log.append(chain("r", 1), then)
    assert log.backend.connection().execute("SELECT count(*) FROM projector").fetchall()[0][0] == 0
    assert _counts(log.backend.connection()) == (0, 0)


def test_two_writers_appending_the_same_seq_one_wins_one_gets_conflict(db_path: Path) -> None:
    a_conn, b_conn = open_connection(db_path), open_connection(db_path)
    try:
        a, b = EventLog(SqliteBackend(a_conn)), EventLog(SqliteBackend(b_conn))
        a.append(chain("r", 1))
        b.append([new_row("r", 2, [("arguments", PAYLOAD)])])
        with pytest.raises(fe.Conflict) as info:
            a.append([new_row("r", 2, [("result", PAYLOAD)])])
        assert info.value.code == "conflict"
        assert not isinstance(info.value, apsw.Error)
        assert "resume_run" in str(info.value)  # says what to do next
        assert list(a.payloads([3, 2])) == [(2, "arguments")]
        assert [r.seq for r in a.read_run("r")] == [1, 2]
    finally:
        a_conn.close()
        b_conn.close()


def test_a_writer_blocked_by_another_writers_lock_gets_conflict_and_writes_nothing(db_path: Path) -> None:
    holder = open_connection(db_path)
    waiter = open_connection(db_path, busy_timeout_ms=20)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(fe.Conflict) as info:
            EventLog(SqliteBackend(waiter)).append(chain("r", 2))
        assert info.value.code == "conflict"
        assert "retry" in str(info.value)
        holder.execute("COMMIT")
        assert _counts(waiter) == (0, 0)
        positions, _ = EventLog(SqliteBackend(waiter)).append(chain("r", 2))  # the retry goes through
        assert len(positions) == 2
    finally:
        holder.close()
        waiter.close()


def test_a_writer_waits_for_a_lock_released_within_its_busy_timeout(db_path: Path) -> None:
    holder = open_connection(db_path)
    waiter = open_connection(db_path, busy_timeout_ms=60_000)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO projector (name, version, position) VALUES ('held', 1, 0)")
    released = threading.Event()

    def release() -> None:
        time.sleep(0.05)
        holder.execute("COMMIT")
        released.set()

    thread = threading.Thread(target=release)
    try:
        thread.start()
        positions, _ = EventLog(SqliteBackend(waiter)).append(chain("r", 2))
        assert released.is_set()  # it got the lock only after the holder committed
        assert len(positions) == 2
        assert _counts(waiter) == (2, 0)
    finally:
        thread.join()
        holder.close()
        waiter.close()


def test_two_run_handles_racing_on_one_run_one_is_fenced(db_path: Path) -> None:
    with fe.Store.open(db_path) as first, fe.Store.open(db_path) as second:
        run = first.start_run("wf")
        mine, theirs = first.resume_run(run.id), second.resume_run(run.id)
        theirs.begin_step("b")
        with pytest.raises(fe.Conflict):
            mine.begin_step("a")
        with pytest.raises(fe.Conflict):  # stale for good, even for a different call
            mine.begin_step("c")
        assert [e["kind"] for e in first.get_run_record(run.id)["entries"]] == ["start", "step"]
        assert "a" not in first.get_run_record(run.id)["steps"]
