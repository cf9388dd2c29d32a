"""The timeline view: a crash and its recovery are visible at a glance."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main
from forkline_es.records.timeline import timeline

ARTIFACT = "sha256:" + "ab" * 32


def _crashed_and_recovered(store: fe.Store) -> str:
    run = store.start_run(workflow="tl/demo", run_id="tl-1")
    run.begin_step("a")
    run.invoke("a/x", 1, "op", ARTIFACT, "not-dispatched")
    run.result("a/x", 1, "failed", code="boom")
    run.invoke("a/x", 2, "op", ARTIFACT, "ambiguous")
    fresh = store.resume_run(run.id)  # the process died here
    fresh.recover(supersedes=[5])
    fresh.invoke("a/x", 3, "op", ARTIFACT, "not-dispatched")
    fresh.result("a/x", 3, "succeeded")
    fresh.end_step("a/x", "succeeded")
    fresh.end_step("a", "succeeded")
    fresh.conclude("succeeded")
    return run.id


def test_timeline_marks_superseded_entries_and_the_generation_change(store: fe.Store) -> None:
    lines = timeline(store.get_run_record(_crashed_and_recovered(store)))
    texts = [line.text for line in lines]
    superseded = [line for line in lines if line.superseded]
    assert len(superseded) == 1 and "#2 op (ambiguous)" in superseded[0].text
    assert "superseded by 6" in superseded[0].text
    rules = [line for line in lines if line.rule]
    assert len(rules) == 1 and "generation 1, supersedes 5" in rules[0].text
    # attempts are indented under their step, and every entry has one line
    assert any(t.endswith("    ← #1 failed [boom]") for t in texts)
    assert texts[1].startswith("took ")  # the run concluded: how long it took
    assert sum(1 for t in texts[3:]) == len(store.get_run_record("tl-1")["entries"])
    assert texts[-1].endswith("◆ succeeded")


def test_show_timeline_command(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run_id = _crashed_and_recovered(store)
    result = CliRunner().invoke(main, ["show", run_id, "--timeline", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    assert "recovery (seq 6)" in result.output
    assert "✗ superseded by 6" in result.output


def test_piped_timeline_keeps_each_entry_on_one_line(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run("wf", run_id="r")
        run.begin_step("a")
        run.end_step("a", "failed", code="c\td")
        run.conclude("failed", reason="why\tnot\nreally")
    result = CliRunner().invoke(main, ["show", "r", "--timeline", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    assert "failed: why\\tnot\\nreally" in result.output and "[c\\td]" in result.output
    assert "\t" not in result.output and not any(line == "really" for line in result.output.splitlines())
