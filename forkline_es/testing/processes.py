"""Other processes beside a store: writers that keep appending, and a reader that holds a
snapshot (an operator's long query), as writers, checkpoints and ``gc`` meet them.

The suite's WAL and gc tests and ``benchmarks/wal.py`` use them; an executor's own tests
can too (does my job keep going while someone reads?). They are real processes, not
threads: SQLite's locks are per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Final

from forkline_es.store import Store

__all__ = ["SnapshotReader", "StepWriters", "wal_size"]

# A read-write connection: a read-only one may read the file without the WAL's locks.
_READER: Final = """
import sys
import apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN")
conn.execute(f"SELECT count(*) FROM {sys.argv[2]}").fetchall()
print("holding", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
print("released", flush=True)
sys.stdin.readline()
"""

# Each writer records begin_step events, one commit each, on a run of its own.
_WRITER: Final = """
import os, sys
import forkline_es as fe
path, who, stop = sys.argv[1], sys.argv[2], sys.argv[3]
with fe.Store.open(path) as store:
    run = store.start_run(workflow="writers", run_id=f"writer-{who}")
    print("ready", flush=True)
    i = 0
    while not os.path.exists(stop):
        run.begin_step(f"s/{i}", arguments={"i": i, "text": "x" * 64})
        i += 1
    print(i, flush=True)
"""


def wal_size(db: str | os.PathLike[str]) -> int:
    """The size of ``db``'s WAL file now (0 when there is none)."""
    try:
        return os.stat(f"{os.fspath(db)}-wal").st_size
    except FileNotFoundError:
        return 0


class SnapshotReader:
    """``with SnapshotReader(db):`` a process holds a read snapshot of ``db`` (it has read
    ``table``) until ``release()`` or the end of the block."""

    def __init__(self, db: str | os.PathLike[str], table: str = "log") -> None:
        self._args = [sys.executable, "-c", _READER, os.fspath(Path(db)), table]
        self._proc: subprocess.Popen[str] | None = None
        self.held = False

    def __enter__(self) -> SnapshotReader:
        proc = subprocess.Popen(self._args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._proc = proc
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "holding":
            proc.kill()
            raise RuntimeError(f"the reader process did not take its snapshot (exit {proc.wait()})")
        self.held = True
        return self

    def release(self) -> None:
        """End the snapshot; returns once the reader has rolled back (it stays connected)."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None and self.held
        proc.stdin.write("\n")
        proc.stdin.flush()
        if proc.stdout.readline().strip() != "released":
            raise RuntimeError("the reader process did not end its snapshot")
        self.held = False

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            proc.communicate("\n\n", timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class StepWriters:
    """``with StepWriters(db, n) as writers:`` ``n`` processes append to ``db`` (each on its
    own run, one commit per event) from the moment the block starts until ``stop()`` or
    the end of the block."""

    def __init__(self, db: str | os.PathLike[str], n: int) -> None:
        self._db = os.fspath(db)
        self._stop = Path(f"{self._db}.stop")
        self._n = n
        self._procs: list[subprocess.Popen[str]] = []

    def __enter__(self) -> StepWriters:
        Store.open(self._db).close()  # the store exists before the writers race to create it
        self._stop.unlink(missing_ok=True)
        for who in range(self._n):
            args = [sys.executable, "-c", _WRITER, self._db, str(who), str(self._stop)]
            self._procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, text=True))
        for p in self._procs:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                self._end()
                raise RuntimeError(f"a writer process failed before it was ready (exit {p.wait()})")
        return self

    def stop(self) -> list[int]:
        """Stop every writer; how many events each recorded (RuntimeError if one failed)."""
        self._stop.touch()
        counts = []
        for p in self._procs:
            out, _ = p.communicate(timeout=120)
            if p.returncode != 0:
                raise RuntimeError(f"a writer process failed with exit status {p.returncode}")
            counts.append(int(out.split()[-1]))
        return counts

    def _end(self) -> None:
        self._stop.touch()
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._end()
