"""`forkline-es runs` filters and pages, and run-id prefixes, through the real entry point."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

import forkline_es as fe

EXE = str(Path(sys.executable).with_name("forkline-es"))


def cli(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args, "--db", str(db)], capture_output=True, text=True, timeout=60)


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """60 runs a second apart: every third held, labels by parity, run-000 parent of run-001."""
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        for i in range(60):
            with store._recorded_at(f"2026-05-01T12:{i // 60:02d}:{i % 60:02d}Z"):
                run = store.start_run(
                    "wf",
                    run_id=f"run-{i:03d}",
                    labels={"parity": "even" if i % 2 == 0 else "odd"},
                    parent="run-000" if i == 1 else None,
                )
                if i % 3 == 0:
                    run.hold(reason="wait")
    return db


def test_filters_limit_and_the_next_page(many: Path) -> None:
    done = cli("runs", "--status", "held", "--label", "parity=even", "--limit", "3", "--json", db=many)
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in json.loads(done.stdout)] == ["run-054", "run-048", "run-042"]
    assert "--before run-042" in done.stderr
    done = cli("runs", "--status", "held", "--label", "parity=even", "--before", "run-042", "--json", db=many)
    assert [r["id"] for r in json.loads(done.stdout)] == [f"run-{i:03d}" for i in (36, 30, 24, 18, 12, 6, 0)]
    assert done.stderr == ""  # the last page: no hint
    done = cli("runs", "--parent", "run-000", "--json", db=many)
    assert [r["id"] for r in json.loads(done.stdout)] == ["run-001"]
    assert json.loads(done.stdout)[0]["x-labels"] == {"parity": "odd"}


def test_piped_lists_every_run_and_ndjson_streams_them(many: Path) -> None:
    table = cli("runs", db=many).stdout.splitlines()
    assert table[0].split("\t")[:3] == ["id", "workflow", "status"] and len(table) == 61
    assert table[1].startswith("run-059\t") and "parity=odd" in table[1]
    lines = cli("runs", "--ndjson", db=many).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [f"run-{i:03d}" for i in range(59, -1, -1)]
    lines = cli(
        "runs", "--ndjson", "--limit", "2", "--since", "2026-05-01T12:00:30Z", db=many
    ).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["run-059", "run-058"]


def test_a_terminal_gets_50_and_a_hint(many: Path) -> None:
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    with subprocess.Popen(
        [EXE, "runs", "--db", str(many)], stdout=follower, stderr=subprocess.PIPE, env=env
    ) as p:
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        err = p.stderr.read().decode() if p.stderr else ""
    os.close(leader)
    text = out.decode()
    assert "run-059" in text and "run-010" in text and "run-009" not in text
    assert "--before run-010" in err


def test_bad_filters_exit_2(many: Path) -> None:
    for args in (["--status", "done"], ["--since", "yesterday"], ["--label", "novalue"], ["--limit", "0"]):
        done = cli("runs", *args, db=many)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
    done = cli("runs", "--status", "done", db=many)
    assert "invalid-request" in done.stderr


def test_every_command_takes_a_unique_prefix(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        store.start_run("wf", run_id="abc123").conclude("succeeded")
        store.start_run("wf", run_id="abd456").conclude("succeeded")
        store.start_run("wf", run_id="ab").conclude("succeeded")  # exactly an id: itself, not ambiguous
    assert json.loads(cli("show", "abc", "--json", db=db).stdout)["run"]["id"] == "abc123"
    assert json.loads(cli("show", "ab", "--json", db=db).stdout)["run"]["id"] == "ab"
    assert cli("log", "abd", "--json", db=db).returncode == 0
    assert cli("export", "abc", db=db).stdout.startswith("{")
    assert cli("diff", "abc", "abd", db=db).returncode in (0, 1)
    assert cli("verify", "abd", db=db).returncode == 0
    ambiguous = cli("show", "a", db=db)
    assert ambiguous.returncode == 2 and "invalid-request" in ambiguous.stderr
    assert "abc123" in ambiguous.stderr and "abd456" in ambiguous.stderr
    assert "run-not-found" in cli("show", "zzz", db=db).stderr
    assert cli("evict", "abd", "--reason", "test", db=db).returncode == 0
    with fe.Store.open(db) as store:
        assert {r["id"] for r in store.list_runs()} == {"abc123", "ab"}


def test_resolve_run_id_on_both_backends(backend_store: fe.Store) -> None:
    for rid in ("x-1", "x-2", "y"):
        backend_store.start_run("wf", run_id=rid)
    assert backend_store.resolve_run_id("y") == "y"
    assert backend_store.resolve_run_id("x-1") == "x-1"
    assert backend_store.resolve_run_id("q") == "q"  # no match: left for the lookup to refuse
    with pytest.raises(fe.InvalidRequest, match="x-1, x-2"):
        backend_store.resolve_run_id("x")
