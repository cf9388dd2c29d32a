"""Crafted pairs for every divergence kind, recorded with the real Store API."""

from __future__ import annotations

from typing import Any

import pytest

import forkline_es as fe
from forkline_es.replay import KINDS, diff_documents
from forkline_es.replay.align import align

ART = "sha256:" + "ab" * 32
ART2 = "sha256:" + "cd" * 32
PIN = "sha256:" + "ef" * 32

Knobs = dict[str, Any]


def record(store: fe.Store, **knobs: Any) -> str:
    """One run of a small workflow; each knob changes one fact of it."""
    k: Knobs = {
        "workflow": "wf",
        "inputs": {"n": 1},
        "args": {"q": 1},
        "op": "http.get",
        "art": ART,
        "dispatch": "ambiguous",
        "rdispatch": "succeeded",
        "rcode": None,
        "result": {"r": 1},
        "outcome": "succeeded",
        "code": None,
        "branch": {"case": "a"},
        "binding": 1,
        "child_workflow": "wf/child",
        "status": "succeeded",
        "outputs": [1],
        "extra": False,
        "skip_b": False,
        "conclude": True,
        "pins": {"definition": PIN},
    } | knobs
    run = store.start_run(k["workflow"], inputs=k["inputs"], pins=k["pins"])
    run.begin_step("a", arguments=k["args"])
    run.invoke("a", 1, k["op"], k["art"], k["dispatch"], arguments=k["args"])
    run.result("a", 1, k["rdispatch"], k["rcode"], result=k["result"])
    run.end_step("a", k["outcome"], code=k["code"], branch=k["branch"], binding=k["binding"])
    if k["extra"]:
        run.begin_step("x")
        run.end_step("x", "succeeded")
    if not k["skip_b"]:
        run.begin_step("b")
        child = store.start_run(k["child_workflow"], parent=run.id)
        child.conclude("succeeded")
        run.child("b", child.id)
        run.end_step("b", "succeeded")
    if k["conclude"]:
        run.conclude(k["status"], outputs=k["outputs"] if k["status"] == "succeeded" else fe.MISSING)
    return run.id


CASES: list[tuple[str, Knobs, str, str | None, str]] = [
    # (name, knobs of B, kind, path, a pointer among the changes)
    ("workflow", {"workflow": "wf2"}, "run", None, "/run/workflow"),
    ("pins", {"pins": {"definition": "sha256:" + "00" * 32}}, "run", None, "/pins/definition"),
    ("inputs", {"inputs": {"n": 2}}, "inputs", None, "/payloads/inputs/value/value/n/value"),
    ("operation", {"op": "http.post"}, "operation", "a", "/operation"),
    ("artifact", {"art": ART2}, "operation", "a", "/artifact"),
    ("arguments", {"args": {"q": 2}}, "arguments", "a", "/step/payloads/arguments/value/value/q/value"),
    ("int vs float", {"args": {"q": 1.0}}, "arguments", "a", "/step/payloads/arguments/value/value/q"),
    ("dispatch", {"dispatch": "not-dispatched"}, "dispatch", "a", "/dispatch"),
    ("result dispatch", {"rdispatch": "failed"}, "outcome", "a", "/dispatch"),
    ("result code", {"rcode": "E1"}, "code", "a", "/code"),
    ("result", {"result": {"r": 2}}, "result", "a", "/payloads/result/value/value/r/value"),
    ("outcome", {"outcome": "failed"}, "outcome", "a", "/step/outcome"),
    ("code", {"code": "E2"}, "code", "a", "/step/code"),
    ("branch", {"branch": {"arm": 0}}, "branch", "a", "/step/branch/arm"),
    ("binding", {"binding": 2}, "result", "a", "/step/payloads/binding/value/value"),
    ("child", {"child_workflow": "wf/other"}, "child", "b", "/child/run/workflow"),
    ("conclusion", {"status": "failed"}, "conclusion", None, "/status"),
    ("outputs", {"outputs": [2]}, "conclusion", None, "/payloads/outputs/value/value/0/value"),
    ("extra step", {"extra": True}, "extra-step", "x", ""),
    ("missing step", {"skip_b": True}, "missing-step", "b", ""),
    ("nonterminal", {"conclude": False}, "missing-step", None, ""),
]


@pytest.mark.parametrize(("name", "knobs", "kind", "path", "pointer"), CASES, ids=[c[0] for c in CASES])
def test_each_divergence_kind(
    mem_store: fe.Store, name: str, knobs: Knobs, kind: str, path: str | None, pointer: str
) -> None:
    a, b = record(mem_store), record(mem_store, **knobs)
    diff = fe.diff_runs(mem_store, a, b)
    assert not diff.is_match
    first = diff.first
    assert first is not None and first.kind == kind and first.kind in KINDS
    assert first.path == path
    assert pointer in [p for p, _, _ in first.changes]


#: Kinds whose crafted pairs are in test_classes.py (not behaviour, or logged events).
CLASS_CASES = {
    "name": "test_a_name_is_metadata",
    "labels": "test_labels_are_metadata",
    "time": "test_time_members_are_compared_only_when_asked_and_count_only_when_strict",
    "attempt": "test_recovery_renumbering_is_one_attempt_divergence_and_one_recovery",
    "retry": "test_a_retry_one_run_made_is_reported_once_as_infrastructure",
    "recovery": "test_recovery_renumbering_is_one_attempt_divergence_and_one_recovery",
    "logged": "test_logged_events_are_compared_in_order",
    "missing-event": "test_logged_events_are_compared_in_order",
    "extra-event": "test_logged_events_are_compared_in_order",
}


def test_every_kind_is_covered_by_a_crafted_pair() -> None:
    from . import test_classes

    covered = {c[2] for c in CASES} | set(CLASS_CASES)
    assert covered == set(KINDS)
    assert all(hasattr(test_classes, name) for name in CLASS_CASES.values())


def test_ids_timestamps_generations_and_superseded_entries_do_not_count(mem_store: fe.Store) -> None:
    a = record(mem_store)
    run = mem_store.start_run("wf", inputs={"n": 1}, pins={"definition": PIN})
    first = run.begin_step("lost", arguments={"q": 1})
    wrong = run.invoke("lost", 1, "wrong.op", ART, "ambiguous")
    run.recover([first, wrong])  # a crash: the begun step and its invoke are superseded
    run.begin_step("a", arguments={"q": 1})
    run.invoke("a", 1, "http.get", ART, "ambiguous", arguments={"q": 1})
    run.result("a", 1, "succeeded", result={"r": 1})
    run.end_step("a", "succeeded", branch={"case": "a"}, binding=1)
    run.begin_step("b")
    child = mem_store.start_run("wf/child", parent=run.id)
    child.conclude("succeeded")
    run.child("b", child.id)
    run.end_step("b", "succeeded")
    run.conclude("succeeded", outputs=[1])
    b_doc = mem_store.get_run_record(run.id)
    assert b_doc["run"]["generation"] == 1 and b_doc["run"]["id"] != a
    assert fe.diff_runs(mem_store, a, run.id).is_match


def test_signed_zero_is_a_difference(mem_store: fe.Store) -> None:
    a, b = record(mem_store, result={"r": 0.0}), record(mem_store, result={"r": -0.0})
    first = fe.diff_runs(mem_store, a, b).first
    assert first is not None and first.changes == [("/payloads/result/value/value/r/value", 0.0, -0.0)]


def test_a_nonterminal_status_difference_is_a_conclusion(mem_store: fe.Store) -> None:
    a, b = record(mem_store, conclude=False), record(mem_store, conclude=False)
    assert fe.diff_runs(mem_store, a, b).is_match
    mem_store.resume_run(b).hold(code="waiting")
    diff = fe.diff_runs(mem_store, a, b)
    assert [(d.kind, d.seq_a) for d in diff.divergences] == [("conclusion", None)]
    assert ("/run/status", "active", "held") in diff.divergences[0].changes


def test_child_structure_is_compared_recursively(mem_store: fe.Store) -> None:
    a, b = record(mem_store), record(mem_store, child_workflow="wf/other")
    d = fe.diff_runs(mem_store, a, b).first
    assert d is not None and d.detail is not None and d.detail.first is not None
    assert d.detail.first.kind == "run"
    # without a resolver children are compared by path only
    plain = diff_documents(mem_store.get_run_record(a), mem_store.get_run_record(b))
    assert plain.is_match


def test_one_extra_step_is_one_divergence_not_a_cascade(mem_store: fe.Store) -> None:
    a, b = record(mem_store), record(mem_store, extra=True)
    diff = fe.diff_runs(mem_store, a, b)
    assert [(d.kind, d.path) for d in diff.divergences] == [("extra-step", "x")]
    assert len(diff.divergences[0].changes) == 2  # its begin and end entries


def _keys(names: str) -> list[tuple[str, str, int, str, int]]:
    return [("step", n, 0, "active", 0) for n in names]


@pytest.mark.parametrize(
    ("a", "b", "window", "ops"),
    [
        ("abc", "abc", 4, "=a =b =c"),
        ("abc", "axbc", 4, "=a +x =b =c"),
        ("abc", "ac", 4, "=a -b =c"),
        ("abcd", "axyd", 4, "=a -b +x -c +y =d"),  # substitutions
        ("abcdefg", "ag", 3, "=a -b +g -c -d -e -f -g"),  # beyond the window: no realignment
        ("abcdefg", "ag", 8, "=a -b -c -d -e -f =g"),
        ("axb", "ayb", 4, "=a -x +y =b"),
        ("abx", "xab", 4, "+x =a =b -x"),  # the smaller skip wins
        ("ab", "ba", 4, "-a =b +a"),  # a tie skips side A: A's entry is missing
    ],
)
def test_the_alignment_rule(a: str, b: str, window: int, ops: str) -> None:
    got = []
    for op, i, j in align(_keys(a), _keys(b), window):
        got.append({"match": "=", "missing": "-", "extra": "+"}[op] + (a[i] if i is not None else b[j or 0]))
    assert " ".join(got) == ops


def test_all_divergences_are_listed_in_record_order(mem_store: fe.Store) -> None:
    a = record(mem_store)
    b = record(mem_store, op="http.post", outcome="failed", status="failed")
    kinds = [d.kind for d in fe.diff_runs(mem_store, a, b).divergences]
    assert kinds == ["operation", "outcome", "conclusion"]


def test_lookups_refuse_unknown_runs(mem_store: fe.Store) -> None:
    a = record(mem_store)
    with pytest.raises(fe.RunNotFound):
        fe.diff_runs(mem_store, a, "nope")


def _concluded_at(store: fe.Store, path: str) -> str:
    run = store.start_run("wf", inputs={})
    for step in ("a", "b"):
        run.begin_step(step)
        run.end_step(step, "failed", code="E")
    run.conclude("failed", path=path, code="E")
    return run.id


def test_a_conclusion_naming_another_step_is_one_conclusion_divergence(mem_store: fe.Store) -> None:
    """A run concludes once: the two conclude entries pair up whatever step they name."""
    a, b = _concluded_at(mem_store, "a"), _concluded_at(mem_store, "b")
    diff = fe.diff_runs(mem_store, a, b)
    assert [(d.kind, d.path, d.seq_a, d.seq_b, d.changes) for d in diff.divergences] == [
        ("conclusion", "a", 6, 6, [("/path", "a", "b")])
    ]
    documents = diff_documents(mem_store.get_run_record(a), mem_store.get_run_record(b))
    assert documents == diff


def _resolve(document: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


def _parent_of_child(store: fe.Store, value: int, recovered: bool, extra: bool) -> tuple[str, str]:
    parent = store.start_run("wf/parent", inputs={})
    parent.begin_step("sub")
    child = store.start_run("wf/child", inputs={}, parent=parent.id)
    if recovered:  # a superseded entry and a recovery shift B's entries
        child.recover([child.begin_step("x")])
    child.begin_step("x")
    child.end_step("x", "succeeded", result={"v": value})
    if extra:
        child.begin_step("y")
        child.end_step("y", "succeeded")
    child.conclude("succeeded")
    parent.child("sub", child.id)
    parent.end_step("sub", "succeeded")
    parent.conclude("succeeded")
    return parent.id, child.id


def test_child_pointers_address_the_child_record_of_the_side_that_has_the_entry(mem_store: fe.Store) -> None:
    """docs/replay-diff.md: `/child/entries/N` is A's child's entry (B's for an entry only B
    has), one pointer per entry; B's seq of a matched entry is in ``detail``."""
    a, child_a = _parent_of_child(mem_store, 1, recovered=False, extra=False)
    b, child_b = _parent_of_child(mem_store, 2, recovered=True, extra=True)
    first = fe.diff_runs(mem_store, a, b).first
    assert first is not None and first.kind == "child" and first.detail is not None
    doc_a, doc_b = mem_store.get_run_record(child_a), mem_store.get_run_record(child_b)
    for pointer, old, new in first.changes:
        if pointer in ("/child/recoveries", "/child/superseded"):
            continue  # the child's crash: a run-level infrastructure difference
        assert pointer.startswith("/child/entries/")
        inner = pointer.removeprefix("/child")
        if old is not None:
            assert _resolve(doc_a, inner) == old
        else:  # an extra entry of B: the pointer addresses B's child record
            assert _resolve(doc_b, inner) == new
    extra = [p for p, old, _ in first.changes if old is None and p.startswith("/child/entries/")]
    assert len(extra) == 2 and len(set(extra)) == 2  # its begin and end, each its own entry
    result = first.detail.first
    assert result is not None and result.kind == "result" and result.seq_a != result.seq_b
    for pointer, old, new in result.changes:
        assert _resolve(doc_a["entries"][result.seq_a - 1], pointer) == old
        assert result.seq_b is not None and _resolve(doc_b["entries"][result.seq_b - 1], pointer) == new
