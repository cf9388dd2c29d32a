"""A run's artifact name holds one content, and a run has one manifest, whatever the key.

docs/verify.md: other content under a name already used is a conflict that writes
nothing, and a different manifest is a conflict. A custom idempotency key (recording.md)
used to get around both: the second artifact hid the first from the projection, so
``gc`` deleted a file the run's log still cites, and the second manifest overwrote the
run's one ``manifest.json``. Either way ``verify`` then failed on a run nobody tampered with.
"""

from __future__ import annotations

import pytest

import forkline_es as fe

from .helpers import log_rows


def _files(store: fe.Store) -> dict[str, bytes]:
    root = store.artifact_files.root
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_other_content_under_a_used_name_is_a_conflict_whatever_the_key(store: fe.Store) -> None:
    run = store.start_run("wf", run_id="r1")
    run.add_artifact(b"first", "trace", name="t")
    rows, files = log_rows(store), _files(store)
    with pytest.raises(fe.Conflict):
        run.add_artifact(b"second", "trace", name="t", key="upload-2")
    with pytest.raises(fe.Conflict):
        store.resume_run("r1").add_artifact(b"second", "trace", name="t", key="upload-3")
    assert (log_rows(store), _files(store)) == (rows, files)
    run.conclude("succeeded")
    store.gc(artifact_grace_seconds=0)
    assert store.verify_run("r1").ok


def test_the_same_content_under_another_key_is_accepted(store: fe.Store) -> None:
    """Nothing a reader relies on is contradicted: both events cite the same file."""
    run = store.start_run("wf", run_id="r1")
    first = run.add_artifact(b"same", "trace", name="t")
    assert run.add_artifact(b"same", "trace", name="t", key="op-42") > first
    assert store.verify_run("r1").ok


def test_a_name_shows_its_latest_registration(store: fe.Store) -> None:
    """The same content registered again under another key, described otherwise: the
    document lists the name once, as its latest event describes it, and a rebuild agrees."""
    run = store.start_run("wf", run_id="r1")
    run.begin_step("s")
    run.add_artifact(b"same", "trace", name="t")
    run.add_artifact(b"other", "trace", name="u")
    run.add_artifact(b"same", "report", content_type="text/plain", step="s", name="t", key="op-42")
    listed = store.get_run_record("r1")["x-artifacts"]
    assert [a["name"] for a in listed] == ["u", "t"]
    assert (listed[1]["kind"], listed[1]["content_type"], listed[1]["step"]) == ("report", "text/plain", "s")
    before = store.export_run_record("r1")
    store.rebuild_projections()
    assert store.export_run_record("r1") == before


def test_a_batch_cannot_record_two_contents_under_one_name(store: fe.Store) -> None:
    run = store.start_run("wf", run_id="r1")
    with pytest.raises(fe.Conflict), run.batch():
        run.add_artifact(b"first", "trace", name="t")
        run.add_artifact(b"second", "trace", name="t", key="other")
    assert "x-artifacts" not in store.get_run_record("r1")


def test_a_different_manifest_is_a_conflict_whatever_the_key(store: fe.Store) -> None:
    run = store.start_run("wf", run_id="r1")
    m = run.record_manifest(config={"lr": 0.1})
    rows, files = log_rows(store), _files(store)
    with pytest.raises(fe.Conflict):
        run.record_manifest(config={"lr": 0.2}, key="manifest-2")
    assert (log_rows(store), _files(store)) == (rows, files)
    assert store.get_run_record("r1")["x-manifest"]["digest"] == m.digest
    assert store.verify_run("r1").ok
