"""Many writers at once: 4 processes each recording 2,500 events into one database.

Each process opens its own connection and records its own run, one call per event
(the executor API's ``begin_step``); the raw side runs the same processes inserting
the same number of rows into a log-shaped table with ``BEGIN IMMEDIATE ... COMMIT``.
Each process opens its connection (and starts its run), then signals readiness with a
file of its own and waits on a barrier file; the parent touches the barrier once every
process is ready, so interpreter start-up and imports stay outside the timed window. The
figure is the total events per second from the barrier to the last writer's last commit
(each writer prints ``time.monotonic()`` after it, a clock shared by every process on
Linux), so connection close and interpreter exit are left out too. After each forkline_es trial the
log is counted: every acknowledged event must be there, once.

    python -m benchmarks.writers [--quick]
"""

from __future__ import annotations

import functools
import itertools
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Final

import apsw

from benchmarks._harness import Row, Trial, paired

__all__ = ["main", "run"]

_files = itertools.count()
_PROCESSES: Final = 4

_OURS: Final = textwrap.dedent(
    """
    import os, sys, time
    import forkline_es as fe
    path, n, barrier, who = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    store = fe.Store.open(path)
    run = store.start_run(workflow="bench/writers", run_id=f"writer-{who}")
    open(f"{barrier}.ready-{who}", "w").close()
    while not os.path.exists(barrier):
        time.sleep(0.0005)
    for i in range(n):
        run.begin_step(f"s/{i}", arguments={"i": i})
    print(time.monotonic())
    store.close()
    """
)

_RAW: Final = textwrap.dedent(
    """
    import os, sys, time, apsw
    path, n, barrier, who = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    conn = apsw.Connection(path)
    conn.set_busy_timeout(30000)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    cur = conn.cursor()
    open(f"{barrier}.ready-{who}", "w").close()
    sql = ("INSERT INTO log (run_id, seq, entry, generation, kind, at, key, body, digest, prev) "
           "VALUES (?, ?, ?, 0, 'step-begun', '2026-01-01T00:00:00Z', ?, ?, 'sha256:x', NULL)")
    while not os.path.exists(barrier):
        time.sleep(0.0005)
    for i in range(1, n + 1):
        cur.execute("BEGIN IMMEDIATE")
        cur.execute(sql, (f"writer-{who}", i, i, f"begin:0:s/{i}", '{"path":"s/%d"}' % i))
        cur.execute("COMMIT")
    print(time.monotonic())
    conn.close()
    """
)

#: The statements ``_OURS``'s writer ran (traced beforehand), run again with no Python of
#: ours (``_trace.replay``).
_REPLAY: Final = textwrap.dedent(
    """
    import os, pickle, sys, time
    from forkline_es.log.connection import open_connection
    from benchmarks._trace import replay
    path, n, barrier, who = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    with open(f"{path}.trace-{who}", "rb") as f:
        statements = pickle.load(f)
    conn = open_connection(path, "normal")
    cur = conn.cursor()
    open(f"{barrier}.ready-{who}", "w").close()
    while not os.path.exists(barrier):
        time.sleep(0.0005)
    replay(statements, cur)
    print(time.monotonic())
    conn.close()
    """
)

_RAW_DDL: Final = """
CREATE TABLE log (
    position INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
    entry INTEGER, generation INTEGER NOT NULL, kind TEXT NOT NULL, at TEXT NOT NULL,
    key TEXT NOT NULL, body TEXT NOT NULL, digest TEXT NOT NULL, prev TEXT, UNIQUE (run_id, seq)
);
"""


def _trial(script: str, path: Path, n: int) -> float:
    """Seconds from the barrier (every writer ready) to the last writer's last commit."""
    barrier = path.with_suffix(".go")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), str(n), str(barrier), str(who)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],  # ``benchmarks`` importable
        )
        for who in range(_PROCESSES)
    ]
    ready = [Path(f"{barrier}.ready-{who}") for who in range(_PROCESSES)]
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in ready):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            for p in procs:
                p.kill()
            raise RuntimeError("a writer failed before it was ready")
        time.sleep(0.001)
    start = time.monotonic()
    barrier.touch()
    ends: list[float] = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"a writer failed with exit status {p.returncode}")
        ends.append(float(out.split()[-1]))
    return max(ends) - start


def _ours(workdir: Path, n: int) -> Trial:
    import forkline_es as fe

    path = workdir / f"fe-writers-{next(_files)}.db"
    fe.Store.open(path).close()
    seconds = _trial(_OURS, path, n)
    conn = apsw.Connection(str(path))
    ((count, runs),) = conn.execute("SELECT count(*), count(DISTINCT run_id) FROM log").fetchall()
    conn.close()
    expected = _PROCESSES * (n + 1)  # each run: its start, then n steps
    if (count, runs) != (expected, _PROCESSES):
        raise AssertionError(f"lost or duplicated events: {count} rows in {runs} runs, expected {expected}")
    return Trial(_PROCESSES * n, seconds)


def _traces(workdir: Path, n: int) -> tuple[Path, list[bytes]]:
    """A file with every writer's run started, and each writer's ``n`` ``begin_step`` calls
    as the statements they ran (traced alone on a copy of that file), pickled."""
    import forkline_es as fe
    from benchmarks._trace import begin_steps, traced

    start = workdir / f"traced-writers-{next(_files)}.db"
    with fe.Store.open(start) as store:
        for who in range(_PROCESSES):
            store.start_run(workflow="bench/writers", run_id=f"writer-{who}")
    traces = []
    for who in range(_PROCESSES):
        copy = workdir / f"tracing-writers-{next(_files)}.db"
        traces.append(pickle.dumps(traced(start, copy, f"writer-{who}", functools.partial(begin_steps, n))))
    return start, traces


def _replayed(workdir: Path, n: int, traced: tuple[Path, list[bytes]]) -> Trial:
    start, traces = traced
    path = workdir / f"replay-writers-{next(_files)}.db"
    shutil.copyfile(start, path)
    for who, trace in enumerate(traces):
        Path(f"{path}.trace-{who}").write_bytes(trace)
    seconds = _trial(_REPLAY, path, n)
    conn = apsw.Connection(str(path))
    ((count,),) = conn.execute("SELECT count(*) FROM log").fetchall()
    conn.close()
    if count != _PROCESSES * (n + 1):
        raise AssertionError(f"the replay wrote {count} rows, expected {_PROCESSES * (n + 1)}")
    return Trial(_PROCESSES * n, seconds)


def _raw(workdir: Path, n: int) -> Trial:
    path = workdir / f"raw-writers-{next(_files)}.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute(_RAW_DDL)
    conn.close()
    return Trial(_PROCESSES * n, _trial(_RAW, path, n))


def run(quick: bool, workdir: Path) -> list[Row]:
    n = 250 if quick else 2_500
    repeats = 1 if quick else 3
    traced = _traces(workdir, n)
    return [
        paired(
            f"{_PROCESSES} processes x {n:,} events at once (total)",
            lambda: _ours(workdir, n),
            lambda: _raw(workdir, n),
            "raw apsw, same processes",
            repeats,
            note="no event lost or duplicated (checked)",
        ),
        paired(
            f"the same {_PROCESSES} processes running begin_step's statements alone (traced, "
            "replayed: no Python of ours)",
            lambda: _replayed(workdir, n, traced),
            lambda: _raw(workdir, n),
            "raw apsw, same processes",
            repeats,
            note="the floor of this schema's SQL for these writers",
        ),
    ]


def main() -> None:
    from benchmarks.run import standalone

    standalone("writers")


if __name__ == "__main__":
    main()
