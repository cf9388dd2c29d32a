"""Step views, summaries and catch-up in the situations a mutation pass found unguarded.

The stateful replay machine holds the projections against a reference fold of the log;
these examples pin the rules themselves (002, Record Payloads: a step's attempt-dependent
slots and code describe its latest attempt in the reported generation), each in the
smallest history that shows it, so a rule cannot drift in both places at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe

A = "sha256:" + "c0" * 32


def value(slot: dict[str, Any]) -> Any:
    return fe.decode_value(slot["value"])


@pytest.fixture
def run(mem_store: fe.Store) -> fe.Run:
    return mem_store.start_run("wf", run_id="r")


def test_a_step_begun_again_in_a_later_generation_starts_afresh(mem_store: fe.Store, run: fe.Run) -> None:
    run.begin_step("a", arguments={"x": 1})
    run.invoke("a", 1, "http.get", A, "ambiguous")
    run.result("a", 1, "failed", code="timeout", result={"err": 1})
    run = mem_store.resume_run("r")
    run.recover([])
    run.begin_step("a", arguments={"x": 2})
    step = mem_store.get_step_record("r", "a")
    assert (step["generation"], step["status"], sorted(step["payloads"])) == (1, "active", ["arguments"])
    assert value(step["payloads"]["arguments"]) == {"x": 2}
    assert "code" not in step


def test_the_begin_arguments_stand_when_the_latest_attempt_has_none(mem_store: fe.Store, run: fe.Run) -> None:
    run.begin_step("a", arguments={"x": 1})
    run.invoke("a", 1, "http.get", A, "ambiguous", arguments={"try": 1})
    assert value(mem_store.get_step_record("r", "a")["payloads"]["arguments"]) == {"try": 1}
    run.invoke("a", 2, "http.get", A, "ambiguous")
    assert value(mem_store.get_step_record("r", "a")["payloads"]["arguments"]) == {"x": 1}


def test_an_attempt_recorded_before_the_begin_stays(mem_store: fe.Store, run: fe.Run) -> None:
    run.invoke("a", 1, "http.get", A, "ambiguous", arguments={"x": 1})
    run.result("a", 1, "succeeded", result={"ok": True})
    run.begin_step("a")
    step = mem_store.get_step_record("r", "a")
    slots = {k: value(s) for k, s in step["payloads"].items()}
    assert slots == {"arguments": {"x": 1}, "result": {"ok": True}}


@pytest.mark.parametrize(
    ("end", "late", "outcome", "code"),
    [
        (("succeeded", None), None, "succeeded", None),  # a failed attempt does not describe it
        (("failed", None), None, "failed", "timeout"),  # the last attempt's code applies
        (("failed", "http-500"), None, "failed", "http-500"),  # the step's own code wins
        (("failed", "boom"), ("succeeded", None), "failed", "boom"),  # a late result cannot drop it
        (("failed", "boom"), ("failed", "quota"), "failed", "boom"),  # ... nor replace it
        (("failed", None), ("failed", "quota"), "failed", "quota"),  # the latest attempt's
        (("succeeded", None), ("failed", "quota"), "succeeded", None),  # not on a success
    ],
    ids=str,
)
def test_the_code_a_step_states(
    mem_store: fe.Store,
    run: fe.Run,
    end: tuple[str, str | None],
    late: tuple[str, str | None] | None,
    outcome: str,
    code: str | None,
) -> None:
    run.begin_step("s")
    run.invoke("s", 1, "http.get", A, "ambiguous")
    run.result("s", 1, "failed", code="timeout")
    run.invoke("s", 2, "http.get", A, "ambiguous")
    if late is None:
        run.result("s", 2, "failed", code="timeout")
    run.end_step("s", end[0], code=end[1])
    if late is not None:
        run.result("s", 2, late[0], code=late[1])  # the attempt's result arrives after the end
    step = mem_store.get_step_record("r", "s")
    assert (step["outcome"], step.get("code")) == (outcome, code)
    assert mem_store.check_projections() == []


def test_a_child_started_in_a_later_generation_reports_that_generation(
    mem_store: fe.Store, run: fe.Run
) -> None:
    run.begin_step("a")
    run = mem_store.resume_run("r")
    run.recover([])
    mem_store.start_run("sub", parent="r", run_id="c")
    run.child("a", "c")
    assert mem_store.get_step_record("r", "a")["generation"] == 1


def test_a_superseded_attempt_leaves_no_trace_in_the_step(mem_store: fe.Store, run: fe.Run) -> None:
    run.begin_step("a", arguments={"x": 1})  # entry 2
    run.invoke("a", 1, "http.get", A, "ambiguous")  # entry 3
    run.result("a", 1, "failed", code="timeout", result={"err": 1})  # entry 4
    run = mem_store.resume_run("r")
    run.recover([3, 4])
    run.end_step("a", "failed")
    step = mem_store.get_step_record("r", "a")
    assert (step["generation"], step["outcome"], sorted(step["payloads"])) == (1, "failed", ["arguments"])
    assert "code" not in step  # the timeout belonged to the superseded attempt


def test_suppressed_paths_stay_on_unavailable_slots(mem_store: fe.Store) -> None:
    """002: the recorded suppression is kept independently of payload availability."""
    run = mem_store.start_run(
        "wf",
        dry_run=True,
        run_id="r",
        inputs=fe.Partial(fe.NOT_RECORDED, suppressed=[["a"]]),
        trigger=fe.Partial(fe.Sensitive({"a": 1}), suppressed=[[]]),
    )
    run.begin_step("s", arguments=fe.Partial(fe.Sensitive({"k": 1}), suppressed=[["k"]]))
    assert mem_store.get_run_record("r")["payloads"] == {
        "inputs": {"class": "inputs", "state": "not-recorded", "suppressed": [["a"]]},
        "trigger": {"class": "inputs", "state": "withheld", "suppressed": [[]]},
    }
    assert mem_store.get_step_record("r", "s")["payloads"] == {
        "arguments": {"class": "arguments", "state": "withheld", "suppressed": [["k"]]}
    }


def test_a_workflow_filter_matches_exactly(mem_store: fe.Store) -> None:
    workflows = {"r1": "billing/invoice", "r2": "Billing/Invoice", "r3": "a_c", "r4": "abc"}
    for run_id, workflow in workflows.items():
        mem_store.start_run(workflow, run_id=run_id)
    listed = {w: [s["id"] for s in mem_store.list_runs(w)] for w in ("billing/invoice", "a_c", "%", "")}
    assert listed == {"billing/invoice": ["r1"], "a_c": ["r3"], "%": [], "": []}


def test_a_run_goes_on_in_a_reopened_store(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run("wf", run_id="r", inputs={"n": 1})
        run.begin_step("a", arguments={"x": 1})
    with fe.Store.open(db_path) as store:
        run = store.resume_run("r")
        run.suspend(reason="waiting")
        run.end_step("a", "succeeded")
        assert store.get_run_record("r")["run"]["status"] == "suspended"
        assert sorted(store.get_step_record("r", "a")["payloads"]) == ["arguments"]
        assert store.check_projections() == []


def test_an_unfolded_event_after_another_stores_append_leaves_the_cache_stale(db_path: Path) -> None:
    """A Forkline event folds nothing; the store that appends it must still not take its
    cache of the run as current when another store appended before it."""
    recorder = fe.RunRecorder(db_path=db_path)
    store = recorder.store
    store.start_run("wf", run_id="r")
    with fe.Store.open(db_path) as other:
        other.resume_run("r").recover([])  # generation 1, folded by the other store only
    recorder.log_event("r", "note", {"k": 1})
    store.resume_run("r").suspend(reason="x")
    run = store.get_run_record("r")["run"]
    assert (run["generation"], run["status"]) == (1, "suspended")
    assert store.check_projections() == []
    recorder.close()


def test_a_commit_that_failed_after_its_fold_leaves_no_folded_state(db_path: Path) -> None:
    """The fold runs inside the append's transaction; when the commit then fails, what it
    cached must go too. Otherwise, once another writer takes that seq, this store's next
    fold of the run starts from the event that never committed."""
    with fe.Store.open(db_path) as store, fe.Store.open(db_path) as other:
        run = store.start_run("wf", run_id="r")
        run.begin_step("s")
        run.invoke("s", 1, "op", A, "not-dispatched")
        append = store.log.append

        def failing_commit(rows: Any, then: Any = None) -> Any:
            def fold_then_fail(cur: Any) -> None:
                then(cur)
                raise OSError("the disk went away before COMMIT")

            return append(rows, fold_then_fail)

        store.log.append = failing_commit  # type: ignore[method-assign]
        with pytest.raises(OSError):
            run.result("s", 1, "failed", result="lost", code="lost")
        store.log.append = append  # type: ignore[method-assign]
        other.resume_run("r").result("s", 1, "succeeded", result="kept")
        store.resume_run("r").end_step("s", "succeeded")
        step = store.get_step_record("r", "s")
        assert step["payloads"]["result"]["value"] == {"kind": "string", "value": "kept"}
        assert "code" not in step
        assert store.check_projections() == []


def test_catching_up_starts_at_the_projector_furthest_behind(db_path: Path) -> None:
    """A file whose projectors folded through different positions (say, one added later):
    opening it folds everything after the lowest position, so no run is missed."""
    with fe.Store.open(db_path) as store:
        store.start_run("wf", run_id="done").conclude("succeeded")
        folded = store.log.max_position()
        store.start_run("late", run_id="late").begin_step("a")
        top = store.log.max_position()
        conn = store.conn
        conn.execute("DELETE FROM run_summary WHERE run_id = 'late'")
        conn.execute("DELETE FROM step_view WHERE run_id = 'late'")
        conn.execute("DELETE FROM entry WHERE run_id = 'late'")
        conn.execute("UPDATE projector SET position = ?", (top,))
        conn.execute("UPDATE projector SET position = ? WHERE name = 'records'", (folded,))
    with fe.Store.open(db_path) as store:
        assert sorted(s["id"] for s in store.list_runs()) == ["done", "late"]
        assert store.get_step_record("late", "a")["status"] == "active"
        assert store.check_projections() == []


def test_empty_pins_are_recorded_as_an_empty_map(mem_store: fe.Store) -> None:
    """An empty map is a value the executor gave; only pins=None leaves the member out."""
    mem_store.start_run("wf", run_id="empty", pins={})
    mem_store.start_run("wf", run_id="none")
    assert mem_store.get_run_record("empty")["pins"] == {}
    assert "pins" not in mem_store.get_run_record("none")
