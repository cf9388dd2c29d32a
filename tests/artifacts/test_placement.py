"""Files are placed only once their event is in the log: a refused call leaves every file as it was.

Issue 20, item 2: two handles on one run recorded different manifests; the loser got
``conflict`` but had already replaced ``manifest.json``, and verify reported ``manifest-file``
from then on. Here the losers race in one process and in several, and a process is killed
between a commit and its file's placement.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.artifacts.manifest import Manifest, manifest_file_bytes
from forkline_es.log.events import ManifestRecorded, decode_body

from .helpers import COMMIT, log_rows

WORKER = Path(__file__).with_name("_worker.py")


def _files(store: fe.Store) -> dict[str, bytes]:
    """Every file under the artifact folder, by relative path, with its bytes."""
    root = store.artifact_files.root
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _manifest_on_disk(store: fe.Store, run_id: str) -> bytes:
    return (store.artifact_files.root / store.artifact_files.manifest_path(run_id)).read_bytes()


def _recorded_manifest_bytes(store: fe.Store, run_id: str) -> bytes:
    (body,) = (
        store.backend.cursor()
        .execute("SELECT body FROM log WHERE run_id = ? AND kind = 'manifest-recorded'", (run_id,))
        .fetchall()[0]
    )
    event = decode_body(body)
    assert isinstance(event, ManifestRecorded)
    return manifest_file_bytes(
        run_id, Manifest(event.facts, event.digest, event.unknown_fields, event.complete)
    )


def _object(store: fe.Store, content: bytes) -> Path:
    return store.artifact_files.root / store.artifact_files.object_path(
        "sha256:" + hashlib.sha256(content).hexdigest()
    )


def test_a_stale_handle_s_refused_manifest_leaves_the_winner_s_file(store: fe.Store) -> None:
    winner = store.start_run("wf", run_id="r1")
    loser = store.resume_run("r1")
    m = winner.record_manifest(git_commit=COMMIT, seed=1)
    before = _files(store)
    with pytest.raises(fe.Conflict):
        loser.record_manifest(git_commit=COMMIT, seed=2)
    assert _files(store) == before
    assert store.verify_run("r1").ok
    assert store.get_run_record("r1")["x-manifest"]["digest"] == m.digest
    # the loser's own repeat, on a fresh handle, is refused too and writes nothing
    with pytest.raises(fe.Conflict):
        store.resume_run("r1").record_manifest(git_commit=COMMIT, seed=2)
    assert _files(store) == before and store.verify_run("r1").ok


def test_a_stale_handle_s_refused_artifact_places_nothing(store: fe.Store) -> None:
    winner = store.start_run("wf", run_id="r1")
    loser = store.resume_run("r1")
    winner.add_artifact(b"the winner's content", "trace", name="shared")
    before = _files(store)
    with pytest.raises(fe.Conflict):
        loser.add_artifact(b"the loser's content", "trace", name="shared")
    assert _files(store) == before
    assert not _object(store, b"the loser's content").exists()
    assert store.verify_run("r1").ok


def test_a_batch_that_is_not_written_places_no_file(store: fe.Store) -> None:
    run = store.start_run("wf", run_id="r1")
    before = _files(store)
    rows = log_rows(store)
    with pytest.raises(RuntimeError), run.batch():
        run.record_manifest(git_commit=COMMIT, seed=1)
        run.add_artifact(b"in a batch", "trace", name="b")
        raise RuntimeError("the executor changed its mind")
    assert _files(store) == before and log_rows(store) == rows
    with run.batch():
        run.record_manifest(git_commit=COMMIT, seed=1)
        run.add_artifact(b"in a batch", "trace", name="b")
        assert not _object(store, b"in a batch").exists()  # not before the batch commits
    assert _object(store, b"in a batch").read_bytes() == b"in a batch"
    assert _manifest_on_disk(store, "r1") == _recorded_manifest_bytes(store, "r1")
    assert store.verify_run("r1").ok
    assert not list((store.artifact_files.root / "tmp").iterdir())


def _race(db_path: Path, what: str, run_id: str, racers: int) -> list[str]:
    start_at = time.time() + 1.5  # every process holds its handle by then
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), what, str(db_path), run_id, str(n), str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(racers)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err.decode()
    return [out.decode().split()[0] for out, _ in outputs]


@pytest.mark.parametrize("what", ["manifest", "artifact"])
def test_processes_racing_leave_only_the_winner_s_file(db_path: Path, what: str) -> None:
    """Rounds of three processes, each with its own content: one records, the others get
    ``conflict``, and the files on disk are exactly the winner's (verify finds nothing)."""
    with fe.Store.open(db_path) as store:
        for i in range(4):
            store.start_run("wf", run_id=f"r{i}")
    for i in range(4):
        outcomes = _race(db_path, what, f"r{i}", racers=3)
        assert sorted(outcomes) == ["conflict", "conflict", "recorded"], outcomes
    with fe.Store.open(db_path) as store:
        for i in range(4):
            report = store.verify_run(f"r{i}")
            assert report.ok, [p.message for p in report.problems]
        if what == "manifest":
            for i in range(4):
                assert _manifest_on_disk(store, f"r{i}") == _recorded_manifest_bytes(store, f"r{i}")
        else:
            placed = {p.name for p in (store.artifact_files.root / "objects").rglob("*") if p.is_file()}
            recorded = {
                a["path"].rsplit("/", 1)[1]
                for i in range(4)
                for a in store.get_run_record(f"r{i}")["x-artifacts"]
            }
            assert placed == recorded  # no loser's content was placed
        assert not list((store.artifact_files.root / "tmp").iterdir())


@pytest.mark.parametrize(
    ("what", "kind"), [("artifact", "artifact-missing"), ("manifest", "manifest-file-missing")]
)
def test_a_kill_between_commit_and_placement_is_reported_and_a_repeat_repairs_it(
    db_path: Path, what: str, kind: str
) -> None:
    with fe.Store.open(db_path) as store:
        store.start_run("wf", run_id="r1")
    done = subprocess.run(
        [sys.executable, str(WORKER), "killed-placing", str(db_path), "r1", what],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    with fe.Store.open(db_path) as store:
        assert log_rows(store) == 2  # the event committed before the kill
        assert [p.kind for p in store.verify_run("r1").problems] == [kind]
        run = store.resume_run("r1")
        if what == "manifest":
            assert run.record_manifest(git_commit=COMMIT, seed=1).seq == 2
            assert _manifest_on_disk(store, "r1") == _recorded_manifest_bytes(store, "r1")
        else:
            assert run.add_artifact(b"placed after the commit", "trace", name="a") == 2
        assert log_rows(store) == 2  # the repeat appended nothing
        assert store.verify_run("r1").ok
