"""`forkline-es runs` filters and pages, and run-id prefixes, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import forkline_es as fe

from .pty_run import EXE, run_on_pty


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


def test_the_largest_limit_lists_every_run_and_a_larger_one_is_a_usage_error(many: Path) -> None:
    done = cli("runs", "--limit", str(2**63 - 1), "--json", db=many)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 60
    done = cli("runs", "--limit", str(2**63), db=many)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--limit" in done.stderr


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


def on_terminal(args: list[str], **env: str) -> tuple[str, str]:
    """(stdout, stderr) of ``forkline-es ARGS`` whose stdout is a terminal (a pty)."""
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"COLUMNS": "200"} | env
    out, err, _ = run_on_pty(args, environ)
    return out.decode(), err


def test_a_terminal_gets_50_and_a_hint(many: Path) -> None:
    text, err = on_terminal(["runs", "--db", str(many)], NO_COLOR="1")
    assert "run-059" in text and "run-010" in text and "run-009" not in text
    assert "--before run-010" in err
    assert "\x1b[33m" not in text  # NO_COLOR: no colour


def test_statuses_are_coloured_on_a_terminal_only(many: Path) -> None:
    text, _ = on_terminal(["runs", "--limit", "3", "--db", str(many)], TERM="xterm-256color")
    assert "\x1b[33mheld" in text  # held is yellow
    assert "\x1b[" not in cli("runs", "--limit", "3", db=many).stdout  # piped: plain text


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


def test_step_shows_every_attempt_and_show_lists_steps_as_they_began(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    art = "sha256:" + "e" * 64
    with fe.Store.open(db) as store:
        run = store.start_run("wf", run_id="r")
        run.begin_step("zeta")
        run.end_step("zeta", "succeeded")
        run.begin_step("alpha")
        first = run.invoke("alpha", 1, "op", art, "ambiguous", arguments={"try": 1})
        run.recover(supersedes=[first])
        run.invoke("alpha", 2, "op", art, "not-dispatched", arguments={"try": 2})
        run.result("alpha", 2, "failed", code="boom")
        run.invoke("alpha", 3, "op", art, "not-dispatched", arguments={"try": 3})
        run.result("alpha", 3, "succeeded", result={"model": "m-1"})
        run.end_step("alpha", "succeeded", result={"model": "m-1"})
    out = cli("step", "r", "alpha", db=db).stdout
    attempts = out.split("attempt\tgen\t")[1].split("\n\n")[0].splitlines()[1:]
    assert [line.split("\t")[:4] for line in attempts] == [
        ["1", "0", "ambiguous", ""],
        ["2", "1", "failed", "boom"],
        ["3", "1", "succeeded", ""],
    ]
    assert attempts[0].endswith("by entry 6") and not attempts[2].endswith("by entry 6")
    assert '{"model":"m-1"}' in out and '"kind"' not in out  # plain JSON values by default, one line piped
    assert '"kind":"map"' in cli("step", "r", "alpha", "--typed", db=db).stdout
    assert json.loads(cli("step", "r", "alpha", "--json", db=db).stdout)["x-attempts"] == 2
    show = cli("show", "r", db=db).stdout
    steps = show.split("path\tgeneration\tstatus")[1].splitlines()[1:3]
    assert [line.split("\t")[0] for line in steps] == ["zeta", "alpha"]  # began first, listed first


def test_a_terminal_shows_ids_long_enough_to_tell_the_listed_runs_apart(tmp_path: Path) -> None:
    """Ids are cut to 12 characters on a terminal, or to as many more as tell two listed
    runs apart: each id shown is a prefix that names its run, as every command takes it."""
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        for day in ("01", "02"):
            store.start_run("nightly", run_id=f"nightly-report-2026-12-{day}").conclude("succeeded")
        store.start_run("other", run_id="a-very-long-run-identifier")
    text, _ = on_terminal(["runs", "--db", str(db)], NO_COLOR="1")
    cells = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    shown = [c for c in cells if c.startswith(("nightly", "a-very"))]
    assert sorted(shown) == ["a-very-long-", "nightly-report-2026-12-01", "nightly-report-2026-12-02"]
    for prefix in shown:
        assert cli("show", prefix, "--no-pager", db=db).returncode == 0
