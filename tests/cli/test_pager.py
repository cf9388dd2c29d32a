"""Long output goes through $PAGER on a terminal, never when piped or with --no-pager.

Every test runs the installed ``forkline-es`` in a real process whose stdin and stdout are a
pseudo-terminal, with a fake pager (a shell that copies what it is given into a file).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import forkline_es as fe

from .pty_run import EXE, run_on_pty


def on_terminal(args: list[str], **env: str) -> tuple[str, str]:
    """(screen, stderr) of ``forkline-es ARGS`` run with a pty as its stdin and stdout."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "LESS")}
    environ |= {"COLUMNS": "80", "LINES": "10", "TERM": "xterm"} | env
    out, err, status = run_on_pty(args, environ, stdin_tty=True)
    assert status == 0, err
    return out.decode(), err


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Thirty runs: a listing longer than a 10-line screen."""
    path = tmp_path / "runs.db"
    with fe.Store.open(path) as store:
        for i in range(30):
            store.start_run("wf", run_id=f"run-{i:02d}").conclude("succeeded")
    return path


def fake_pager(tmp_path: Path) -> tuple[str, Path]:
    paged = tmp_path / "paged.txt"
    return f"sh -c 'cat > \"$0\"' {paged}", paged


def test_long_output_goes_through_the_pager(db: Path, tmp_path: Path) -> None:
    pager, paged = fake_pager(tmp_path)
    screen, _ = on_terminal(["runs", "--db", str(db)], PAGER=pager)
    text = paged.read_text()
    assert "run-29" in text and "run-00" in text  # every row went to the pager
    assert "run-29" not in screen  # and none straight to the screen


def test_short_output_is_not_paged(db: Path, tmp_path: Path) -> None:
    pager, paged = fake_pager(tmp_path)
    screen, _ = on_terminal(["runs", "--limit", "2", "--db", str(db)], PAGER=pager, LINES="40")
    assert "run-29" in screen and not paged.exists()


@pytest.mark.parametrize("where", ["command", "group"])
def test_no_pager_prints_straight(db: Path, tmp_path: Path, where: str) -> None:
    pager, paged = fake_pager(tmp_path)
    given = ["runs", "--no-pager"] if where == "command" else ["--no-pager", "runs"]
    args = [*given, "--db", str(db)]
    screen, _ = on_terminal(args, PAGER=pager)
    assert "run-29" in screen and "run-00" in screen and not paged.exists()


def test_piped_output_is_never_paged(db: Path, tmp_path: Path) -> None:
    pager, paged = fake_pager(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PAGER"} | {"PAGER": pager, "LINES": "5"}
    done = subprocess.run([EXE, "runs", "--db", str(db)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and "run-00" in done.stdout and not paged.exists()


def test_colours_reach_a_pager_that_shows_them(db: Path, tmp_path: Path) -> None:
    paged = tmp_path / "paged.txt"
    # a pager named less that keeps raw control characters (-R) gets the colours
    less = tmp_path / "less"
    less.write_text(f"#!/bin/sh\ncat > {paged}\n")
    less.chmod(0o755)
    on_terminal(["runs", "--db", str(db)], PAGER=f"{less} -R", TERM="xterm-256color")
    assert "\x1b[32m" in paged.read_text()  # succeeded, green
    on_terminal(["runs", "--db", str(db)], PAGER=f"{less} -R", NO_COLOR="1")
    assert "\x1b[32m" not in paged.read_text()
    # a pager that does not say it shows them gets plain text
    on_terminal(["runs", "--db", str(db)], PAGER=f"{less}", TERM="xterm-256color", LESS="-X")
    assert "\x1b[" not in paged.read_text() and "run-29" in paged.read_text()


def test_a_stream_is_never_held_for_a_pager(db: Path, tmp_path: Path) -> None:
    pager, paged = fake_pager(tmp_path)
    screen, _ = on_terminal(["runs", "--ndjson", "--db", str(db)], PAGER=pager)
    assert '"id":"run-00"' in screen and not paged.exists()
