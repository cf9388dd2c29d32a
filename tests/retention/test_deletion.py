"""After gc, no byte of a removed or evicted value is left in any file the store made.

Issue 20, item 7: with SQLite's secure_delete off, the values that retention removed or
evicted stayed in free pages, in the unused space of pages still in use, and in the WAL's
old page images, after gc too. Every value here carries distinctive random markers; after
gc the raw bytes of runs.db, runs.db-wal and everything else under the store's folder are
scanned for them. Values that are still retained must be found by the same scan (it sees
what is there), the removed and evicted ones must not.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw

import forkline_es as fe

LATER = datetime.now(UTC) + timedelta(days=1)


def markers(n: int) -> list[str]:
    """``n`` distinct 40-byte random markers."""
    return [f"m{secrets.token_hex(19)}x" for _ in range(n)]


def record(
    store: fe.Store, values: list[str], workflow: str, big: bool = False, conclude: bool = True
) -> str:
    """A run holding ``values`` (one per payload slot it fills), concluded unless told;
    ``big`` also stores them in values that spill into overflow pages."""
    inputs: object = {"v": values[0], "pad": "p" * 6000} if big else {"v": values[0]}
    run = store.start_run(workflow, inputs=inputs)
    run.begin_step("s", arguments=values[1])
    run.invoke("s", 1, "op", "sha256:" + "ab" * 32, "not-dispatched", arguments=[values[2]])
    run.result("s", 1, "succeeded", result={"r": values[3]}, details=values[4])
    run.end_step("s", "succeeded", binding=values[5], event={"e": values[6]})
    if conclude:
        run.conclude("succeeded", outputs=[values[7]] * (200 if big else 1))
    else:
        run.begin_step("t", arguments=[values[7]] * (200 if big else 1))
    return run.id


SLOTS = 8


def store_files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def found(files: dict[Path, bytes], values: list[str]) -> dict[str, list[str]]:
    """Each value seen anywhere in ``files``, with the names of the files holding it."""
    seen: dict[str, list[str]] = {}
    for path, data in files.items():
        for v in values:
            if v.encode() in data:
                seen.setdefault(v, []).append(path.name)
    return seen


def test_gc_leaves_no_byte_of_removed_or_evicted_values(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    db = folder / "runs.db"
    gone: list[str] = []  # removed or evicted
    kept: list[str] = []

    def runs(workflow: str, n: int) -> list[str]:
        ids = []
        for i in range(n):
            values = markers(SLOTS)
            ids.append(record(store, values, workflow, big=i % 5 == 0))
            gone.extend(values)
        return ids

    with fe.Store.open(db) as store:
        for _ in range(5):  # active runs: retention leaves them alone
            values = markers(SLOTS)
            record(store, values, "kept", big=True, conclude=False)
            kept.extend(values)

        evicted_by_policy = runs("evict-policy", 15)
        report = store.apply_retention(fe.RetentionPolicy(max_age="1h"), now=LATER)
        assert {e.run_id for e in report.evicted} == set(evicted_by_policy)

        reduced_by_policy = runs("reduce-policy", 15)
        report = store.apply_retention(fe.RetentionPolicy(drop_payloads_after="1h"), now=LATER)
        assert {r.run_id for r in report.reduced} == set(reduced_by_policy)

        for run_id in runs("reduce-manual", 15):
            assert store.remove_payloads(run_id)
        for run_id in runs("evict-manual", 15):
            store.evict_run(run_id, reason="test")
        own = markers(SLOTS + 2)  # a run's observations, artifact file and manifest file
        run = store.start_run("files", inputs={"v": own[0]})
        for k in range(1, SLOTS):
            run.observe(own[k], k)  # its name, in the log row and the observation row
        run.add_artifact(f"artifact {own[SLOTS]}".encode(), kind="log", name="a")
        run.record_manifest(note=own[SLOTS + 1])
        run.conclude("succeeded")
        # A rebuild drops the projection tables without zeroing their pages (the observation
        # rows held the names): gc must still leave no byte of them once the run is evicted.
        store.rebuild_projections()
        store.evict_run(run.id, reason="test")
        gone.extend(own)

        for _ in range(10):  # writes after the deletions reuse the pages they freed
            record(store, markers(SLOTS), "after")

        assert found(store_files(folder), gone), "the values were on disk before gc (the scan sees them)"
        report = store.gc(artifact_grace_seconds=0)
        assert report.complete, report.not_done
        assert report.wal_truncated and report.free_pages == 0
        files = store_files(folder)
        assert db in files
        left = found(files, gone)
        assert left == {}, f"{len(left)} of {len(gone)} removed or evicted values remain: {left}"
        assert set(found(files, kept)) == set(kept)  # what is retained is still seen
    integrity = apsw.Connection(str(db)).execute("PRAGMA integrity_check").fetchall()
    assert integrity == [("ok",)]
