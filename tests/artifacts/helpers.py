"""A recorded run with every kind of evidence verify checks, raw-SQL tampering, and counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

import forkline_es as fe

DEFINITION = "sha256:" + "d" * 64
COMMIT = "0" * 40


def record_sample(store: fe.Store, tmp: Path, run_id: str = "r1", workflow: str = "wf") -> fe.Run:
    """Steps with payloads, two artifacts (bytes and a file), a manifest, observations."""
    run = store.start_run(workflow, inputs={"n": 1}, pins={"definition": DEFINITION}, run_id=run_id)
    run.begin_step("fetch", arguments={"url": "https://example.org"})
    run.invoke("fetch", 1, "http.get", "sha256:" + "a" * 64, "not-dispatched", arguments=[1, 2])
    run.result("fetch", 1, "succeeded", result={"status": 200})
    run.end_step("fetch", "succeeded", result="ok")
    run.add_artifact(f"trace of {run_id}".encode(), "trace", content_type="text/plain", name="trace.txt")
    source = tmp / f"report-{run_id}.json"
    source.write_bytes(b'{"score": 0.9, "run": "' + run_id.encode() + b'"}')
    run.add_artifact(source, "report", step="fetch")
    run.record_manifest(config={"lr": 0.1}, git_commit=COMMIT, seed=7)
    run.observe("latency_ms", 12.5, unit="ms")
    run.conclude("succeeded", outputs={"done": True})
    return run


def untrigger(store: fe.Store) -> None:
    """What an attacker with the file does first: go around the append-only triggers. Here
    they are turned off for the store's own connection only (SQLITE_DBCONFIG_ENABLE_TRIGGER),
    which leaves the schema as it was: nothing in the file says it happened."""
    store.conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)


def drop_triggers(store: fe.Store) -> list[str]:
    """The other way round them: drop every trigger of the file (verify reports each one)."""
    names = [str(n) for (n,) in store.conn.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'")]
    for name in names:
        store.conn.execute(f"DROP TRIGGER {name}")
    return names


def row(store: fe.Store, run_id: str, kind: str) -> tuple[int, int, str]:
    """(position, seq, body) of the run's first row of ``kind``."""
    rows = store.conn.execute(
        "SELECT position, seq, body FROM log WHERE run_id = ? AND kind = ? ORDER BY seq", (run_id, kind)
    ).fetchall()
    assert rows, kind
    position, seq, body = rows[0]
    return int(position), int(seq), str(body)


def kinds_at(report: fe.VerifyReport) -> list[tuple[str, Any]]:
    return [(p.kind, p.seq) for p in report.problems]


def relink(store: fe.Store, run_id: str) -> None:
    """What a careful attacker does after editing rows: recompute every digest and link of the run."""
    from forkline_es.log.rows import row_digest

    prev: str | None = None
    rows = store.conn.execute(
        "SELECT position, run_id, seq, entry, generation, kind, at, key, body FROM log "
        "WHERE run_id = ? ORDER BY seq",
        (run_id,),
    ).fetchall()
    for position, rid, seq, entry, gen, kind, at, key, body in rows:
        digest = row_digest(rid, seq, entry, gen, kind, at, key, prev, body)
        store.conn.execute("UPDATE log SET digest = ?, prev = ? WHERE position = ?", (digest, prev, position))
        prev = digest


def log_rows(store: fe.Store) -> int:
    """How many events the log holds: a refused call leaves it as it was."""
    return int(store.backend.cursor().execute("SELECT count(*) FROM log").fetchall()[0][0])
