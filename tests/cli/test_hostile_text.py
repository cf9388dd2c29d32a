"""Recorded text never drives the terminal: every command, every field, on a terminal and piped.

Workflow names, codes, reasons and values are often model output. Written raw, ``ESC]0;``
would set the window title, ``ESC[2J`` clear the screen, ``ESC[8m`` hide what follows and
OSC 8 plant a hidden link; rich would read ``[bold red]`` as markup. The CLI shows every
control character as an escape (``\\x1b``, ``\\x9b``, ``\\n``), and --json stays exact JSON
with DEL and C1 escaped too.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.cli import main

#: Every hostile form at once: OSC title, clear screen, conceal, OSC 8 link, C1 CSI, DEL,
#: backspace, carriage return, rich markup and an emoji code.
HOSTILE = (
    "\x1b]0;owned\x07\x1b[2J\x1b[8m\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"
    "\x9b31m\x9d0;t\x9c\x7f\x08\r\x0b\x0c[bold red]x[/] [link=http://e.example]y[/link] :smile:"
)
#: NUL is refused in identifiers (issue 20, item 12); payload values and reasons may hold it.
WITH_NUL = HOSTILE + "\x00end"

#: Our own styling on a terminal: SGR sequences (bold, dim, colours) and nothing else.
OUR_SGR = re.compile(r"\x1b\[[0-9;]*m")
#: What no output may hold once our SGR is taken out: C0 but tab and newline, DEL, C1.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Sequences of HOSTILE that would pass for our own styling if they got through.
RAW_HOSTILE = ("\x1b[8m", "\x1b[2J", "\x1b]", "\x9b")


def assert_inert(out: str, *, terminal: bool) -> None:
    """No control character from recorded data: only our SGR on a terminal, nothing piped."""
    for raw in RAW_HOSTILE:
        assert raw not in out
    rest = OUR_SGR.sub("", out) if terminal else out
    found = FORBIDDEN.search(rest)
    if found is not None:
        around = rest[max(0, found.start() - 60) : found.end() + 20]
        raise AssertionError(f"{found.group()!r} at {found.start()}: {around!r}")


# -- recording hostile text into every field ------------------------------------------------


def record(db: Path, text: str, value: str, run_id: str, other_id: str) -> str:
    """Two runs with ``text`` in every text field and ``value`` in every payload, and a
    RunRecorder run; returns the RunRecorder run's id."""
    with fe.Store.open(db) as store:
        for rid, v in ((run_id, value), (other_id, value + "2")):
            run = store.start_run(
                workflow=text, standard="1.0", name=text, inputs={text: v, "l": [v]}, run_id=rid
            )
            run.begin_step("a", arguments={text: v})
            run.invoke("a", 1, text, "sha256:" + "0" * 64, "not-dispatched", arguments={text: v})
            run.result("a", 1, "failed", code=text, result=v, details={text: v})
            run.end_step("a", "failed", code=text, branch={"case": text}, result=v, details={text: v})
            run.begin_step("b")
            run.child("b", "child" + text)
            run.observe(text, 1.5, unit=text, step="a")
            run.add_artifact(v.encode(), kind=text, content_type=text, name="n" + text.replace("/", "_"))
            run.record_manifest(**{text: v})
            run.hold(code=text, step="b", reason=text)
            run.resume()
            run.suspend(reason=text)
            run.resume()
            run.conclude("failed", code=text, reason=text)
    with fe.RunRecorder(str(db), fe.RedactionPolicy.none()) as recorder:
        logged = recorder.start_run(text)
        recorder.log_event(logged, text, {text: value})
        recorder.end_run(logged)
    return logged


def forkline_source(path: Path, text: str, payload: str) -> Path:
    """A Forkline 0.5.0 runs.db (its schema, trimmed to what the import reads) holding ``text``."""
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, schema_version TEXT NOT NULL DEFAULT '0.1',"
        " forkline_version TEXT, entrypoint TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT,"
        " status TEXT, python_version TEXT NOT NULL, platform TEXT NOT NULL, cwd TEXT NOT NULL);"
        "CREATE TABLE events (event_id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL,"
        " ts TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL);"
    )
    conn.execute(
        "INSERT INTO runs VALUES (?, '1.0', '0.5.0', ?, '2026-01-01T12:00:00+00:00',"
        " '2026-01-01T12:00:01+00:00', 'success', '3.11', ?, ?)",
        ("f" + text, text, text, text),
    )
    conn.execute(
        "INSERT INTO events (run_id, ts, type, payload) VALUES (?, '2026-01-01T12:00:00.5+00:00', ?, ?)",
        ("f" + text, text, payload),
    )
    conn.commit()
    conn.close()
    return path


# -- running commands: in process (fake terminal or pipe) and under a real pseudo-terminal ----


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def in_process(args: list[str], *, terminal: bool) -> tuple[int, str, str]:
    """Exit code, stdout, stderr of ``forkline-es ARGS``; stdout a terminal when ``terminal``."""
    if not terminal:
        result = CliRunner().invoke(main, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result.exit_code, result.stdout, result.stderr
    out, err = _Terminal(), io.StringIO()
    with (
        _environ(COLUMNS="4000", TERM="xterm-256color"),
        mock.patch.object(sys, "stdout", out),
        mock.patch.object(sys, "stderr", err),
        pytest.raises(SystemExit) as done,
    ):
        main.main(args, prog_name="forkline-es")
    code = done.value.code
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


def under_pty(args: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    """``forkline-es ARGS`` in another process whose stdout is a pseudo-terminal (raw mode, so
    the bytes read are the bytes written); stderr is a pipe."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    env = {**os.environ, "COLUMNS": "4000", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from forkline_es.cli import main; main()", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        assert ready, "the command printed nothing for 60 s"
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stderr.close()
    return proc.wait(timeout=60), b"".join(chunks), err


# -- the fixed hostile text, every command --------------------------------------------------

RUN = "r" + HOSTILE
OTHER = "o" + HOSTILE


@pytest.fixture
def hostile_db(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "runs.db"
    return db, record(db, HOSTILE, WITH_NUL, RUN, OTHER)


def commands(db: Path, logged: str) -> list[tuple[list[str], int]]:
    """Every read command on the hostile runs, with the exit status each must end with."""
    d = ["--db", str(db)]
    return [
        (["runs", *d], 0),
        (["show", RUN, *d], 0),
        (["show", RUN, "--timeline", *d], 0),
        (["show", logged, *d], 0),
        (["step", RUN, "a", *d], 0),
        (["step", RUN, "b", *d], 0),
        (["log", RUN, *d], 0),
        (["diff", RUN, OTHER, "--all", *d], 1),
        (["verify", RUN, *d], 0),
        (["verify", "--all", *d], 0),
        (["rebuild", "--check", *d], 0),
        (["retention", "apply", "--keep-last", "0", "--dry-run", *d], 0),
        (["show", "missing" + HOSTILE, *d], 2),
        (["step", RUN, "nope", *d], 2),
        (["evict", "missing" + HOSTILE, "--reason", WITH_NUL.replace("\x00", ""), *d], 2),
    ]


def _shows_text(args: list[str], status: int, logged: str) -> bool:
    """Whether the command's output holds the hostile text itself (step b has none of it)."""
    return status == 0 and args[0] in ("runs", "show", "step") and logged not in args and "b" not in args


def _shown(out: str) -> None:
    """The hostile text was shown, escaped and as written, not dropped."""
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x1b[8m" in out
    assert "\\x9b31m" in out and "\\x7f" in out
    assert "[bold red]x[/]" in out and "[link=http://e.example]y[/link]" in out and ":smile:" in out


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_every_read_command_shows_hostile_text_inert(hostile_db: tuple[Path, str], terminal: bool) -> None:
    db, logged = hostile_db
    for args, status in commands(db, logged):
        code, out, err = in_process(args, terminal=terminal)
        assert code == status, (args, out, err)
        assert_inert(out, terminal=terminal)
        assert_inert(err, terminal=False)
        if _shows_text(args, status, logged):
            _shown(out)
        if status == 2:
            assert "\\x1b]0;owned" in err or args[2] == "nope"


def test_the_text_is_escaped_as_documented() -> None:
    from forkline_es.cli._common import json_text, one_line, visible

    assert visible("a\x1b]0;t\x07\tb\nc\rd\x7f\x9b\\ é") == "a\\x1b]0;t\\x07\\tb\\nc\\rd\\x7f\\x9b\\ é"
    assert one_line("a\\b\tc\x00") == "a\\\\b\\tc\\x00"
    assert json_text('{"a":"\x7f\x9f\xa0é"}'.encode()) == '{"a":"\\u007f\\u009f\xa0é"}'.encode()


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_json_output_is_exact_json_without_raw_control_characters(
    hostile_db: tuple[Path, str], terminal: bool
) -> None:
    db, logged = hostile_db
    with fe.Store.open(db) as store:
        expected = {
            ("runs",): store.list_runs(),
            ("show", RUN): store.get_run_record(RUN),
            ("show", logged): store.get_run_record(logged),
            ("step", RUN, "a"): store.get_step_record(RUN, "a"),
        }
    for args, document in expected.items():
        code, out, _ = in_process([*args, "--json", "--db", str(db)], terminal=terminal)
        assert code == 0
        assert re.search("[\x00-\x1f\x7f-\x9f]", out.replace("\n", "")) is None
        assert json.loads(out) == json.loads(json.dumps(document))
    code, out, _ = in_process(["diff", RUN, OTHER, "--json", "--db", str(db)], terminal=terminal)
    assert code == 1 and re.search("[\x00-\x1f\x7f-\x9f]", out.replace("\n", "")) is None
    assert json.loads(out)["match"] is False


def test_export_is_canonical_piped_and_inert_on_a_terminal(
    hostile_db: tuple[Path, str], tmp_path: Path
) -> None:
    db, _ = hostile_db
    with fe.Store.open(db) as store:
        canonical = store.export_run_record(RUN)
    assert "\x9b".encode() in canonical  # canonical JSON writes C1 raw: piped output keeps it
    assert CliRunner().invoke(main, ["export", RUN, "--db", str(db)]).stdout_bytes == canonical
    code, out, _ = under_pty(["export", RUN, "--db", str(db)], tmp_path)
    assert code == 0 and FORBIDDEN.search(out.decode().rstrip("\n")) is None
    assert json.loads(out) == json.loads(canonical)


def test_maintenance_commands_show_hostile_text_inert(tmp_path: Path) -> None:
    """evict, retention, gc, demo and import print recorded text and paths too."""
    for terminal in (False, True):
        db = tmp_path / f"{terminal}.db"
        record(db, HOSTILE, WITH_NUL, RUN, OTHER)
        d = ["--db", str(db)]
        reason = "why" + HOSTILE
        runs = [
            (["evict", OTHER, "--reason", reason, "--force", *d], 0),
            (["evict", OTHER, "--reason", reason, *d], 2),  # already evicted: says when and why
            (["retention", "apply", "--keep-last", "0", *d], 0),
            (["show", RUN, *d], 2),
            (["gc", *d], 0),
        ]
        for args, status in runs:
            code, out, err = in_process(args, terminal=terminal)
            assert code == status, (args, out, err)
            assert_inert(out, terminal=terminal)
            assert_inert(err, terminal=False)
        folder = tmp_path / f"demo{HOSTILE.replace('/', '_')}{terminal}"
        folder.mkdir()
        source = forkline_source(folder / "forkline.db", HOSTILE, json.dumps({"v": WITH_NUL}))
        bad = forkline_source(folder / "bad.db", HOSTILE, "not json" + HOSTILE)
        for args, status in [
            (["demo", "--db", str(folder / "runs.db")], 0),
            (["import-forkline", str(source), "--db", str(folder / "imported.db")], 0),
            (["import-forkline", str(bad), "--db", str(folder / "refused.db")], 2),
        ]:
            code, out, err = in_process(args, terminal=terminal)
            assert code == status, (args, out, err)
            assert_inert(out, terminal=terminal)
            assert_inert(err, terminal=False)
            assert "\\x1b]0;owned" in out + err


def test_under_a_real_pseudo_terminal(hostile_db: tuple[Path, str], tmp_path: Path) -> None:
    """The bytes a terminal would receive, from another process: only our own SGR styling."""
    db, logged = hostile_db
    every = commands(db, logged)
    for args, status in [every[i] for i in (0, 1, 2, 4, 7, 12)]:
        code, out, err = under_pty(args, tmp_path)
        text, errors = out.decode(), err.decode()
        assert code == status, (args, text, errors)
        assert_inert(text, terminal=True)
        assert_inert(errors, terminal=False)
        if _shows_text(args, status, logged):
            assert "\x1b[" in text or "--timeline" in args  # it was a terminal: rich styled the table
            _shown(OUR_SGR.sub("", text))


# -- any text at all: a property over every control character ------------------------------

CONTROL = st.sampled_from([chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))])
PIECES = st.sampled_from(["[bold]", "[/]", "[link=http://x]", "]0;", "[2J", "]8;;", "\\", ":smile:", "é"])
CHARS = st.one_of(CONTROL, PIECES, st.characters(exclude_categories=("Cs",)))
TEXT = st.lists(CHARS, min_size=1, max_size=10).map("".join)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_any_recorded_text_is_inert_in_every_read_command(text: str) -> None:
    ident = "w" + text.replace("\x00", "")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "runs.db"
        run_id, other = "r" + ident, "o" + ident
        logged = record(db, ident, text, run_id, other)
        d = ["--db", str(db)]
        for args in (
            ["runs"],
            ["show", run_id],
            ["show", run_id, "--timeline"],
            ["show", logged],
            ["step", run_id, "a"],
            ["log", run_id],
            ["diff", run_id, other, "--all"],
            ["verify", run_id],
        ):
            for terminal in (False, True):
                code, out, err = in_process([*args, *d], terminal=terminal)
                assert code in (0, 1), (args, out, err)
                assert_inert(out, terminal=terminal)
                assert_inert(err, terminal=False)
        shutil.rmtree(Path(folder), ignore_errors=True)
