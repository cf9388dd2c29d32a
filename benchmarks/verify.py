"""``verify --all`` over many runs, each with 100 events and one artifact file.

The full run records 10,000 runs of 100 events (start, one ``artifact-added`` of 1 MB,
48 begin/end step pairs, one observation, the conclusion) through the ordinary Run API,
each artifact unique (its first 8 bytes are the run number), so ``verify --all`` reads
and hashes 10 GB of artifacts and walks 1,000,000 chained rows. The database uses the
default durability (WAL, ``synchronous=NORMAL``); verify only reads.

Three figures: with every artifact's pages evicted from the page cache first
(``posix_fadvise(DONTNEED)``, so the files come from the disk), with a warm cache, and
with a warm cache without the projection check (``--no-projections``: no refold of each
run, so the gap between the last two is what that check costs). The library call
``store.verify_all()`` is timed: the CLI adds only its rendering.

    python -m benchmarks.verify [--quick]
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, single

__all__ = ["build", "main", "run"]

FULL: Final = (10_000, 1 << 20)  # runs, artifact bytes
QUICK: Final = (200, 64 << 10)
STEPS: Final = 48  # 1 start + 1 artifact + 2 * 48 steps + 1 observation + 1 conclusion = 100 events


def build(store: fe.Store, runs: int, size: int) -> None:
    """Record ``runs`` runs of 100 events, each with one unique ``size``-byte artifact."""
    block = os.urandom(size)
    for i in range(runs):
        run = store.start_run("bench/verify", run_id=f"run-{i:06d}")
        run.add_artifact(i.to_bytes(8, "big") + block[8:], "blob", name="blob.bin")
        for j in range(STEPS):
            run.begin_step(f"s{j}")
            run.end_step(f"s{j}", "succeeded")
        run.observe("n", i)
        run.conclude("succeeded")


def _evict(root: Path) -> None:
    for path in (root / "objects").rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _trial(store: fe.Store, cold: bool, projections: bool = True) -> Trial:
    if cold:
        _evict(store.artifact_files.root)
    with Timer() as t:
        reports = store.verify_all(projections=projections)
    assert all(r.ok for r in reports), [r for r in reports if not r.ok][:3]
    return Trial(len(reports), t.seconds)


def run(quick: bool, workdir: Path) -> list[Row]:
    runs, size = QUICK if quick else FULL
    needed = runs * size * 1.2 + (500 << 20)
    free = shutil.disk_usage(workdir).free
    if free < needed:
        runs = max(100, int((free - (500 << 20)) / (size * 1.2)))
        scaled = f"scaled down to {runs:,} runs: only {free / 1e9:.1f} GB free"
    else:
        scaled = ""
    db = workdir / "verify.db"
    with Timer() as t, fe.Store.open(db) as store:
        build(store, runs, size)
    repeats = 2 if quick else 3
    what = f"{runs:,} runs x 100 events + {size >> 10:,} KB artifact"
    notes = [f"setup {t.seconds:.0f} s", scaled] if scaled else [f"setup {t.seconds:.0f} s"]
    with fe.Store.open(db) as store:
        rows = [
            single(
                f"verify --all, {what}, files from disk",
                lambda: _trial(store, cold=True),
                repeats,
                unit="runs/s",
                note=", ".join(notes),
            ),
            single(
                f"verify --all, {what}, warm cache",
                lambda: _trial(store, cold=False),
                repeats,
                unit="runs/s",
            ),
            single(
                f"verify --all --no-projections, {what}, warm cache",
                lambda: _trial(store, cold=False, projections=False),
                repeats,
                unit="runs/s",
            ),
        ]
    shutil.rmtree(Path(str(db) + ".artifacts"), ignore_errors=True)
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("verify")


if __name__ == "__main__":
    main()
