"""Reading back: one run's record of 10,000 entries, and a listing of 100,000 runs.

Ours is the public operation (``get_run_record``: one read transaction, documents with
typed values resolved; ``list_runs``: every summary, never truncated). The floor is
plain apsw reading the same rows it would need at least (the run's log rows; one
column per run) and decoding them with msgspec, with no document built.

    python -m benchmarks.reads [--quick]
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import apsw
import msgspec

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, paired

__all__ = ["main", "run"]

_ARTIFACT: Final = "sha256:" + "ef" * 32


def _record_run(store: fe.Store, steps: int) -> str:
    run = store.start_run(workflow="bench/read", inputs={"n": steps})
    for i in range(steps // 2):
        path = f"step/{i}"
        run.begin_step(path, arguments={"i": i})
        run.end_step(path, "succeeded", result={"i": i})
    run.conclude("succeeded")
    return run.id


def _read_ours(store: fe.Store, run_id: str, entries: int) -> Trial:
    with Timer() as t:
        doc = store.get_run_record(run_id)
    assert len(doc["entries"]) >= entries
    return Trial(1, t.seconds)


def _read_raw(path: Path, run_id: str) -> Trial:
    conn = apsw.Connection(str(path))
    with Timer() as t:
        rows = conn.execute("SELECT body FROM log WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        [msgspec.json.decode(b) for (b,) in rows]
    conn.close()
    return Trial(1, t.seconds)


def _list_ours(store: fe.Store, runs: int) -> Trial:
    with Timer() as t:
        listed = store.list_runs()
    assert len(listed) == runs
    return Trial(1, t.seconds)


def _list_raw(path: Path, runs: int) -> Trial:
    conn = apsw.Connection(str(path))
    with Timer() as t:
        rows = conn.execute("SELECT body FROM log WHERE seq = 1").fetchall()
        [msgspec.json.decode(b) for (b,) in rows]
    conn.close()
    assert len(rows) == runs
    return Trial(1, t.seconds)


def run(quick: bool, workdir: Path) -> list[Row]:
    entries = 1_000 if quick else 10_000
    runs = 2_000 if quick else 100_000
    repeats = 3 if quick else 7
    path = workdir / "reads.db"
    rows: list[Row] = []
    with fe.Store.open(path) as store:
        run_id = _record_run(store, entries)
        rows.append(
            paired(
                f"read back one run's record of {entries:,} entries",
                lambda: _read_ours(store, run_id, entries),
                lambda: _read_raw(path, run_id),
                "raw apsw scan + msgspec decode of the run's rows",
                repeats,
                unit="reads/s",
            )
        )
        for i in range(runs - 1):
            store.start_run(workflow=f"bench/list/{i % 10}")
        rows.append(
            paired(
                f"list {runs:,} runs",
                lambda: _list_ours(store, runs),
                lambda: _list_raw(path, runs),
                "raw apsw scan + msgspec decode of the start rows",
                repeats,
                unit="listings/s",
            )
        )
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("reads")


if __name__ == "__main__":
    main()
