"""The WAL file stays bounded with several writer processes, and comes back after a long reader.

Issue 20, item 3: with two or more writer processes SQLite's passive auto-checkpoint never
got to restart the WAL, which grew by hundreds of MB a second. The store's checkpoint
policy (forkline_es/log/checkpoint.py) keeps ``runs.db-wal`` under 64 MiB while no reader
is older than a second, and brings it back under 64 MiB within 5 s of a long reader ending.
The writers are real processes; this process samples the WAL file's size every millisecond.
"""

from __future__ import annotations

import time
from pathlib import Path

from forkline_es.testing.processes import SnapshotReader, StepWriters, wal_size

BOUND = 64 * 1024 * 1024


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
    with StepWriters(db, 4) as writers:
        peak = _peak(db, 2.5)
        assert min(writers.stop()) > 0  # every writer got to write
    assert peak < BOUND, f"-wal reached {peak / 2**20:.0f} MiB"


def test_the_wal_is_back_under_64_mib_within_5_s_of_a_long_reader_ending(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with StepWriters(db, 4) as writers:
        with SnapshotReader(db) as reader:
            held = _peak(db, 2.0)  # a snapshot older than a second: the WAL may grow past the bound
            reader.release()
            released = time.monotonic()
            while wal_size(db) >= BOUND and time.monotonic() - released < 5.0:
                time.sleep(0.001)
            after = wal_size(db)
        assert min(writers.stop()) > 0  # the writers went on meanwhile
    assert after < BOUND, (
        f"-wal still {after / 2**20:.0f} MiB 5 s after the reader ended "
        f"(it reached {held / 2**20:.0f} MiB while the reader held its snapshot)"
    )
