"""`forkline-es runs | show | step | log | rebuild` through click's CliRunner."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

import forkline_es as fe
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


def test_check_reports_every_difference(tmp_path: Path) -> None:
    """'reports each difference': 120 altered rows are 120 lines, none summarised away."""
    db = tmp_path / "runs.db"
    store = fe.Store.open(db)
    for i in range(120):
        store.start_run("wf", run_id=f"r{i:03}").conclude("succeeded")
    store.close()
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE run_summary SET status = 'failed'")
    conn.close()
    code, out = invoke("rebuild", "--check", "--db", str(db))
    assert code == 1
    assert sorted(line.split(":")[0] for line in out.splitlines()) == [
        f"run_summary ('r{i:03}',)" for i in range(120)
    ]
    code, out = invoke("rebuild", "--check", "--json", "--db", str(db))
    assert code == 1 and len(json.loads(out)["differences"]) == 120


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _recorded_with_markup(db: Path) -> None:
    store = fe.Store.open(db)
    run = store.start_run("w[/bold]", run_id="r1", name="[red]Name[/red] :smile:")
    run.begin_step("a")
    run.end_step("a", "failed", code="[/i]")
    run.conclude("failed", reason="[link=http://example.com]see[/link]\tand\nmore\\", code="C")
    store.close()


@pytest.mark.parametrize("args", [["runs"], ["show", "r1"], ["step", "r1", "a"]])
def test_recorded_text_is_shown_as_written_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """Rich would read ``[/bold]`` as markup (and fail on it) and ``:smile:`` as an emoji."""
    db = tmp_path / "runs.db"
    _recorded_with_markup(db)
    screen = _Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as done:
        main.main([*args, "--db", str(db)], prog_name="forkline-es")
    assert done.value.code == 0
    out = screen.getvalue()
    if args == ["step", "r1", "a"]:
        assert "[/i]" in out
    else:
        assert "w[/bold]" in out
    if args == ["show", "r1"]:
        assert "[red]Name[/red] :smile:" in out and "[link=http://example.com]see[/link]" in out
        assert "\x1b]8;" not in out  # no terminal hyperlink escape


def test_piped_tables_escape_tabs_newlines_and_backslashes(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _recorded_with_markup(db)
    code, out = invoke("show", "r1", "--db", str(db))
    assert code == 0
    reason = [line for line in out.splitlines() if line.startswith("reason\t")]
    assert reason == ["reason\t[link=http://example.com]see[/link]\\tand\\nmore\\\\"]
    assert out.splitlines()[0] == "# run r1"  # a section title, then its header line
    assert all(line.count("\t") == out.splitlines()[1].count("\t") for line in out.splitlines()[1:8])


@pytest.mark.parametrize("args", [["runs"], ["show", "r1"], ["log", "r1"], ["rebuild", "--check"]])
def test_a_read_never_turns_a_missing_or_empty_file_into_a_database(tmp_path: Path, args: list[str]) -> None:
    missing, empty = tmp_path / "missing.db", tmp_path / "empty.db"
    empty.touch()
    for db in (missing, empty):
        code, out = invoke(*args, "--db", str(db))
        assert code == 2 and "forkline-es demo" in out
    assert not missing.exists()
    assert empty.stat().st_size == 0


# -- show: a RunRecorder run's events (Forkline's inspect script shows a run "with events") ----

_SHOW_HEADERS = [
    "member\tvalue",
    "slot\tclass\tstate\tvalue",
    "path\tgeneration\tstatus\toutcome\tcode\tstarted_at\tended_at\tpayloads",
    "seq\tgeneration\tat\tkind\tdetail",
]
_EVENTS_HEADER = "event_id\tts\ttype\tpayload"


def _headers(out: str) -> list[str]:
    return [line for line in out.splitlines() if line in (*_SHOW_HEADERS, _EVENTS_HEADER)]


def _section(out: str, title: str) -> list[str]:
    """The rows of the piped section ``# title``: after its header, up to the empty line."""
    block = out.split(f"# {title}\n", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()[1:]


def _forkline_run(db: Path) -> tuple[str, list[str]]:
    """A RunRecorder run with two events; its id, and each event's ``event_id<TAB>ts``."""
    with fe.RunRecorder(db) as recorder:
        run_id = recorder.start_run("examples/minimal.py")
        recorder.log_event(run_id, "input", {"prompt": "hello", "n": [1, 2]})
        recorder.log_event(run_id, "output", {"result": "wörld\tdone"})
        recorder.end_run(run_id)
        return run_id, [f"{e['event_id']}\t{e['ts']}" for e in recorder.get_events(run_id)]


def test_show_lists_a_recorder_run_s_events_when_piped(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id, events = _forkline_run(db)
    code, out = invoke("show", run_id, "--db", str(db))
    assert code == 0 and _headers(out) == [*_SHOW_HEADERS, _EVENTS_HEADER]
    rows = _section(out, "events")
    assert rows == [
        f"{events[0]}\tinput\t" + '{"n":[1,2],"prompt":"hello"}',
        f"{events[1]}\toutput\t" + '{"result":"wörld\\\\tdone"}',  # piped: the backslash escaped
    ]


def test_show_lists_a_recorder_run_s_events_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    run_id, _ = _forkline_run(db)
    screen = _Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as done:
        main.main(["show", run_id, "--db", str(db)], prog_name="forkline-es")
    assert done.value.code == 0
    out = screen.getvalue()
    assert "events" in out and '{"n":[1,2],"prompt":"hello"}' in out and '{"result":"wörld\\tdone"}' in out


def test_show_json_stays_the_run_record_document(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id, _ = _forkline_run(db)
    code, out = invoke("show", run_id, "--json", "--db", str(db))
    with fe.Store.open(db) as store:
        assert code == 0 and json.loads(out) == store.get_run_record(run_id)


def test_show_marks_a_removed_payload_empty_and_a_logged_null_as_null(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.RunRecorder(db) as recorder:
        kept, removed = recorder.start_run("x.py"), recorder.start_run("y.py")
        for run_id in (kept, removed):
            recorder.log_event(run_id, "nothing", None)
            recorder.end_run(run_id)
        assert recorder.store.remove_payloads(removed) != ()  # all its values
    for run_id, shown in ((kept, "null"), (removed, "")):
        code, out = invoke("show", run_id, "--db", str(db))
        rows = _section(out, "events")
        assert code == 0 and [row.split("\t")[2:] for row in rows] == [["nothing", shown]]


def test_show_is_unchanged_for_runs_without_forkline_events(sample_db: Path, tmp_path: Path) -> None:
    """An executor run, and a recorder run that logged nothing: the four tables of the document."""
    with fe.Store.open(sample_db) as store:
        doc = store.get_run_record("done")
    code, out = invoke("show", "done", "--db", str(sample_db))
    assert code == 0 and _headers(out) == _SHOW_HEADERS
    tables = (doc["run"], doc["payloads"], doc["steps"], doc["entries"])
    # each section: its title, its header, its rows and an empty line
    assert len(out.splitlines()) == 3 * len(_SHOW_HEADERS) + sum(len(t) for t in tables)
    db = tmp_path / "quiet.db"
    with fe.RunRecorder(db) as recorder:
        quiet = recorder.start_run("x.py")
        recorder.end_run(quiet)
    code, out = invoke("show", quiet, "--db", str(db))
    assert code == 0 and _headers(out) == _SHOW_HEADERS
