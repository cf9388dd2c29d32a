"""The WAL file stays bounded with several writer processes, and comes back after a long reader.

Issue 20, item 3: with two or more writer processes SQLite's passive auto-checkpoint never
got to restart the WAL, which grew by hundreds of MB a second. The store's checkpoint
policy (forkline_es/log/checkpoint.py) keeps ``runs.db-wal`` under 64 MiB while no reader
is older than a second, and brings it back under 64 MiB within 5 s of a long reader ending.
The writers are real processes; this process samples the WAL file's size every millisecond.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import forkline_es as fe
from forkline_es.testing.processes import SnapshotReader, wal_size

BOUND = 64 * 1024 * 1024

_WRITER = """
import os, sys
import forkline_es as fe
path, who, stop = sys.argv[1], sys.argv[2], sys.argv[3]
with fe.Store.open(path) as store:
    run = store.start_run(workflow="wal/bound", run_id=f"writer-{who}")
    print("ready", flush=True)
    i = 0
    while not os.path.exists(stop):
        run.begin_step(f"s/{i}", arguments={"i": i, "text": "x" * 64})
        i += 1
    print(i, flush=True)
"""

@contextmanager
def _writers(db: Path, n: int) -> Iterator[list[subprocess.Popen[str]]]:
    """``n`` writer processes recording into ``db`` (each ready) until the block ends."""
    fe.Store.open(db).close()
    stop = db.with_suffix(".stop")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db), str(w), str(stop)], stdout=subprocess.PIPE, text=True
        )
        for w in range(n)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "ready"
        yield procs
        stop.touch()
        counts = [int(p.communicate(timeout=60)[0].split()[-1]) for p in procs]
        assert all(p.returncode == 0 for p in procs)
        assert min(counts) > 0  # every writer got to write
    finally:
        stop.touch()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _peak(db: Path, seconds: float) -> int:
    """The largest WAL size seen in ``seconds``; stops as soon as it passes the bound."""
    peak = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and peak < BOUND:
        peak = max(peak, wal_size(db))
        time.sleep(0.001)
    return peak


def test_four_writer_processes_keep_the_wal_under_64_mib(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with _writers(db, 4):
        peak = _peak(db, 2.5)
    assert peak < BOUND, f"-wal reached {peak / 2**20:.0f} MiB"


def test_the_wal_is_back_under_64_mib_within_5_s_of_a_long_reader_ending(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with _writers(db, 4):
        with SnapshotReader(db) as reader:
            held = _peak(db, 2.0)  # a snapshot older than a second: the WAL may grow past the bound
            reader.release()
            released = time.monotonic()
            while wal_size(db) >= BOUND and time.monotonic() - released < 5.0:
                time.sleep(0.001)
            after = wal_size(db)
        assert after < BOUND, (
            f"-wal still {after / 2**20:.0f} MiB 5 s after the reader ended "
            f"(it reached {held / 2**20:.0f} MiB while the reader held its snapshot)"
        )
