"""Diff rules at their edges: the window, which kind names a divergence, run facts, open runs,
phases, baselines of evicted children and malformed documents.

Each case is one a mutation pass found unguarded (the suite passed with the rule broken).
"""

from __future__ import annotations

import copy
import json

import pytest

import forkline_es as fe
from forkline_es.replay.baseline import export_baseline


def steps_run(store: fe.Store, paths: list[str]) -> str:
    run = store.start_run("wf")
    for path in paths:
        run.begin_step(path)
        run.end_step(path, "succeeded")
    run.conclude("succeeded")
    return run.id


def test_the_window_looks_exactly_window_entries_ahead(mem_store: fe.Store) -> None:
    """One inserted step is two entries: a window of 2 reaches past it."""
    a, b = steps_run(mem_store, ["a", "b"]), steps_run(mem_store, ["x", "a", "b"])
    for window in (2, 3):
        found = fe.diff_runs(mem_store, a, b, window=window).divergences
        assert [(d.kind, d.path) for d in found] == [("extra-step", "x")]


def ended(
    store: fe.Store, outcome: str, result: object, code: str | None = None, dry_run: bool = False
) -> str:
    run = store.start_run("wf", dry_run=dry_run)
    run.begin_step("s")
    run.end_step("s", outcome, code=code, result=result)
    run.conclude("succeeded")
    return run.id


def test_an_entry_differing_in_several_ways_is_named_by_its_weightiest_change(mem_store: fe.Store) -> None:
    a, b = ended(mem_store, "succeeded", {"v": 1}), ended(mem_store, "failed", {"v": 2}, code="E1")
    diff = fe.diff_runs(mem_store, a, b)
    assert diff.first is not None and diff.first.kind == "outcome"
    # one divergence per kind of fact, weightiest first, each with its own changes
    assert [(d.kind, [c[0] for c in d.changes]) for d in diff.divergences] == [
        ("outcome", ["/step/outcome"]),
        ("code", ["/step/code"]),
        ("result", ["/step/payloads/result/value/value/v/value"]),
    ]


def test_a_dry_run_differs_from_a_real_one(mem_store: fe.Store) -> None:
    a, b = ended(mem_store, "succeeded", {"v": 1}), ended(mem_store, "succeeded", {"v": 1}, dry_run=True)
    assert [(d.kind, d.changes) for d in fe.diff_runs(mem_store, a, b).divergences] == [
        ("run", [("/run/dry_run", False, True)])
    ]


def held(store: fe.Store, reason: str) -> str:
    run = store.start_run("wf")
    run.begin_step("s")
    run.end_step("s", "succeeded")
    run.hold(code="approval", step="s", reason=reason)
    return run.id


def test_two_open_runs_differ_in_their_hold_reason(mem_store: fe.Store) -> None:
    a, b = held(mem_store, "waiting for alice"), held(mem_store, "waiting for bob")
    assert [(d.kind, d.changes) for d in fe.diff_runs(mem_store, a, b).divergences] == [
        ("conclusion", [("/run/reason", "waiting for alice", "waiting for bob")])
    ]


def test_a_concluded_run_against_an_open_one_is_the_missing_conclusion_only(mem_store: fe.Store) -> None:
    a = steps_run(mem_store, ["s"])
    b = held(mem_store, "wait")
    assert [d.kind for d in fe.diff_runs(mem_store, a, b).divergences] == ["missing-step"]


def test_a_step_skipped_without_beginning_misses_its_begin(mem_store: fe.Store) -> None:
    a = steps_run(mem_store, ["s"])
    run = mem_store.start_run("wf")
    run.end_step("s", "skipped")
    run.conclude("succeeded")
    found = [
        (d.kind, d.path, d.seq_a, d.seq_b, [c[0] for c in d.changes])
        for d in fe.diff_runs(mem_store, a, run.id).divergences
    ]
    assert found == [("missing-step", "s", 2, None, [""]), ("outcome", "s", 3, 2, ["/step/outcome"])]


def test_a_baseline_names_no_child_run_even_when_the_child_is_gone(mem_store: fe.Store) -> None:
    parent = mem_store.start_run("wf", run_id="parent")
    parent.begin_step("s")
    mem_store.start_run("wf/child", parent="parent", run_id="kid").conclude("succeeded")
    parent.child("s", "kid")
    parent.end_step("s", "succeeded")
    parent.conclude("succeeded")
    mem_store.evict_run("kid", reason="test", force=True)
    entries = json.loads(export_baseline(mem_store, "parent"))["entries"]
    assert [e for e in entries if e["kind"] == "child"] == [{"kind": "child", "path": "s", "seq": 3}]


@pytest.mark.parametrize("damage", ["child entry without a path", "boolean seq"])
def test_a_malformed_document_is_refused(mem_store: fe.Store, damage: str) -> None:
    parent = mem_store.start_run("wf", run_id="parent")
    mem_store.start_run("wf/child", parent="parent", run_id="kid").conclude("succeeded")
    parent.child("s", "kid")
    parent.conclude("succeeded")
    good = mem_store.get_run_record("parent")
    bad = copy.deepcopy(good)
    if damage == "boolean seq":
        bad["entries"][0]["seq"] = True
    else:
        for entry in bad["entries"]:
            if entry["kind"] == "child":
                del entry["path"]
    with pytest.raises(fe.InvalidRequest, match="not a run record document"):
        fe.diff_documents(good, bad)
