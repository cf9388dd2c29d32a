"""A connection the server drops: the handle replaces it at its next call, and an append
whose connection died under it is neither lost nor doubled.

Each test drops the store's own server session with ``pg_terminate_backend`` from another
connection, as a restart, a failover or an idle timeout would.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import psycopg
import pytest

import forkline_es as fe
from forkline_es.log.postgres.connection import translate
from forkline_es.log.postgres.schema import RUN_LOCKS

_ARTIFACT = "sha256:" + "0" * 64


def _pid(store: fe.Store) -> int:
    return int(store.conn.info.backend_pid)


def _drop(dsn: str, pid: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as other:
        ((done,),) = other.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchall()
        assert done
        while other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchall():
            time.sleep(0.01)  # gone for good: its transaction is rolled back


def _events(caplog: pytest.LogCaptureFixture) -> list[object]:
    """The forkline_es events logged (structlog renders each record's message as JSON)."""
    return [json.loads(r.getMessage())["event"] for r in caplog.records if r.name.startswith("forkline_es")]


def _rows(dsn: str, run_id: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as other:
        return other.execute("SELECT seq, kind FROM log WHERE run_id = %s ORDER BY seq", (run_id,)).fetchall()


def test_a_connection_dropped_while_idle_is_replaced_and_the_next_calls_record(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="forkline_es")
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        run.begin_step("a", {"n": 1})
        before = _pid(store)
        _drop(pg_dsn, before)
        run.invoke("a", 1, "tool", _ARTIFACT, "not-dispatched", {"q": 1})  # no error after the drop
        assert _pid(store) != before
        assert _events(caplog) == ["store_reconnected", "append_resent"]
        run.result("a", 1, "succeeded", result={"answer": 2})
        run.end_step("a", "succeeded")
        run.conclude("succeeded")
        assert [k for _, k in _rows(pg_dsn, "r")] == [
            "run-started", "step-begun", "action-invoked", "action-result", "step-ended", "run-concluded"
        ]  # fmt: skip
        assert store.check_projections() == []
        _drop(pg_dsn, _pid(store))
        assert store.get_run_record("r")["run"]["status"] == "succeeded"  # a read after a drop too
        assert [s["id"] for s in store.list_runs()] == ["r"]


@pytest.mark.parametrize(
    "first",
    [
        lambda s: s.start_run("wf", run_id="new"),  # its first statement is a bare read
        lambda s: s.start_run("wf"),
        lambda s: s.backend.cursor().execute("SELECT count(*) FROM log").fetchall(),  # the seam's
    ],
)
def test_the_first_call_after_a_drop_that_reads_outside_a_transaction_goes_again(
    pg_dsn: str, first: Any
) -> None:
    """A statement between calls finds the connection dead: it did nothing, so it is sent
    again on a new connection, and the caller sees no psycopg error."""
    with fe.Store.open(pg_dsn) as store:
        store.start_run("wf", run_id="r")
        before = _pid(store)
        _drop(pg_dsn, before)
        first(store)
        assert _pid(store) != before


def test_a_handle_whose_session_was_dropped_holds_its_projector_versions_again(pg_dsn: str) -> None:
    """The versions' shared advisory lock lived in the dropped session: the next fold takes
    it again, so a refold to other versions is still refused while this handle may fold."""
    holders = (
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted "
        "AND classid = (hashtext('forkline_es projectors ' || current_schema()))::oid"
    )
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        first = _pid(store)
        with psycopg.connect(pg_dsn, autocommit=True) as other:
            assert other.execute(holders).fetchall() == [(first,)]
            _drop(pg_dsn, first)
            assert other.execute(holders).fetchall() == []
            run.begin_step("a")  # folded: the fence reads the versions and holds them again
            assert other.execute(holders).fetchall() == [(_pid(store),)]


def test_a_refold_while_the_session_was_gone_refuses_the_old_handle_and_writes_nothing(pg_dsn: str) -> None:
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        _drop(pg_dsn, _pid(store))
        with psycopg.connect(pg_dsn, autocommit=True) as other:  # as another version's refold would
            other.execute("UPDATE projector SET version = version + 1 WHERE name = 'records'")
        with pytest.raises(fe.StoreError, match="version"):
            run.begin_step("a")
        assert [k for _, k in _rows(pg_dsn, "r")] == ["run-started"]


def test_an_append_whose_connection_dies_under_it_is_sent_again_once_and_recorded_once(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The append waits on the run's lock, held by another session; its own session is
    dropped meanwhile. Nothing of it committed, so the handle sends it again on a new
    connection, and the call returns as if nothing had happened."""
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        blocker = psycopg.connect(pg_dsn, autocommit=True)
        try:
            blocker.execute("BEGIN")
            blocker.execute("SELECT pg_advisory_xact_lock(%s, hashtext('r'))", (RUN_LOCKS,))
            pid, outcome = _pid(store), dict[str, Any]()

            def call() -> None:
                try:
                    outcome["seq"] = run.begin_step("a", {"n": 1})
                except BaseException as e:  # reported to the test below
                    outcome["error"] = e

            caplog.set_level(logging.WARNING, logger="forkline_es")
            caller = threading.Thread(target=call)
            caller.start()
            with psycopg.connect(pg_dsn, autocommit=True) as other:
                while not other.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'", (pid,)
                ).fetchall():
                    time.sleep(0.01)
            _drop(pg_dsn, pid)
            blocker.execute("COMMIT")  # the lock goes: the second sending is not held up
            caller.join(timeout=60)
        finally:
            blocker.close()
        assert "error" not in outcome, outcome
        assert outcome["seq"] == 2
        assert _events(caplog) == ["store_reconnected", "append_resent"]
        assert _rows(pg_dsn, "r") == [(1, "run-started"), (2, "step-begun")]
        run.end_step("a", "succeeded")
        assert list(store.get_run_record("r")["steps"]) == ["a"]
        assert store.check_projections() == []


def test_an_append_that_committed_before_its_connection_died_is_adopted_not_doubled(pg_dsn: str) -> None:
    """The acknowledgement is what was lost: the call raises, and the handle's next call finds
    its row in the log by digest and records after it, as with SQLite."""
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        backend = store.backend
        real = backend._append_once

        def commit_then_drop(*args: Any) -> Any:
            real(*args)
            _drop(pg_dsn, _pid(store))
            try:
                backend.conn.execute("SELECT 1")  # finds the session gone: the connection is broken
            except psycopg.OperationalError as e:
                raise translate(e, "append") from None
            raise AssertionError("the dropped session answered")

        backend._append_once = commit_then_drop  # type: ignore[method-assign]
        try:
            with pytest.raises(fe.StoreError, match="lost at COMMIT"):
                run.begin_step("a")
        finally:
            del backend._append_once
        run.begin_step("a")  # the same call again: adopted, not appended twice
        run.end_step("a", "succeeded")
        assert [k for _, k in _rows(pg_dsn, "r")] == ["run-started", "step-begun", "step-ended"]
        assert store.check_projections() == []


def test_a_connection_lost_while_verify_reads_the_projections_is_an_error_not_a_mismatch(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify refolds each run and reads its live projection rows to compare: losing the
    connection at that read is the store's error (exit 2 on the command line), never a
    projection-mismatch that reads as tampering."""
    from forkline_es.log.postgres.cursor import PgCursor
    from forkline_es.projections import check

    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        run.begin_step("a")
        run.end_step("a", "succeeded")
        assert store.verify_run("r").ok
        original = check._RunTable.rows

        def dropped_first(table: Any, cur: Any, run_id: str) -> Any:
            if isinstance(cur, PgCursor):  # the live store's, not the refold's scratch
                _drop(pg_dsn, _pid(store))
            return original(table, cur, run_id)

        monkeypatch.setattr(check._RunTable, "rows", dropped_first)
        with pytest.raises(fe.StoreError) as refused:
            store.verify_run("r")
        assert not isinstance(refused.value, fe.RecordError)
        monkeypatch.setattr(check._RunTable, "rows", original)
        assert store.verify_run("r").ok  # the next call reconnects
