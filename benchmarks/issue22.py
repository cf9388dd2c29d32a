"""Issue 22's rows: import time, run-handle memory, group commit, the document cache.

Each row is paired with its floor in the same run (``_harness.paired``): the machine is
shared, so read the ratio. Single-threaded rows measure CPU time (``time.process_time``;
in a fresh interpreter for imports and ``resume_run``), which other jobs on the machine
disturb far less than wall time; the group-commit rows measure wall time, since waiting
for an fsync is what they are about.

    python -m benchmarks.issue22 [--quick]
"""

from __future__ import annotations

import compileall
import functools
import itertools
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import apsw

import forkline_es as fe
from benchmarks._harness import Row, Trial, paired
from benchmarks._trace import Statement, begin_steps, replay, traced
from forkline_es.log.connection import Durability, open_connection

__all__ = ["main", "run"]

_IMPORT: Final = "import time; c = time.process_time(); {what}; print(time.process_time() - c)"


def _import_cpu(what: str) -> Trial:
    """CPU seconds one fresh interpreter spends on ``what`` (``import ...``), one unit."""
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT.format(what=what)], check=True, capture_output=True, text=True
    )
    return Trial(1, float(out.stdout))


def _compiled() -> None:
    """Write forkline_es's bytecode (``__pycache__``, ignored by git) before timing its import.

    ``pip install`` compiles a package's modules, so an installed forkline_es imports from
    bytecode; an editable checkout run with ``PYTHONDONTWRITEBYTECODE`` set (this machine's
    environment) would otherwise compile the 65 modules it loads from source in every fresh
    interpreter, and the row would time the compiler: 0.085 s against 0.05 s.
    """
    package = Path(fe.__file__).parent
    if not compileall.compile_dir(package, quiet=1):
        raise SystemExit(f"could not compile {package}")


def imports(repeats: int) -> Row:
    """``import forkline_es`` against ``import apsw, msgspec`` (its two native dependencies),
    each from bytecode, as installed."""
    _compiled()
    return paired(
        "import forkline_es (CPU time in a fresh interpreter; target <= 0.08 s)",
        lambda: _import_cpu("import forkline_es"),
        lambda: _import_cpu("import apsw, msgspec"),
        "import apsw, msgspec",
        repeats,
        unit="imports/s",
    )


_files = itertools.count()

_RAW_DDL: Final = """
CREATE TABLE log (
    position INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
    entry INTEGER, generation INTEGER NOT NULL, kind TEXT NOT NULL, at TEXT NOT NULL,
    key TEXT NOT NULL, body TEXT NOT NULL, digest TEXT NOT NULL, prev TEXT, UNIQUE (run_id, seq)
)
"""
_RAW_INSERT: Final = (
    "INSERT INTO log (run_id, seq, entry, generation, kind, at, key, body, digest, prev) "
    "VALUES (?, ?, ?, 0, 'step-begun', '2026-01-01T00:00:00Z', ?, ?, 'sha256:x', NULL)"
)


def _fresh(workdir: Path, stem: str) -> Path:
    return workdir / f"{stem}-{next(_files)}.db"


def _threads(work: list[Callable[[], None]]) -> float:
    """Seconds from a barrier all of ``work``'s threads wait on to the last one's end."""
    barrier = threading.Barrier(len(work) + 1)
    ends: list[float] = []

    def run(job: Callable[[], None]) -> None:
        barrier.wait()
        job()
        ends.append(time.perf_counter())

    workers = [threading.Thread(target=run, args=(job,)) for job in work]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return max(ends) - start


def _callers(workdir: Path, threads: int, per: int, durability: Durability) -> Trial:
    """``threads`` threads of one store, each recording ``per`` steps of its own run, one
    ``begin_step`` (one commit) a call; timed from a barrier to the last call's return."""
    store = fe.Store.open(_fresh(workdir, f"callers{threads}"), durability=durability)
    runs = [store.start_run(workflow="bench/callers", run_id=f"caller-{t}") for t in range(threads)]
    seconds = _threads([functools.partial(begin_steps, per, r) for r in runs])
    counted = store.log.backend.cursor().execute("SELECT count(*) FROM log").fetchall()[0][0]
    store.close()
    assert counted == threads * (per + 1), counted  # every acknowledged event is there, once
    return Trial(threads * per, seconds)


def _raw_single(workdir: Path, n: int, durability: str) -> Trial:
    """The per-call ceiling: one log-shaped INSERT per ``BEGIN IMMEDIATE ... COMMIT``."""
    conn = apsw.Connection(str(_fresh(workdir, "raw")))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
    conn.execute(_RAW_DDL)
    cur = conn.cursor()
    values = [("raw", i, i, f"begin:0:s/{i}", f'{{"path":"s/{i}"}}') for i in range(1, n + 1)]
    start = time.perf_counter()
    for v in values:
        cur.execute("BEGIN IMMEDIATE")
        cur.execute(_RAW_INSERT, v)
        cur.execute("COMMIT")
    seconds = time.perf_counter() - start
    conn.close()
    return Trial(n, seconds)


#: One caller's ``begin_step`` as the statements it ran between its BEGIN and its COMMIT.
Unit = list[Statement]


def _traced_units(workdir: Path, threads: int, per: int) -> tuple[Path, list[list[Unit]]]:
    """A file with ``threads`` runs started, and each run's ``per`` ``begin_step`` calls as the
    statements they ran, traced on a copy of that file, one ``Unit`` a call."""
    start = _fresh(workdir, "units")
    with fe.Store.open(start) as store:
        for t in range(threads):
            store.start_run(workflow="bench/callers", run_id=f"caller-{t}")
    units: list[list[Unit]] = []
    for t in range(threads):
        statements = traced(
            start, _fresh(workdir, "tracing"), f"caller-{t}", functools.partial(begin_steps, per)
        )
        calls: list[Unit] = []
        unit: Unit | None = None
        for sql, b in statements:
            if sql == "BEGIN IMMEDIATE":
                unit = []
            elif sql == "COMMIT":
                assert unit is not None
                calls.append(unit)
                unit = None
            elif unit is not None:
                unit.append((sql, b))
        assert len(calls) == per, len(calls)
        units.append(calls)
    return start, units


def _replayed_callers(workdir: Path, traced: tuple[Path, list[list[Unit]]]) -> Trial:
    """The traced calls replayed by one thread per run through the store's own group commit
    at ``full``: the same SQL, pages and commits, and none of the recording's Python."""
    start, units = traced
    path = _fresh(workdir, "replayed")
    shutil.copyfile(start, path)
    store = fe.Store.open(path, durability="full")

    def calls(mine: list[Unit]) -> None:
        for unit in mine:
            store.log.append((), functools.partial(replay, unit))

    seconds = _threads([functools.partial(calls, u) for u in units])
    counted = store.log.backend.cursor().execute("SELECT count(*) FROM log").fetchall()[0][0]
    store.close()
    n = sum(len(u) for u in units)
    assert counted == len(units) + n, counted  # every replayed call is in the log, once
    return Trial(n, seconds)


def _perfect_groups(workdir: Path, traced: tuple[Path, list[list[Unit]]]) -> Trial:
    """The best any group commit of these callers could do: one thread, each transaction
    holding the next traced call of every run (groups always full, nobody waiting on
    anybody), at ``full``, with no Python of ours."""
    start, units = traced
    path = _fresh(workdir, "perfect")
    shutil.copyfile(start, path)
    conn = open_connection(path, "full")
    cur = conn.cursor()
    begin = time.perf_counter()
    for group in zip(*units, strict=True):
        cur.execute("BEGIN IMMEDIATE")
        for unit in group:
            replay(unit, cur)
        cur.execute("COMMIT")
    seconds = time.perf_counter() - begin
    conn.close()
    return Trial(sum(len(u) for u in units), seconds)


def group_commit(workdir: Path, threads: int, per: int, repeats: int) -> list[Row]:
    """Many callers in one process against one caller (``full``) and the raw ceiling (``normal``),
    with the floors of the ``full`` row: the same SQL through the same group commit with no
    recording Python, and that SQL in groups of every caller at once."""
    traced = _traced_units(workdir, threads, per)
    return [
        paired(
            f"{threads} threads of one store, own runs, begin_step per commit (target >= 4x one caller)",
            lambda: _callers(workdir, threads, per, "full"),
            lambda: _callers(workdir, 1, per, "full"),
            "one caller, same store API",
            repeats,
            durability="full",
            target=4.0,
        ),
        paired(
            f"floor: the {threads} callers' traced SQL through the group commit, no recording Python",
            lambda: _replayed_callers(workdir, traced),
            lambda: _callers(workdir, 1, per, "full"),
            "one caller, same store API",
            repeats,
            durability="full",
        ),
        paired(
            f"floor: that SQL in perfect groups of {threads} (one thread, every caller in every commit)",
            lambda: _perfect_groups(workdir, traced),
            lambda: _callers(workdir, 1, per, "full"),
            "one caller, same store API",
            repeats,
            durability="full",
        ),
        paired(
            f"{threads} threads of one store, own runs, begin_step per commit (target >= 0.6 of the ceiling)",
            lambda: _callers(workdir, threads, per, "normal"),
            lambda: _raw_single(workdir, threads * per, "normal"),
            "raw apsw, one INSERT per txn, one caller",
            repeats,
            target=0.6,
        ),
        paired(
            "one caller, begin_step per commit (for reference: the per-call path)",
            lambda: _callers(workdir, 1, threads * per, "normal"),
            lambda: _raw_single(workdir, threads * per, "normal"),
            "raw apsw, one INSERT per txn, one caller",
            repeats,
        ),
    ]


def _concluded_run(store: fe.Store, steps: int) -> str:
    run = store.start_run(workflow="bench/read", inputs={"n": steps})
    for i in range(steps):
        path = f"step/{i}"
        run.begin_step(path, arguments={"i": i})
        run.end_step(path, "succeeded", result={"i": i})
    run.conclude("succeeded")
    return run.id


def _read(store: fe.Store, run_id: str, cold: bool, build: bool = False) -> Trial:
    """One ``get_run_record``: ``cold`` with the in-process cache cleared (a first read in a
    process: the stored text serves it), ``build`` with the stored text deleted too (the
    very first read of the run, which builds the document and stores it)."""
    if cold:
        store.documents.clear()
    if build:
        store.conn.execute("DELETE FROM record_text WHERE run_id = ?", (run_id,))
    start = time.process_time()
    store.get_run_record(run_id)
    return Trial(1, time.process_time() - start)


def _decode_floor(path: Path, run_id: str) -> Trial:
    """Plain apsw reading the run's log rows and msgspec decoding each body (CPU time)."""
    import msgspec

    conn = apsw.Connection(str(path))
    start = time.process_time()
    rows = conn.execute("SELECT body FROM log WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    [msgspec.json.decode(str(b)) for (b,) in rows]
    seconds = time.process_time() - start
    conn.close()
    return Trial(1, seconds)


def _document_floor(text: bytes) -> Trial:
    """Decoding the run's document bytes with msgspec, the collector paused (as ours does):
    the issue's "decode floor", what any reader of the document pays."""
    import gc

    import msgspec

    gc.disable()
    try:
        start = time.process_time()
        msgspec.json.decode(text)
        seconds = time.process_time() - start
    finally:
        gc.enable()
    return Trial(1, seconds)


def reads(workdir: Path, steps: int, repeats: int) -> list[Row]:
    """``get_run_record`` of a concluded run, first read (cold cache) and repeat read."""
    path = _fresh(workdir, "reads")
    with fe.Store.open(path) as store:
        run_id = _concluded_run(store, steps)
        text = store.export_run_record(run_id)
        return [
            paired(
                f"get_run_record, concluded run of {steps:,} steps, first read (target <= 1.25x the floor)",
                lambda: _read(store, run_id, True),
                lambda: _document_floor(text),
                "msgspec decode of its document bytes",
                repeats,
                unit="reads/s",
                target=0.8,
            ),
            paired(
                f"get_run_record, concluded run of {steps:,} steps, very first read (builds and stores)",
                lambda: _read(store, run_id, True, build=True),
                lambda: _document_floor(text),
                "msgspec decode of its document bytes",
                repeats,
                unit="reads/s",
            ),
            paired(
                f"get_run_record, concluded run of {steps:,} steps, repeat read (target <= 1.05x the floor)",
                lambda: _read(store, run_id, False),
                lambda: _document_floor(text),
                "msgspec decode of its document bytes",
                repeats,
                unit="reads/s",
                target=1 / 1.05,
            ),
        ]


_HANDLE: Final = """
import gc, sys, time, tracemalloc
import forkline_es as fe
path, steps, run_id = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with fe.Store.open(path) as store:
    gc.collect()
    c = time.process_time()
    handle = store.resume_run(run_id)
    cpu = time.process_time() - c
    del handle
    gc.collect()
    tracemalloc.start()
    handle = store.resume_run(run_id)
    gc.collect()
    print(cpu, tracemalloc.get_traced_memory()[0])
"""


def handle(workdir: Path, steps: int, repeats: int) -> list[Row]:
    """A run handle at ``steps`` steps (2 events each): its memory and ``resume_run``'s CPU time,
    each in a fresh process; the floor for resume is reading the run's rows (no fold)."""
    path = _fresh(workdir, "handle")
    with fe.Store.open(path) as store:
        run = store.start_run(workflow="bench/handle")
        for i in range(steps):
            run.begin_step(f"s/{i}", arguments={"i": i})
            run.end_step(f"s/{i}", "succeeded", result={"i": i})
        run_id = run.id
    cpu: list[float] = []
    memory: list[float] = []

    def resume() -> Trial:
        out = subprocess.run(
            [sys.executable, "-c", _HANDLE, str(path), str(steps), run_id],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        cpu.append(float(out[0]))
        memory.append(int(out[1]) / 1e6)
        return Trial(1, float(out[0]))

    row = paired(
        f"resume_run at {steps:,} steps (CPU; target <= 100 ms)",
        resume,
        lambda: _decode_floor(path, run_id),
        "raw apsw scan + msgspec decode of its rows",
        repeats,
        unit="resumes/s",
    )
    import statistics

    mem = statistics.median(memory)
    return [
        row,
        Row(
            workload=f"run handle at {steps:,} steps, tracemalloc (target <= 10 MB)",
            ours=mem,
            theirs=None,
            peer=None,
            unit="MB",
            spread=(max(memory) - min(memory)) / mem if mem else 0.0,
            repeats=repeats,
        ),
    ]


def _record_steps(steps: int, every: int) -> Trial:
    """CPU time of ``begin_step`` + ``end_step`` x ``steps`` in an in-memory store, with run
    checkpoints every ``every`` rows (``recording.checkpoint.EVERY``)."""
    import gc

    from forkline_es.recording import checkpoint

    saved = checkpoint.EVERY
    checkpoint.EVERY = every  # type: ignore[misc]  # a Final this trial overrides
    try:
        with fe.Store.open(":memory:") as store:
            run = store.start_run(workflow="bench/handle")
            gc.collect()
            start = time.process_time()
            for i in range(steps):
                run.begin_step(f"s/{i}", arguments={"i": i})
                run.end_step(f"s/{i}", "succeeded", result={"i": i})
            return Trial(2 * steps, time.process_time() - start)
    finally:
        checkpoint.EVERY = saved  # type: ignore[misc]


def checkpoint_cost(steps: int, repeats: int) -> Row:
    """What writing run checkpoints adds to recording: the same calls with them (every
    4,096 rows) against without (never due), alternating."""
    from forkline_es.recording import checkpoint

    return paired(
        f"begin_step + end_step, {steps:,} steps in memory, run checkpoints written (CPU)",
        lambda: _record_steps(steps, checkpoint.EVERY),
        lambda: _record_steps(steps, 2**62),
        "the same calls without run checkpoints",
        repeats,
        unit="calls/s",
    )


_PROSE: Final = (
    "The customer asked whether the invoice for March included the discount agreed in the "
    "February call; the agent checked the ledger, found the credit note and drafted a reply. "
) * 6


#: The log's own tables and its ``(run_id, seq)`` index: what stays with every projection dropped.
_LOG_PAGES: Final = (
    "SELECT sum(pgsize) FROM dbstat WHERE name IN ('log', 'payload', 'sqlite_autoindex_log_1')"
)


def storage(workdir: Path, steps: int) -> list[Row]:
    """Bytes on disk per event of an agent-like run (per step: begin with ~300 B of
    arguments, invoke, a result of ~1 KB of prose, end), after a checkpoint; the floor is
    the logical bytes (every log column's text and every payload value), with no index.
    A second row counts the pages of the log alone (``dbstat``): the floor of any design
    that keeps this log uncompressed, projections or not."""
    path = _fresh(workdir, "storage")
    artifact = "sha256:" + "ab" * 32
    with fe.Store.open(path) as store:
        run = store.start_run(workflow="bench/agent", inputs={"task": "reply to the customer"})
        for i in range(steps):
            p = f"turn/{i}"
            run.begin_step(p, arguments={"messages": [{"role": "user", "content": _PROSE[:300]}], "i": i})
            run.invoke(p, 1, "llm.complete", artifact, "not-dispatched")
            run.result(p, 1, "succeeded", result={"text": _PROSE, "tokens": 412})
            run.end_step(p, "succeeded")
        run.conclude("succeeded")
        conn = store.log.backend.connection()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        events = conn.execute("SELECT count(*) FROM log").fetchall()[0][0]
        logical = conn.execute(
            "SELECT (SELECT sum(length(run_id) + length(kind) + length(at) + length(key) + length(body)"
            " + length(digest) + coalesce(length(prev), 0) + 24) FROM log)"
            " + (SELECT sum(length(value) + 16) FROM payload)"
        ).fetchall()[0][0]
        log_pages = conn.execute(_LOG_PAGES).fetchall()[0][0]
    size = path.stat().st_size
    return [
        Row(
            workload=f"bytes per event on disk, agent-like run of {steps:,} steps (target <= 0.6 of ~1 KB)",
            ours=size / events,
            theirs=logical / events,
            peer="logical bytes (columns + values, no index)",
            unit="bytes/event",
            spread=0.0,
            ratio=size / logical,
        ),
        Row(
            workload="the same run's log alone: log and payload pages, (run_id, seq) index",
            ours=log_pages / events,
            theirs=size / events,
            peer="the whole file (log, projections, checkpoints)",
            unit="bytes/event",
            spread=0.0,
            ratio=log_pages / size,
        ),
    ]


def run(quick: bool, workdir: Path) -> list[Row]:
    repeats = 5 if quick else 15
    rows = [imports(repeats)]
    rows += group_commit(workdir, 8, 100 if quick else 1_000, 3 if quick else 5)
    rows += reads(workdir, 1_000 if quick else 10_000, 3 if quick else 9)
    rows += handle(workdir, 5_000 if quick else 50_000, 3)
    rows.append(checkpoint_cost(5_000 if quick else 20_000, 3 if quick else 7))
    rows += storage(workdir, 500 if quick else 10_000)
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("issue22")


if __name__ == "__main__":
    main()
