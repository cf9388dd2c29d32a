"""Append throughput: raw apsw inserts vs the log's append vs the executor path.

Every side writes a fresh file in the same directory (same disk) with the same
durability: WAL and ``synchronous=NORMAL`` (the store's default), plus one pair at
``synchronous=FULL`` in the full run. The raw side inserts the same column values into
a table with the log's columns and constraints (INTEGER PRIMARY KEY position, UNIQUE
(run_id, seq); SQLite picks the position, where the log computes its end of log from
the log and the eviction records), through one reused cursor, with ``BEGIN IMMEDIATE ... COMMIT`` written
out: the fastest plain apsw code we know, so the ratio is the price of the log layer.

Rows are built before the clock starts on both sides (body, digest and chain link are
the recording layer's work, measured by the executor rows).

The table ends with ``RunRecorder.log_event`` beside Forkline 0.5.0's own RunRecorder on
the same workload, and the raw-apsw ceiling of any recorder committing each event
(``benchmarks/_forkline.py``).

    python -m benchmarks.append [--quick]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import apsw

import forkline_es as fe
from benchmarks import _forkline
from benchmarks._harness import Row, Timer, Trial, commit_each, paired
from forkline_es.log.connection import Durability, checkpoint_frames, open_connection
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import ActionInvoked, encode_body, kind_of
from forkline_es.log.rows import NewRow, row_digest
from forkline_es.log.sqlite import SqliteBackend

__all__ = ["main", "run"]

_RAW_DDL: Final = """
CREATE TABLE log (
    position   INTEGER PRIMARY KEY,
    run_id     TEXT    NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq >= 1),
    entry      INTEGER CHECK (entry >= 1),
    generation INTEGER NOT NULL CHECK (generation >= 0),
    kind       TEXT    NOT NULL,
    at         TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    digest     TEXT    NOT NULL,
    prev       TEXT,
    UNIQUE (run_id, seq)
)
"""
_RAW_INSERT: Final = (
    "INSERT INTO log (run_id, seq, entry, generation, kind, at, key, body, digest, prev) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_ARTIFACT: Final = "sha256:" + "ab" * 32
_files = itertools.count()


def _fresh(workdir: Path, stem: str) -> Path:
    return workdir / f"{stem}-{next(_files)}.db"


def _rows(n: int) -> list[NewRow]:
    """``n`` chained rows of one run, as the recording layer would build them."""
    out: list[NewRow] = []
    prev: str | None = None
    at = "2026-01-01T00:00:00.123456Z"
    for seq in range(1, n + 1):
        event = ActionInvoked(
            path=f"steps/{seq}", attempt=1, operation="http.get", artifact=_ARTIFACT, dispatch="ambiguous"
        )
        body = encode_body(event)
        kind = kind_of(event)
        key = f"invoke:0:steps/{seq}:1"
        digest = row_digest("run-1", seq, seq, 0, kind, at, key, prev, body)
        out.append(NewRow("run-1", seq, seq, 0, kind, at, key, body, digest, prev))
        prev = digest
    return out


def _values(r: NewRow) -> tuple[Any, ...]:
    """The column values the log stores (the body as TEXT, as ``EventLog`` writes it)."""
    return (r.run_id, r.seq, r.entry, r.generation, r.kind, r.at, r.key, r.body.decode(), r.digest, r.prev)


def _raw_connection(path: Path, durability: Durability) -> Any:
    """The same pragmas ``open_connection`` applies, on a plain apsw connection."""
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode = WAL").fetchall()  # fetch: apsw runs statements lazily
    conn.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {checkpoint_frames(durability)}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA cache_size = -16000")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute(_RAW_DDL)
    return conn


def raw_single(workdir: Path, rows: list[NewRow], durability: Durability = "normal") -> Trial:
    conn = _raw_connection(_fresh(workdir, "raw"), durability)
    return commit_each(conn, _RAW_INSERT, [_values(r) for r in rows])


def raw_batch(workdir: Path, rows: list[NewRow]) -> Trial:
    conn = _raw_connection(_fresh(workdir, "raw"), "normal")
    values = [_values(r) for r in rows]
    cur = conn.cursor()
    with Timer() as t:
        cur.execute("BEGIN IMMEDIATE")
        cur.executemany(_RAW_INSERT, values)
        cur.execute("COMMIT")
    conn.close()
    return Trial(len(rows), t.seconds)


def log_single(workdir: Path, rows: list[NewRow], durability: Durability = "normal") -> Trial:
    conn = open_connection(_fresh(workdir, "log"), durability)
    log = EventLog(SqliteBackend(conn))
    batches = [[r] for r in rows]
    with Timer() as t:
        for b in batches:
            log.append(b)
    conn.close()
    return Trial(len(rows), t.seconds)


def log_batch(workdir: Path, rows: list[NewRow]) -> Trial:
    conn = open_connection(_fresh(workdir, "log"), "normal")
    log = EventLog(SqliteBackend(conn))
    with Timer() as t:
        log.append(rows)
    conn.close()
    return Trial(len(rows), t.seconds)


def _one_step(run: fe.Run, i: int) -> None:
    path = f"steps/{i}"
    run.begin_step(path, arguments={"i": i, "url": "https://example.org/item"})
    run.invoke(path, 1, "http.get", _ARTIFACT, "ambiguous")
    run.result(path, 1, "succeeded", result={"status": 200, "size": 512})
    run.end_step(path, "succeeded")


def executor(workdir: Path, steps: int, durability: Durability = "normal", batched: bool = False) -> Trial:
    """A realistic step through the Store API: begin, invoke, result, end; small payloads.

    ``batched``: each step's four events in one ``run.batch()`` (one commit per step).
    """
    with fe.Store.open(_fresh(workdir, "store"), durability=durability) as store:
        run = store.start_run("bench/append", inputs={"n": steps})
        with Timer() as t:
            for i in range(steps):
                if batched:
                    with run.batch():
                        _one_step(run, i)
                else:
                    _one_step(run, i)
        run.conclude("succeeded", outputs={"done": steps})
    return Trial(4 * steps, t.seconds)


def run(quick: bool, workdir: Path) -> list[Row]:
    single_n, batch_n, steps, repeats = (2_000, 20_000, 500, 3) if quick else (20_000, 100_000, 2_500, 5)
    singles = _rows(single_n)
    batch = _rows(batch_n)

    def on(f: Callable[..., Trial], *a: Any) -> Callable[[], Trial]:
        return lambda: f(workdir, *a)

    out = [
        paired(
            "append, one event per transaction",
            on(log_single, singles),
            on(raw_single, singles),
            "raw apsw",
            repeats,
            target=0.7,
        ),
        paired(
            f"append, one batch of {batch_n:,}",
            on(log_batch, batch),
            on(raw_batch, batch),
            "raw apsw executemany",
            repeats,
            target=0.5,
        ),
        paired(
            "executor step (begin/invoke/result/end)",
            on(executor, steps),
            on(raw_single, singles),
            "raw apsw, one per txn",
            repeats,
            note="Store API, small payloads",
        ),
        paired(
            "executor step, one run.batch() per step",
            on(executor, steps, "normal", True),
            on(raw_single, singles),
            "raw apsw, one per txn",
            repeats,
            note="4 events per commit",
        ),
    ]
    if not quick:
        full = singles[:2_000]
        out.append(
            paired(
                "append, one event per transaction",
                on(log_single, full, "full"),
                on(raw_single, full, "full"),
                "raw apsw",
                repeats,
                durability="full",
                target=0.7,
            )
        )
        out.append(
            paired(
                "executor step, one run.batch() per step",
                on(executor, steps // 5, "full", True),
                on(raw_single, full, "full"),
                "raw apsw, one per txn",
                repeats,
                durability="full",
                note="4 events per commit and fsync",
            )
        )
    return out + _forkline.rows(quick, workdir)


def main() -> None:
    from benchmarks.run import standalone

    standalone("append")


if __name__ == "__main__":
    main()
