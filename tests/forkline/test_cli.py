"""`forkline-es forkline ...` against Forkline 0.5.0's own `forkline` command, side by side."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import forkline_es.forkline.testing as ours_testing

from ._real import load

BIN = Path(sys.executable).parent
AGENT = """
import os, sys
sys.path.insert(0, os.getcwd())
from {package}.storage.recorder import RunRecorder
recorder = RunRecorder(os.environ["FORKLINE_DB"])
recorder.log_event(os.environ["FORKLINE_RUN_ID"], "input", {{"q": sys.argv[1]}})
recorder.log_event(os.environ["FORKLINE_RUN_ID"], "output", {{"a": sys.argv[1].upper()}})
"""
_CREATE = socket.create_connection
NETWORK = "import socket\nsocket.create_connection(('127.0.0.1', 9))\n"


def cli(side: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "forkline")] if side == "theirs" else [str(BIN / "forkline-es"), "forkline"]
    return subprocess.run([*command, *args], cwd=folder, capture_output=True, text=True, timeout=120)


@pytest.fixture(params=["theirs", "ours"])
def side(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    package = "forkline" if request.param == "theirs" else "forkline_es.forkline"
    (tmp_path / "agent.py").write_text(AGENT.format(package=package), encoding="utf-8")
    (tmp_path / "net.py").write_text(NETWORK, encoding="utf-8")
    return request.param, tmp_path


def test_run_list_replay_diff(side: tuple[str, Path]) -> None:
    name, folder = side
    ids = []
    for word in ("hi", "hi", "yo"):
        done = cli(name, folder, "run", "agent.py", "--", word)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("run_id: ")
        ids.append(done.stdout.split()[-1])
    listed = json.loads(cli(name, folder, "list", "--json", "--limit", "2").stdout)
    assert [r["entrypoint"] for r in listed] == ["agent.py", "agent.py"]
    assert sorted(listed[0]) == ["created_at", "ended_at", "entrypoint", "run_id", "schema_version", "status"]
    shown = json.loads(cli(name, folder, "replay", ids[0], "--json").stdout)
    assert (shown["total_events"], shown["forkline_version"]) == (2, "0.5.0")
    summary = cli(name, folder, "replay", ids[0]).stdout
    assert "Total events: 2\nEvents by type:\n  input: 1\n  output: 1" in summary
    same = cli(name, folder, "diff", ids[0], ids[1], "--format", "json")
    assert (same.returncode, json.loads(same.stdout)["identical"]) == (0, True)
    other = cli(name, folder, "diff", ids[0], ids[2])
    assert other.returncode == 1
    assert other.stdout.splitlines()[:3] == [
        "Step 0 diverged:",
        "  old.type: input",
        '  old.payload: {"q": "hi"}',
    ]
    as_json = json.loads(cli(name, folder, "diff", ids[0], ids[2], "--format", "json").stdout)
    assert (as_json["divergence_index"], as_json["new"]) == (0, {"type": "input", "payload": {"q": "yo"}})
    assert cli(name, folder, "replay", "nope").returncode == 2
    failed = cli(name, folder, "run", "net.py")
    assert failed.returncode == 1 and failed.stdout.startswith("run_id: ")


def test_ci_record_check_diff(side: tuple[str, Path]) -> None:
    name, folder = side
    recorded = cli(name, folder, "ci", "record", "--entrypoint", "agent.py", "--out", "base.json", "--", "hi")
    assert recorded.returncode == 0, recorded.stderr
    base = json.loads((folder / "base.json").read_text(encoding="utf-8"))
    assert [e["payload"] for e in base["events"]] == [{"q": "hi"}, {"a": "HI"}]
    assert base["started_at"] == "2000-01-01T00:00:00+00:00"
    replayed = cli(name, folder, "ci", "replay", "--artifact", "base.json", "--strict")
    assert json.loads(replayed.stdout)["event_types"] == {"input": 1, "output": 1}
    assert (
        cli(
            name, folder, "ci", "check", "--entrypoint", "agent.py", "--expected", "base.json", "--", "hi"
        ).returncode
        == 0
    )
    changed = cli(
        name, folder, "ci", "check", "--entrypoint", "agent.py", "--expected", "base.json", "--", "yo"
    )
    assert changed.returncode == 1
    assert changed.stdout.splitlines()[:2] == [
        "DIFF: First divergence at event[0] (type: input)",
        '  $.q: "hi" -> "yo"',
    ]
    cli(name, folder, "ci", "record", "--entrypoint", "agent.py", "--out", "new.json", "--", "yo")
    diff = cli(
        name, folder, "ci", "diff", "--expected", "base.json", "--actual", "new.json", "--format", "json"
    )
    assert json.loads(diff.stdout)["payload_diff"] == [
        {"op": "replace", "path": "$.q", "old": "hi", "new": "yo"}
    ]
    assert (
        cli(name, folder, "ci", "diff", "--expected", "missing.json", "--actual", "new.json").returncode == 2
    )
    assert cli(name, folder, "ci", "normalize", "new.json", "--out", "n.json").returncode == 0


def test_offline_check_stops_the_script_on_the_engine(tmp_path: Path) -> None:
    (tmp_path / "net.py").write_text(NETWORK, encoding="utf-8")
    done = cli("ours", tmp_path, "ci", "record", "--entrypoint", "net.py", "--out", "x.json", "--offline")
    assert done.returncode == 4
    assert "Network access blocked: socket.create_connection" in done.stderr


def test_assert_no_diff_beside_forklines(
    side: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    name, folder = side
    monkeypatch.chdir(folder)
    testing = load().testing if name == "theirs" else ours_testing
    # Forkline's offline recording blocks this process's network and never unblocks it
    request.addfinalizer(load().ci.offline.disable_offline_mode)
    assert (
        cli(
            name, folder, "ci", "record", "--entrypoint", "agent.py", "--out", "base.json", "--", "hi"
        ).returncode
        == 0
    )
    testing.assert_no_diff("agent.py", "base.json", script_args=["hi"])
    with pytest.raises(testing.ArtifactDiffError) as caught:
        testing.assert_no_diff("agent.py", "base.json", script_args=["yo"])
    assert caught.value.diff_result["payload_diff"] == [
        {"op": "replace", "path": "$.q", "old": "hi", "new": "yo"}
    ]
    assert "Behavioral diff detected at event[0]." in str(caught.value)
    with pytest.raises(FileNotFoundError):
        testing.assert_no_diff("agent.py", "missing.json")
    if name == "ours":
        assert socket.create_connection is _CREATE  # ours gives the network back


def test_python_m_forkline_cli_is_the_same_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "forkline_es.forkline.cli", "list", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "[]\n")
    usage = subprocess.run(
        [sys.executable, "-m", "forkline_es.forkline.cli", "diff"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert usage.returncode == 2 and "Usage: forkline diff" in usage.stderr


def test_render_functions_agree() -> None:
    from forkline_es.forkline.cli import render as ours_render

    theirs = load().cli.render
    run = {
        "run_id": "r1",
        "entrypoint": "agent.py",
        "status": "ok",
        "started_at": "2026-01-01T00:00:00+00:00",
        "ended_at": "2026-01-01T00:00:01.5+00:00",
        "forkline_version": "0.5.0",
        "schema_version": "1.0",
    }
    events = [{"type": "input", "payload": {"q": "x" * 100}}, {"type": "output", "payload": {}}]
    diffs = [
        {"identical": True, "total_events_a": 1, "total_events_b": 1},
        {
            "identical": False,
            "divergence_index": 0,
            "old": events[0],
            "new": events[1],
            "total_events_a": 2,
            "total_events_b": 2,
        },
        {
            "identical": False,
            "divergence_index": 1,
            "reason": "different_event_count",
            "total_events_a": 1,
            "total_events_b": 2,
        },
    ]
    for module in (theirs, ours_render):
        assert module.render_run_result("r1") == "run_id: r1"
    for name in ("render_list_table", "render_list_json"):
        for runs in ([], [run, {**run, "started_at": None, "entrypoint": None}]):
            assert getattr(ours_render, name)(runs) == getattr(theirs, name)(runs)
    for name in ("render_replay_summary", "render_replay_json"):
        assert getattr(ours_render, name)(run, events) == getattr(theirs, name)(run, events)
    for name in ("render_diff_pretty", "render_diff_json"):
        for diff in diffs:
            assert getattr(ours_render, name)(diff, "a", "b") == getattr(theirs, name)(diff, "a", "b")
