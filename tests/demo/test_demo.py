"""The demo records what it says it records, and running it twice is safe."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli.main import main
from forkline_es.demo import demo_ids, record_demo
from forkline_es.demo.workflow import CHILD_WORKFLOW, WORKFLOW


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "runs.db"
    result = CliRunner().invoke(main, ["demo", "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db


@pytest.fixture
def demo_store(demo_db: Path) -> Any:
    with fe.Store.open(demo_db) as store:
        yield store


def entries_of(doc: dict[str, Any], kind: str, path: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in doc["entries"]
        if e["kind"] == kind and (path is None or (e.get("path") or e.get("step", {}).get("path")) == path)
    ]


def test_statuses_and_kinds_of_runs(demo_store: fe.Store) -> None:
    runs = {r["id"]: r for r in demo_store.list_runs(WORKFLOW)}
    assert runs["demo-first"]["status"] == "succeeded"
    assert runs["demo-first"]["name"] == "Daily report"
    assert runs["demo-dry-run"]["dry_run"] is True
    assert runs["demo-held"]["status"] == "held"
    assert runs["demo-replay"]["status"] == "succeeded"
    held = demo_store.get_run_record("demo-held")["run"]
    assert (held["code"], held["step"]) == ("approval-required", "approve")
    assert demo_store.get_step_record("demo-held", "approve")["status"] == "active"
    assert demo_store.get_run_record("demo-replay")["run"]["predecessor"] == "demo-first"


def test_crash_then_recovery_supersedes_the_unfinished_step(demo_store: fe.Store) -> None:
    doc = demo_store.get_run_record("demo-first")
    assert doc["run"]["generation"] == 1
    (recovery,) = entries_of(doc, "recovery")
    assert recovery["generation"] == 1
    superseded = [e for e in doc["entries"] if e["seq"] in recovery["supersedes"]]
    assert [e["kind"] for e in superseded] == ["step", "invoke"]
    assert all(e["generation"] == 0 for e in superseded)
    assert superseded[1]["path"] == "summarize" and superseded[1]["attempt"] == 1
    # the step ran again in generation 1 with the next attempt; steps done before the crash
    # keep the generation they ended in
    summarize = doc["steps"]["summarize"]
    assert (summarize["generation"], summarize["outcome"]) == (1, "succeeded")
    assert [e["attempt"] for e in entries_of(doc, "invoke", "summarize")] == [1, 2]
    assert doc["steps"]["fetch/0"]["generation"] == 0
    assert doc["steps"]["fetch"]["generation"] == 0


def test_nested_steps_iteration_retry_and_ambiguous_dispatch(demo_store: fe.Store) -> None:
    doc = demo_store.get_run_record("demo-first")
    assert {"fetch", "fetch/0", "fetch/1"} <= doc["steps"].keys()
    fetch1 = [(e["attempt"], e["dispatch"], e.get("code")) for e in entries_of(doc, "result", "fetch/1")]
    assert fetch1 == [(1, "failed", "http-503"), (2, "succeeded", None)]
    publish = [(e["attempt"], e["dispatch"]) for e in entries_of(doc, "result", "publish")]
    assert publish == [(1, "ambiguous"), (2, "succeeded")]
    assert doc["steps"]["publish"]["outcome"] == "succeeded"


def test_child_listed_under_its_own_workflow(demo_store: fe.Store) -> None:
    doc = demo_store.get_run_record("demo-first")
    (child_entry,) = entries_of(doc, "child", "translate")
    children = {r["id"]: r for r in demo_store.list_runs(CHILD_WORKFLOW)}
    assert children[child_entry["child"]]["parent"] == "demo-first"
    assert child_entry["child"] not in {r["id"] for r in demo_store.list_runs(WORKFLOW)}


def test_sensitive_argument_is_withheld_and_never_on_disk(demo_store: fe.Store, demo_db: Path) -> None:
    slot = demo_store.get_step_record("demo-first", "notify")["payloads"]["arguments"]
    assert slot == {"class": "arguments", "state": "withheld"}
    for path in demo_db.parent.rglob("*"):
        if path.is_file():
            assert b"xoxb-not-a-real-token" not in path.read_bytes(), path


def test_dry_run_results_are_partial(demo_store: fe.Store) -> None:
    doc = demo_store.get_run_record("demo-dry-run")
    assert not entries_of(doc, "invoke")  # nothing was dispatched
    result = doc["steps"]["fetch/0"]["payloads"]["result"]
    assert result["suppressed"] == [["result"]]
    assert result["state"] == "present"
    assert doc["payloads"]["outputs"]["suppressed"] == [["result"]]
    child = entries_of(doc, "child")[0]["child"]
    assert demo_store.get_run_record(child)["run"]["dry_run"] is True


def test_artifact_manifest_and_verify(demo_store: fe.Store) -> None:
    doc = demo_store.get_run_record("demo-first")
    (artifact,) = doc["x-artifacts"]
    assert (artifact["name"], artifact["kind"], artifact["step"]) == ("report.md", "report", "publish")
    assert doc["x-manifest"]["digest"].startswith("sha256:")
    assert doc["pins"]["definition"].startswith("sha256:")
    assert demo_store.verify_run("demo-first").ok


def test_replay_diverges_first_at_summarize(demo_store: fe.Store) -> None:
    diff = fe.diff_runs(demo_store, "demo-first", "demo-replay")
    assert not diff.is_match
    assert diff.first is not None
    assert (diff.first.kind, diff.first.path) == ("result", "summarize")
    assert [(d.kind, d.path) for d in diff.behaviour] == [("result", "summarize")]
    # the first run's crash (a recovery, summarize's attempt 2 against the replay's 1)
    assert {(d.kind, d.path) for d in diff.infrastructure} == {("attempt", "summarize"), ("recovery", None)}
    assert diff.divergences[0] is diff.first  # behaviour first


def test_the_cli_says_in_words_what_changed_at_summarize(demo_db: Path) -> None:
    result = CliRunner().invoke(main, ["diff", "demo-first", "demo-replay", "--db", str(demo_db)])
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first == (
        "first divergence: behaviour: step 'summarize' returned a different result: "
        'result/model "demo-model-1" -> "demo-model-2" (A/B entries 19/16, 20/17)'
    )


def test_running_twice_recognises_the_runs(demo_db: Path) -> None:
    with fe.Store.open(demo_db) as store:
        before = store.list_runs()
    result = CliRunner().invoke(main, ["demo", "--db", str(demo_db), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["recorded"] is False
    assert f"forkline-es diff demo-first demo-replay --db {demo_db}" in out["next"]
    with fe.Store.open(demo_db) as store:
        assert store.list_runs() == before


def test_taken_ids_get_a_fresh_set(store: fe.Store) -> None:
    store.start_run("someone/else", run_id="demo-held")  # one demo id taken by another run
    ids, present = demo_ids(store)
    assert not present
    assert ids["first"] == "demo-first-2"
    record_demo(store, ids)
    assert demo_ids(store) == (ids, True)
    assert store.get_run_record("demo-first-2")["run"]["status"] == "succeeded"


def test_demo_prints_the_next_commands(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    result = CliRunner().invoke(main, ["demo", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "recorded the demo" in result.output
    suggested = [line.strip() for line in result.output.split("Next, try:")[1].strip().splitlines()]
    assert all(line.endswith(f"--db {db}") for line in suggested)
    starts = ["runs", "show demo-first", "step demo-first summarize", "diff demo-first demo-replay"]
    starts += ["verify demo-first", "rebuild --check"]
    assert len(suggested) == len(starts)
    for line, start in zip(suggested, starts, strict=True):
        assert line.startswith(f"forkline-es {start}")


def test_the_next_commands_carry_the_artifacts_folder_given_and_each_runs_as_printed(tmp_path: Path) -> None:
    """A store whose artifact files are in a folder given with ``--artifacts`` (as a
    PostgreSQL store's must be) is verified only with that folder: the suggestions say it."""
    db, folder = tmp_path / "d.db", tmp_path / "shared artifacts"
    result = CliRunner().invoke(main, ["--artifacts", str(folder), "demo", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    suggested = json.loads(result.output)["next"]
    for command in suggested:
        argv = shlex.split(command)
        assert argv[:3] == ["forkline-es", "--artifacts", str(folder)]
        ran = CliRunner().invoke(main, ["--no-pager", *argv[1:]])
        assert ran.exit_code == (1 if argv[3] == "diff" else 0), (command, ran.output)  # diff finds one
    assert any(shlex.split(c)[3] == "verify" for c in suggested)


def test_suggested_commands_quote_a_db_path_with_a_space(tmp_path: Path) -> None:
    """Each suggestion is pasted into a shell: the path must come back as one argument."""
    db = tmp_path / "my runs.db"
    result = CliRunner().invoke(main, ["demo", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    for command in json.loads(result.output)["next"]:
        assert shlex.split(command)[-2:] == ["--db", str(db)]


def test_the_runs_listed_include_the_child_runs(demo_db: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--db", str(demo_db), "--json"])
    rows = json.loads(result.output)["runs"]
    children = [r for r in rows if r["label"].endswith("/child")]
    assert children and all(r["workflow"] == CHILD_WORKFLOW for r in children)
    assert all(r["shows"] == f"child run of {r['parent']}" for r in children)
    text = CliRunner().invoke(main, ["demo", "--db", str(demo_db)]).output
    assert all(f"child run of {r['parent']}" in text for r in children)


def test_resume_after_a_crash_inside_a_nested_step(store: fe.Store) -> None:
    """A crash in `fetch/1`: the unfinished parent `fetch` is superseded too; `fetch/0` is reused."""
    from forkline_es.demo.executor import Executor
    from forkline_es.demo.workflow import INPUTS, Crash, report, sample_actions

    actions = sample_actions()
    calls = 0

    def crash_on_first_fetch_of_flaky(args: Any) -> Any:
        nonlocal calls
        if "flaky" in args["url"]:
            calls += 1
            if calls == 1:
                raise Crash("gone")
        return {"url": args["url"], "text": "page"}

    actions["http.get"] = crash_on_first_fetch_of_flaky
    ex = Executor.start(store, WORKFLOW, actions, INPUTS)
    with pytest.raises(Crash):
        ex.execute(report, INPUTS)
    resumed = Executor.resume(store, ex.run.id, actions)
    assert resumed.done.keys() == {"fetch/0"}
    resumed.execute(report, INPUTS)
    doc = store.get_run_record(ex.run.id)
    (recovery,) = entries_of(doc, "recovery")
    superseded = [e for e in doc["entries"] if e["seq"] in recovery["supersedes"]]
    assert [(e["kind"], e.get("path") or e["step"]["path"]) for e in superseded] == [
        ("step", "fetch"),
        ("step", "fetch/1"),
        ("invoke", "fetch/1"),
    ]
    assert doc["run"]["status"] == "succeeded"
    assert (doc["steps"]["fetch/0"]["generation"], doc["steps"]["fetch/1"]["generation"]) == (0, 1)
    assert [e["attempt"] for e in entries_of(doc, "invoke", "fetch/1")] == [1, 2]
    assert calls == 2


def test_demo_after_its_runs_were_evicted_records_a_fresh_set(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    assert CliRunner().invoke(main, ["demo", "--db", str(db)]).exit_code == 0
    with fe.Store.open(db) as store:
        for summary in store.list_runs():
            if summary["status"] in ("succeeded", "failed", "cancelled", "stopped"):
                store.evict_run(summary["id"], "retention", force=True)
    again = CliRunner().invoke(main, ["demo", "--db", str(db), "--json"])
    assert again.exit_code == 0, again.output  # was a KeyError: evicted ids counted as present
    out = json.loads(again.output)
    assert out["recorded"] is True
    assert {r["id"] for r in out["runs"]} >= {"demo-first-2", "demo-replay-2"}
