"""Times in the documents: x-at, x-started-at, x-ended-at, x-attempts, x-updated-at; the
schema holds them and diff and golden baselines leave them out."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.records.operations import log_events
from forkline_es.replay.baseline import baseline_document
from forkline_es.schema import definition, run_record_schema

ART = "sha256:" + "c" * 64


def record(store: fe.Store, attempts: list[int], at: str | None = None) -> str:
    """A run whose step i has ``attempts[i]`` attempts; times from the clock unless ``at``."""
    run = store.start_run("wf/times", inputs={"n": len(attempts)})
    for i, n in enumerate(attempts):
        path = f"s{i}"
        run.begin_step(path)
        for attempt in range(1, n + 1):
            run.invoke(path, attempt, "op", ART, "ambiguous")
            run.result(path, attempt, "succeeded" if attempt == n else "failed")
        run.end_step(path, "succeeded")
    run.conclude("succeeded")
    return run.id


def valid(instance: Any, schema: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_every_document_member_carries_its_time(backend_store: fe.Store) -> None:
    rid = record(backend_store, [1, 3, 0])
    doc = backend_store.get_run_record(rid)
    rows = {e["seq"]: e["at"] for e in log_events(backend_store, rid)}
    assert all(e["x-at"] == rows[e["seq"]] for e in doc["entries"])  # entry seq = row seq here
    assert [doc["steps"][p]["x-attempts"] for p in ("s0", "s1", "s2")] == [1, 3, 0]
    for step in doc["steps"].values():
        assert step["x-started-at"] <= step["x-ended-at"]
    run = doc["run"]
    assert run["x-updated-at"] == rows[max(rows)] == run["x-ended-at"]
    listed = backend_store.list_runs()[0]
    assert listed["x-updated-at"] == run["x-updated-at"] and listed["x-ended-at"] == run["x-ended-at"]
    assert valid(doc, run_record_schema()) and valid(listed, definition("summary"))
    assert valid(backend_store.get_step_record(rid, "s1"), definition("step"))


def test_an_active_run_has_no_end_and_a_wrong_time_is_refused_by_the_schema(mem_store: fe.Store) -> None:
    run = mem_store.start_run("wf")
    run.begin_step("a")
    doc = mem_store.get_run_record(run.id)
    assert "x-ended-at" not in doc["run"] and "x-ended-at" not in doc["steps"]["a"]
    assert doc["steps"]["a"]["x-attempts"] == 0
    doc["entries"][0]["x-at"] = "yesterday"
    assert not valid(doc, run_record_schema())


def test_a_recovery_counts_only_the_current_generations_attempts(mem_store: fe.Store) -> None:
    run = mem_store.start_run("wf")
    run.begin_step("a")
    first = run.invoke("a", 1, "op", ART, "ambiguous")
    run.recover(supersedes=[first])
    run.invoke("a", 2, "op", ART, "ambiguous")
    step = mem_store.get_step_record(run.id, "a")
    assert step["x-attempts"] == 1


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=4))
def test_times_are_monotone_and_the_diff_ignores_them(attempts: list[int]) -> None:
    with fe.Store.open(":memory:") as store:
        a = record(store, attempts)
        b = record(store, attempts)
        doc = store.get_run_record(a)
        times = [e["x-at"] for e in doc["entries"]]
        keyed = [fe.values.parse_canonical_timestamp(t) for t in times]
        assert keyed == sorted(keyed)
        assert fe.diff_runs(store, a, b).is_match
        base = baseline_document(doc)
        assert '"x-at"' not in json.dumps(base) and '"x-started-at"' not in json.dumps(base)
        assert base == baseline_document(store.get_run_record(b))
