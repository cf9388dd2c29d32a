"""Issue 25: differences classified behaviour / metadata / infrastructure, attempts aligned
by their order, one fact one divergence, ignore patterns, logged events, the guard alike."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.replay import baseline_document
from forkline_es.replay.diff import KIND_CLASS
from forkline_es.testing.histories import payload_values

from .histories import (
    ART,
    MUTATIONS,
    assert_guard_agrees,
    crashes,
    guarded,
    histories,
    mutate,
    record,
    record_crashing,
    replay,
)

#: Property tests draw payloads from the shared strategy of the typed domain.
TYPED = payload_values()


@settings(max_examples=80, deadline=None)
@given(histories(values=TYPED), st.data())
def test_a_run_rerecorded_with_crashes_and_recoveries_matches(h, data) -> None:
    crash_at = data.draw(crashes(h))
    with fe.Store.open(":memory:") as store:
        a, _ = record(store, h)
        b, _ = record_crashing(store, h, crash_at)
        c, _ = record_crashing(store, h, data.draw(crashes(h)))  # crashed at other points
        forward, backward = fe.diff_runs(store, a, b), fe.diff_runs(store, b, a)
        both = fe.diff_runs(store, b, c)
        strict = fe.diff_runs(store, a, b, strict=True)
        generation = store.get_run_record(b)["run"]["generation"]
    assert forward.is_match, forward.first
    assert backward.is_match, backward.first
    assert both.is_match, both.first
    assert {d.category for d in forward.divergences + both.divergences} <= {"infrastructure"}
    assert strict.is_match == (generation == 0)  # strict counts the recoveries


@settings(max_examples=80, deadline=None)
@given(histories(values=TYPED), st.data())
def test_one_changed_behaviour_fact_is_exactly_one_behaviour_divergence(h, data) -> None:
    k = data.draw(st.integers(0, len(h.steps) - 1))
    what = data.draw(st.sampled_from(sorted(MUTATIONS)))
    crash_at = data.draw(crashes(h))
    with fe.Store.open(":memory:") as store:
        a, at = record(store, h)
        b, _ = record_crashing(store, mutate(h, k, what), crash_at)
        diff = fe.diff_runs(store, a, b)
    where, kind = MUTATIONS[what]
    assert [(d.kind, d.path, d.seq_a) for d in diff.behaviour] == [(kind, h.steps[k].path, at[k, where])]
    assert diff.first is diff.behaviour[0] and diff.divergences[0] is diff.first  # behaviour first


@settings(max_examples=40, deadline=None)
@given(histories(values=TYPED), st.text(min_size=1, max_size=6), st.data())
def test_metadata_only_changes_are_no_behaviour_divergence(h, name, data) -> None:
    crash_at = data.draw(crashes(h))
    with fe.Store.open(":memory:") as store:
        a, _ = record(store, h)
        b, _ = record_crashing(store, h, crash_at)
        store.conn.execute("SELECT 1")  # the store stays readable between the recordings
        renamed = _renamed(store, b, name)
        diff = fe.diff_documents(store.get_run_record(a), renamed)
        strict = fe.diff_documents(store.get_run_record(a), renamed, strict=True)
    assert diff.is_match and not diff.behaviour
    assert [d.kind for d in diff.metadata] == ["name", *(["time"] * 0)]
    assert not strict.is_match and strict.first is not None and strict.first.category == "metadata"


def _renamed(store: fe.Store, run_id: str, name: str) -> dict[str, Any]:
    """The run's document with another display name and recording times on every entry."""
    doc = copy.deepcopy(store.get_run_record(run_id))
    doc["run"]["name"] = name
    for n, entry in enumerate(doc["entries"]):
        entry["x-at"] = f"2030-01-01T00:00:{n % 60:02d}Z"
    return doc


# -- crafted pairs for the kinds that are not behaviour ------------------------------------


def _retried(store: fe.Store, fails: int, crash: bool = False, name: str | None = None) -> str:
    run = store.start_run("wf", name=name, inputs={})
    run.begin_step("a", arguments={"q": 1})
    number = 0
    if crash:  # the first attempt was in flight when the process died
        number += 1
        lost = run.invoke("a", number, "http.get", ART, "ambiguous", arguments={"q": 1})
        run = store.resume_run(run.id)
        run.recover([lost])
    for _ in range(fails):
        number += 1
        run.invoke("a", number, "http.get", ART, "ambiguous", arguments={"q": 1})
        run.result("a", number, "failed", "http-503")
    number += 1
    run.invoke("a", number, "http.get", ART, "ambiguous", arguments={"q": 1})
    run.result("a", number, "succeeded", result={"r": 1})
    run.end_step("a", "succeeded", result={"r": 1})
    run.conclude("succeeded")
    return run.id


def test_recovery_renumbering_is_one_attempt_divergence_and_one_recovery(mem_store: fe.Store) -> None:
    a, b = _retried(mem_store, 0), _retried(mem_store, 0, crash=True)
    diff = fe.diff_runs(mem_store, a, b)
    assert diff.is_match and not diff.behaviour
    assert [(d.kind, d.category) for d in diff.divergences] == [
        ("attempt", "infrastructure"),
        ("recovery", "infrastructure"),
    ]
    attempt = diff.divergences[0]
    assert attempt.changes == [("/attempt", 1, 2)]
    # the invoke and its result (B: 3 is the lost invoke, 4 the recovery)
    assert [(sa, sb) for sa, sb, _ in attempt.places] == [(3, 5), (4, 6)]
    strict = fe.diff_runs(mem_store, a, b, strict=True)
    assert not strict.is_match and strict.first is not None and strict.first.kind == "attempt"


def test_a_retry_one_run_made_is_reported_once_as_infrastructure(mem_store: fe.Store) -> None:
    a, b = _retried(mem_store, 0), _retried(mem_store, 1)
    diff = fe.diff_runs(mem_store, a, b)
    assert diff.is_match
    kinds = [(d.kind, d.path, d.seq_a, d.seq_b) for d in diff.divergences]
    assert kinds == [("retry", "a", None, 3), ("attempt", "a", 3, 5)]
    assert len(diff.divergences[0].changes) == 2  # the failed invoke and its result
    assert "retried in B only: 1 failed attempt" in diff.divergences[0].headline()
    backward = fe.diff_runs(mem_store, b, a)
    assert backward.is_match and [d.kind for d in backward.divergences] == ["retry", "attempt"]


def test_a_name_is_metadata(mem_store: fe.Store) -> None:
    a, b = _retried(mem_store, 0, name="Daily"), _retried(mem_store, 0, name="Weekly")
    diff = fe.diff_runs(mem_store, a, b)
    assert diff.is_match and [(d.kind, d.category, d.changes) for d in diff.divergences] == [
        ("name", "metadata", [("/run/name", "Daily", "Weekly")])
    ]


def test_labels_are_metadata(mem_store: fe.Store) -> None:
    """Labels (``x-labels`` of the run, issue 13) are metadata wherever they come from."""
    doc = mem_store.get_run_record(_retried(mem_store, 0))
    labelled = copy.deepcopy(doc)
    labelled["run"]["x-labels"] = {"team": "ops"}
    diff = fe.diff_documents(doc, labelled)
    assert diff.is_match and [(d.kind, d.category, d.changes) for d in diff.divergences] == [
        ("labels", "metadata", [("/run/x-labels", None, {"team": "ops"})])
    ]


def test_time_members_are_compared_only_when_asked_and_count_only_when_strict(mem_store: fe.Store) -> None:
    doc = mem_store.get_run_record(_retried(mem_store, 0))
    timed = copy.deepcopy(doc)
    timed["entries"][1]["x-at"] = "2030-01-01T00:00:00Z"
    timed["entries"][1]["step"]["x-started-at"] = "2030-01-01T00:00:00Z"
    assert fe.diff_documents(doc, timed).divergences == ()
    assert fe.diff_documents(doc, timed, strict=True).divergences == ()  # strict alone: no times
    listed = fe.diff_documents(doc, timed, times=True)
    assert [(d.kind, d.category, [c[0] for c in d.changes]) for d in listed.divergences] == [
        ("time", "metadata", ["/step/x-started-at", "/x-at"])
    ]
    assert listed.is_match  # metadata: listed, not counted
    assert not fe.diff_documents(doc, timed, times=True, strict=True).is_match
    # A baseline keeps no times: nothing to compare them with, even when asked.
    golden = baseline_document(doc)
    assert fe.diff_documents(golden, timed, times=True, strict=True).divergences == ()


def test_times_must_be_a_bool(mem_store: fe.Store) -> None:
    doc = mem_store.get_run_record(_retried(mem_store, 0))
    with pytest.raises(fe.InvalidRequest, match="times must be True or False"):
        fe.diff_documents(doc, doc, times="yes")  # type: ignore[arg-type]


def test_a_value_repeated_in_several_entries_is_one_divergence_naming_each(mem_store: fe.Store) -> None:
    def run(q: int) -> str:
        r = mem_store.start_run("wf", inputs={})
        r.begin_step("a", arguments={"q": q})
        r.invoke("a", 1, "http.get", ART, "ambiguous", arguments={"q": q})
        r.result("a", 1, "succeeded", "ok", result={"r": q})
        r.end_step("a", "succeeded", code="ok")
        r.conclude("succeeded")
        return r.id

    diff = fe.diff_runs(mem_store, run(1), run(2))
    assert [(d.kind, d.seq_a) for d in diff.divergences] == [("arguments", 2), ("result", 4)]
    arguments, result = diff.divergences
    assert [(p[0], p[2]) for p in arguments.places] == [
        (2, "/step/payloads/arguments"),
        (3, "/payloads/arguments"),
        (5, "/step/payloads/arguments"),
    ]
    assert [(p[0], p[2]) for p in result.places] == [(4, "/payloads/result"), (5, "/step/payloads/result")]
    assert "entries 2, 3, 5" in arguments.headline()


def test_ignore_patterns_leave_chosen_fields_out(mem_store: fe.Store) -> None:
    def run(model: str, name: str) -> str:
        r = mem_store.start_run("wf", inputs={})
        r.begin_step("llm")
        r.invoke("llm", 1, "llm.chat", ART, "ambiguous")
        r.result("llm", 1, "succeeded", result={"text": "hi", "model": model})
        r.end_step("llm", "succeeded")
        r.conclude("succeeded", outputs={"by": name})
        return r.id

    a, b = run("m1", "x"), run("m2", "y")
    assert [d.kind for d in fe.diff_runs(mem_store, a, b).divergences] == ["result", "conclusion"]
    ignored = fe.diff_runs(
        mem_store, a, b, ignore=["/payloads/result/value/value/model", "/payloads/*/value/value/by"]
    )
    assert ignored.divergences == ()
    star = fe.diff_runs(mem_store, a, b, ignore=["/payloads/*/value/value/model"])
    assert [d.kind for d in star.divergences] == ["conclusion"]  # one segment only: not "by"
    for bad in (["payloads/result"], "/payloads", [3], None, 7):
        with pytest.raises(fe.InvalidRequest):
            fe.diff_runs(mem_store, a, b, ignore=bad)  # type: ignore[arg-type]
    with pytest.raises(fe.InvalidRequest):
        fe.diff_runs(mem_store, a, b, strict="yes")  # type: ignore[arg-type]


# -- logged events -------------------------------------------------------------------------


def _logged(recorder: fe.RunRecorder, events: list[tuple[str, Any]]) -> str:
    run_id = recorder.start_run("agent.py")
    for kind, payload in events:
        recorder.log_event(run_id, kind, payload)
    recorder.end_run(run_id)
    return run_id


def test_logged_events_are_compared_in_order(tmp_path: Path) -> None:
    with fe.RunRecorder(tmp_path / "runs.db", redaction_policy=fe.RedactionPolicy.none()) as recorder:
        base = [("input", {"q": "hi"}), ("output", {"a": "hello", "n": 1})]
        a = _logged(recorder, base)
        same = _logged(recorder, base)
        changed = _logged(recorder, [("input", {"q": "hi"}), ("output", {"a": "bye", "n": 1})])
        longer = _logged(recorder, [*base, ("note", {})])
        store = recorder.store
        assert fe.diff_runs(store, a, same).is_match
        diff = fe.diff_runs(store, a, changed)
        assert [(d.kind, d.category, d.changes) for d in diff.divergences] == [
            ("logged", "behaviour", [("/payload/a", "hello", "bye")])
        ]
        events = recorder.get_events(a), recorder.get_events(changed)
        assert (diff.divergences[0].event_a, diff.divergences[0].event_b) == (
            events[0][1]["event_id"],
            events[1][1]["event_id"],
        )
        assert [d.kind for d in fe.diff_runs(store, a, longer).divergences] == ["extra-event"]
        assert [d.kind for d in fe.diff_runs(store, longer, a).divergences] == ["missing-event"]
        assert fe.diff_runs(store, a, changed, ignore=["/payload/a"]).is_match


# -- the guard -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(histories(), st.data())
def test_the_guard_passes_a_replay_of_a_run_that_crashed_and_recovered(h, data) -> None:
    crash_at = data.draw(crashes(h))
    with fe.Store.open(":memory:") as store:
        original, _ = record_crashing(store, h, crash_at)
        rp = fe.Replayer(store, original, record=True)
        replay(rp, h)  # numbering its attempts 1, 2: only infrastructure differs
        assert rp.run is not None
        assert_guard_agrees(None, fe.diff_runs(store, original, rp.run.id))


@settings(max_examples=40, deadline=None)
@given(histories(), st.data())
def test_the_guard_and_the_diff_agree_on_a_crashed_original(h, data) -> None:
    k = data.draw(st.integers(0, len(h.steps) - 1))
    variant = mutate(h, k, data.draw(st.sampled_from(sorted(MUTATIONS))))
    with fe.Store.open(":memory:") as store:
        original, _ = record_crashing(store, h, data.draw(crashes(h)))
        rp = fe.Replayer(store, original, record=True)
        violation = guarded(rp, variant)
        assert rp.run is not None
        assert_guard_agrees(violation, fe.diff_runs(store, original, rp.run.id))


def test_a_strict_guard_stops_at_a_renumbered_attempt(mem_store: fe.Store) -> None:
    original = _retried(mem_store, 0, crash=True)  # its only active attempt is number 2
    with fe.Replayer(mem_store, original) as rp:
        rp.begin_step("a", arguments={"q": 1})
        assert rp.invoke("a", 1, "http.get", ART, arguments={"q": 1}) == {"r": 1}
        rp.end_step("a", "succeeded", result={"r": 1})
        rp.conclude("succeeded")
    strict = fe.Replayer(mem_store, original, strict=True)
    strict.begin_step("a", arguments={"q": 1})
    with pytest.raises(fe.DeterminismViolation) as caught:
        strict.invoke("a", 1, "http.get", ART, arguments={"q": 1})
    assert caught.value.kind == "attempt" and caught.value.changes == [("/attempt", 2, 1)]


def test_every_kind_has_a_class() -> None:
    assert set(KIND_CLASS) == set(fe.replay.KINDS)
    assert set(KIND_CLASS.values()) == {"behaviour", "metadata", "infrastructure"}


def test_a_baseline_pins_logged_events(tmp_path: Path) -> None:
    golden = tmp_path / "agent.golden.json"
    with fe.RunRecorder(tmp_path / "runs.db", redaction_policy=fe.RedactionPolicy.none()) as recorder:
        a = _logged(recorder, [("output", {"a": "hello"})])
        same = _logged(recorder, [("output", {"a": "hello"})])
        changed = _logged(recorder, [("output", {"a": "bye"})])
        fe.testing.write_baseline(recorder.store, a, golden)
        fe.testing.assert_matches_baseline(recorder.store, same, golden)
        with pytest.raises(AssertionError, match="a logged event differs"):
            fe.testing.assert_matches_baseline(recorder.store, changed, golden)
        old = fe.replay.load_baseline(golden)
        del old["x-logged"]  # a baseline exported before logged events were kept
        live = fe.replay.baseline.live_document(recorder.store, changed)
        assert fe.diff_documents(old, live).is_match


def test_a_retry_that_failed_differently_is_infrastructure(mem_store: fe.Store) -> None:
    def run(code: str, operation: str = "op") -> str:
        r = mem_store.start_run("wf")
        r.begin_step("a")
        r.invoke("a", 1, operation, ART, "ambiguous")
        r.result("a", 1, "failed", code)
        r.invoke("a", 2, "op", ART, "ambiguous")
        r.result("a", 2, "succeeded", result=1)
        r.end_step("a", "succeeded")
        r.conclude("succeeded")
        return r.id

    a = run("timeout")
    diff = fe.diff_runs(mem_store, a, run("http-503"))
    assert diff.is_match and [(d.kind, d.changes) for d in diff.divergences] == [
        ("retry", [("/code", "timeout", "http-503")])
    ]
    asked = fe.diff_runs(mem_store, a, run("timeout", operation="other"))  # what it asked for counts
    assert [(d.kind, d.category, d.seq_a) for d in asked.divergences] == [("operation", "behaviour", 3)]
