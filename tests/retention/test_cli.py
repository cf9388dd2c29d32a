"""`forkline-es retention apply`, `evict`, `gc`: exit codes, dry runs that write nothing, JSON."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main


def seeded(db_path: Path, n: int = 3) -> list[str]:
    with fe.Store.open(db_path) as s:
        ids = []
        for i in range(n):
            run = s.start_run("wf", inputs={"i": i})
            run.begin_step("a", arguments={"x": "y" * 100})
            run.end_step("a", "succeeded", result=i)
            run.conclude("succeeded")
            ids.append(run.id)
        s.start_run("wf")  # active: never touched
        return ids


def log_rows(db_path: Path) -> int:
    with fe.Store.open(db_path) as s:
        return int(s.conn.execute("SELECT count(*) FROM log").fetchall()[0][0])


def test_dry_run_prints_what_would_go_and_writes_nothing(db_path: Path) -> None:
    ids = seeded(db_path)
    before = log_rows(db_path)
    result = CliRunner().invoke(
        main, ["retention", "apply", "--db", str(db_path), "--keep-last", "1", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert ids[0] in result.output and ids[1] in result.output and ids[2] not in result.output
    assert log_rows(db_path) == before


def test_apply_json_then_evict_and_gc(db_path: Path) -> None:
    ids = seeded(db_path)
    runner = CliRunner()
    args = ["retention", "apply", "--db", str(db_path), "--keep-last", "2", "--drop-payloads-after", "0s"]
    result = runner.invoke(main, [*args, "--classes", "results", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [e["run_id"] for e in report["evicted"]] == [ids[0]]
    assert {s for r in report["reduced"] for _, s in r["removed"]} == {"result"}
    result = runner.invoke(main, ["evict", "--db", str(db_path), ids[1], "--reason", "by hand", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["run_id"] == ids[1]
    result = runner.invoke(main, ["gc", "--db", str(db_path), "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["pages_after"] >= 1
    with fe.Store.open(db_path) as s:
        assert [e["run_id"] for e in s.evictions()] == [ids[0], ids[1]]


def test_refusals_and_usage_errors_exit_2(db_path: Path) -> None:
    ids = seeded(db_path)
    runner = CliRunner()
    result = runner.invoke(main, ["evict", "--db", str(db_path), "nope", "--reason", "x"])
    assert result.exit_code == 2 and "run-not-found" in result.output
    runner.invoke(main, ["evict", "--db", str(db_path), ids[0], "--reason", "x"])
    result = runner.invoke(main, ["evict", "--db", str(db_path), ids[0], "--reason", "x"])
    assert result.exit_code == 2 and "run-not-retained" in result.output
    result = runner.invoke(main, ["retention", "apply", "--db", str(db_path), "--max-age", "soon"])
    assert result.exit_code == 2 and "invalid-request" in result.output
    result = runner.invoke(main, ["evict", "--db", str(db_path), ids[1]])  # --reason is required
    assert result.exit_code == 2
    result = runner.invoke(main, ["gc", "--db", str(db_path.parent / "missing.db")])
    assert result.exit_code == 2 and not (db_path.parent / "missing.db").exists()
