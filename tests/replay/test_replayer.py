"""The replay guard: served results, the first violation, the successor run."""

from __future__ import annotations

import pytest

import forkline_es as fe

from .histories import ART, ART2


def _original(store: fe.Store) -> str:
    run = store.start_run("wf", inputs={"n": 1})
    run.begin_step("a", arguments={"q": 1})
    run.invoke("a", 1, "http.get", ART, "ambiguous", arguments={"q": 1})
    run.begin_step("b")
    run.invoke("b", 1, "http.get", ART, "not-dispatched")
    run.result("b", 1, "succeeded", result="from b", details={"ms": 3})
    run.result("a", 1, "failed", "timeout", result=None)  # a's result arrives after b's
    run.invoke("a", 2, "http.get", ART, "ambiguous", arguments={"q": 1})
    run.result("a", 2, "succeeded", result={"r": [1, 2]})
    run.end_step("b", "succeeded")
    run.end_step("a", "succeeded", branch={"arm": 1})
    run.conclude("succeeded", outputs="done")
    return run.id


def _replay(rp: fe.Replayer, q: int = 1, op: str = "http.get") -> list[object]:
    served = []
    rp.begin_step("a", arguments={"q": 1})
    served.append(rp.invoke("a", 1, op, ART, arguments={"q": q}))
    rp.begin_step("b")
    served.append(rp.invoke_recorded("b", 1, "http.get", ART))
    served.append(rp.invoke("a", 2, "http.get", ART, arguments={"q": 1}))
    rp.end_step("b", "succeeded")
    rp.end_step("a", "succeeded", branch={"arm": 1})
    rp.conclude("succeeded", outputs="done")
    rp.finish()
    return served


def test_serves_recorded_results_in_order_and_records_an_identical_successor(mem_store: fe.Store) -> None:
    original = _original(mem_store)
    rp = fe.Replayer(mem_store, original, record=True)
    served = _replay(rp)
    assert served[0] is None and served[2] == {"r": [1, 2]}
    recorded = served[1]
    assert isinstance(recorded, fe.replay.Recorded)
    assert (recorded.dispatch, recorded.result, recorded.details) == ("succeeded", "from b", {"ms": 3})
    assert rp.run is not None
    assert mem_store.get_run_record(rp.run.id)["run"]["predecessor"] == original
    assert fe.diff_runs(mem_store, original, rp.run.id).is_match


def test_the_first_differing_call_raises_with_expected_actual_and_changes(mem_store: fe.Store) -> None:
    original = _original(mem_store)
    with pytest.raises(fe.DeterminismViolation) as caught:
        _replay(fe.Replayer(mem_store, original), q=2)
    v = caught.value
    assert (v.kind, v.path, v.seq) == ("arguments", "a", 3)
    assert v.changes == [("/payloads/arguments/value/value/q/value", 1, 2)]
    assert v.expected["operation"] == v.actual["operation"] == "http.get"
    assert not isinstance(v, fe.RecordError)  # not a refusal: nothing was asked of the log
    assert "behaviour: step 'a' was given different arguments" in str(v)


def test_a_different_artifact_is_an_operation_violation(mem_store: fe.Store) -> None:
    original = _original(mem_store)
    rp = fe.Replayer(mem_store, original)
    rp.begin_step("a", arguments={"q": 1})
    with pytest.raises(fe.DeterminismViolation) as caught:
        rp.invoke("a", 1, "http.get", ART2, arguments={"q": 1})
    assert caught.value.kind == "operation" and caught.value.changes == [("/artifact", ART, ART2)]


def test_stopping_early_is_a_missing_step_and_going_on_an_extra_step(mem_store: fe.Store) -> None:
    original = _original(mem_store)
    rp = fe.Replayer(mem_store, original)
    rp.begin_step("a", arguments={"q": 1})
    with pytest.raises(fe.DeterminismViolation) as early:
        rp.finish()
    assert (early.value.kind, early.value.path, early.value.seq) == ("missing-step", "a", 3)
    rp = fe.Replayer(mem_store, original)
    _replay(rp)
    with pytest.raises(fe.DeterminismViolation) as late:
        rp.begin_step("c")
    assert (late.value.kind, late.value.path, late.value.expected) == ("extra-step", "c", None)


def test_as_a_context_manager_it_checks_the_end(mem_store: fe.Store) -> None:
    original = _original(mem_store)
    with pytest.raises(fe.DeterminismViolation), fe.Replayer(mem_store, original) as rp:
        rp.begin_step("a", arguments={"q": 1})


def test_a_conclusion_naming_another_step_is_a_conclusion_violation(mem_store: fe.Store) -> None:
    run = mem_store.start_run("wf", inputs={})
    for step in ("a", "b"):
        run.begin_step(step)
        run.end_step(step, "failed", code="E")
    run.conclude("failed", path="a", code="E")
    rp = fe.Replayer(mem_store, run.id, record=True)
    for step in ("a", "b"):
        rp.begin_step(step)
        rp.end_step(step, "failed", code="E")
    with pytest.raises(fe.DeterminismViolation) as caught:
        rp.conclude("failed", path="b", code="E")
    v = caught.value
    assert (v.kind, v.path, v.seq, v.changes) == ("conclusion", "a", 6, [("/path", "a", "b")])
    assert rp.run is not None
    first = fe.diff_runs(mem_store, run.id, rp.run.id).first
    assert first is not None and (first.kind, first.path, first.seq_a) == (v.kind, v.path, v.seq)
