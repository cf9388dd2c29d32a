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

Ceiling rows: plain apsw, one ``BEGIN IMMEDIATE``/``INSERT``/``COMMIT`` per event into a
fresh file with a minimal table ``(id INTEGER PRIMARY KEY, run_id TEXT, ts TEXT, type TEXT,
payload TEXT)``, WAL with the store's pragmas, at ``synchronous=FULL`` and at ``NORMAL``;
the values (payload as JSON, timestamp) are built before the clock starts. Any recorder
that commits each event to SQLite does at least this work, so their ratio against Forkline
is the highest any such recorder could reach on this disk at that durability (the ceiling
for the 30x target); the note says what fraction of that ceiling ours reaches, pair by
pair.

Each repetition runs Forkline, ours (full), ours (normal), raw (full) and raw (normal),
starting one later in the list each time, so all five see the same disk and noise; every
row's ratio is taken pair by pair against the Forkline trial of the same repetition.
Forkline is the ``bench`` extra (``pip install 'forkline-es[bench]'``); when it cannot be
imported the rows say "not installed" and carry no ratio.

Part of ``benchmarks/append.py`` (``python -m benchmarks.append [--quick]``), whose table
these rows join.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import apsw

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, commit_each, single, spread
from forkline_es.log.connection import Durability, checkpoint_frames

__all__ = ["rows"]

TARGET: Final = 30.0
PEER: Final = "forkline 0.5.0"
_files = itertools.count()


def _forkline_recorder() -> Any | None:
    """Forkline's RunRecorder class, or None when the bench extra is not installed."""
    try:
        from forkline.storage.recorder import RunRecorder  # type: ignore[import-untyped]
    except ImportError:
        return None
    return RunRecorder


def _payloads(n: int) -> list[dict[str, Any]]:
    return [{"prompt": "hello", "i": i} for i in range(n)]


def _record(recorder: Any, n: int) -> Trial:
    """One run, ``n`` ``log_event`` calls timed (the same code drives both recorders)."""
    payloads = _payloads(n)
    run_id = recorder.start_run("bench.py")
    log = recorder.log_event
    with Timer() as t:
        for p in payloads:
            log(run_id, "input", p)
    return Trial(n, t.seconds)


def ours(workdir: Path, n: int, durability: Durability) -> Trial:
    with fe.RunRecorder(workdir / f"ours-{next(_files)}.db", durability=durability) as recorder:
        return _record(recorder, n)


def theirs(workdir: Path, n: int, recorder_class: Any) -> Trial:
    return _record(recorder_class(db_path=str(workdir / f"forkline-{next(_files)}.db")), n)


_RAW_DDL: Final = "CREATE TABLE event (id INTEGER PRIMARY KEY, run_id TEXT, ts TEXT, type TEXT, payload TEXT)"
_RAW_INSERT: Final = "INSERT INTO event (run_id, ts, type, payload) VALUES (?, ?, ?, ?)"


def raw(workdir: Path, n: int, durability: Durability) -> Trial:
    """The ceiling: one plain INSERT per transaction, values built before the clock."""
    conn = apsw.Connection(str(workdir / f"raw-{next(_files)}.db"))
    conn.execute("PRAGMA journal_mode = WAL").fetchall()  # fetch: apsw runs statements lazily
    conn.execute(f"PRAGMA wal_autocheckpoint = {checkpoint_frames(durability)}")  # as the store's
    conn.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")
    conn.execute("PRAGMA cache_size = -16000")
    conn.execute(_RAW_DDL)
    ts = dt.datetime.now(dt.UTC).isoformat()
    return commit_each(conn, _RAW_INSERT, [("run-1", ts, "input", json.dumps(p)) for p in _payloads(n)])


def _row(
    workload: str,
    mine: list[float],
    peers: list[float],
    durability: str,
    note: str,
    target: float | None = TARGET,
) -> Row:
    return Row(
        workload=workload,
        ours=statistics.median(mine),
        theirs=statistics.median(peers),
        peer=PEER,
        unit="events/s",
        spread=spread(mine),
        theirs_spread=spread(peers),
        ratio=statistics.median(o / t for o, t in zip(mine, peers, strict=True)),
        durability=durability,
        repeats=len(mine),
        target=target,
        note=note,
    )


def _share(mine: list[float], ceiling: list[float]) -> str:
    """Ours as a fraction of the ceiling, the median of the per-repetition ratios."""
    return f"ours reaches {statistics.median(o / c for o, c in zip(mine, ceiling, strict=True)):.2f} of it"


def rows(quick: bool, workdir: Path) -> list[Row]:
    n, repeats = (1_000, 1) if quick else (10_000, 3)
    workload = f"RunRecorder.log_event, 1 run x {n:,} events"
    ceiling = f"ceiling: raw apsw, one INSERT per transaction, 1 run x {n:,} events"
    peer = _forkline_recorder()
    full: Callable[[], Trial] = lambda: ours(workdir, n, "full")  # noqa: E731
    normal: Callable[[], Trial] = lambda: ours(workdir, n, "normal")  # noqa: E731
    raw_full: Callable[[], Trial] = lambda: raw(workdir, n, "full")  # noqa: E731
    raw_normal: Callable[[], Trial] = lambda: raw(workdir, n, "normal")  # noqa: E731
    if peer is None:
        note = f"{PEER} not installed: pip install 'forkline-es[bench]'"
        return [
            single(workload, full, repeats, durability="full", note=note),
            single(workload, normal, repeats, durability="normal", note=note),
            single(ceiling, raw_full, repeats, durability="full", note=note),
            single(ceiling, raw_normal, repeats, durability="normal", note=note),
        ]
    rates: dict[str, list[float]] = {"peer": [], "full": [], "normal": [], "raw full": [], "raw normal": []}
    trials: dict[str, Callable[[], Trial]] = {
        "peer": lambda: theirs(workdir, n, peer),
        "full": full,
        "normal": normal,
        "raw full": raw_full,
        "raw normal": raw_normal,
    }
    names = list(trials)
    for i in range(repeats):
        for name in names[i % len(names) :] + names[: i % len(names)]:  # rotate who goes first
            rates[name].append(trials[name]().rate)
    peers = rates["peer"]
    return [
        _row(workload, rates["full"], peers, "full", "both power-loss durable"),
        _row(workload, rates["normal"], peers, "normal vs FULL", "ours crash-durable only, for information"),
        *(
            _row(
                ceiling,
                rates[f"raw {level}"],
                peers,
                sync,
                f"best ratio any recorder committing each event can reach at {level.upper()}; "
                + _share(rates[level], rates[f"raw {level}"]),
                target=None,
            )
            for level, sync in (("full", "full"), ("normal", "normal vs FULL"))
        ),
    ]
