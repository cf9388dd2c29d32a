"""A fleet on one PostgreSQL database: real processes, as executors on many hosts would be.

Eight writer processes record runs of their own, two processes fence on one shared run
(both hold a handle at the same seq, both append: one wins, the stale one gets
``fe.Conflict``), a retention process evicts old runs, and two completion-feed consumers
follow the feed and acknowledge as they go, all at once. Afterwards nothing is lost or
duplicated (every run's events counted, seqs contiguous) and each consumer saw every
completion exactly once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Final

import forkline_es as fe

WRITERS: Final = 8
STEPS: Final = 30  # per writer: start, 30 begin/end pairs, conclude
ROUNDS: Final = 12  # of the fencing pair
OLD: Final = 10  # concluded runs the retention process evicts

_WRITER: Final = """
import sys, forkline_es as fe
dsn, who, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
with fe.Store.open(dsn) as store:
    run = store.start_run("fleet", run_id=f"w{who}", inputs={"who": who})
    for i in range(steps):
        run.begin_step(f"s/{i}", arguments={"i": i, "f": i / 3})
        run.end_step(f"s/{i}", "succeeded", result={"i": i})
    run.conclude("succeeded")
print("done", flush=True)
"""

_FENCER: Final = """
import sys, forkline_es as fe
dsn, who = sys.argv[1], sys.argv[2]
with fe.Store.open(dsn) as store:
    for line in sys.stdin:
        command, n = line.split()
        if command == "resume":
            run = store.resume_run("shared")
            print("ready", flush=True)
        else:
            try:
                run.begin_step(f"{who}/{n}")
                print("ok", flush=True)
            except fe.Conflict:
                print("conflict", flush=True)
"""

_RETENTION: Final = """
import sys, forkline_es as fe
dsn, count = sys.argv[1], int(sys.argv[2])
with fe.Store.open(dsn) as store:
    for i in range(count):
        store.evict_run(f"old-{i}", reason="fleet retention")
print("done", flush=True)
"""

_CONSUMER: Final = """
import json, sys, time
import forkline_es as fe
dsn, name, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = []
deadline = time.monotonic() + 240
with fe.Store.open(dsn) as store:
    while len(seen) < expected and time.monotonic() < deadline:
        batch = store.completions(name, limit=3)
        seen += [c.run_id for c in batch]
        if batch:
            store.acknowledge(name, batch[-1].position)
        else:
            time.sleep(0.02)
    time.sleep(0.5)  # anything delivered twice would come now
    seen += [c.run_id for c in store.completions(name)]
print(json.dumps(seen), flush=True)
"""


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def ask(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def finished(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"a fleet process failed (exit {proc.returncode})"
    return out.strip().splitlines()[-1]


def test_a_fleet_of_processes_loses_nothing_duplicates_nothing_and_fences_the_stale_handle(
    pg_dsn: str, tmp_path: Path
) -> None:
    with fe.Store.open(pg_dsn, artifacts=tmp_path / "artifacts") as store:
        for i in range(OLD):
            store.start_run("old", run_id=f"old-{i}").conclude("succeeded")
        store.start_run("fleet", run_id="shared")
        for name in ("c1", "c2"):
            store.register_consumer(name, since="now")  # the old runs are before it
    expected = sorted([f"w{i}" for i in range(WRITERS)] + ["shared"])
    consumers = [spawn(_CONSUMER, pg_dsn, name, str(len(expected))) for name in ("c1", "c2")]
    fencers = [spawn(_FENCER, pg_dsn, who) for who in ("a", "b")]
    retention = spawn(_RETENTION, pg_dsn, str(OLD))
    writers = [spawn(_WRITER, pg_dsn, str(i), str(STEPS)) for i in range(WRITERS)]
    try:
        wins = Counter[str]()
        for n in range(ROUNDS):
            for f in fencers:
                ask(f, f"resume {n}")
            assert [answer(f) for f in fencers] == ["ready", "ready"]  # both at the same seq
            for f in fencers:
                ask(f, f"go {n}")
            results = [answer(f) for f in fencers]
            assert sorted(results) == ["conflict", "ok"], results  # the stale one is fenced
            wins[("a", "b")[results.index("ok")]] += 1
        for f in fencers:
            f.stdin.close()  # type: ignore[union-attr]
            f.wait(timeout=60)
            assert f.returncode == 0
        assert [finished(w) for w in writers] == ["done"] * WRITERS
        assert finished(retention) == "done"
        with fe.Store.open(pg_dsn, artifacts=tmp_path / "artifacts") as store:
            store.resume_run("shared").conclude("succeeded")
        seen = [json.loads(finished(c)) for c in consumers]
    finally:
        for p in (*consumers, *fencers, retention, *writers):
            if p.poll() is None:
                p.kill()
                p.wait()
    for run_ids in seen:
        assert sorted(run_ids) == expected  # every completion, each exactly once
    with fe.Store.open(pg_dsn, artifacts=tmp_path / "artifacts") as store:
        rows = store.backend.cursor().execute("SELECT run_id, seq FROM log ORDER BY run_id, seq").fetchall()
        by_run: dict[str, list[int]] = {}
        for run_id, seq in rows:
            by_run.setdefault(run_id, []).append(seq)
        assert sorted(by_run) == expected  # the old runs are evicted, nothing else is
        for i in range(WRITERS):
            assert by_run[f"w{i}"] == list(range(1, 2 * STEPS + 3))
        assert by_run["shared"] == list(range(1, ROUNDS + 3))  # start, a win a round, conclude
        shared = store.get_run_record("shared")
        assert sorted(p.split("/")[0] for p in shared["steps"]) == sorted(wins.elements())
        assert sorted(e["run_id"] for e in store.evictions()) == sorted(f"old-{i}" for i in range(OLD))
        positions = [p for (p,) in store.backend.cursor().execute("SELECT position FROM log").fetchall()]
        assert len(positions) == len(set(positions))
        assert store.check_projections() == []
        assert all(r.ok for r in store.verify_all())
