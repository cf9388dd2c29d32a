"""Replaying a run whose payload values retention removed: the guard and ``diff_runs``
apply one rule (docs/replay-diff.md, "Removed values") and agree."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.replay.diff import compare_entries

from .histories import ART, assert_guard_agrees, guarded, histories, record, variant_of

CLASSES = ("inputs", "arguments", "results", "events", "outputs")

#: The slots an executor passes on each call, by class (inputs and served results come
#: from the record itself).
VALUES: dict[str, Any] = {
    "arguments": {"cents": 500},
    "binding": {"b": 1},
    "event": {"e": 1},
    "outputs": {"o": 1},
}
CLASS_OF = {"arguments": "arguments", "binding": "results", "event": "events", "outputs": "outputs"}


def _original(store: fe.Store, removed: str) -> str:
    run = store.start_run("wf/ret", inputs={"i": 1}, trigger={"t": 1})
    run.begin_step("charge", arguments=VALUES["arguments"])
    run.invoke("charge", 1, "pay.charge", ART, "ambiguous", arguments=VALUES["arguments"])
    run.result("charge", 1, "succeeded", result={"receipt": "r-1"}, details={"ms": 3})
    run.end_step("charge", "succeeded", binding=VALUES["binding"], event=VALUES["event"])
    run.conclude("succeeded", outputs=VALUES["outputs"])
    store.apply_retention(fe.RetentionPolicy(drop_payloads_after="0s", payload_classes=[removed]))
    return run.id


def _replay(rp: fe.Replayer, removed: str, mode: str) -> Any:
    """A replay passing the recorded values, except for the removed class's slots (``mode``)."""

    def arg(slot: str) -> Any:
        value = VALUES[slot]
        if CLASS_OF[slot] != removed or mode == "same":
            return value
        return {"not-recorded": fe.NOT_RECORDED, "withheld": fe.Sensitive(value), "absent": fe.MISSING}[mode]

    rp.begin_step("charge", arguments=arg("arguments"))
    served = rp.invoke("charge", 1, "pay.charge", ART, arguments=arg("arguments"))
    rp.end_step("charge", "succeeded", binding=arg("binding"), event=arg("event"))
    rp.conclude("succeeded", outputs=arg("outputs"))
    rp.finish()
    return served


#: class -> (kind, seq) of the first divergence when the replay withholds or leaves out
#: that class's slots: a removed value matches a present or not-recorded one, no other.
DIFFERS: dict[str, tuple[str, int] | None] = {
    "inputs": None,  # the Replayer copies inputs; an executor passes none
    "arguments": ("arguments", 2),
    "results": ("result", 5),  # the binding at the end; served results replay as not-recorded
    "events": ("result", 5),
    "outputs": ("conclusion", 6),
}


@pytest.mark.parametrize("mode", ["same", "not-recorded", "withheld", "absent"])
@pytest.mark.parametrize("removed", CLASSES)
def test_guard_and_diff_apply_one_rule_to_removed_values(
    mem_store: fe.Store, removed: str, mode: str
) -> None:
    original = _original(mem_store, removed)
    rp = fe.Replayer(mem_store, original, record=True)
    try:
        served = _replay(rp, removed, mode)
        violation = None
    except fe.DeterminismViolation as v:
        violation = v
    assert rp.run is not None
    diff = fe.diff_runs(mem_store, original, rp.run.id)
    expected = None if mode in ("same", "not-recorded") else DIFFERS[removed]
    if expected is None:
        assert violation is None and diff.is_match, diff.first
        assert served == (fe.MISSING if removed == "results" else {"receipt": "r-1"})
    else:
        assert violation is not None and diff.first is not None
        assert (violation.kind, violation.seq) == expected
        assert (violation.kind, violation.path, violation.seq) == (
            diff.first.kind,
            diff.first.path,
            diff.first.seq_a,
        )
        assert violation.changes == diff.first.changes
    # the diff is symmetric in the rule: the original against the replay, and back
    assert fe.diff_runs(mem_store, rp.run.id, original).is_match == diff.is_match


def test_slots_the_replayer_fills_from_a_reduced_record_replay_as_not_recorded(mem_store: fe.Store) -> None:
    original = _original(mem_store, "inputs")
    mem_store.apply_retention(fe.RetentionPolicy(drop_payloads_after="0s", payload_classes=["results"]))
    rp = fe.Replayer(mem_store, original, record=True)
    _replay(rp, "inputs", "same")
    assert rp.run is not None
    successor = mem_store.get_run_record(rp.run.id)
    start = successor["entries"][0]["payloads"]
    assert start["inputs"] == start["trigger"] == {"class": "inputs", "state": "not-recorded"}
    result = next(e for e in successor["entries"] if e["kind"] == "result")["payloads"]
    assert result["result"] == result["details"] == {"class": "results", "state": "not-recorded"}
    assert fe.diff_runs(mem_store, original, rp.run.id).is_match


def test_a_removed_value_still_differs_from_another_class_or_no_slot() -> None:
    def conclude(status: str = "succeeded", **slots: Any) -> dict[str, Any]:
        return {"kind": "conclude", "status": status, "payloads": slots}

    removed = conclude(outputs={"class": "outputs", "state": "removed"})
    one = {"kind": "int", "value": 1}
    present = conclude(outputs={"class": "outputs", "state": "present", "value": one})
    assert compare_entries(removed, present) is None and compare_entries(present, removed) is None
    assert compare_entries(removed, conclude(outputs={"class": "inputs", "state": "not-recorded"}))
    assert compare_entries(removed, conclude()) is not None
    # the slot that cannot be checked hides nothing else
    failed = conclude("failed", outputs=present["payloads"]["outputs"])
    assert compare_entries(removed, failed) == ("conclusion", [("/status", "succeeded", "failed")])


@settings(max_examples=40)
@given(
    histories(),
    st.sets(st.sampled_from(["inputs", "arguments", "results", "outputs"]), min_size=1),
    st.data(),
)
def test_after_retention_the_guard_and_the_diff_still_agree(h, removed, data) -> None:
    variant = variant_of(h, data)
    with fe.Store.open(":memory:") as store:
        original, _ = record(store, h)
        store.apply_retention(fe.RetentionPolicy(drop_payloads_after="0s", payload_classes=sorted(removed)))
        rp = fe.Replayer(store, original, record=True)
        violation = guarded(rp, variant)
        assert rp.run is not None
        diff = fe.diff_runs(store, original, rp.run.id)
    if variant == h:
        assert violation is None  # a faithful replay of a reduced record passes
    assert_guard_agrees(violation, diff)
