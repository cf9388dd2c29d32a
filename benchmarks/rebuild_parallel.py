"""A multi-process rebuild, prototyped: what folding runs in N processes reaches.

Projections are per run, so runs partition cleanly. Each of N worker processes reads the
log rows of its share of the runs (``unicode(substr(run_id, -1)) % N``: hex run ids split
evenly) in position order from a read-only connection and folds them with the runner's
own loop (``Projections.fold_runs``) into a scratch database of its own. One process then
attaches the scratch files and, in one transaction, drops and recreates the projection
tables and fills them with one ``INSERT ... SELECT`` per table (the entries merged in
position order by SQLite, so the rowid table still grows at its end).

The result is checked against ``rebuild_projections`` byte for byte (every projection
table's rows in key order). A prototype: a recovery's supersession reads the log
through the fold's cursor, which a scratch database does not hold, so logs with
recoveries are out of its reach (the generated log has none).

Rates are by wall time and by the critical path's CPU time (the slowest worker's plus the
merge's): the rate N otherwise idle cores would give, since the machine is shared.

    python -m benchmarks.rebuild_parallel [--events N | --log FILE] [--workers N] [--repeats N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

import apsw

from benchmarks.projections import _generate

__all__ = ["main"]

_ROOT: Final = Path(__file__).resolve().parents[1]

_WORKER: Final = """
import json, sys, time
from forkline_es.log.eventlog import EventLog
from forkline_es.log.rows import LOG_COLUMNS, LogRow
from forkline_es.log.sqlite import open_sqlite
from forkline_es.projections.runner import Projections
from forkline_es.projections.sql import DDL
from forkline_es.store import extra_projectors
from forkline_es._gc import gc_paused
db, scratch, part, parts = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = time.process_time()
source = open_sqlite(db, read_only=True)
target = open_sqlite(scratch)
projections = Projections(EventLog(target), extra_projectors())
sql = f"SELECT {LOG_COLUMNS} FROM log WHERE unicode(substr(run_id, -1)) % ? = ? ORDER BY position"
with target.transaction("fold a partition") as cur, gc_paused():
    cur.execute(DDL)
    for p in projections.extra:
        cur.execute(p.ddl)
    rows = (LogRow(*r) for r in source.cursor().execute(sql, (parts, part)))
    n = projections.fold_runs(cur, rows)
print(json.dumps([n, time.process_time() - t]))
"""

_REBUILD: Final = """
import json, sys, time
import forkline_es as fe
store = fe.Store.open(sys.argv[1])
t, w = time.process_time(), time.perf_counter()
n = store.rebuild_projections()
print(json.dumps([n, time.process_time() - t, time.perf_counter() - w]))
"""


def _python(script: str, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", script, *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=_ROOT)


def _tables() -> list[str]:
    from forkline_es.projections.sql import TABLES
    from forkline_es.store import extra_projectors

    return [*TABLES, *(t for p in extra_projectors() for t in p.tables)]


def _merge(db: Path, scratches: list[Path]) -> float:
    """Drop, recreate and fill the projection tables from the scratch files; CPU seconds."""
    from forkline_es.projections.sql import DDL
    from forkline_es.store import extra_projectors

    t = time.process_time()
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA synchronous = NORMAL")
    names = [f"s{i}" for i in range(len(scratches))]
    for name, path in zip(names, scratches, strict=True):
        conn.execute(f"ATTACH ? AS {name}", (str(path),))
    conn.execute("BEGIN IMMEDIATE")
    tables = _tables()
    for table in tables:
        conn.execute(f"DROP TABLE IF EXISTS main.{table}")
    conn.execute(DDL)
    for p in extra_projectors():
        conn.execute(p.ddl)
    for table in tables:
        info = list(conn.execute(f"PRAGMA main.table_info({table})"))
        cols = ", ".join(c[1] for c in info)
        key = ", ".join(c[1] for c in sorted((c for c in info if c[5]), key=lambda c: c[5]))
        union = " UNION ALL ".join(f"SELECT {cols} FROM {n}.{table}" for n in names)
        # A compound ORDER BY on the key each side is stored in: SQLite merges the sides.
        conn.execute(f"INSERT INTO main.{table} ({cols}) {union} ORDER BY {key}")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    conn.close()
    return time.process_time() - t


def _digest(db: Path) -> str:
    """Every projection table's rows in key order, hashed."""
    conn = apsw.Connection(str(db))
    h = hashlib.sha256()
    for table in _tables():
        cols = ", ".join(c[1] for c in conn.execute(f"PRAGMA main.table_info({table})"))
        for row in conn.execute(f"SELECT {cols} FROM {table} ORDER BY {cols}"):
            h.update(repr(row).encode())
    conn.close()
    return h.hexdigest()


def _copy(src: Path, dst: Path) -> None:
    for ext in ("", "-wal", "-shm"):
        if Path(f"{src}{ext}").exists():
            shutil.copy(f"{src}{ext}", f"{dst}{ext}")


def parallel(db: Path, workdir: Path, workers: int) -> tuple[int, float, float, list[float], float]:
    """(events, wall s, merge CPU s, each worker's CPU s, critical-path CPU s)."""
    scratches = [workdir / f"part-{i}.db" for i in range(workers)]
    for s in scratches:
        for ext in ("", "-wal", "-shm"):
            Path(f"{s}{ext}").unlink(missing_ok=True)
    w = time.perf_counter()
    procs = [_python(_WORKER, str(db), str(s), str(i), str(workers)) for i, s in enumerate(scratches)]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    merge = _merge(db, scratches)
    wall = time.perf_counter() - w
    cpus = [float(o[1]) for o in outs]
    return sum(int(o[0]) for o in outs), wall, merge, cpus, max(cpus) + merge


def single(db: Path) -> tuple[int, float, float]:
    """(events, CPU s, wall s) of ``rebuild_projections`` in a fresh process."""
    p = _python(_REBUILD, str(db))
    n, cpu, wall = json.loads(p.communicate()[0])
    return int(n), float(cpu), float(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--log", type=Path, help="a store to copy instead of generating --events")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rebuild-parallel-") as tmp:
        workdir = Path(tmp)
        source = workdir / "source.db"
        if args.log is None:
            _generate(source, args.events)
        else:
            _copy(args.log, source)
        ours, theirs = workdir / "single.db", workdir / "parallel.db"
        _copy(source, ours)
        _copy(source, theirs)
        for _ in range(args.repeats):  # alternating, each on its own copy
            n, cpu, wall = single(ours)
            print(
                f"one process: {n:,} events, CPU {cpu:.2f} s ({n / cpu:,.0f}/s), "
                f"wall {wall:.2f} s ({n / wall:,.0f}/s)"
            )
            n, wall, merge, cpus, path = parallel(theirs, workdir, args.workers)
            each = ", ".join(f"{c:.2f}" for c in cpus)
            print(
                f"{args.workers} processes: {n:,} events, wall {wall:.2f} s ({n / wall:,.0f}/s); "
                f"workers CPU {each} s, merge CPU {merge:.2f} s; "
                f"critical path {path:.2f} s ({n / path:,.0f}/s)"
            )
        same = _digest(ours) == _digest(theirs)
        print(f"projection tables byte-identical to rebuild_projections: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
