"""Projections: rebuild throughput over a generated log, and get_run_record latency.

Rebuild: ``store.rebuild_projections()`` over a log of 1,000,000 events (``--quick``:
50,000), run in a fresh subprocess so that its peak RSS (VmHWM, ``_harness.peak_rss_kb``) is
the rebuild's own. Targets: >= 300,000 events/s and < 200 MB peak RSS. It is paired with two
floors, each a subprocess over the same file:

- "scan + msgspec decode": the bodies in position order, each decoded, nothing folded;
- "minimal fold floor": the columns a fold needs (position, run_id, seq, entry, generation,
  kind, body) in position order, each body decoded into its Struct, and one dict store per
  event that has a ``path``; nothing written. No Python fold of this log can run faster,
  so its rate bounds what any rebuild could reach here, whatever it writes.

Latency: ``get_run_record`` for runs of 10, 1,000 and 10,000 steps (target < 50 ms at
10,000). At 1,000 and 10,000 it is paired with a floor: ``msgspec.json.decode`` of that
run's ``export_run_record`` bytes (read once, before the clock) with the cyclic GC paused as
ours pauses it: the cost of merely materializing the document as Python dicts, with no
reading or rendering at all.

    python -m benchmarks.projections [--quick]
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Final

import msgspec

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, paired, single
from forkline_es._gc import gc_paused

__all__ = ["main", "run"]

_ARTIFACT: Final = "sha256:" + "ab" * 32

_REBUILD: Final = """
import json, sys, time
import forkline_es as fe
from forkline_es._gc import gc_paused
from benchmarks._harness import peak_rss_kb
store = fe.Store.open(sys.argv[1])
t = time.perf_counter()
n = store.rebuild_projections()
s = time.perf_counter() - t
print(json.dumps([n, s, peak_rss_kb()]))
"""

_SCAN: Final = """
import json, sys, time
import apsw, msgspec
from forkline_es.log.events import EventBody
from benchmarks._harness import peak_rss_kb
conn = apsw.Connection(sys.argv[1])
dec = msgspec.json.Decoder(EventBody)
t = time.perf_counter()
n = 0
for (body,) in conn.execute("SELECT body FROM log ORDER BY position"):
    dec.decode(body)
    n += 1
s = time.perf_counter() - t
print(json.dumps([n, s, peak_rss_kb()]))
"""

_FOLD: Final = """
import json, sys, time
import apsw, msgspec
from forkline_es.log.events import EventBody
from benchmarks._harness import peak_rss_kb
conn = apsw.Connection(sys.argv[1])
dec = msgspec.json.Decoder(EventBody)
state = {}
t = time.perf_counter()
n = 0
for position, run_id, seq, entry, generation, kind, body in conn.execute(
    "SELECT position, run_id, seq, entry, generation, kind, body FROM log ORDER BY position"
):
    event = dec.decode(body)
    path = getattr(event, "path", None)
    if path is not None:
        state.setdefault(run_id, {})[path] = (generation, kind, position)
    n += 1
s = time.perf_counter() - t
print(json.dumps([n, s, peak_rss_kb()]))
"""

#: The minimal fold writing the rows our rebuild writes, shaped as ours: one row per entry
#: event keyed by position, one row per step path written when its run concludes (the
#: bodies stand in for the rendered fragments, about as long), one transaction. Its tables
#: are dropped after the clock stops.
_FOLD_WRITE: Final = """
import json, sys, time
import apsw, msgspec
from forkline_es.log.events import EventBody, RunConcluded
from benchmarks._harness import peak_rss_kb
conn = apsw.Connection(sys.argv[1])
conn.execute("PRAGMA synchronous = NORMAL")
dec = msgspec.json.Decoder(EventBody)
state = {}
entries = []
t = time.perf_counter()
n = 0
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE floor_entry (position INTEGER PRIMARY KEY, doc TEXT NOT NULL)")
conn.execute(
    "CREATE TABLE floor_step (run_id TEXT NOT NULL, path TEXT NOT NULL, doc TEXT NOT NULL, "
    "PRIMARY KEY (run_id, path)) WITHOUT ROWID"
)
for position, run_id, seq, entry, generation, kind, body in conn.execute(
    "SELECT position, run_id, seq, entry, generation, kind, body FROM log ORDER BY position"
):
    event = dec.decode(body)
    path = getattr(event, "path", None)
    if path is not None:
        state.setdefault(run_id, {})[path] = body
    if entry is not None:
        entries.append((position, body))
        if len(entries) >= 5000:
            conn.executemany("INSERT INTO floor_entry (position, doc) VALUES (?, ?)", entries)
            entries.clear()
    if isinstance(event, RunConcluded):
        steps = state.pop(run_id, {})
        conn.executemany(
            "INSERT INTO floor_step (run_id, path, doc) VALUES (?, ?, ?)",
            [(run_id, p, d) for p, d in steps.items()],
        )
    n += 1
conn.executemany("INSERT INTO floor_entry (position, doc) VALUES (?, ?)", entries)
conn.execute("COMMIT")
s = time.perf_counter() - t
conn.execute("DROP TABLE floor_entry; DROP TABLE floor_step")
print(json.dumps([n, s, peak_rss_kb()]))
"""

#: Our rebuild's own SQL with none of its Python: the rebuild runs once untimed, every
#: statement and its bindings traced (``_trace.tracing``: one for each row of an ``executemany``),
#: then the same statements run again on the rebuilt file, in order, each run of one
#: INSERT as one ``executemany`` as the rebuild sends them: the log read in batches, the
#: drops, the entry and step view rows. The same rows in the same order with no read
#: decoded, folded or rendered: what any rebuild writing these rows spends at least.
_REPLAY_REBUILD: Final = """
import gc, json, sys, time
import forkline_es as fe
from forkline_es.log.connection import open_connection
from benchmarks._harness import peak_rss_kb
from benchmarks._trace import tracing
with fe.Store.open(sys.argv[1]) as store, tracing(store) as statements:
    n = store.rebuild_projections()
groups = []
for sql, bindings in statements:
    if groups and groups[-1][0] == sql and sql.startswith("INSERT "):
        groups[-1][1].append(bindings)
    else:
        groups.append((sql, [bindings]))
del statements
conn = open_connection(sys.argv[1], "normal")
cur = conn.cursor()
gc.disable()
t = time.perf_counter()
for sql, many in groups:
    if len(many) > 1:
        cur.executemany(sql, many)
    else:
        cur.execute(sql, many[0]).fetchall()
s = time.perf_counter() - t
conn.close()
print(json.dumps([n, s, peak_rss_kb()]))
"""


def _generate(path: Path, events: int) -> None:
    """Runs of 250 steps (begin, invoke, result, end: four events each), with small payloads."""
    with fe.Store.open(path) as store:
        done = 0
        while done < events:
            run = store.start_run("bench/projections", inputs={"n": done})
            done += 1
            for i in range(min(250, max(1, (events - done) // 4))):
                p = f"step/{i}"
                run.begin_step(p, arguments={"i": i})
                run.invoke(p, 1, "op", _ARTIFACT, "not-dispatched")
                run.result(p, 1, "succeeded", result=i)
                run.end_step(p, "succeeded")
                done += 4
            run.conclude("succeeded")
            done += 1


def _subprocess(script: str, db: Path, rss: list[int]) -> Trial:
    out = subprocess.run(
        [sys.executable, "-c", script, str(db)],
        capture_output=True,
        check=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    n, seconds, maxrss_kb = json.loads(out.stdout)
    rss.append(maxrss_kb)
    return Trial(n, seconds)


def _latency(workdir: Path, steps: int, repeats: int, floor: bool) -> Row:
    """get_run_record of one run of ``steps`` steps; ``floor``: paired with decode-only."""
    with fe.Store.open(workdir / f"latency-{steps}.db") as store:
        run = store.start_run("bench/latency", inputs={"steps": steps})
        for i in range(steps):
            run.begin_step(f"s/{i}", arguments={"i": i})
            run.end_step(f"s/{i}", "succeeded", result={"i": i})
        run.conclude("succeeded")
        data = store.export_run_record(run.id)
        seconds: list[float] = []
        floor_seconds: list[float] = []

        # Latency is until the call returns: each side keeps its result past the clock, so
        # freeing the 700,000 objects of the document (the caller's business, later) is
        # not charged to the read.
        def once() -> Trial:
            with Timer() as t:
                document = store.get_run_record(run.id)
            del document
            seconds.append(t.seconds)
            return Trial(1, t.seconds)

        def decode_only() -> Trial:
            # The collector kept out as ours keeps it: a young generation left full of the
            # document would make the next trial, ours or this one, pay for walking it.
            with Timer() as t, gc_paused(keep=True):
                document = msgspec.json.decode(data)
            del document
            floor_seconds.append(t.seconds)
            return Trial(1, t.seconds)

        workload = f"get_run_record, {steps:,} steps"
        if floor:
            row = paired(workload, once, decode_only, "decode-only floor", repeats, unit="reads/s")
        else:
            row = single(workload, once, repeats, unit="reads/s")
    ms = statistics.median(seconds) * 1000
    target = " (target < 50 ms)" if steps >= 10_000 else ""
    note = f"median {ms:.1f} ms per read{target}"
    if floor:
        floor_ms = statistics.median(floor_seconds) * 1000
        note += f"; floor {floor_ms:.1f} ms: decoding the {len(data) / 1e6:.1f} MB export bytes, GC kept out"
    return dataclasses.replace(row, note=note)


def run(quick: bool, workdir: Path) -> list[Row]:
    events = 50_000 if quick else 1_000_000
    repeats = 3 if quick else 1
    db = workdir / "projections.db"
    _generate(db, events)
    workload = f"rebuild_projections, {events:,} events"
    targets = "targets >= 300,000 events/s, < 200 MB"
    rows: list[Row] = []
    for script, peer, what in (
        (_SCAN, "scan + msgspec decode", "bodies decoded, nothing folded"),
        (_FOLD, "minimal fold floor", "7 columns, bodies decoded, a dict store per event, no writes"),
        (
            _FOLD_WRITE,
            "minimal fold + our rows",
            "the minimal fold writing one row per entry and one per step path, shaped as ours",
        ),
        (
            _REPLAY_REBUILD,
            "our rebuild's SQL alone",
            "our rebuild's own statements traced and run again, same rows, no fold or render",
        ),
    ):
        ours_rss: list[int] = []
        floor_rss: list[int] = []
        row = paired(
            workload,
            partial(_subprocess, _REBUILD, db, ours_rss),
            partial(_subprocess, script, db, floor_rss),
            peer,
            repeats,
        )
        note = (
            f"peak RSS {max(ours_rss) / 1024:.0f} MB (floor {max(floor_rss) / 1024:.0f} MB); "
            f"floor: {what}; {targets}"
        )
        rows.append(dataclasses.replace(row, note=note))
    rows += [_latency(workdir, n, 5 if n >= 10_000 else 20, floor=n >= 1_000) for n in (10, 1_000, 10_000)]
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("projections")


if __name__ == "__main__":
    main()
