"""Retention: evicting 10,000 completed runs of 100 events each, and the file size before and after gc.

The runs are written with the log's own append (one transaction of 100 chained rows per
run, folded into the projections in the same transaction, as the executor path would
leave them), each with a payload value on its start, on every step and on its
conclusion. The clock then covers ``store.apply_retention(RetentionPolicy(keep_last=0))``:
one transaction per run that records the tombstone and deletes the run's events, payload
values and projection rows. ``gc`` is timed apart. WAL + ``synchronous=NORMAL``.

    python -m benchmarks.retention [--quick]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import apsw

import forkline_es as fe
from benchmarks._harness import Row, Timer
from forkline_es.log.events import (
    EventBody,
    RunConcluded,
    RunStarted,
    StepBegun,
    StepEnded,
    encode_body,
    kind_of,
)
from forkline_es.log.rows import NewRow, row_digest
from forkline_es.recording.payloads import encode_slots
from forkline_es.values import utc_now

__all__ = ["main", "run"]

EVENTS_PER_RUN = 100


def _events(i: int) -> list[tuple[EventBody, tuple[tuple[str, bytes], ...]]]:
    out: list[tuple[EventBody, tuple[tuple[str, bytes], ...]]] = []
    slots, rows = encode_slots({"inputs": {"run": i, "note": "x" * 200}})
    out.append((RunStarted(workflow=f"wf-{i % 10}", standard="1.0", slots=slots), rows))
    for step in range((EVENTS_PER_RUN - 2) // 2):
        slots, rows = encode_slots({"arguments": {"step": step, "text": "a" * 100}})
        out.append((StepBegun(path=f"s{step}", slots=slots), rows))
        slots, rows = encode_slots({"result": {"ok": True, "text": "r" * 100}})
        out.append((StepEnded(path=f"s{step}", outcome="succeeded", slots=slots), rows))
    out.append((RunConcluded(status="succeeded"), ()))
    return out


def record_runs(store: fe.Store, runs: int) -> None:
    """``runs`` completed runs, one append transaction each, projections folded alongside."""
    for i in range(runs):
        run_id = f"run-{i:06d}"
        prev: str | None = None
        new_rows: list[NewRow] = []
        bodies: list[EventBody] = []
        for seq, (event, payloads) in enumerate(_events(i), start=1):
            body, kind, at = encode_body(event), kind_of(event), utc_now()
            key = f"k{seq}"
            digest = row_digest(run_id, seq, seq, 0, kind, at, key, prev, body)
            new_rows.append(NewRow(run_id, seq, seq, 0, kind, at, key, body, digest, prev, payloads))
            bodies.append(event)
            prev = digest

        store._commit_many(list(zip(new_rows, bodies, strict=True)))


def _bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return os.path.getsize(path) + (os.path.getsize(wal) if wal.exists() else 0)


def measure(workdir: Path, runs: int) -> dict[str, Any]:
    path = workdir / "retention.db"
    with fe.Store.open(path) as store:
        record_runs(store, runs)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        before = _bytes(path)
        with Timer() as evicting:
            report = store.apply_retention(fe.RetentionPolicy(keep_last=0))
        assert len(report.evicted) == runs and store.list_runs() == []
        evicted = _bytes(path)
        with Timer() as collecting:
            store.gc()
        after = _bytes(path)
    return {
        "runs": runs,
        "events": runs * EVENTS_PER_RUN,
        "evict_seconds": evicting.seconds,
        "gc_seconds": collecting.seconds,
        "bytes_before": before,
        "bytes_after_evict": evicted,
        "bytes_after_gc": after,
    }


_BLOB: Final = "x" * 20_000


def long_run_memory(workdir: Path, steps: int) -> Row:
    """SQLite's memory high water while one long run is evicted (``apsw.memory_high_water``),
    against the run's payload values: with ``secure_delete`` on, a DELETE keeps the original
    of every page it changes in its statement journal, in memory, until it ends, so the
    eviction deletes a chunk of rows a statement (``retention.apply.EVICT_CHUNK``)."""
    with fe.Store.open(workdir / "long-run.db") as store:
        run = store.start_run("bench/long")
        for i in range(steps):
            with run.batch():
                run.begin_step(f"s/{i}", arguments={"a": _BLOB + str(i)})
                run.end_step(f"s/{i}", "succeeded")
        run.conclude("succeeded")
        values = store.conn.execute("SELECT sum(length(value)) FROM payload").fetchall()[0][0]
        apsw.memory_high_water(True)
        store.evict_run(run.id, reason="benchmark")
        high = apsw.memory_high_water(True)
        cache = -int(store.conn.execute("PRAGMA cache_size").fetchall()[0][0]) * 1024
    mb = 1024 * 1024
    return Row(
        workload=f"evict one run of {steps:,} steps with 20 KB arguments: SQLite memory high water",
        ours=high / mb,
        theirs=values / mb,
        peer="the run's payload values",
        unit="MB",
        spread=0.0,
        ratio=high / values,
        note=f"the page cache alone may hold {cache / mb:.0f} MB",
    )


def run(quick: bool, workdir: Path) -> list[Row]:
    runs = 1_000 if quick else 10_000
    m = measure(workdir, runs)
    mb = 1024 * 1024
    note = (
        f"{runs:,} runs x {EVENTS_PER_RUN} events in {m['evict_seconds']:.1f} s; "
        f"file {m['bytes_before'] / mb:.1f} MB before, {m['bytes_after_evict'] / mb:.1f} MB after eviction "
        f"(db + WAL), {m['bytes_after_gc'] / mb:.2f} MB after gc ({m['gc_seconds']:.2f} s)"
    )
    return [
        Row(
            workload=f"evict {runs:,} runs of {EVENTS_PER_RUN} events (apply_retention keep_last=0)",
            ours=runs / m["evict_seconds"],
            theirs=None,
            peer=None,
            unit="runs/s",
            spread=0.0,
            note=note,
        ),
        long_run_memory(workdir, 1_000 if quick else 5_000),
    ]


def main() -> None:
    from benchmarks.run import standalone

    standalone("retention")


if __name__ == "__main__":
    main()
