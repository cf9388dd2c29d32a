"""A reader in another process that holds a snapshot: what an operator's long query looks
like to writers, checkpoints and ``gc``.

The suite's WAL and gc tests and ``benchmarks/wal.py`` use it; an executor's own tests can
too (does my job keep going while someone reads?). It is a real process, not a thread:
SQLite's locks are per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["SnapshotReader", "wal_size"]

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
