"""The triggers hold for any client: raw SQL through apsw and through the stdlib sqlite3.

The engine never issues these statements; a user with ``sqlite3 runs.db`` might. The
log stays append-only whatever the driver, so each case runs on both.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.events import PayloadsRemoved

Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]


class Raw:
    """One driver's connection, with the exception class its constraint failures raise."""

    def __init__(self, path: Path, driver: str) -> None:
        self.driver = driver
        if driver == "apsw":
            self._apsw = apsw.Connection(str(path))
            self.error: type[Exception] = apsw.ConstraintError
        else:
            self._sqlite = sqlite3.connect(path, isolation_level=None)
            self.error = sqlite3.IntegrityError

    def __call__(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.driver == "apsw":
            return list(self._apsw.execute(sql, params))
        return self._sqlite.execute(sql, params).fetchall()

    def refused(self, sql: str, params: tuple[Any, ...] = ()) -> str:
        with pytest.raises(self.error) as info:
            self(sql, params)
        return str(info.value)

    def close(self) -> None:
        if self.driver == "apsw":
            self._apsw.close()
        else:
            self._sqlite.close()


@pytest.fixture
def recorded(db_path: Path) -> tuple[Path, str, str]:
    """A file holding two runs with payloads, written through the Store API; (path, run, other)."""
    with fe.Store.open(db_path) as store:
        ids = []
        for n in range(2):
            run = store.start_run("wf", inputs={"n": n})
            run.begin_step("a", arguments={"x": n})
            run.end_step("a", "succeeded", result=[n], details={"d": n})
            ids.append(run.id)
    return db_path, ids[0], ids[1]


@pytest.fixture(params=["apsw", "sqlite3"])
def raw(request: pytest.FixtureRequest, recorded: tuple[Path, str, str]) -> Iterator[Raw]:
    r = Raw(recorded[0], request.param)
    yield r
    r.close()


def _evict(raw: Raw, run_id: str) -> None:
    (last,) = raw("SELECT max(position) FROM log WHERE run_id = ?", (run_id,))[0]
    raw(
        "INSERT INTO eviction (run_id, position, at, reason) VALUES (?, ?, '2026-01-01T00:00:00Z', 'test')",
        (run_id, last),
    )


def _count(raw: Raw, table: str, run_id: str) -> int:
    if table == "log":
        return int(raw("SELECT count(*) FROM log WHERE run_id = ?", (run_id,))[0][0])
    sql = "SELECT count(*) FROM payload JOIN log USING (position) WHERE log.run_id = ?"
    return int(raw(sql, (run_id,))[0][0])


@pytest.mark.parametrize(
    "assignment", ["kind = 'tampered'", "body = body", "seq = seq + 100", "digest = 'sha256:0'"]
)
def test_update_of_a_log_row_always_fails(raw: Raw, recorded: tuple[Path, str, str], assignment: str) -> None:
    _, run_id, _ = recorded
    before = raw("SELECT * FROM log ORDER BY position")
    _evict(raw, run_id)  # not even an evicted run's rows may change
    message = raw.refused(f"UPDATE log SET {assignment} WHERE run_id = ?", (run_id,))
    assert "never updated" in message
    assert raw("SELECT * FROM log ORDER BY position") == before


def test_delete_of_log_rows_needs_an_eviction_of_that_run(raw: Raw, recorded: tuple[Path, str, str]) -> None:
    _, run_id, other = recorded
    before = _count(raw, "log", run_id)
    assert before > 0
    message = raw.refused("DELETE FROM log WHERE run_id = ?", (run_id,))
    assert "eviction" in message
    assert _count(raw, "log", run_id) == before

    _evict(raw, other)  # another run's eviction does not free this one
    raw.refused("DELETE FROM log WHERE run_id = ?", (run_id,))

    _evict(raw, run_id)
    raw("DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = ?)", (run_id,))
    raw("DELETE FROM log WHERE run_id = ?", (run_id,))
    assert _count(raw, "log", run_id) == 0
    assert _count(raw, "log", other) == before  # same shape of run, untouched (its delete did not run)


def test_update_of_a_payload_value_always_fails(raw: Raw, recorded: tuple[Path, str, str]) -> None:
    _, run_id, _ = recorded
    _evict(raw, run_id)
    before = raw("SELECT * FROM payload ORDER BY position, slot")
    message = raw.refused('UPDATE payload SET value = \'{"kind":"null","value":null}\'')
    assert "never updated" in message
    assert raw("SELECT * FROM payload ORDER BY position, slot") == before


@pytest.mark.parametrize("verb", ["INSERT OR REPLACE", "REPLACE"])
def test_a_replacing_insert_always_fails(raw: Raw, recorded: tuple[Path, str, str], verb: str) -> None:
    """REPLACE deletes the row it replaces without firing DELETE triggers (recursive
    triggers are off in a shell): refused before, by position, by (run, seq) and by value key."""
    _, run_id, _ = recorded
    _evict(raw, run_id)  # not even an evicted run's rows may be replaced
    log_before = raw("SELECT * FROM log ORDER BY position")
    payload_before = raw("SELECT * FROM payload ORDER BY id")
    (position,) = raw("SELECT position FROM log WHERE run_id = ? AND seq = 2", (run_id,))[0]
    columns = "run_id, seq, entry, generation, kind, at, key, body, digest, prev"
    copy = f"SELECT {columns} FROM log WHERE position = ?"
    tampered = columns.replace("kind", "'tampered' AS kind")
    assert "never replaced" in raw.refused(
        f"{verb} INTO log (position, {columns}) SELECT position, {tampered} FROM log WHERE position = ?",
        (position,),
    )
    assert "log.run_id, log.seq" in raw.refused(f"{verb} INTO log ({columns}) {copy}", (position,))
    value = '{"kind":"int","value":666}'
    assert "never replaced" in raw.refused(
        f"{verb} INTO payload (id, position, slot, value) SELECT id, position, slot, ? FROM payload "
        "WHERE position = ?",
        (value, position),
    )
    assert raw("SELECT * FROM log ORDER BY position") == log_before
    assert raw("SELECT * FROM payload ORDER BY id") == payload_before


def test_delete_of_a_payload_needs_eviction_or_a_recorded_removal(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run("wf", inputs={"i": 1})
        run.begin_step("a", arguments={"x": 1})
        position = store.conn.execute("SELECT max(position) FROM log").fetchall()[0][0]
        run.end_step("a", "succeeded", result=1)
        end_position = position + 1
        other = store.start_run("wf", inputs={"o": 1}).id

    for driver in ("apsw", "sqlite3"):
        raw = Raw(db_path, driver)
        try:
            for pos, slot in [(position, "arguments"), (end_position, "result")]:
                assert "removal is recorded" in raw.refused(
                    "DELETE FROM payload WHERE position = ? AND slot = ?", (pos, slot)
                )
        finally:
            raw.close()

    with fe.Store.open(db_path) as store:
        run = store.resume_run(run.id)
        removal = PayloadsRemoved(removed=[(position, "arguments")], policy="test")
        run._append_event(removal, "remove:arguments")

    for driver in ("apsw", "sqlite3"):
        raw = Raw(db_path, driver)
        try:
            # the recorded removal names (position, arguments) only
            raw.refused("DELETE FROM payload WHERE position = ? AND slot = ?", (end_position, "result"))
            raw.refused("DELETE FROM payload WHERE position = ?", (position - 1,))  # inputs of the start
            raw("DELETE FROM payload WHERE position = ? AND slot = ?", (position, "arguments"))
            left = raw("SELECT position, slot FROM payload WHERE position = ?", (position,))
            assert left == []
            raw.refused(
                "DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = ?)", (other,)
            )
            if driver == "sqlite3":  # once evicted, every payload of the run may go
                _evict(raw, other)
                raw(
                    "DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = ?)",
                    (other,),
                )
                assert _count(raw, "payload", other) == 0
                assert _count(raw, "payload", run.id) == 2  # its inputs and the end_step result stay
        finally:
            raw.close()


def test_positions_are_never_reused_after_eviction(store: fe.Store) -> None:
    first = store.start_run("wf", inputs={"a": 1})
    first.begin_step("s", arguments=[1, 2])
    top = store.log.max_position()
    with store.log.transaction("evict for the test") as cur:
        cur.execute(
            "INSERT INTO eviction (run_id, position, at, reason) VALUES (?, ?, '2026-01-01T00:00:00Z', 't')",
            (first.id, top),
        )
        cur.execute(
            "DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = ?)", (first.id,)
        )
        cur.execute("DELETE FROM log WHERE run_id = ?", (first.id,))
    assert store.log.max_position() == 0  # the table is empty: max() alone would hand out 1 again
    second = store.start_run("wf")
    (position,) = store.conn.execute("SELECT position FROM log WHERE run_id = ?", (second.id,)).fetchall()[0]
    assert position == top + 1


def test_positions_are_never_reused_after_the_newest_runs_tombstone_is_purged(store: fe.Store) -> None:
    """Purging eviction records must not lower the end of the log: consumers of the
    completion feed have acknowledged positions up to it."""
    gone = store.start_run("wf", run_id="gone", inputs={"a": 1})
    gone.conclude("succeeded")
    top = store.log.max_position()
    consumer = store.register_consumer("mirror")
    store.acknowledge(consumer.name, top)
    store.evict_run("gone", reason="newest run evicted")
    assert store.purge_tombstones("0s", now=datetime.now(UTC) + timedelta(days=1)) == 1
    assert store.log.end_position() == top
    later = store.start_run("wf", run_id="later")
    later.conclude("succeeded")
    first = store.conn.execute("SELECT min(position) FROM log WHERE run_id = 'later'").fetchall()
    assert first == [(top + 1,)]
    assert [c.run_id for c in store.completions("mirror")] == ["later"]


def test_any_client_deleting_a_tombstone_leaves_the_end_of_the_log(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        store.start_run("wf", run_id="gone").conclude("succeeded")
        store.evict_run("gone", reason="newest run evicted")
        top = store.log.end_position()
    other = sqlite3.connect(db_path)  # not our code: the trigger must hold for it too
    with other:
        other.execute("DELETE FROM eviction")
    other.close()
    with fe.Store.open(db_path) as store:
        assert store.log.max_position() == 0
        assert store.log.end_position() == top
        store.start_run("wf", run_id="later")
        assert store.conn.execute("SELECT min(position) FROM log").fetchall() == [(top + 1,)]
