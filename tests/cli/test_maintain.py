"""`gc` and `rebuild` on a terminal: a progress bar on stderr, then the summary on a line
of its own that says what was done. Real processes on a pty."""

from __future__ import annotations

import os
import re
from pathlib import Path

import forkline_es as fe
from tests.cli.pty_run import run_on_pty

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(args: list[str]) -> bytes:
    """Everything ``forkline-es ARGS`` writes to a pty that is its stdout and stderr."""
    out, _, status = run_on_pty(
        args, os.environ | {"COLUMNS": "80", "TERM": "xterm"}, stderr_tty=True, timeout=120
    )
    assert status == 0, out
    return out


def _own_line(out: bytes, start: bytes) -> str:
    """The line of ``out`` that begins with ``start`` (colour codes left out), which must
    begin a line: nothing of a progress bar before it."""
    lines = ANSI.sub(b"", out).replace(b"\r\n", b"\n").split(b"\n")
    found = [line for line in lines if start in line]
    assert len(found) == 1, out
    assert found[0].lstrip(b"\r").startswith(start), found[0]
    return found[0].lstrip(b"\r").decode()


def test_rebuild_prints_its_summary_on_its_own_line(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        for _ in range(20):
            store.start_run("wf").conclude("succeeded")
    out = on_terminal(["rebuild", "--db", str(db)])
    assert b"folding" in out  # the progress bar was drawn
    assert _own_line(out, b"rebuilt every projection") == "rebuilt every projection from 40 events"


def test_gc_shows_progress_and_what_it_freed(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        for i in range(40):
            store.start_run("wf", inputs={"blob": "x" * 20_000, "i": i}).conclude("succeeded")
        store.apply_retention(fe.RetentionPolicy(keep_last=0))
    size = db.stat().st_size
    out = on_terminal(["gc", "--db", str(db)])
    assert b"gc " in ANSI.sub(b"", out)  # the progress bar's label
    line = _own_line(out, b"freed ")
    match = re.fullmatch(r"freed ([0-9.]+) (KiB|MiB) of the database \((\d+) pages\); complete", line)
    assert match is not None, line
    freed = float(match[1]) * (1024 if match[2] == "KiB" else 1024**2)
    assert abs((size - db.stat().st_size) - freed) <= 0.05 * freed + 1024 and int(match[3]) > 100
