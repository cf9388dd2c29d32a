"""list_runs / get_run_record / get_step_record / export: results and 002's refusals."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

import forkline_es as fe
from forkline_es.records.operations import log_events
from forkline_es.schema import run_record_schema
from forkline_es.values import canonical_json

from .conftest import record_sample


@pytest.fixture
def sample(mem_store: fe.Store) -> fe.Store:
    record_sample(mem_store)
    return mem_store


def evict(store: fe.Store, run_id: str) -> None:
    """What retention does (to any run, even an active one): record the eviction, then delete
    the run's rows, in one transaction."""
    with store.log.transaction("evict") as cur:
        cur.execute(
            "INSERT INTO eviction (run_id, position, at, reason) "
            "VALUES (?, 0, '2026-01-01T00:00:00Z', 'test')",
            (run_id,),
        )
        cur.execute(
            "DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = ?)", (run_id,)
        )
        cur.execute("DELETE FROM log WHERE run_id = ?", (run_id,))
        for table in ("run_summary", "step_view", "entry", "payload_removal"):
            cur.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))


def test_listing_filters_by_the_runs_own_workflow(sample: fe.Store) -> None:
    assert sorted(s["id"] for s in sample.list_runs()) == ["child", "done"]
    assert [s["id"] for s in sample.list_runs("ingest")] == ["child"]
    assert sample.list_runs("no/such") == []
    assert all("payloads" not in s for s in sample.list_runs())


def test_documents_validate_and_export_is_canonical(sample: fe.Store) -> None:
    for run_id in ("done", "child"):
        doc = sample.get_run_record(run_id)
        jsonschema.validate(doc, run_record_schema(), cls=jsonschema.Draft202012Validator)
        assert sample.export_run_record(run_id) == canonical_json(doc)


def test_unavailable_payloads_are_reported_inside_the_record(sample: fe.Store) -> None:
    step = sample.get_step_record("done", "fetch/0")
    assert step["payloads"]["result"] == {"class": "results", "state": "withheld"}
    assert step["payloads"]["details"] == {"class": "results", "state": "not-recorded"}
    assert step["payloads"]["binding"]["state"] == "present"


def test_an_active_step_has_no_outcome(sample: fe.Store) -> None:
    step = sample.get_step_record("child", "parse")
    assert step["status"] == "active" and "outcome" not in step


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.get_run_record("nope"), fe.RunNotFound),
        (lambda s: s.get_step_record("nope", "a"), fe.RunNotFound),
        (lambda s: s.get_step_record("done", "never"), fe.StepNotFound),
        (lambda s: s.get_step_record("done", "a//b"), fe.InvalidRequest),
        (lambda s: s.get_step_record("done", "01"), fe.InvalidRequest),
        (lambda s: s.get_step_record("done", "/fetch"), fe.InvalidRequest),
    ],
)
def test_lookup_refusals(sample: fe.Store, call: object, error: type[fe.RecordError]) -> None:
    with pytest.raises(error) as raised:
        call(sample)  # type: ignore[operator]
    assert raised.value.code == error.code


def test_an_evicted_run_is_not_retained_and_not_listed(sample: fe.Store) -> None:
    evict(sample, "child")
    for call in (
        lambda: sample.get_run_record("child"),
        lambda: sample.get_step_record("child", "parse"),
        lambda: log_events(sample, "child"),
    ):
        with pytest.raises(fe.RunNotRetained):
            call()
    assert [s["id"] for s in sample.list_runs()] == ["done"]
    assert sample.check_projections() == []


def test_check_projections_reports_each_difference(store: fe.Store) -> None:
    record_sample(store)
    assert store.check_projections() == []
    store.conn.execute("UPDATE step_view SET status = 'ended' WHERE path = 'parse'")
    store.conn.execute("DELETE FROM entry WHERE run_id = 'done' AND entry = 2")
    differences = store.check_projections()
    assert len(differences) == 2
    assert any(d.startswith("step_view ('child', 'parse')") for d in differences)
    assert any(d.startswith("entry ('done', 2)") and "live has no such row" in d for d in differences)
    store.rebuild_projections()
    assert store.check_projections() == []


def test_a_changed_projector_version_rebuilds_at_open(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        record_sample(store)
        before = store.get_run_record("done")
        store.conn.execute("DELETE FROM entry")
        store.conn.execute("UPDATE projector SET version = version - 1")
    with fe.Store.open(db_path) as store:
        assert store.get_run_record("done") == before
        assert store.check_projections() == []


def test_projections_of_an_older_shape_are_replaced_at_open(db_path: Path) -> None:
    """A file written before entries were keyed by position (records version 4) opens as new."""
    with fe.Store.open(db_path) as store:
        record_sample(store)
        before = store.export_run_record("done")
        store.conn.execute(
            "DROP TABLE entry; CREATE TABLE entry (run_id TEXT NOT NULL, seq INTEGER NOT NULL, "
            "position INTEGER NOT NULL, generation INTEGER NOT NULL, kind TEXT NOT NULL, path TEXT, "
            "superseded_by INTEGER, doc TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID; "
            "UPDATE projector SET version = 4 WHERE name = 'records'"
        )
    with fe.Store.open(db_path) as store:
        columns = [c[1] for c in store.conn.execute("PRAGMA table_info(entry)")]
        assert columns == ["run_id", "entry", "superseded_by", "doc"]
        assert store.export_run_record("done") == before
        assert store.check_projections() == []


def test_catch_up_folds_from_the_recorded_position(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        record_sample(store)
        done = store.get_run_record("done")
        folded = store.log.max_position()
        run = store.start_run("late", run_id="late")
        run.begin_step("a")
        # Pretend the last two events were appended by a writer that did not fold them.
        store.conn.execute("DELETE FROM run_summary WHERE run_id = 'late'")
        store.conn.execute("DELETE FROM step_view WHERE run_id = 'late'")
        store.conn.execute("DELETE FROM entry WHERE run_id = 'late'")
        store.conn.execute("UPDATE projector SET position = ?", (folded,))
    with fe.Store.open(db_path) as store:
        assert store.get_step_record("late", "a")["status"] == "active"
        assert store.get_run_record("done") == done  # earlier events were not folded twice
        assert store.check_projections() == []
