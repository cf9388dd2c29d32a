"""Where one caller's one-event commit goes, layer by layer, by CPU time (issue 22).

``RunRecorder.log_event`` at ``normal`` against the raw apsw ceiling (one plain INSERT
per ``BEGIN IMMEDIATE ... COMMIT`` into a table without constraints, ``_forkline.raw``'s
table), with the layers between them each timed on its own, all in one paired run:

- *the log's SQL*: the statements an append runs (``BEGIN IMMEDIATE``, the log row at
  ``END_OF_LOG + 1``, its payload value, ``COMMIT``) on a fresh store file, values built
  before the clock: the floor of this schema, with no Python of ours;
- the same without the insert triggers (a scratch file): what the triggers cost;
- the same with the payload value in the log row itself and no insert triggers: the
  floor of a design that writes one table (and its ``(run_id, seq)`` index) per event;
- *the log layer*: ``EventLog.append`` of prebuilt rows (group commit, backend, SQL);
- *building the rows alone*: redaction, canonical JSON and digests, no SQL: the Python
  any design keeps per event, which with a side's SQL bounds that side's ratio;
- ``log_event`` itself (redaction, canonical JSON, digests, the run's state, the layer);
- the executor step (begin, invoke, result, end; one commit an event, or one
  ``run.batch()`` a step) against a log-shaped insert, with its own SQL floor: every
  statement the step runs, traced on one store file and replayed in order on a copy of
  it, so the same rows are written with none of our Python around them.

Every side runs 4,000 events (1,000 with ``--quick``) of the small payload
``{"prompt": "hello", "i": i}`` and is timed by ``time.process_time`` (user and system
CPU; the machine is shared, and CPU time is what one caller spends); the sides take turns
in a rotating order, and each ratio is taken against the ceiling of the same repetition.

    python -m benchmarks.append_floor [--quick]
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, cast

import apsw

import forkline_es as fe
from benchmarks import append
from benchmarks._harness import Row, Trial, spread
from benchmarks._trace import Statement, traced
from forkline_es.compat.recorder import logged_event
from forkline_es.log.connection import checkpoint_frames, open_connection
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import encode_body, kind_of
from forkline_es.log.rows import NewRow, row_digest
from forkline_es.log.schema import END_OF_LOG
from forkline_es.log.sqlite import SqliteBackend
from forkline_es.redaction import RedactionPolicy

__all__ = ["main", "run"]

_files = itertools.count()
_RAW_DDL: Final = "CREATE TABLE event (id INTEGER PRIMARY KEY, run_id TEXT, ts TEXT, type TEXT, payload TEXT)"
_RAW_INSERT: Final = "INSERT INTO event (run_id, ts, type, payload) VALUES (?, ?, ?, ?)"
_COLUMNS: Final = "run_id, seq, entry, generation, kind, at, key, body, digest, prev"
_LOG_INSERT: Final = (
    f"INSERT INTO log (position, {_COLUMNS}) VALUES ({END_OF_LOG} + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INLINE_INSERT: Final = (
    f"INSERT INTO log (position, {_COLUMNS}, payload) "
    f"VALUES ({END_OF_LOG} + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_PAYLOAD_INSERT: Final = "INSERT INTO payload (id, position, slot, value) VALUES (?, ?, ?, ?)"
_INSERT_TRIGGERS: Final = (
    "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND sql LIKE '%BEFORE INSERT ON%'"
)


def _payloads(n: int) -> list[dict[str, Any]]:
    return [{"prompt": "hello", "i": i} for i in range(n)]


def _rows(n: int) -> list[NewRow]:
    """The rows ``log_event`` appends for ``_payloads(n)``, built as it builds them."""
    policy = RedactionPolicy.default()
    out: list[NewRow] = []
    prev: str | None = None
    at = "2026-01-01T00:00:00.123456Z"
    for seq, payload in enumerate(_payloads(n), start=1):
        event, slots = logged_event(policy, "input", payload)
        body, kind, key = encode_body(event), kind_of(event), f"once:bench:{seq}"
        digest = row_digest("run-1", seq, None, 0, kind, at, key, prev, body)
        out.append(NewRow("run-1", seq, None, 0, kind, at, key, body, digest, prev, slots))
        prev = digest
    return out


#: Set by ``frames_per_commit``: trials then count WAL frames per commit instead of timing.
_frames: list[int] | None = None


def _cpu(work: Callable[[], None], count: int, conn: Any) -> Trial:
    """``work``'s CPU time; or, in ``frames_per_commit``'s pass, its WAL frames and commits
    (a hook that counts replaces the connection's checkpointing: the file is thrown away)."""
    if _frames is not None:
        seen = _frames
        seen[:] = [0, 0, 0]  # frames, commits, frames in the WAL after the last commit

        def hook(_conn: Any, _schema: str, n: int) -> int:
            seen[0] += n - seen[2] if n >= seen[2] else n
            seen[1] += 1
            seen[2] = n
            return int(apsw.SQLITE_OK)

        conn.set_wal_hook(hook)
        work()
        return Trial(count, 1.0)
    start = time.process_time()
    work()
    return Trial(count, time.process_time() - start)


def frames_per_commit(call: Callable[[], Trial]) -> float:
    """WAL frames one commit of ``call``'s trial writes, on average (an untimed pass)."""
    global _frames
    _frames = [0, 0, 0]
    try:
        call()
        return _frames[0] / max(_frames[1], 1)
    finally:
        _frames = None


def ceiling(workdir: Path, n: int) -> Trial:
    """Plain apsw: one INSERT per transaction into a table without constraints."""
    conn = apsw.Connection(str(workdir / f"raw-{next(_files)}.db"))
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    conn.execute(f"PRAGMA wal_autocheckpoint = {checkpoint_frames('normal')}")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -16000")
    conn.execute(_RAW_DDL)
    ts = dt.datetime.now(dt.UTC).isoformat()
    values = [("run-1", ts, "input", json.dumps(p)) for p in _payloads(n)]
    cur = conn.cursor()

    def work() -> None:
        for v in values:
            cur.execute("BEGIN IMMEDIATE")
            cur.execute(_RAW_INSERT, v)
            cur.execute("COMMIT")

    try:
        return _cpu(work, n, conn)
    finally:
        conn.close()


def log_sql(workdir: Path, rows: list[NewRow], shape: str) -> Trial:
    """The log's own statements, no Python of ours: ``shape`` is ``schema`` (as it is),
    ``untriggered`` (insert triggers dropped) or ``one-table`` (payload in the log row)."""
    conn = open_connection(workdir / f"sql-{next(_files)}.db", "normal")
    if shape != "schema":
        for (name,) in conn.execute(_INSERT_TRIGGERS).fetchall():
            conn.execute(f"DROP TRIGGER {name}")
    if shape == "one-table":
        conn.execute("ALTER TABLE log ADD COLUMN payload TEXT")
    cur = conn.cursor()
    last = conn.last_insert_rowid
    values = [
        (r.run_id, r.seq, r.entry, r.generation, r.kind, r.at, r.key, r.body.decode(), r.digest, r.prev)
        for r in rows
    ]
    slots = [(slot, value.decode()) for r in rows for slot, value in r.payloads]

    def work() -> None:
        for v, (slot, value) in zip(values, slots, strict=True):
            cur.execute("BEGIN IMMEDIATE")
            if shape == "one-table":
                cur.execute(_INLINE_INSERT, (*v, value))
            else:
                cur.execute(_LOG_INSERT, v)
                position = last()
                cur.execute(_PAYLOAD_INSERT, (position * 16, position, slot, value))
            cur.execute("COMMIT")

    try:
        return _cpu(work, len(rows), conn)
    finally:
        conn.close()


def built_rows(n: int) -> Trial:
    """Building ``log_event``'s rows alone, no SQL and no run state: redaction, the event's
    canonical JSON, its payload value, two SHA-256 digests and the row. Every design that
    records these documents does this much Python per event; with a side's SQL it bounds
    what that side's ratio can reach."""
    start = time.process_time()
    _rows(n)
    return Trial(n, time.process_time() - start)


def log_layer(workdir: Path, rows: list[NewRow]) -> Trial:
    """``EventLog.append`` of prebuilt rows, one per call (group commit, backend, SQL)."""
    conn = open_connection(workdir / f"layer-{next(_files)}.db", "normal")
    append = EventLog(SqliteBackend(conn)).append
    batches = [(r,) for r in rows]

    def work() -> None:
        for b in batches:
            append(b)

    try:
        return _cpu(work, len(rows), conn)
    finally:
        conn.close()


def log_event(workdir: Path, n: int) -> Trial:
    """``RunRecorder.log_event`` with its default policy, as a user gets it."""
    payloads = _payloads(n)
    with fe.RunRecorder(workdir / f"recorder-{next(_files)}.db") as recorder:
        run_id = recorder.start_run("bench.py")
        log = recorder.log_event

        def work() -> None:
            for p in payloads:
                log(run_id, "input", p)

        return _cpu(work, n, cast(SqliteBackend, recorder.store.backend).conn)


def _log_shaped(workdir: Path, rows: list[NewRow]) -> Trial:
    """The executor rows' ceiling (``append.raw_single``): the log's columns and constraints,
    SQLite picking the position, one INSERT per transaction."""
    conn = append._raw_connection(workdir / f"raw-log-{next(_files)}.db", "normal")
    values = [append._values(r) for r in rows]
    cur = conn.cursor()

    def work() -> None:
        for v in values:
            cur.execute("BEGIN IMMEDIATE")
            cur.execute(append._RAW_INSERT, v)
            cur.execute("COMMIT")

    try:
        return _cpu(work, len(rows), conn)
    finally:
        conn.close()


def executor(workdir: Path, steps: int, batched: bool) -> Trial:
    """``append.executor``'s step (begin, invoke, result, end; small payloads) by CPU time."""
    with fe.Store.open(workdir / f"store-{next(_files)}.db") as store:
        run = store.start_run("bench/append", inputs={"n": steps})
        record = _steps(steps, batched)
        return _cpu(lambda: record(run), 4 * steps, cast(SqliteBackend, store.backend).conn)


def _traced(workdir: Path, record: Callable[[fe.Run], None]) -> tuple[Path, list[Statement]]:
    """A store file just after ``start_run``, and every statement (with its bindings) that
    ``record`` then ran on it: the SQL of those calls with none of our Python around it."""
    before = workdir / f"traced-{next(_files)}.db"
    with fe.Store.open(before) as store:
        store.start_run("bench/append", run_id="run-1", inputs={"n": 0})
    return before, traced(before, workdir / f"tracing-{next(_files)}.db", "run-1", record)


def replayed_sql(workdir: Path, traced: tuple[Path, list[Statement]], count: int) -> Trial:
    """The traced statements run again in order on a fresh copy of the file, by CPU time."""
    before, statements = traced
    path = workdir / f"replay-{next(_files)}.db"
    shutil.copyfile(before, path)
    conn = open_connection(path, "normal")
    cur = conn.cursor()

    def work() -> None:
        for sql, bindings in statements:
            cur.execute(sql, bindings).fetchall()

    try:
        return _cpu(work, count, conn)
    finally:
        conn.close()


def _steps(steps: int, batched: bool) -> Callable[[fe.Run], None]:
    """``steps`` executor steps on a run, one commit an event or one ``run.batch()`` a step."""

    def record(run: fe.Run) -> None:
        for i in range(steps):
            if batched:
                with run.batch():
                    append._one_step(run, i)
            else:
                append._one_step(run, i)

    return record


def _paired_cpu(
    sides: dict[str, Callable[[], Trial]],
    ceiling: Callable[[], Trial],
    peer: str,
    repeats: int,
    targets: dict[str, float],
) -> list[Row]:
    """Each side and the ceiling in a rotating order, ``repeats`` times; ratios pair by pair."""
    names = ["ceiling", *sides]
    calls: dict[str, Callable[[], Trial]] = {"ceiling": ceiling, **sides}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(repeats):
        order = names[i % len(names) :] + names[: i % len(names)]
        trial = {name: calls[name]() for name in order}
        for name in names:
            cpu[name].append(trial[name].seconds / trial[name].count * 1e6)
        for name in sides:
            ratios[name].append(cpu["ceiling"][-1] / cpu[name][-1])
    frames = {name: frames_per_commit(calls[name]) for name in names}
    out = []
    for name in sides:
        out.append(
            Row(
                workload=f"{name}, one caller",
                ours=statistics.median(cpu[name]),
                theirs=statistics.median(cpu["ceiling"]),
                peer=peer,
                unit="µs CPU/event",
                spread=spread(cpu[name]),
                theirs_spread=spread(cpu["ceiling"]),
                ratio=statistics.median(ratios[name]),
                repeats=repeats,
                target=targets.get(name),
                note=(
                    f"ratio: ceiling CPU / ours, pair by pair; WAL frames per commit "
                    f"{frames[name]:.2f}, ceiling {frames['ceiling']:.2f}"
                    if frames[name]
                    else "ratio: ceiling CPU / ours, pair by pair; no SQL"
                ),
            )
        )
    return out


def run(quick: bool, workdir: Path) -> list[Row]:
    n, repeats = (1_000, 3) if quick else (4_000, 5)
    rows = _rows(n)
    built = "building the rows alone (redaction, canonical JSON, digests; no SQL)"
    sides: dict[str, Callable[[], Trial]] = {
        "the log's SQL, this schema (no Python of ours)": lambda: log_sql(workdir, rows, "schema"),
        "the same, insert triggers dropped": lambda: log_sql(workdir, rows, "untriggered"),
        "the same, payload in the log row, no insert triggers": lambda: log_sql(workdir, rows, "one-table"),
        "the log layer: EventLog.append of prebuilt rows": lambda: log_layer(workdir, rows),
        built: lambda: built_rows(n),
        "RunRecorder.log_event, default policy": lambda: log_event(workdir, n),
    }
    log_event_name = "RunRecorder.log_event, default policy, one event per commit"
    sides[log_event_name] = sides.pop("RunRecorder.log_event, default policy")
    out = _paired_cpu(
        {k if k in (log_event_name, built) else f"{k}, one event per commit": v for k, v in sides.items()},
        lambda: ceiling(workdir, n),
        "raw apsw, one INSERT per transaction",
        repeats,
        {log_event_name: 0.4},
    )
    steps = n // 8
    step_rows = _rows(4 * steps)
    single, batch = _traced(workdir, _steps(steps, False)), _traced(workdir, _steps(steps, True))
    out += _paired_cpu(
        {
            "executor step's SQL, traced and replayed (no Python of ours), one event per commit": (
                lambda: replayed_sql(workdir, single, 4 * steps)
            ),
            "executor step's SQL, traced and replayed, one run.batch() per step": (
                lambda: replayed_sql(workdir, batch, 4 * steps)
            ),
            "executor step (begin, invoke, result, end), one event per commit": lambda: executor(
                workdir, steps, False
            ),
            "executor step, one run.batch() per step": lambda: executor(workdir, steps, True),
        },
        lambda: _log_shaped(workdir, step_rows),
        "raw apsw, log-shaped INSERT per transaction",
        repeats,
        {
            "executor step (begin, invoke, result, end), one event per commit": 0.4,
            "executor step, one run.batch() per step": 0.6,
        },
    )
    return out


def main() -> None:
    from benchmarks.run import standalone

    standalone("append_floor")


if __name__ == "__main__":
    main()
