"""What a person sees on a terminal: relative times, tables that fit 80 columns, and
piped output a program can split into one table per section. Real processes, a pty."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.records import when
from forkline_es.values import canonical_timestamp, parse_canonical_timestamp

from .pty_run import EXE, run_on_pty

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ART = "sha256:" + "ab" * 32


def on_terminal(args: list[str], columns: int = 80) -> str:
    """The screen of ``forkline-es ARGS`` whose stdout is a pty ``columns`` wide (no pager:
    stdin is not a terminal)."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {
        "COLUMNS": str(columns),
        "TERM": "xterm",
    }
    out, err, status = run_on_pty(args, env)
    assert status == 0, err
    return ANSI.sub("", out.decode()).replace("\r\n", "\n")


def piped(*args: str) -> str:
    done = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A concluded run with nested, retried steps and long values, a held one, labels."""
    path = tmp_path / "runs.db"
    with fe.Store.open(path) as store:
        run = store.start_run(
            "workflows/a-rather-long-workflow-name",
            run_id="finished-run-with-a-long-identifier",
            name="A display name that is long enough to need wrapping in a narrow table",
            labels={"customer": "c-42", "region": "eu-west"},
            inputs={"topic": "x" * 200},
        )
        run.begin_step("fetch", arguments={"urls": [f"https://example.org/{i}" for i in range(5)]})
        run.begin_step("fetch/0")
        run.invoke(
            "fetch/0", 1, "http.get", ART, "not-dispatched", arguments={"url": "https://example.org/" * 4}
        )
        run.result("fetch/0", 1, "failed", code="timeout")
        run.invoke("fetch/0", 2, "http.get", ART, "not-dispatched", arguments={"url": "u"})
        run.result("fetch/0", 2, "succeeded", result={"model": "demo-model-1", "text": "y" * 300})
        run.end_step("fetch/0", "succeeded", result={"model": "demo-model-1"})
        run.end_step("fetch", "succeeded")
        run.conclude("succeeded", outputs={"done": True})
        store.start_run("wf", run_id="held-run").hold(reason="approval-required")
    return path


def test_every_view_fits_80_columns(db: Path) -> None:
    views = (
        ["runs"],
        ["show", "finished-run"],
        ["show", "finished-run", "--timeline"],
        ["step", "finished-run", "fetch/0"],
        ["show", "held-run"],
        ["stats"],
    )
    for args in views:
        screen = on_terminal([*args, "--db", str(db)])
        assert screen.strip(), args
        widest = max(screen.splitlines(), key=len)
        assert len(widest) <= 80, (args, widest)


def test_a_terminal_says_when_relative_to_now_and_how_long(db: Path) -> None:
    runs = on_terminal(["runs", "--db", str(db)])
    assert re.search(r"held-run .*held .*(just now|\d+(\.\d)?s ago)", runs), runs
    assert "took" in runs and "last" in runs and "T" not in runs.split("\n", 3)[3][:40]  # no timestamps
    show = on_terminal(["show", "finished-run", "--db", str(db)])
    assert re.search(r"started .*(ago|now) \(\d{4}-\d\d-\d\dT", show) and re.search(
        r"took .*\d+(ms|\.\ds)", show
    )
    assert re.search(r"\+\d+(ms|\.\ds)", show)  # steps and entries: when, from the run's start
    held = on_terminal(["show", "held-run", "--db", str(db)])
    assert "running for" in held and "ended" not in held
    timeline = on_terminal(["show", "finished-run", "--timeline", "--db", str(db)])
    assert re.search(r"started (.* ago|just now), took .*, last activity", timeline)
    assert re.search(r"\+\d+ms +0 +1  ● start", timeline)
    step = on_terminal(["step", "finished-run", "fetch/0", "--db", str(db)])
    assert "took" in step and "timeout" in step


def test_json_keeps_full_timestamps(db: Path) -> None:
    run = json.loads(piped("runs", "--json", "--db", str(db)))[1]
    assert run["id"] == "finished-run-with-a-long-identifier"
    for member in ("started_at", "x-updated-at", "x-ended-at"):
        assert parse_canonical_timestamp(run[member])
    step = json.loads(piped("step", "finished-run", "fetch/0", "--json", "--db", str(db)))
    assert parse_canonical_timestamp(step["x-started-at"]) <= parse_canonical_timestamp(step["x-ended-at"])


def _sections(out: str) -> dict[str, list[list[str]]]:
    """Piped ``show``/``step`` output read back: ``# title``, a header line, rows, an empty line."""
    tables = {}
    for block in out.split("\n\n"):
        if not block.strip():
            continue
        title, header, *rows = block.strip("\n").split("\n")
        assert title.startswith("# "), block
        columns = header.split("\t")
        assert all(len(r.split("\t")) == len(columns) for r in rows), block
        tables[title[2:]] = [columns, *[r.split("\t") for r in rows]]
    return tables


def test_piped_show_and_step_are_one_table_per_section(db: Path) -> None:
    with fe.Store.open(db) as store:
        doc = store.get_run_record("finished-run-with-a-long-identifier")
    tables = _sections(piped("show", "finished-run", "--db", str(db)))
    assert list(tables) == ["run finished-run-with-a-long-identifier", "run payloads", "steps", "entries"]
    entries = tables["entries"]
    assert entries[0] == ["seq", "generation", "at", "kind", "detail"]
    assert [(int(r[0]), r[2]) for r in entries[1:]] == [(e["seq"], e["x-at"]) for e in doc["entries"]]
    steps = {r[0]: dict(zip(tables["steps"][0], r, strict=True)) for r in tables["steps"][1:]}
    assert steps["fetch/0"]["started_at"] == doc["steps"]["fetch/0"]["x-started-at"]
    run = dict(tables["run finished-run-with-a-long-identifier"][1:])
    assert run["x-labels"] == "customer=c-42,region=eu-west" and run["started_at"] == doc["run"]["started_at"]
    payloads = tables["run payloads"]
    assert payloads[0] == ["slot", "class", "state", "value"]
    assert json.loads(dict((r[0], r[3]) for r in payloads[1:])["outputs"]) == {"done": True}  # plain data
    typed = _sections(piped("show", "finished-run", "--typed", "--db", str(db)))["run payloads"]
    assert json.loads(dict((r[0], r[3]) for r in typed[1:])["outputs"])["kind"] == "map"
    step = _sections(piped("step", "finished-run", "fetch/0", "--db", str(db)))
    assert list(step) == ["step fetch/0", "payloads", "attempts"]
    assert [r[3] for r in step["attempts"][1:]] == ["timeout", ""]


NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


def _text(dt: datetime) -> str:
    return canonical_timestamp(dt)


def test_relative_times_read_as_a_person_says_them() -> None:
    assert when.ago(_text(NOW - timedelta(seconds=5)), NOW) == "5.0s ago"
    assert when.ago(_text(NOW - timedelta(minutes=5)), NOW) == "5m ago"
    assert when.ago(_text(NOW - timedelta(hours=3, minutes=4)), NOW) == "3h04m ago"
    assert when.ago(_text(NOW - timedelta(days=40)), NOW) == "2026-10-25"
    assert when.ago(None, NOW) == "" and when.between("2026-12-04T10:00:00Z", None) == ""
    assert when.between("2026-12-04T10:00:00Z", "2026-12-04T10:04:05.5Z") == "4m05s"
    assert when.offset("2026-12-04T10:00:00.35Z", "2026-12-04T10:00:00Z") == "+350ms"


@given(st.floats(min_value=0, max_value=10**8, allow_nan=False))
def test_a_duration_is_short_and_names_its_largest_unit(seconds: float) -> None:
    text = when.duration(seconds)
    assert len(text) <= 9
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    first = re.match(r"[0-9.]+([a-z]+)", text)
    assert first is not None
    # the first number and unit are the duration, rounded down or to the shown digits
    value = float(text[: first.end(1) - len(first.group(1))]) * unit[first.group(1)]
    assert value <= seconds + 0.05 * max(1, seconds) and seconds < value + 2 * unit[first.group(1)] + 1
