"""Applying retention to a real store: what goes, what stays untouched, and the file shrinking."""

from __future__ import annotations

import hashlib
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe

LATER = datetime.now(UTC) + timedelta(days=1)


def record(
    store: fe.Store, workflow: str = "wf", parent: str | None = None, conclude: bool = True, size: int = 10
) -> str:
    run = store.start_run(workflow, inputs={"n": 1}, parent=parent)
    run.begin_step("fetch", arguments={"url": "x" * size})
    run.invoke("fetch", 1, "http.get", "sha256:" + "c0" * 32, "ambiguous", arguments=[1, 2])
    run.result("fetch", 1, "succeeded", result={"body": "y" * size}, details=None)
    run.end_step("fetch", "succeeded", result="ok", event={"e": 1})
    if conclude:
        run.conclude("succeeded", outputs={"out": True})
    return run.id


def sql(store: fe.Store) -> Any:
    """A cursor of the store's backend: ``?`` statements on either backend."""
    return store.backend.cursor()


def rows_of(store: fe.Store, run_id: str) -> tuple[list[Any], list[Any], dict[str, Any]]:
    log = sql(store).execute("SELECT * FROM log WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    payload = (
        sql(store)
        .execute(
            "SELECT p.* FROM payload AS p JOIN log AS l USING (position) WHERE l.run_id = ? ORDER BY 1, 2",
            (run_id,),
        )
        .fetchall()
    )
    return log, payload, store.get_run_record(run_id)


def strip_removed(doc: Any) -> Any:
    """The document with every present/removed slot reduced to class and 'available' (value dropped)."""
    if isinstance(doc, dict):
        if "class" in doc and doc.get("state") in ("present", "removed"):
            return {k: v for k, v in doc.items() if k not in ("state", "value")}
        return {k: strip_removed(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [strip_removed(v) for v in doc]
    return doc


def slot_states(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        if "class" in doc and "state" in doc:
            return [doc["state"]]
        return [s for v in doc.values() for s in slot_states(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in slot_states(v)]
    return []


@pytest.mark.sqlite_only("SQLite's auto_vacuum pragma; PostgreSQL's space is autovacuum's")
def test_a_new_store_uses_incremental_auto_vacuum(sqlite_store: fe.Store) -> None:
    assert sqlite_store.conn.execute("PRAGMA auto_vacuum").fetchall()[0][0] == 2


def test_payload_removal_keeps_every_mandatory_fact(store: fe.Store) -> None:
    run_id = record(store)
    before = store.get_run_record(run_id)
    removed = store.remove_payloads(run_id, ["results"], reason="too big")
    assert {s for _, s in removed} == {"result", "details"}
    after = store.get_run_record(run_id)
    assert strip_removed(after) == strip_removed(before)
    assert after["steps"]["fetch"]["payloads"]["result"] == {"class": "results", "state": "removed"}
    assert after["steps"]["fetch"]["payloads"]["arguments"]["state"] == "present"
    assert store.get_step_record(run_id, "fetch") == after["steps"]["fetch"]
    states = slot_states(after)
    assert states.count("removed") + states.count("present") == slot_states(before).count("present")
    assert store.remove_payloads(run_id, ["results"]) == ()  # nothing left of that class
    assert store.check_projections() == []
    event = (
        sql(store)
        .execute("SELECT body FROM log WHERE run_id = ? AND kind = 'payloads-removed'", (run_id,))
        .fetchall()
    )
    assert len(event) == 1 and '"policy":"manual"' in event[0][0]


def test_removal_leaves_user_keys_that_look_like_its_marker_alone(store: fe.Store) -> None:
    """A user map may hold any key, the reader's private removal marker included."""
    tricky = {"~removed": True, "~": [1, "x"], "state": "present", "nested": {"~removed": "v"}}
    run = store.start_run("wf", inputs=tricky)
    run.begin_step("s", arguments={"gone": 1})
    run.end_step("s", "succeeded", result=tricky)
    run.conclude("succeeded")
    assert store.remove_payloads(run.id, ["arguments"]) == ((2, "arguments"),)
    doc = store.get_run_record(run.id)
    assert doc["payloads"]["inputs"]["value"] == fe.encode_value(tricky)
    step = store.get_step_record(run.id, "s")
    assert step == doc["steps"]["s"]
    assert step["payloads"]["arguments"] == {"class": "arguments", "state": "removed"}
    assert fe.decode_value(step["payloads"]["result"]["value"]) == tricky
    assert store.export_run_record(run.id) == fe.canonical_json(doc)


def test_payload_removal_refuses_active_and_unknown_runs(store: fe.Store) -> None:
    live = record(store, conclude=False)
    with pytest.raises(fe.Conflict):
        store.remove_payloads(live)
    with pytest.raises(fe.RunNotFound):
        store.remove_payloads("nope")
    assert slot_states(store.get_run_record(live)).count("removed") == 0


def test_eviction_deletes_exactly_one_run_and_keeps_a_tombstone(store: fe.Store) -> None:
    gone, kept = record(store), record(store)
    kept_before = rows_of(store, kept)
    top = sql(store).execute("SELECT max(position) FROM log").fetchall()[0][0]
    positions = [p for (p,) in sql(store).execute("SELECT position FROM log WHERE run_id = ?", (gone,))]
    report = store.evict_run(gone, reason="test", policy="manual")
    assert report.events == 6 and report.payloads > 0
    with pytest.raises(fe.RunNotRetained):
        store.get_run_record(gone)
    with pytest.raises(fe.RunNotRetained):
        store.get_step_record(gone, "fetch")
    with pytest.raises(fe.RunNotRetained):
        store.resume_run(gone)
    assert [r["id"] for r in store.list_runs()] == [kept]
    assert rows_of(store, kept) == kept_before
    for table in store.projections.tables:
        columns = set(store.backend.columns(store.backend.cursor(), table))
        if "run_id" in columns:
            left = sql(store).execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", (gone,))
        else:  # rows keyed by the log position they render
            marks = ",".join("?" * len(positions))
            left = sql(store).execute(f"SELECT count(*) FROM {table} WHERE position IN ({marks})", positions)
        assert left.fetchall()[0][0] == 0, table
    assert store.evictions()[0]["run_id"] == gone
    assert store.check_projections() == []
    with pytest.raises(fe.RunNotRetained):
        store.evict_run(gone, reason="again")
    # positions are never reused, even after the rows at the top of the log went
    newer = record(store)
    first = sql(store).execute("SELECT min(position) FROM log WHERE run_id = ?", (newer,)).fetchall()[0][0]
    assert first > top
    with pytest.raises(fe.Conflict):
        store.start_run("wf", run_id=gone)  # an evicted identity is not reused while its tombstone lasts


def test_purged_tombstones_turn_into_run_not_found(store: fe.Store) -> None:
    run_id = record(store)
    store.evict_run(run_id, reason="test")
    assert store.purge_tombstones("1d") == 0  # too young
    with pytest.raises(fe.RunNotRetained):
        store.get_run_record(run_id)
    assert store.purge_tombstones("1h", now=LATER) == 1
    with pytest.raises(fe.RunNotFound):
        store.get_run_record(run_id)
    assert store.evictions() == []


def test_eviction_refusals_write_nothing(store: fe.Store) -> None:
    live = record(store, conclude=False)
    parent = record(store)
    child = record(store, parent=parent)
    snapshot = sql(store).execute("SELECT count(*), max(position) FROM log").fetchall()
    with pytest.raises(fe.Conflict, match="conclude"):
        store.evict_run(live, reason="x")
    with pytest.raises(fe.Conflict, match="parent"):
        store.evict_run(child, reason="x")
    with pytest.raises(fe.RunNotFound):
        store.evict_run("nope", reason="x")
    with pytest.raises(fe.InvalidRequest):
        store.evict_run(parent, reason="")
    assert sql(store).execute("SELECT count(*), max(position) FROM log").fetchall() == snapshot
    assert store.evictions() == []
    store.evict_run(child, reason="x", force=True)  # force overrides the tree rule
    with pytest.raises(fe.RunNotRetained):
        store.get_run_record(child)


def test_apply_retention_evicts_reduces_and_leaves_live_runs_alone(store: fe.Store) -> None:
    old = [record(store) for _ in range(3)]
    live = record(store, conclude=False)
    live_before = rows_of(store, live)
    policy = fe.RetentionPolicy(keep_last=1, drop_payloads_after="0s", payload_classes=["arguments"])
    dry = store.apply_retention(policy, now=LATER, dry_run=True)
    assert store.evictions() == []
    report = store.apply_retention(policy, now=LATER)
    assert not report.dry_run and dry.dry_run
    assert [e.run_id for e in report.evicted] == [e.run_id for e in dry.evicted]
    assert sorted(e.run_id for e in report.evicted) == sorted(old[:2])
    assert [r.run_id for r in report.reduced] == [old[2]]
    assert [r.removed for r in report.reduced] == [r.removed for r in dry.reduced]
    assert {s for _, s in report.reduced[0].removed} == {"arguments"}
    assert rows_of(store, live) == live_before
    assert store.evictions()[0]["policy"] == policy.describe()
    assert store.check_projections() == []
    again = store.apply_retention(policy, now=LATER)
    assert again.evicted == [] and again.reduced == []


def test_apply_retention_takes_a_tree_root_first(store: fe.Store) -> None:
    parent = record(store, "p")
    child = record(store, "c", parent=parent)
    only_child = store.apply_retention(fe.RetentionPolicy(keep_last=0), now=LATER, dry_run=True)
    assert [e.run_id for e in only_child.evicted] == [parent, child]
    report = store.apply_retention(fe.RetentionPolicy(keep_last=0), now=LATER)
    assert [e.run_id for e in report.evicted] == [parent, child]


def test_consumers_protect_unacknowledged_completions(store: fe.Store) -> None:
    store.register_consumer("exporter")
    first, second = record(store), record(store)
    feed = store.completions("exporter")
    assert [c.run_id for c in feed] == [first, second]
    assert feed[0].status == "succeeded" and feed[0].workflow == "wf"
    with pytest.raises(fe.Conflict, match="exporter"):
        store.evict_run(first, reason="x")
    report = store.apply_retention(fe.RetentionPolicy(keep_last=0), now=LATER)
    assert report.evicted == [] and {k.run_id for k in report.kept} == {first, second}
    store.acknowledge("exporter", feed[0].position)
    assert [c.run_id for c in store.completions("exporter")] == [second]
    report = store.apply_retention(fe.RetentionPolicy(keep_last=0), now=LATER)
    assert [e.run_id for e in report.evicted] == [first]
    store.acknowledge("exporter", 1)  # going back changes nothing
    assert store.consumers()[0].position == feed[0].position
    assert store.unregister_consumer("exporter")
    store.evict_run(second, reason="x")


def test_feed_refusals_and_registration(store: fe.Store) -> None:
    record(store)
    with pytest.raises(fe.InvalidRequest):
        store.completions("ghost")
    with pytest.raises(fe.InvalidRequest):
        store.acknowledge("ghost", 1)
    late = store.register_consumer("late", since="now")
    assert store.completions("late") == []
    assert store.register_consumer("late") == late  # idempotent, checkpoint kept
    with pytest.raises(fe.InvalidRequest):
        store.acknowledge("late", 10**9)
    with pytest.raises(fe.InvalidRequest):
        store.register_consumer("")


def test_checkpoints_survive_reopen_and_rebuild(db_path: Path) -> None:
    with fe.Store.open(db_path) as s:
        s.register_consumer("c")
        run_id = record(s)
        position = s.completions("c")[0].position
        s.acknowledge("c", position)
    with fe.Store.open(db_path) as s:
        s.rebuild_projections()
        assert s.consumers()[0].position == position
        s.evict_run(run_id, reason="acknowledged")


def file_bytes(path: Path) -> int:
    wal = Path(str(path) + "-wal")
    return os.path.getsize(path) + (os.path.getsize(wal) if wal.exists() else 0)


def test_the_file_shrinks_after_eviction_and_gc(db_path: Path) -> None:
    with fe.Store.open(db_path) as s:
        runs = [record(s, size=4_000) for _ in range(60)]
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        full = os.path.getsize(db_path)
        s.apply_retention(fe.RetentionPolicy(keep_last=5), now=LATER)
        evicted_only = file_bytes(db_path)
        report = s.gc()
        assert report.pages_after < report.pages_before
        assert report.file_bytes_after == file_bytes(db_path)
        assert len(s.list_runs()) == 5 and set(r["id"] for r in s.list_runs()) <= set(runs)
    after = os.path.getsize(db_path)
    assert after < full / 4
    assert after < evicted_only


def test_rebuild_agrees_after_evicting_the_newest_run(store: fe.Store) -> None:
    """A rebuild marks the projectors at the highest position ever given out, not at max(position)."""
    record(store)
    newest = record(store)
    store.evict_run(newest, reason="the top of the log goes")
    assert store.check_projections() == []


def test_an_orphan_file_reused_by_a_new_artifact_is_young_again(store: fe.Store) -> None:
    """gc's grace period covers a file an add_artifact reuses (same content as an evicted
    run's orphan), so a concurrent sweep cannot take it between its commit and the sweep."""
    gone = store.start_run(workflow="gc/art")
    gone.add_artifact(b"same bytes", kind="log", name="a")
    gone.conclude("succeeded")
    store.evict_run(gone.id, reason="test")
    path = store.artifact_files.root / store.artifact_files.object_path(
        "sha256:" + hashlib.sha256(b"same bytes").hexdigest()
    )
    os.utime(path, (1_000_000_000, 1_000_000_000))  # an old orphan
    new = store.start_run(workflow="gc/art")
    new.add_artifact(b"same bytes", kind="log", name="a")
    assert time.time() - path.stat().st_mtime < 60
    report = store.gc(artifact_grace_seconds=3600)
    assert path.exists() and report.artifact_files_removed == 0
    assert store.verify_run(new.id).ok


def test_gc_deletes_artifact_files_only_evicted_runs_referenced(store: fe.Store) -> None:
    keep = store.start_run(workflow="gc/art")
    keep.add_artifact(b"shared content", kind="log", name="shared")
    keep.conclude("succeeded")
    gone = store.start_run(workflow="gc/art")
    gone.add_artifact(b"shared content", kind="log", name="shared")
    gone.add_artifact(b"only the evicted run had this", kind="log", name="own")
    gone.record_manifest(python="3")
    gone.conclude("succeeded")
    root = store.artifact_files.root
    own = root / store.artifact_files.object_path(store.get_run_record(gone.id)["x-artifacts"][1]["sha256"])
    shared = root / store.get_run_record(keep.id)["x-artifacts"][0]["path"]
    manifest = root / store.artifact_files.manifest_path(gone.id)
    assert own.exists() and shared.exists() and manifest.exists()
    store.evict_run(gone.id, reason="test")
    report = store.gc(artifact_grace_seconds=0)
    assert not own.exists() and not manifest.exists()
    assert shared.exists()  # still referenced by the retained run
    assert report.artifact_files_removed == 2
    assert store.verify_run(keep.id).ok
