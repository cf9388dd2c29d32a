"""``RunRecorder.log_event``: forkline_es beside Forkline 0.5.0's own RunRecorder.

Workload (both sides): a fresh database file in the same directory, one run, N small events
(``{"prompt": "hello", "i": i}``, type ``input``), one ``log_event`` call per event, each
acknowledged only once committed. Both sides redact with their default policy, as a user
gets them.

Durability, read from Forkline 0.5.0's installed source (forkline/storage/recorder.py):
every call opens a new ``sqlite3`` connection and commits in ``with conn:``, in SQLite's
default rollback-journal mode (``journal_mode=DELETE``) with the default
``synchronous=FULL``: an acknowledged event survives a power loss. The fair row therefore
runs ours with ``durability="full"`` (WAL, ``synchronous=FULL``: one fsync per commit); the
second row is our default (``normal``: survives a crash or kill of the process, not a power
loss) against the same Forkline trials, for information.

Trials alternate Forkline, ours (full), ours (normal), so all three see the same disk and
noise; ratios are taken pair by pair. Forkline is the ``bench`` extra
(``pip install 'forkline-es[bench]'``); when it cannot be imported the rows say
"not installed" and carry no ratio.

    python -m benchmarks.forkline_recorder [--quick]
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, single
from forkline_es.log.connection import Durability

__all__ = ["main", "run"]

TARGET: Final = 30.0
PEER: Final = "forkline 0.5.0"
_files = itertools.count()


def _forkline_recorder() -> Any | None:
    """Forkline's RunRecorder class, or None when the bench extra is not installed."""
    try:
        from forkline.storage.recorder import RunRecorder
    except ImportError:
        return None
    return RunRecorder


def _payloads(n: int) -> list[dict[str, Any]]:
    return [{"prompt": "hello", "i": i} for i in range(n)]


def ours(workdir: Path, n: int, durability: Durability) -> Trial:
    payloads = _payloads(n)
    with fe.RunRecorder(workdir / f"ours-{next(_files)}.db", durability=durability) as recorder:
        run_id = recorder.start_run("bench.py")
        log = recorder.log_event
        with Timer() as t:
            for p in payloads:
                log(run_id, "input", p)
    return Trial(n, t.seconds)


def theirs(workdir: Path, n: int, recorder_class: Any) -> Trial:
    payloads = _payloads(n)
    recorder = recorder_class(db_path=str(workdir / f"forkline-{next(_files)}.db"))
    run_id = recorder.start_run("bench.py")
    log = recorder.log_event
    with Timer() as t:
        for p in payloads:
            log(run_id, "input", p)
    return Trial(n, t.seconds)


def _spread(values: list[float]) -> float:
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else 0.0


def _row(workload: str, mine: list[float], peers: list[float], durability: str, note: str) -> Row:
    return Row(
        workload=workload,
        ours=statistics.median(mine),
        theirs=statistics.median(peers),
        peer=PEER,
        unit="events/s",
        spread=_spread(mine),
        theirs_spread=_spread(peers),
        ratio=statistics.median(o / t for o, t in zip(mine, peers, strict=True)),
        durability=durability,
        repeats=len(mine),
        target=TARGET,
        note=note,
    )


def run(quick: bool, workdir: Path) -> list[Row]:
    n, repeats = (1_000, 1) if quick else (10_000, 3)
    workload = f"RunRecorder.log_event, 1 run x {n:,} events"
    peer = _forkline_recorder()
    full: Callable[[], Trial] = lambda: ours(workdir, n, "full")  # noqa: E731
    normal: Callable[[], Trial] = lambda: ours(workdir, n, "normal")  # noqa: E731
    if peer is None:
        note = f"{PEER} not installed: pip install 'forkline-es[bench]'"
        return [
            single(workload, full, repeats, durability="full", note=note),
            single(workload, normal, repeats, durability="normal", note=note),
        ]
    peers: list[float] = []
    mine_full: list[float] = []
    mine_normal: list[float] = []
    for _ in range(repeats):
        peers.append(theirs(workdir, n, peer).rate)
        mine_full.append(full().rate)
        mine_normal.append(normal().rate)
    return [
        _row(workload, mine_full, peers, "full", "both power-loss durable"),
        _row(workload, mine_normal, peers, "normal vs FULL", "ours crash-durable only, for information"),
    ]


def main() -> None:
    from benchmarks.run import standalone

    standalone("forkline_recorder")


if __name__ == "__main__":
    main()
