"""Payload markers and step rules that 002 states and an executor relies on."""

from __future__ import annotations

import pytest

import forkline_es as fe

ARTIFACT = "sha256:" + "ab" * 32


def test_a_run_started_without_inputs_has_an_empty_input_payload(mem_store: fe.Store) -> None:
    run = mem_store.start_run(workflow="w")
    inputs = mem_store.get_run_record(run.id)["payloads"]["inputs"]
    assert inputs == {"class": "inputs", "state": "present", "value": {"kind": "map", "value": {}}}


def test_partial_belongs_to_dry_runs(mem_store: fe.Store) -> None:
    run = mem_store.start_run(workflow="w")
    before = mem_store.conn.execute("SELECT count(*) FROM log").fetchall()
    with pytest.raises(fe.InvalidRequest):
        run.begin_step("a", arguments=fe.Partial({"x": 1}, suppressed=[["x"]]))
    with pytest.raises(fe.InvalidRequest):
        mem_store.start_run(workflow="w", inputs=fe.Partial({}, suppressed=[[]]))
    assert mem_store.conn.execute("SELECT count(*) FROM log").fetchall() == before


def test_suppression_is_kept_whatever_the_slot_state(mem_store: fe.Store) -> None:
    run = mem_store.start_run(workflow="w", dry_run=True, inputs=fe.Partial(fe.NOT_RECORDED, [[]]))
    run.begin_step("a", arguments=fe.Sensitive(fe.Partial({"k": 1}, suppressed=[["k"]])))
    run.begin_step("b", arguments=fe.Partial(fe.Sensitive({"k": 1}), suppressed=[["k"]]))
    doc = mem_store.get_run_record(run.id)
    assert doc["payloads"]["inputs"] == {"class": "inputs", "state": "not-recorded", "suppressed": [[]]}
    for path in ("a", "b"):
        slot = doc["steps"][path]["payloads"]["arguments"]
        assert slot == {"class": "arguments", "state": "withheld", "suppressed": [["k"]]}


@pytest.mark.parametrize("suppressed", ["name", ["name"], b"ab"])
def test_a_suppressed_path_is_a_list_not_a_string(suppressed: object) -> None:
    with pytest.raises(fe.InvalidValue):
        fe.Partial({"name": 1}, suppressed=suppressed)  # type: ignore[arg-type]


def test_a_failed_attempts_code_does_not_describe_a_step_that_succeeded(mem_store: fe.Store) -> None:
    run = mem_store.start_run(workflow="w")
    for path, outcome in (("ok", "succeeded"), ("bad", "failed")):
        run.begin_step(path)
        run.invoke(path, 1, "op", ARTIFACT, "not-dispatched")
        run.result(path, 1, "failed", code="timeout")
        run.end_step(path, outcome)
    assert "code" not in mem_store.get_step_record(run.id, "ok")
    assert mem_store.get_step_record(run.id, "bad")["code"] == "timeout"


@pytest.mark.parametrize("outcome", ["skipped", "cancelled"])
def test_a_skipped_or_cancelled_step_may_end_without_beginning(mem_store: fe.Store, outcome: str) -> None:
    run = mem_store.start_run(workflow="w")
    run.end_step("branch/else", outcome)
    assert mem_store.get_step_record(run.id, "branch/else")["outcome"] == outcome
    with pytest.raises(fe.Conflict):
        run.end_step("never", "succeeded")
    with pytest.raises(fe.Conflict):
        run.end_step("never", "failed")


@pytest.mark.parametrize(
    "branch", [{"arm": 0}, {"arm": 3}, {"case": ""}, {"case": "eu"}, {"else": True}], ids=str
)
def test_each_branch_form_is_recorded_as_given(mem_store: fe.Store, branch: dict[str, object]) -> None:
    """Arms are zero-based (seed 002), so arm 0 is a decision like any other."""
    run = mem_store.start_run(workflow="w")
    run.begin_step("choose")
    run.end_step("choose", "succeeded", branch=branch)
    assert mem_store.get_step_record(run.id, "choose")["branch"] == branch
