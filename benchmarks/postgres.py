"""forkline_es on PostgreSQL beside a raw psycopg ceiling, eventsourcing and DBOS (issue 21).

One run starts a throwaway PostgreSQL server (``forkline_es.testing.postgres``: initdb into
a temporary folder, 127.0.0.1 only, ``fsync``/``synchronous_commit``/``full_page_writes``
on) and measures, on it and in the same run:

- *append*: one event per transaction, 1, 2, 4 and 8 writer processes on distinct runs,
  durable; and one writer with ``synchronous_commit=off``;
- *executor step*: one writer recording steps (begin, invoke, result, end: four events,
  four commits, as an executor records them), durable and ``synchronous_commit=off``.

Columns (sides), each a fresh database (or file) per trial:

- ``raw psycopg``: the ceiling of our append's insert shape. One log row (the log's
  columns, identity position, ``UNIQUE (run_id, seq)``, text bodies) and one payload row
  per event, written by one prepared statement (``WITH l AS (INSERT INTO log ... RETURNING
  position) INSERT INTO payload ...``) in autocommit: one round trip and one commit per
  event, nothing else. A step is four such events.
- ``eventsourcing``: ``PostgresApplicationRecorder.insert_events`` of one pre-serialised
  ``StoredEvent`` per event (its ``LOCK TABLE ... IN EXCLUSIVE MODE`` serialises writers).
- ``DBOS``: DBOS Transact on PostgreSQL, ``@DBOS.step`` inside a ``@DBOS.workflow``; one
  recorded step per step (steps only: DBOS has no bare append).
- ``fe PostgreSQL``: ``fe.RunRecorder.log_event`` per event and the executor API per step,
  on ``fe.Store.open("postgresql://...")``. Detected by trying: the store must have created
  its ``log`` table on the server (a build that reads the DSN as a file name does not
  count); otherwise the column says "not available in this build".
- ``fe SQLite``: the same calls on a file in the benchmark's folder, ``durability="full"``
  (an fsync per commit) for the durable rows and ``"normal"`` for the ``off`` rows: the
  embedded floor the PostgreSQL backend is compared with.
- ``fe PG SQL alone`` (executor steps only): the statements ``fe PostgreSQL`` sends for
  the same steps, with none of its Python. Before the barrier each writer records the
  steps on a run of its own through the store with a tap on the append's cursor that keeps
  every statement and its parameters; after it, on a plain autocommit connection, it sends
  them again in order, prepared, with the run id swapped for its timed run's: the same
  rows, triggers, projection writes, round trips and commits. The rows are counted after
  the trial like ``fe PostgreSQL``'s.

``synchronous_commit=off`` is set on the trial's database (``ALTER DATABASE``), so every
side's connections get it without any peer being patched. Every side runs in writer
processes forked from the runner: each opens its connection (DBOS launches and runs a
warm-up workflow), signals readiness, waits on a barrier file, and reports
``time.monotonic()`` after its last commit; the figure is the total from the barrier to the
last writer's last commit. After each
trial the rows are counted (raw, eventsourcing, ours): every acknowledged event is there,
once. Each repetition runs every side, starting one later in the list each time; a ratio
is the median of the per-repetition ratios (never a ratio of medians).

Not part of ``python -m benchmarks`` (it starts a server):

    python -m benchmarks.postgres [--quick] [--markdown] [--repeats N]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from benchmarks._harness import environment, spread

if TYPE_CHECKING:
    from forkline_es.testing.postgres import PostgresServer

__all__ = ["main"]

_ARTIFACT: Final = "sha256:" + "cd" * 32
_SLOTS: Final = 16  # payload ids are position * 16 + slot, as in forkline_es's payload table
_WRITERS: Final = (1, 2, 4, 8)

RAW: Final = "raw psycopg"
ES: Final = "eventsourcing"
DBOS: Final = "DBOS"
FE_PG: Final = "fe PostgreSQL"
FE_SQLITE: Final = "fe SQLite"
FE_SQL: Final = "fe PG SQL alone"
SIDES: Final = (RAW, ES, DBOS, FE_PG, FE_SQLITE, FE_SQL)
#: Ratios shown: fe PostgreSQL against each of these, with the issue's target if it sets one.
RATIOS: Final = (
    (RAW, "fe PG / raw"),
    (ES, "fe PG / es"),
    (DBOS, "fe PG / DBOS"),
    (FE_SQLITE, "fe PG / fe SQLite"),
)
#: What a floor itself reaches against each peer, (floor, peer, column): the raw ceiling
#: is the most any recorder doing our log inserts could reach, whatever its code; our own
#: statements replayed, the most any recorder writing our rows could (a target above
#: either is out of reach).
CEILINGS: Final = ((RAW, ES, "raw / es"), (RAW, DBOS, "raw / DBOS"), (FE_SQL, DBOS, "SQL alone / DBOS"))
NOT_IN_BUILD: Final = "not available in this build"

_RAW_DDL: Final = """
CREATE TABLE log (
    position   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id     text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL CHECK (seq >= 1),
    entry      bigint CHECK (entry >= 1),
    generation bigint NOT NULL CHECK (generation >= 0),
    kind       text COLLATE "C" NOT NULL,
    at         text NOT NULL,
    key        text COLLATE "C" NOT NULL,
    body       text NOT NULL,
    digest     text NOT NULL,
    prev       text,
    UNIQUE (run_id, seq)
);
CREATE TABLE payload (
    id       bigint PRIMARY KEY,
    position bigint NOT NULL,
    slot     text COLLATE "C" NOT NULL,
    value    text NOT NULL
);
"""

#: The log's columns after ``position``, as ``traced_steps`` copies a row.
_LOG_COLUMNS: Final = "run_id, seq, entry, generation, kind, at, key, body, digest, prev"

_RAW_INSERT: Final = (
    "WITH l AS (INSERT INTO log (run_id, seq, entry, generation, kind, at, key, body, digest, prev) "
    "VALUES (%s, %s, %s, 0, 'input', '2026-01-01T00:00:00.000000Z', %s, %s, %s, %s) RETURNING position) "
    f"INSERT INTO payload (id, position, slot, value) SELECT position * {_SLOTS}, position, 'payload', %s "
    "FROM l"
)


# -- the writer processes ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Job:
    """What one writer process does: ``n`` events (append) or steps (step) on its own run."""

    side: str
    kind: str  # "append" | "step" (4 commits a step) | "batch" (a step's 4 events, 1 commit)
    target: str  # a DSN, or a file path for fe SQLite
    n: int
    durable: bool
    who: int


def _wait(barrier: str, who: int) -> None:
    Path(f"{barrier}.ready-{who}").touch()
    while not os.path.exists(barrier):
        time.sleep(0.0005)


def _raw_writer(job: Job, barrier: str) -> float:
    import psycopg

    run_id = f"writer-{job.who}"
    values = [
        (
            run_id,
            i,
            i,
            f"k:{run_id}:{i}",
            f'{{"i":{i},"text":"hello"}}',
            f"sha256:{i:064x}",
            None,
            f'{{"t":"int","v":{i}}}',
        )
        for i in range(1, _events(job.kind, job.n) + 2)
    ]
    with psycopg.connect(job.target, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute(_RAW_INSERT, values[0], prepare=True)  # prepared before the clock (a run's start)
        _wait(barrier, job.who)
        if job.kind == "batch":  # a step's four rows in one transaction, one round trip
            for i in range(1, len(values), 4):
                with conn.pipeline():  # sent together, one sync at the end of the block
                    cur.execute("BEGIN")
                    for v in values[i : i + 4]:
                        cur.execute(_RAW_INSERT, v, prepare=True)
                    cur.execute("COMMIT")
        else:
            for v in values[1:]:
                cur.execute(_RAW_INSERT, v, prepare=True)
        return time.monotonic()


def _es_writer(job: Job, barrier: str) -> float:
    import psycopg
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

    info = psycopg.conninfo.conninfo_to_dict(job.target)
    datastore = PostgresDatastore(
        str(info["dbname"]), str(info["host"]), str(info["port"]), str(info["user"]), ""
    )
    recorder = PostgresApplicationRecorder(datastore)
    originator = uuid.uuid4()
    states = [b'{"i":%d,"text":"hello"}' % i for i in range(job.n + 1)]
    recorder.insert_events([StoredEvent(originator, 0, "bench:Event", states[0])])  # connects
    _wait(barrier, job.who)
    for i in range(1, job.n + 1):
        recorder.insert_events([StoredEvent(originator, i, "bench:Event", states[i])])
    end = time.monotonic()
    datastore.close()
    return end


def _dbos_writer(job: Job, barrier: str) -> float:
    import logging

    from dbos import DBOS

    logging.disable(logging.WARNING)
    DBOS(config={"name": "bench", "system_database_url": job.target, "log_level": "ERROR"})

    @DBOS.step()
    def compute(i: int, data: dict[str, int]) -> dict[str, int]:
        return {"i": i}

    @DBOS.workflow()
    def workflow(n: int) -> int:
        for i in range(n):
            compute(i, {"i": i})
        return n

    DBOS.launch()
    workflow(5)
    _wait(barrier, job.who)
    workflow(job.n)
    end = time.monotonic()
    DBOS.destroy()
    return end


def _fe_writer(job: Job, barrier: str) -> float:
    import forkline_es as fe
    from forkline_es.log.connection import Durability

    durability: Durability = "full" if job.durable else "normal"
    if job.kind == "append":
        recorder = fe.RunRecorder(db_path=job.target, durability=durability)
        run_id = recorder.start_run(entrypoint="bench.py", run_id=f"writer-{job.who}")
        _wait(barrier, job.who)
        for i in range(job.n):
            recorder.log_event(run_id, "input", {"i": i, "text": "hello"})
        end = time.monotonic()
        recorder.close()
        return end
    with fe.Store.open(job.target, durability=durability) as store:
        run = store.start_run(workflow="bench/steps", run_id=f"writer-{job.who}")
        _wait(barrier, job.who)
        _steps(run, job)
        return time.monotonic()


class _Tap:
    """The append's cursor, keeping each statement and its parameters before sending it."""

    def __init__(self, cursor: Any, kept: list[tuple[str, list[Any]]]) -> None:
        self._cursor = cursor
        self._kept = kept

    def execute(self, query: str, params: Any = None, **kwargs: Any) -> Any:
        self._kept.append((query, list(params or ())))
        self._cursor.execute(query, params, **kwargs)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def _fe_sql_writer(job: Job, barrier: str) -> float:
    """``fe PostgreSQL``'s statements for ``job.n`` steps, traced on the timed run's id in a
    schema of their own, then sent again for the timed run with no Python of ours around
    them (``FE_SQL``). Each row names the one before it (the log takes a row only after
    it), so the timed run starts with the traced run's own first row, copied."""
    import psycopg

    timed = f"writer-{job.who}"
    replay, start = traced_steps(job.target, timed, job.n, batched=job.kind == "batch", durable=job.durable)
    if len(replay) != (job.n if job.kind == "batch" else _events(job.kind, job.n)):
        raise AssertionError(
            f"{len(replay)} statements traced for {job.n} steps: an append left the one-statement path"
        )
    with psycopg.connect(job.target, autocommit=True) as conn:
        put_start_row(conn, start)
        cur = psycopg.RawCursor(conn)
        _wait(barrier, job.who)
        for query, params in replay:
            cur.execute(query, params, prepare=True)
        return time.monotonic()


#: A run's first log row as ``traced_steps`` copies it: its columns after ``position`` (in
#: ``_LOG_COLUMNS`` order) and its payload values as (slot, value).
StartRow = tuple[tuple[Any, ...], list[tuple[str, str]]]


def traced_steps(
    dsn: str, run_id: str, n: int, *, batched: bool, durable: bool = True
) -> tuple[list[tuple[Any, list[Any]]], StartRow]:
    """The statements fe PostgreSQL sends for ``n`` steps of run ``run_id`` (a tap on the
    append's cursor), recorded in a throwaway schema of the database at ``dsn``, and the
    run's first row there, for ``put_start_row`` to copy before the statements are sent
    again: every row the statements write then follows the one it names."""
    import psycopg

    import forkline_es as fe
    from forkline_es.testing.backends import in_schema

    schema = f"trace_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        kept: list[tuple[Any, list[Any]]] = []
        with fe.Store.open(in_schema(dsn, schema), durability="full" if durable else "normal") as store:
            run = store.start_run(workflow="bench/steps", run_id=run_id)
            backend: Any = store.backend
            backend._insert = _Tap(backend._insert, kept)
            for i in range(n):
                if batched:
                    with run.batch():
                        _step(run, i)
                else:
                    _step(run, i)
        with psycopg.connect(dsn, autocommit=True) as conn:
            (row,) = conn.execute(
                f"SELECT position, {_LOG_COLUMNS} FROM {schema}.log WHERE run_id = %s AND seq = 1", (run_id,)
            ).fetchall()
            values = conn.execute(
                f"SELECT slot, value FROM {schema}.payload WHERE position = %s ORDER BY id", (row[0],)
            ).fetchall()
        return kept, (tuple(row[1:]), [(str(slot), str(value)) for slot, value in values])
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def put_start_row(conn: Any, start: StartRow) -> None:
    """Append ``traced_steps``' first row (and its values) to the log ``conn`` writes."""
    row, values = start
    marks = ", ".join(["%s"] * len(row))
    ((position,),) = conn.execute(
        f"INSERT INTO log ({_LOG_COLUMNS}) VALUES ({marks}) RETURNING position", row
    ).fetchall()
    for k, (slot, value) in enumerate(values):
        conn.execute(
            "INSERT INTO payload (id, position, slot, value) VALUES (%s, %s, %s, %s)",
            (position * _SLOTS + k, position, slot, value),
        )


def _steps(run: Any, job: Job) -> None:
    """``job.n`` steps, each in a ``run.batch()`` of its own for a batched job."""
    for i in range(job.n):
        if job.kind == "batch":
            with run.batch():
                _step(run, i)
        else:
            _step(run, i)


def _step(run: Any, i: int) -> None:
    """One executor step as an executor records it: begin, invoke, result, end."""
    path = f"step/{i}"
    run.begin_step(path, arguments={"i": i})
    run.invoke(path, 1, "compute", _ARTIFACT, "not-dispatched", arguments={"i": i})
    run.result(path, 1, "succeeded", result={"i": i})
    run.end_step(path, "succeeded", result={"i": i})


def _events(kind: str, n: int) -> int:
    """Events (log rows) of ``n`` units of ``kind``: a step is four."""
    return n if kind == "append" else 4 * n


_WRITER_FNS: Final[dict[str, Callable[[Job, str], float]]] = {
    RAW: _raw_writer,
    ES: _es_writer,
    DBOS: _dbos_writer,
    FE_PG: _fe_writer,
    FE_SQLITE: _fe_writer,
    FE_SQL: _fe_sql_writer,
}


def _writer(job: Job, barrier: str, result: Connection) -> None:
    """A forked writer process: its end time, or why it failed, goes back through ``result``."""
    try:
        result.send(("ok", _WRITER_FNS[job.side](job, barrier)))
    except BaseException as e:
        result.send(("failed", f"{type(e).__name__}: {e}"))
        raise


def _run_writers(jobs: Sequence[Job], folder: Path) -> float:
    """Seconds from the barrier (every writer ready) to the last writer's last commit.

    Writers are forked from this process, which has imported forkline_es, psycopg and
    eventsourcing already (a fresh interpreter per writer spent seconds importing them on
    this 2-core machine, outside the clock but not outside the run's length); nothing is
    open in the parent when it forks.
    """
    barrier = folder / f"go-{uuid.uuid4().hex[:8]}"
    fork = multiprocessing.get_context("fork")
    pipes = [fork.Pipe(duplex=False) for _ in jobs]
    procs = [
        fork.Process(target=_writer, args=(j, str(barrier), send), daemon=True)
        for j, (_, send) in zip(jobs, pipes, strict=True)
    ]
    for p in procs:
        p.start()
    ready = [Path(f"{barrier}.ready-{j.who}") for j in jobs]
    deadline = time.monotonic() + 180
    try:
        while not all(r.exists() for r in ready):
            failed = [i for i, p in enumerate(procs) if p.exitcode is not None]
            if failed or time.monotonic() > deadline:
                why = _outcome(pipes[failed[0]][0]) if failed else "timed out"
                raise RuntimeError(f"a writer failed before it was ready: {why}")
            time.sleep(0.001)
        start = time.monotonic()
        barrier.touch()
        ends: list[float] = []
        for (recv, _), p in zip(pipes, procs, strict=True):
            if not recv.poll(900):
                raise RuntimeError("a writer did not finish within 900 s")
            status, value = recv.recv()
            if status != "ok":
                raise RuntimeError(f"a writer failed: {_last_line(str(value))}")
            ends.append(float(value))
            p.join(60)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    return max(ends) - start


def _outcome(recv: Connection) -> str:
    if recv.poll(0):
        return _last_line(str(recv.recv()[1]))
    return "it exited without a word"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


# -- the server and each trial's database ------------------------------------------------------


class Server:
    """The throwaway server and a fresh database per trial (dropped after it)."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self._names = itertools.count()

    @contextlib.contextmanager
    def database(self, durable: bool) -> Iterator[str]:
        import psycopg

        name = f"bench_{next(self._names)}"
        dsn = self.server.create_database(name)
        if not durable:
            with psycopg.connect(self.server.dsn(), autocommit=True) as conn:
                conn.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
        try:
            yield dsn
        finally:
            self.server.drop_database(name)

    def version(self) -> str:
        import psycopg

        with psycopg.connect(self.server.dsn(), autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "?"


def _count(dsn: str, table: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def _fe_pg_probe(pg: Server, folder: Path) -> str | None:
    """None when ``fe.Store.open`` stores into PostgreSQL, else why not.

    The store is opened with the folder as working directory and must have created its
    ``log`` table on the server: a build that takes the DSN for a file name creates a
    SQLite file under ``./postgresql:/...`` instead, which does not count.
    """
    import psycopg

    import forkline_es as fe

    probe = folder / "fe-pg-probe"
    probe.mkdir()
    here = Path.cwd()
    with pg.database(durable=True) as dsn:
        os.chdir(probe)
        try:
            fe.Store.open(dsn).close()
        except Exception as e:
            return f"{type(e).__name__}: {e}"
        finally:
            os.chdir(here)
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("SELECT to_regclass('log') IS NOT NULL").fetchone()
        if not (row and row[0]):
            strays = sorted(str(p.relative_to(probe)) for p in probe.rglob("*") if p.is_file())
            return "Store.open created no table on the server" + (
                f" (it wrote a local file instead: {strays[0]})" if strays else ""
            )
    return None


# -- one side's trial --------------------------------------------------------------------------


def _trial(side: str, kind: str, writers: int, n: int, durable: bool, pg: Server, folder: Path) -> float:
    """One trial of ``side``: units (events or steps) per second in all."""
    units = writers * n
    if side == FE_SQLITE:
        path = folder / f"fe-{uuid.uuid4().hex[:8]}.db"
        import forkline_es as fe

        fe.Store.open(path, durability="full" if durable else "normal").close()
        jobs = [Job(side, kind, str(path), n, durable, w) for w in range(writers)]
        seconds = _run_writers(jobs, folder)
        _check_fe_sqlite(path, kind, writers, n)
        return units / seconds
    with pg.database(durable) as dsn:
        _prepare(side, dsn)
        jobs = [Job(side, kind, dsn, n, durable, w) for w in range(writers)]
        seconds = _run_writers(jobs, folder)
        _check_pg(side, dsn, kind, writers, n)
    return units / seconds


def _prepare(side: str, dsn: str) -> None:
    """Tables created before the clock, once per database (each writer only connects)."""
    if side == RAW:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(_RAW_DDL)
    elif side == ES:
        import psycopg
        from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

        info = psycopg.conninfo.conninfo_to_dict(dsn)
        datastore = PostgresDatastore(
            str(info["dbname"]), str(info["host"]), str(info["port"]), str(info["user"]), ""
        )
        PostgresApplicationRecorder(datastore).create_table()
        datastore.close()
    elif side in (FE_PG, FE_SQL):
        import forkline_es as fe

        fe.Store.open(dsn).close()


def _expected_fe(kind: str, writers: int, n: int) -> int:
    """Log rows of a forkline_es trial: each run's start, then one row per event."""
    return writers * (1 + _events(kind, n))


def _check_fe_sqlite(path: Path, kind: str, writers: int, n: int) -> None:
    import apsw

    conn = apsw.Connection(str(path))
    ((count,),) = conn.execute("SELECT count(*) FROM log").fetchall()
    conn.close()
    _same(FE_SQLITE, int(str(count)), _expected_fe(kind, writers, n))


def _check_pg(side: str, dsn: str, kind: str, writers: int, n: int) -> None:
    if side == RAW:
        _same(side, _count(dsn, "log"), writers * (1 + _events(kind, n)))
        _same(side, _count(dsn, "payload"), writers * (1 + _events(kind, n)))
    elif side == ES:
        _same(side, _count(dsn, "stored_events"), writers * (n + 1))
    elif side in (FE_PG, FE_SQL):  # FE_SQL: the traced rows were in a schema of their own
        _same(side, _count(dsn, "log"), _expected_fe(kind, writers, n))


def _same(side: str, counted: int, expected: int) -> None:
    if counted != expected:
        raise AssertionError(f"{side}: {counted} rows after the trial, expected {expected} (lost or doubled)")


# -- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    label: str
    kind: str
    writers: int
    durable: bool
    n: int  # per writer
    sides: tuple[str, ...]
    targets: dict[str, float] = field(default_factory=dict)  # peer -> target of fe PG / peer

    @property
    def unit(self) -> str:
        return "events/s" if self.kind == "append" else "steps/s"


@dataclass
class Line:
    workload: Workload
    rates: dict[str, list[float]] = field(default_factory=dict)
    cells: dict[str, str] = field(default_factory=dict)  # a side's text when it has no rate

    def ratio(self, peer: str, ours_side: str = FE_PG) -> float | None:
        """Median of the per-repetition ratios ``ours_side / peer`` (None without both)."""
        ours, theirs = self.rates.get(ours_side, []), self.rates.get(peer, [])
        pairs = [o / t for o, t in zip(ours, theirs, strict=False) if t > 0]
        return statistics.median(pairs) if pairs else None


def _workloads(quick: bool) -> list[Workload]:
    events = 150 if quick else 600
    per_writer = 100 if quick else 250
    steps = 50 if quick else 120
    appenders = (RAW, ES, FE_PG, FE_SQLITE)
    stepper = (RAW, DBOS, FE_PG, FE_SQLITE, FE_SQL)
    out = [
        Workload(
            f"append, {w} writer process{'es' if w > 1 else ''} on distinct runs",
            "append",
            w,
            True,
            events if w == 1 else per_writer,
            appenders,
            {RAW: 0.6, ES: 3.0} if w == 8 else {},
        )
        for w in _WRITERS
    ]
    out.append(Workload("append, 1 writer", "append", 1, False, events * 2, appenders))
    for durable in (True, False):
        for label, kind in (
            ("executor step (4 events, 4 commits)", "step"),
            ("executor step, one run.batch() (4 events, 1 commit)", "batch"),
        ):
            out.append(Workload(label, kind, 1, durable, steps, stepper, {DBOS: 5.0}))
    return out


def _measure(w: Workload, repeats: int, pg: Server, folder: Path, missing: dict[str, str]) -> Line:
    line = Line(w)
    live = [s for s in w.sides if s not in missing]
    for s in w.sides:
        if s in missing:
            line.cells[s] = missing[s]
    for rep in range(repeats):
        order = live[rep % len(live) :] + live[: rep % len(live)] if live else []
        for side in order:
            if side in line.cells:
                continue  # it failed in an earlier repetition
            sync = "on" if w.durable else "off"
            print(f"  {w.label} (sync {sync}): {side} ...", file=sys.stderr, flush=True)
            try:
                rate = _trial(side, w.kind, w.writers, w.n, w.durable, pg, folder)
            except Exception as e:  # one failing side must not hide the others' figures
                line.cells[side] = f"failed: {_last_line(str(e))[:120]}"
                line.rates.pop(side, None)
                continue
            line.rates.setdefault(side, []).append(rate)
    return line


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _table(lines: Sequence[Line], markdown: bool) -> str:
    head = [
        "workload",
        "sync",
        "unit",
        *SIDES,
        *(n for _, n in RATIOS),
        *(n for _, _, n in CEILINGS),
        "spread",
    ]
    body: list[list[str]] = []
    for line in lines:
        w = line.workload
        cells = [w.label, "on" if w.durable else "off", w.unit]
        spreads: list[float] = []
        for s in SIDES:
            if s not in w.sides:
                cells.append("-")
            elif s in line.cells:
                cells.append(line.cells[s])
            else:
                rates = line.rates.get(s, [])
                cells.append(_num(statistics.median(rates)) if rates else "-")
                if len(rates) > 1:
                    spreads.append(spread(rates))
        for peer, _ in RATIOS:
            ratio = line.ratio(peer) if peer in w.sides else None
            target = w.targets.get(peer)
            if ratio is None:
                text = "-" if target is None or peer not in w.sides else f"(target >= {target:g})"
            else:
                text = f"{ratio:.2f}"
                if target is not None:
                    text += f" (>= {target:g} {'ok' if ratio >= target else 'MISSED'})"
            cells.append(text)
        for floor, peer, _ in CEILINGS:
            ratio = line.ratio(peer, floor) if peer in w.sides and floor in w.sides else None
            cells.append("-" if ratio is None else f"{ratio:.2f}")
        cells.append(f"{max(spreads):.0%}" if spreads else "-")
        body.append(cells)
    if markdown:
        rows = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        rows += ["| " + " | ".join(c) + " |" for c in body]
        return "\n".join(rows)
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(wd) for c, wd in zip(cells, widths, strict=True))

    return "\n".join([fmt(head), "  ".join("-" * wd for wd in widths), *(fmt(b) for b in body)])


def _versions() -> str:
    found = []
    for dist in ("psycopg", "eventsourcing", "dbos"):
        try:
            found.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            found.append(f"{dist} not installed")
    return ", ".join(found)


def _missing_peers() -> dict[str, str]:
    """Why a peer cannot run, by side; imported here, so forked writers start with them."""
    missing: dict[str, str] = {}
    for side, module in ((ES, "eventsourcing.postgres"), (DBOS, "dbos")):
        try:
            __import__(module)
        except ImportError as e:
            missing[side] = f"not installed ({e})"
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.postgres", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke sizes, one repetition")
    parser.add_argument("--repeats", type=int, default=None, help="repetitions per row (default 3, quick 1)")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--dir", type=Path, default=None, help="where SQLite files and barriers go")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)

    from forkline_es.testing.postgres import PostgresServer

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fe-bench-pg-", dir=args.dir) as tmp, PostgresServer() as server:
        folder = Path(tmp)
        pg = Server(server)
        missing = _missing_peers()
        why = _fe_pg_probe(pg, folder)
        if why is not None:
            missing[FE_PG] = missing[FE_SQL] = NOT_IN_BUILD
        env = environment(folder.parent)
        env["durability"] = (
            "sync on: synchronous_commit=on (PostgreSQL), durability='full' (SQLite): an fsync per "
            "commit; off: synchronous_commit=off, durability='normal'"
        )
        env["postgresql"] = f"{pg.version()} (throwaway server, fsync and full_page_writes on)"
        env["peers"] = _versions()
        if why is not None:
            env["fe PostgreSQL"] = f"{NOT_IN_BUILD}: {why}"
        lines = [_measure(w, repeats, pg, folder, missing) for w in _workloads(args.quick)]
    env["repetitions"] = f"{repeats} per row, medians; the run took {time.monotonic() - started:.0f} s"
    head = [f"{k}: {v}" for k, v in env.items()]
    if args.markdown:
        head = [f"- {h}" for h in head]
    print("\n".join(head) + "\n\n" + _table(lines, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
