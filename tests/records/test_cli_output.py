"""What `runs | show | step | log | rebuild` print, member by member.

Each case is one a mutation pass over forkline_es/cli found unguarded: the suite passed with
the flag ignored, the column dropped or the JSON member renamed.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def rows_of(out: str, header: str) -> list[list[str]]:
    """The piped rows under ``header``: the lines after it with as many columns, up to the first other."""
    lines = out.splitlines()
    rows = []
    for line in lines[lines.index(header) + 1 :]:
        if line.count("\t") != header.count("\t"):
            break
        rows.append(line.split("\t"))
    return rows


def test_show_json_wins_over_timeline(sample_db: Path) -> None:
    """--json is for machines: with --timeline too it still prints the document, not drawings."""
    code, out, _ = invoke("show", "done", "--timeline", "--json", "--db", str(sample_db))
    with fe.Store.open(sample_db) as store:
        assert code == 0 and json.loads(out) == store.get_run_record("done")


def test_show_lists_run_members_by_name_and_each_entry_s_detail(sample_db: Path) -> None:
    code, out, _ = invoke("show", "done", "--db", str(sample_db))
    assert code == 0
    members = [member for member, _ in rows_of(out, "member\tvalue")]
    assert members == sorted(members) and {"id", "status", "workflow"} <= set(members)
    rows = rows_of(out, "seq\tgeneration\tat\tkind\tdetail")
    entries = {int(seq): (kind, detail) for seq, _, _, kind, detail in rows}
    assert entries[9] == ("conclude", "status=succeeded")  # how the run ended
    assert entries[4] == ("result", "path=fetch/0 attempt=1 dispatch=failed code=timeout")


def test_step_text_shows_the_branch_and_present_values(sample_db: Path) -> None:
    code, out, _ = invoke("step", "done", "fetch/0", "--db", str(sample_db))
    assert code == 0
    facts = dict(rows_of(out, "member\tvalue"))
    assert "case" in facts["branch"] and "ok" in facts["branch"] and facts["outcome"] == "succeeded"
    slots = {name: rest for name, *rest in rows_of(out, "slot\tclass\tstate\tvalue")}
    assert "https://x" in slots["arguments"][2]  # a present value is shown
    assert slots["result"] == ["results", "withheld", ""]  # a sensitive one is not


def test_log_text_is_in_seq_order(sample_db: Path) -> None:
    code, out, _ = invoke("log", "done", "--db", str(sample_db))
    lines = out.splitlines()
    assert code == 0 and lines[0] == "seq\tentry\tgeneration\tkind\tat\tkey"
    assert [int(line.split("\t")[0]) for line in lines[1:]] == list(range(1, 10))
    assert lines[1].split("\t")[3] == "run-started" and lines[-1].split("\t")[3] == "run-concluded"


def test_rebuild_and_check_say_what_they_found(sample_db: Path) -> None:
    db = str(sample_db)
    code, out, _ = invoke("rebuild", "--json", "--db", db)
    with fe.Store.open(sample_db) as store:
        events = int(store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0])
    assert code == 0 and json.loads(out) == {"rebuilt": True, "events": events}
    code, out, _ = invoke("rebuild", "--check", "--db", db)
    assert code == 0 and out == "the projections equal a rebuild from the log\n"
    code, out, _ = invoke("rebuild", "--check", "--json", "--db", db)
    assert code == 0 and json.loads(out) == {"equal": True, "differences": []}
    conn = apsw.Connection(db)
    conn.execute("UPDATE run_summary SET status = 'held' WHERE run_id = 'child'")
    conn.close()
    code, out, _ = invoke("rebuild", "--check", "--json", "--db", db)
    checked = json.loads(out)
    assert code == 1 and checked["equal"] is False and len(checked["differences"]) == 1


# -- what every command shares (cli/_common.py) ------------------------------------------------


def test_piped_json_is_one_line_with_sorted_keys(sample_db: Path) -> None:
    """Piped --json is one compact line per document, keys sorted, so outputs compare as text."""
    code, out, _ = invoke("runs", "--json", "--db", str(sample_db))
    assert code == 0 and out.count("\n") == 1 and ": " not in out
    for summary in json.loads(out):
        assert list(summary) == sorted(summary)
    code, out, _ = invoke("show", "done", "--json", "--db", str(sample_db))
    assert list(json.loads(out)["run"]) == sorted(json.loads(out)["run"])


def test_an_empty_file_is_named_as_such(tmp_path: Path) -> None:
    """The file is there, so "no database" would send the reader looking for the wrong thing."""
    empty = tmp_path / "empty.db"
    empty.touch()
    code, out, err = invoke("runs", "--db", str(empty))
    assert code == 2 and out == ""
    assert err.startswith(f"error: an empty file at {empty};") and "forkline-es demo" in err
    code, _, err = invoke("runs", "--db", str(tmp_path / "none.db"))
    assert code == 2 and err.startswith(f"error: no database at {tmp_path / 'none.db'};")


def test_a_driver_error_met_by_a_command_is_a_message_and_exit_2(
    sample_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E.g. another writer locking the file between opening it and reading: no traceback."""

    def locked(*args: object, **kwargs: object) -> None:
        raise apsw.BusyError("database is locked")

    monkeypatch.setattr(fe.Store, "list_runs", locked)
    result = CliRunner().invoke(main, ["runs", "--db", str(sample_db)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("error: ") and "locked" in result.stderr and "retry" in result.stderr
