"""`forkline-es runs | show | step | log | rebuild` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
from click.testing import CliRunner

from forkline_es.cli import main


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_runs_lists_as_text_and_json(sample_db: Path) -> None:
    code, out = invoke("runs", "--db", str(sample_db))
    assert code == 0 and out.splitlines()[0].startswith("id\tworkflow\tstatus")
    code, out = invoke("runs", "--workflow", "ingest", "--json", "--db", str(sample_db))
    assert code == 0 and [s["id"] for s in json.loads(out)] == ["child"]


def test_show_step_and_log(sample_db: Path) -> None:
    code, out = invoke("show", "done", "--json", "--db", str(sample_db))
    assert code == 0 and json.loads(out)["run"]["status"] == "succeeded"
    code, out = invoke("show", "done", "--db", str(sample_db))
    assert code == 0 and "fetch/0" in out and "conclude" in out
    code, out = invoke("step", "done", "fetch/0", "--json", "--db", str(sample_db))
    assert code == 0 and json.loads(out)["outcome"] == "succeeded"
    code, out = invoke("step", "done", "fetch/0", "--db", str(sample_db))
    assert code == 0 and "withheld" in out
    code, out = invoke("log", "done", "--json", "--db", str(sample_db))
    events = json.loads(out)
    assert code == 0 and [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["kind"] == "run-started"


def test_refusals_exit_2_with_their_code(sample_db: Path) -> None:
    code, out = invoke("show", "nope", "--db", str(sample_db))
    assert code == 2 and "run-not-found" in out
    code, out = invoke("step", "done", "a//b", "--db", str(sample_db))
    assert code == 2 and "invalid-request" in out
    code, out = invoke("step", "done", "never", "--db", str(sample_db))
    assert code == 2 and "step-not-found" in out


def test_rebuild_and_check(sample_db: Path) -> None:
    code, out = invoke("rebuild", "--check", "--db", str(sample_db))
    assert code == 0, out
    conn = apsw.Connection(str(sample_db))
    conn.execute("UPDATE run_summary SET status = 'held' WHERE run_id = 'child'")
    conn.close()
    code, out = invoke("rebuild", "--check", "--db", str(sample_db))
    assert code == 1 and "run_summary ('child',)" in out
    code, out = invoke("rebuild", "--db", str(sample_db))
    assert code == 0 and "events" in out
    assert invoke("rebuild", "--check", "--db", str(sample_db))[0] == 0
