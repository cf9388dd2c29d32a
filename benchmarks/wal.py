"""The WAL's size under many writer processes, and after a long reader lets go.

Each writer process opens its own store and records steps (``begin_step``, one commit
each) into its own run until a stop file appears; the parent samples the size of
``runs.db-wal`` every millisecond or so and reports the largest it saw. The bound the
store keeps (docs/architecture.md, The WAL) is 64 MiB with any number of writers and no
reader older than a second. A second scenario keeps a reader process's snapshot open for
a while among 4 writers, then ends it, and reports how long the WAL took to come back
under the bound while the writers go on.

A run that passes ``_CAP`` stops early (on a store without the bound the WAL grows by
hundreds of MB a second); its figure then reads as at least the cap.

    python -m benchmarks.wal [--quick]
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from benchmarks._harness import Row
from forkline_es.testing.processes import SnapshotReader, StepWriters, wal_size

__all__ = ["BOUND", "main", "run"]

_files = itertools.count()

#: The bound the store keeps on its WAL file.
BOUND: Final = 64 * 1024 * 1024
#: Stop a run whose WAL passed this: a store without the bound would fill the disk.
_CAP: Final = 2 * 1024 * 1024 * 1024
_MIB: Final = 1024 * 1024


def _watch(path: Path, seconds: float, also: Callable[[float], None] | None = None) -> int:
    """The largest WAL size seen in ``seconds`` (stops early past the cap)."""
    peak = 0
    start = time.monotonic()
    while (now := time.monotonic()) - start < seconds and peak < _CAP:
        peak = max(peak, wal_size(path))
        if also is not None:
            also(now - start)
        time.sleep(0.001)
    return peak


def _writers(workdir: Path, n: int, seconds: float) -> tuple[int, float]:
    """(peak WAL bytes, events/s) of ``n`` writer processes recording for ``seconds``."""
    path = workdir / f"wal-{next(_files)}.db"
    with StepWriters(path, n) as writers:
        started = time.monotonic()
        peak = _watch(path, seconds)
        events = sum(writers.stop())
    return peak, events / (time.monotonic() - started)


def _long_reader(workdir: Path, hold: float, after: float) -> tuple[int, float | None]:
    """4 writers; a reader holds a snapshot for ``hold`` s, then ends it. Returns (peak WAL
    bytes while held, seconds from the release until the WAL was under the bound, or None)."""
    path = workdir / f"wal-{next(_files)}.db"
    back: float | None = None
    with StepWriters(path, 4) as writers, SnapshotReader(path) as reader:
        peak = _watch(path, hold)
        reader.release()
        released = time.monotonic()
        while time.monotonic() - released < after:
            if wal_size(path) < BOUND:
                back = time.monotonic() - released
                break
            time.sleep(0.001)
        writers.stop()
    return peak, back


def _mib(size: int) -> str:
    return f">= {_CAP // _MIB:,} (stopped)" if size >= _CAP else f"{size / _MIB:,.1f}"


def run(quick: bool, workdir: Path) -> list[Row]:
    seconds = 2.0 if quick else 10.0
    rows: list[Row] = []
    table = [f"{'writer processes':>16} | {'peak -wal MiB':>16} | {'events/s':>10}"]
    for n in (1, 2, 4, 8):
        peak, rate = _writers(workdir, n, seconds)
        table.append(f"{n:>16} | {_mib(peak):>16} | {rate:>10,.0f}")
        rows.append(
            Row(
                workload=f"peak -wal size, {n} writer process(es) x {seconds:.0f} s",
                ours=peak / _MIB,
                theirs=None,
                peer=None,
                unit="MiB",
                spread=0.0,
                note=f"bound 64 MiB; {rate:,.0f} events/s in all",
            )
        )
    hold = 3.0 if quick else 20.0
    peak, back = _long_reader(workdir, hold, 10.0)
    after = f"{back:.2f} s" if back is not None else "not within 10 s"
    table.append(
        f"reader held {hold:.0f} s among 4 writers: peak {_mib(peak)} MiB; under 64 MiB {after} after"
    )
    rows.append(
        Row(
            workload=f"peak -wal size, a reader holding its snapshot {hold:.0f} s among 4 writers",
            ours=peak / _MIB,
            theirs=None,
            peer=None,
            unit="MiB",
            spread=0.0,
            note=f"back under 64 MiB {after} the reader ended (bound: 5 s)",
        )
    )
    print("\n".join(table), file=sys.stderr)
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("wal")


if __name__ == "__main__":
    main()
