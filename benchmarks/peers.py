"""forkline_es against the stores users choose between: eventsourcing and DBOS Transact.

Same machine, same disk, same run, alternating trials (``_harness.paired``):

- one run of N small events, one call per event: forkline_es (executor API
  ``begin_step`` and the Forkline-compatible ``RunRecorder.log_event``) vs
  eventsourcing's SQLite application recorder (``insert_events`` of one stored event,
  and a whole ``Application.save`` of an aggregate event, the way its users record);
- N workflow steps with small inputs and outputs: forkline_es (begin/invoke/result/end
  per step) vs DBOS Transact on SQLite (``@DBOS.step`` inside a ``@DBOS.workflow``):
  the per-step recording overhead.

Durability is matched per row. eventsourcing opens SQLite in WAL with the default
``synchronous=FULL``; DBOS on SQLite keeps SQLite's rollback journal with
``synchronous=FULL``. Both are power-loss durable, so the FULL rows run forkline_es with
``durability="full"``; the NORMAL rows set ``synchronous=NORMAL`` on the peer's
connections too. A peer that is not installed (``pip install -e '.[bench]'``) is
reported as such in the table, never skipped silently.

    python -m benchmarks.peers [--quick]
"""

from __future__ import annotations

import functools
import itertools
import os
import subprocess
import sys
import textwrap
import uuid
from functools import partial
from pathlib import Path
from typing import Any, Final

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, paired
from forkline_es.log.connection import Durability

__all__ = ["main", "run"]

_files = itertools.count()
_ARTIFACT: Final = "sha256:" + "cd" * 32


def _fresh(workdir: Path, stem: str) -> Path:
    return workdir / f"{stem}-{next(_files)}.db"


def _missing(workload: str, peer: str, why: str) -> Row:
    return Row(
        workload=workload,
        ours=float("nan"),
        theirs=None,
        peer=peer,
        unit="events/s",
        spread=0.0,
        note=f"peer not installed: {why}",
    )


# -- forkline_es sides ---------------------------------------------------------------------


def _ours_events(workdir: Path, n: int, durability: Durability) -> Trial:
    with fe.Store.open(_fresh(workdir, "fe-events"), durability=durability) as store:
        run = store.start_run(workflow="bench/events")
        with Timer() as t:
            for i in range(n):
                run.begin_step(f"s/{i}", arguments={"i": i, "text": "hello"})
    return Trial(n, t.seconds)


def _ours_recorder(workdir: Path, n: int, durability: Durability) -> Trial:
    recorder = fe.RunRecorder(db_path=str(_fresh(workdir, "fe-recorder")), durability=durability)
    run_id = recorder.start_run(entrypoint="bench.py")
    with Timer() as t:
        for i in range(n):
            recorder.log_event(run_id, "input", {"i": i, "text": "hello"})
    recorder.close()
    return Trial(n, t.seconds)


def _ours_steps(workdir: Path, n: int, durability: Durability) -> Trial:
    with fe.Store.open(_fresh(workdir, "fe-steps"), durability=durability) as store:
        run = store.start_run(workflow="bench/steps")
        with Timer() as t:
            for i in range(n):
                path = f"step/{i}"
                run.begin_step(path, arguments={"i": i})
                run.invoke(path, 1, "compute", _ARTIFACT, "not-dispatched", arguments={"i": i})
                run.result(path, 1, "succeeded", result={"i": i})
                run.end_step(path, "succeeded", result={"i": i})
            run.conclude("succeeded")
    return Trial(n, t.seconds)


# -- eventsourcing ---------------------------------------------------------------------------


def _eventsourcing_recorder(workdir: Path, n: int, durability: Durability) -> Trial:
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    datastore = SQLiteDatastore(str(_fresh(workdir, "es-recorder")))
    _set_synchronous(datastore, durability)
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    originator = uuid.uuid4()
    with Timer() as t:
        for i in range(1, n + 1):
            state = b'{"i":%d,"text":"hello"}' % i
            recorder.insert_events([StoredEvent(originator, i, "bench:Event", state)])
    datastore.close()
    return Trial(n, t.seconds)


@functools.cache
def _recording_aggregate() -> Any:
    """The aggregate class, defined once: eventsourcing registers classes by topic."""
    from eventsourcing.domain import Aggregate, event

    class Recording(Aggregate):
        @event("Logged")
        def log(self, i: int, text: str) -> None:
            pass

    return Recording


def _eventsourcing_app(workdir: Path, n: int, durability: Durability) -> Trial:
    from eventsourcing.application import Application

    Recording = _recording_aggregate()
    app = Application[Any](
        env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(_fresh(workdir, "es-app"))}
    )
    _set_synchronous(app.recorder.datastore, durability)  # type: ignore[attr-defined]
    aggregate = Recording()
    app.save(aggregate)
    with Timer() as t:
        for i in range(n):
            aggregate.log(i, "hello")
            app.save(aggregate)
    app.close()
    return Trial(n, t.seconds)


def _set_synchronous(datastore: Any, durability: str) -> None:
    """Make every connection the datastore's pool creates use the given synchronous mode."""
    pool = datastore.pool
    create = pool._create_connection
    level = "FULL" if durability == "full" else "NORMAL"

    def patched() -> Any:
        conn = create()
        conn._sqlite_conn.execute(f"PRAGMA synchronous={level}")
        return conn

    pool._create_connection = patched


# -- DBOS (in a subprocess: DBOS is a process-wide singleton) ------------------------------------

_DBOS_SCRIPT: Final = textwrap.dedent(
    """
    import sys, time, logging
    import sqlalchemy as sa
    from dbos import DBOS
    path, n, durability = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    engine = sa.create_engine(f"sqlite:///{path}")
    if durability == "normal":
        @sa.event.listens_for(engine, "connect")
        def _wal(dbapi_conn, _):
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
            dbapi_conn.execute("PRAGMA synchronous=NORMAL")
    logging.disable(logging.WARNING)
    DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}",
                 "system_database_engine": engine, "log_level": "ERROR"})

    @DBOS.step()
    def compute(i: int, data: dict) -> dict:
        return {"i": i}

    @DBOS.workflow()
    def workflow(n: int) -> int:
        for i in range(n):
            compute(i, {"i": i})
        return n

    DBOS.launch()
    workflow(5)
    start = time.perf_counter()
    workflow(n)
    print(time.perf_counter() - start)
    DBOS.destroy()
    """
)


def _dbos_steps(workdir: Path, n: int, durability: Durability) -> Trial:
    path = _fresh(workdir, "dbos")
    out = subprocess.run(
        [sys.executable, "-c", _DBOS_SCRIPT, str(path), str(n), durability],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return Trial(n, float(out.stdout.strip().splitlines()[-1]))


def _installed(module: str) -> str | None:
    try:
        __import__(module)
    except ImportError as e:
        return str(e)
    return None


def run(quick: bool, workdir: Path) -> list[Row]:
    n = 1_000 if quick else 10_000
    steps = 200 if quick else 1_000
    repeats = 1 if quick else 5
    rows: list[Row] = []
    why = _installed("eventsourcing")
    durabilities: tuple[Durability, ...] = ("normal", "full")
    for durability in durabilities:
        if why is not None:
            rows.append(_missing(f"one run, {n:,} events, one call each", "eventsourcing", why))
            break
        rows.append(
            paired(
                f"one run, {n:,} events, one call each (executor begin_step)",
                partial(_ours_events, workdir, n, durability),
                partial(_eventsourcing_recorder, workdir, n, durability),
                "eventsourcing SQLiteApplicationRecorder.insert_events",
                repeats,
                durability=durability,
                target=10.0,
            )
        )
        rows.append(
            paired(
                f"one run, {n:,} events, one call each (RunRecorder.log_event)",
                partial(_ours_recorder, workdir, n, durability),
                partial(_eventsourcing_app, workdir, n, durability),
                "eventsourcing Application.save per event",
                repeats,
                durability=durability,
                target=10.0,
            )
        )
    why = _installed("dbos")
    for durability in durabilities:
        if why is not None:
            rows.append(_missing(f"{steps:,} workflow steps", "DBOS Transact (SQLite)", why))
            break
        rows.append(
            paired(
                f"{steps:,} workflow steps, small inputs/outputs",
                partial(_ours_steps, workdir, steps, durability),
                partial(_dbos_steps, workdir, steps, durability),
                "DBOS Transact 3 on SQLite",
                repeats,
                unit="steps/s",
                durability=durability,
                target=1.0,
            )
        )
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("peers")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
