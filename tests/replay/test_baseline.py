"""Golden baselines: what is left out, diffing a file against a run, the pytest helper."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.replay import baseline_document, export_baseline, load_baseline

from .histories import ART


def _run(store: fe.Store, result: object = 1, child_workflow: str = "wf/child") -> str:
    run = store.start_run("wf", inputs={"id": "run-id-looking-value", "started_at": "x"})
    run.begin_step("a")
    run.invoke("a", 1, "op", ART, "ambiguous")
    run.result("a", 1, "succeeded", result=result)
    child = store.start_run(child_workflow, parent=run.id)
    child.conclude("succeeded")
    run.child("a", child.id)
    run.end_step("a", "succeeded")
    run.conclude("succeeded")
    return run.id


def test_leaves_out_ids_timestamps_and_generations_by_position_only(mem_store: fe.Store) -> None:
    run_id = _run(mem_store)
    doc = json.loads(export_baseline(mem_store, run_id))
    assert doc["x-baseline"] == 1
    assert set(doc["run"]) == {"workflow", "status", "dry_run"}
    assert all("generation" not in e for e in doc["entries"])
    assert all("generation" not in s for s in doc["steps"].values())
    child = next(e for e in doc["entries"] if e["kind"] == "child")
    assert child["child"]["run"]["workflow"] == "wf/child"  # the child's baseline, not its id
    # user payload keys that look like varying fields are kept
    assert doc["entries"][0]["payloads"]["inputs"]["value"]["value"]["id"]["value"] == "run-id-looking-value"
    assert run_id.encode() not in export_baseline(mem_store, run_id)


def test_two_faithful_runs_have_the_same_baseline_bytes(mem_store: fe.Store) -> None:
    assert export_baseline(mem_store, _run(mem_store)) == export_baseline(mem_store, _run(mem_store))


def test_a_baseline_diffs_against_runs(mem_store: fe.Store) -> None:
    golden = baseline_document(mem_store.get_run_record(_run(mem_store)), mem_store.get_run_record)
    same, other = _run(mem_store), _run(mem_store, child_workflow="wf/other")
    kw = {"resolve": mem_store.get_run_record}
    assert fe.diff_documents(golden, mem_store.get_run_record(same), **kw).is_match
    first = fe.diff_documents(golden, mem_store.get_run_record(other), **kw).first
    assert first is not None and first.kind == "child"


def test_assert_matches_baseline(store: fe.Store, tmp_path: Path) -> None:
    path = tmp_path / "run.golden.json"
    with pytest.raises(AssertionError, match="no baseline"):
        fe.testing.assert_matches_baseline(store, _run(store), path)
    fe.testing.write_baseline(store, _run(store), path)
    fe.testing.assert_matches_baseline(store, _run(store), path)
    changed = _run(store, result=2)
    with pytest.raises(AssertionError) as caught:
        fe.testing.assert_matches_baseline(store, changed, path)
    message = str(caught.value)
    assert "behaviour: step 'a' returned a different result" in message
    assert f"forkline-es export --db {shlex.quote(store.path)} --baseline {changed} > {path}" in message


@pytest.mark.sqlite_only("a SQLite database in memory, which no other process can open")
def test_an_in_memory_store_is_re_recorded_from_python_not_with_a_command(
    sqlite_mem_store: fe.Store, tmp_path: Path
) -> None:
    """No command can open another process's ``:memory:`` database: name the API call."""
    mem_store = sqlite_mem_store
    path = tmp_path / "run.golden.json"
    with pytest.raises(AssertionError) as missing:
        fe.testing.assert_matches_baseline(mem_store, _run(mem_store), path)
    fe.testing.write_baseline(mem_store, _run(mem_store), path)
    changed = _run(mem_store, result=2)
    with pytest.raises(AssertionError) as caught:
        fe.testing.assert_matches_baseline(mem_store, changed, path)
    for message in (str(missing.value), str(caught.value)):
        assert "--db :memory:" not in message and "forkline-es" not in message
    assert f"fe.testing.write_baseline(store, {changed!r}, {str(path)!r})" in str(caught.value)


def test_a_malformed_baseline_fails_the_assertion_with_the_command_that_records_it(
    store: fe.Store, tmp_path: Path
) -> None:
    path = tmp_path / "run.golden.json"
    path.write_text('{"run": {}, "entries": [null]}')
    run_id = _run(store)
    with pytest.raises(AssertionError, match=r"`entries\[0\]` must be an object") as caught:
        fe.testing.assert_matches_baseline(store, run_id, path)
    assert f"forkline-es export --db {shlex.quote(store.path)} --baseline {run_id} > {path}" in str(
        caught.value
    )


def test_a_bad_baseline_file_is_an_invalid_request(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(fe.InvalidRequest, match="not a run record document"):
        load_baseline(bad)
    bad.write_text("{")
    with pytest.raises(fe.InvalidRequest, match="not JSON"):
        load_baseline(bad)
