"""``RunRecorder.log_event``: forkline_es beside Forkline 0.5.0's own RunRecorder.

Workloads (both sides): a fresh database file in the same directory, one run, N events, one
``log_event`` call per event, each acknowledged only once committed. Both sides redact with
their default policy, as a user gets them. Two payloads: the small one the target is set on
(``{"prompt": "hello", "i": i}``, type ``input``), and an LLM call as an agent runtime logs
it (type ``llm.request``: model, a system and a user message of about 1 KB of prose,
temperature, ``max_tokens``), where redaction has real text to scan.

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


def small(n: int) -> list[dict[str, Any]]:
    return [{"prompt": "hello", "i": i} for i in range(n)]


_TICKET: Final = (
    "Customer reports that the nightly export job fails with error E-4012 after the upgrade to "
    "version 3.8. The job reads about two million rows from the orders table, writes Parquet "
    "files to the shared bucket and then notifies the finance channel. Since Tuesday the job "
    "stops after roughly forty minutes; the log shows a timeout while waiting for the bucket "
    "to acknowledge a multipart upload, followed by a retry that never completes. The customer "
    "already raised the upload timeout to ten minutes and reduced the part size, without any "
    "change. They ask whether the new retry policy in 3.8 could keep the first upload open, "
    "and whether they can pin the previous policy until a fix ships. Their account manager "
    "notes this is the third escalation this quarter and that the renewal is due next month. "
)


def llm_calls(n: int) -> list[dict[str, Any]]:
    return [
        {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "Summarize the ticket in two sentences; keep error codes."},
                {"role": "user", "content": f"Ticket #{i}: {_TICKET}"},
            ],
            "temperature": 0.2,
            "max_tokens": 256,
        }
        for i in range(n)
    ]


Payloads = Callable[[int], list[dict[str, Any]]]
#: (label, event type, payloads): the workloads, the target's first.
WORKLOADS: Final[tuple[tuple[str, str, Payloads], ...]] = (
    ("events", "input", small),
    ("LLM-call events (~1 KB of prose each)", "llm.request", llm_calls),
)


def _record(recorder: Any, event_type: str, payloads: list[dict[str, Any]]) -> Trial:
    """One run, one ``log_event`` call per payload, timed (the same code drives both recorders)."""
    run_id = recorder.start_run("bench.py")
    log = recorder.log_event
    with Timer() as t:
        for p in payloads:
            log(run_id, event_type, p)
    return Trial(len(payloads), t.seconds)


def ours(workdir: Path, event_type: str, payloads: list[dict[str, Any]], durability: Durability) -> Trial:
    with fe.RunRecorder(workdir / f"ours-{next(_files)}.db", durability=durability) as recorder:
        return _record(recorder, event_type, payloads)


def theirs(workdir: Path, event_type: str, payloads: list[dict[str, Any]], recorder_class: Any) -> Trial:
    return _record(recorder_class(db_path=str(workdir / f"forkline-{next(_files)}.db")), event_type, payloads)


_RAW_DDL: Final = "CREATE TABLE event (id INTEGER PRIMARY KEY, run_id TEXT, ts TEXT, type TEXT, payload TEXT)"
_RAW_INSERT: Final = "INSERT INTO event (run_id, ts, type, payload) VALUES (?, ?, ?, ?)"


def raw(workdir: Path, event_type: str, payloads: list[dict[str, Any]], durability: Durability) -> Trial:
    """The ceiling: one plain INSERT per transaction, values built before the clock."""
    conn = apsw.Connection(str(workdir / f"raw-{next(_files)}.db"))
    conn.execute("PRAGMA journal_mode = WAL").fetchall()  # fetch: apsw runs statements lazily
    conn.execute(f"PRAGMA wal_autocheckpoint = {checkpoint_frames(durability)}")  # as the store's
    conn.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")
    conn.execute("PRAGMA cache_size = -16000")
    conn.execute(_RAW_DDL)
    ts = dt.datetime.now(dt.UTC).isoformat()
    return commit_each(conn, _RAW_INSERT, [("run-1", ts, event_type, json.dumps(p)) for p in payloads])


def _row(
    workload: str,
    mine: list[float],
    peers: list[float],
    durability: str,
    note: str,
    target: float | None,
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
    out: list[Row] = []
    for index, (label, event_type, make) in enumerate(WORKLOADS):
        out += _workload_rows(
            workdir, n, repeats, label, event_type, make(n), target=TARGET if index == 0 else None
        )
    return out


def _workload_rows(
    workdir: Path,
    n: int,
    repeats: int,
    label: str,
    event_type: str,
    payloads: list[dict[str, Any]],
    target: float | None,
) -> list[Row]:
    workload = f"RunRecorder.log_event, 1 run x {n:,} {label}"
    ceiling = f"ceiling: raw apsw, one INSERT per transaction, 1 run x {n:,} {label}"
    peer = _forkline_recorder()
    full: Callable[[], Trial] = lambda: ours(workdir, event_type, payloads, "full")  # noqa: E731
    normal: Callable[[], Trial] = lambda: ours(workdir, event_type, payloads, "normal")  # noqa: E731
    raw_full: Callable[[], Trial] = lambda: raw(workdir, event_type, payloads, "full")  # noqa: E731
    raw_normal: Callable[[], Trial] = lambda: raw(workdir, event_type, payloads, "normal")  # noqa: E731
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
        "peer": lambda: theirs(workdir, event_type, payloads, peer),
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
        _row(workload, rates["full"], peers, "full", "both power-loss durable", target),
        _row(
            workload,
            rates["normal"],
            peers,
            "normal vs FULL",
            "ours crash-durable only, for information",
            target,
        ),
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
