"""run.in_flight() and run.next_attempt(path): recovery after a crash in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe

ART = "sha256:" + "d" * 64

CRASH = """
import os, sys
import forkline_es as fe
store = fe.Store.open(sys.argv[1])
run = store.start_run("wf", run_id="r")
run.begin_step("done")
run.invoke("done", 1, "op", sys.argv[2], "not-dispatched")
run.result("done", 1, "succeeded", result={"ok": True})
run.end_step("done", "succeeded")
run.begin_step("cut")
run.invoke("cut", 1, "op", sys.argv[2], "not-dispatched")
run.result("cut", 1, "failed", code="boom")
run.invoke("cut", 2, "op", sys.argv[2], "not-dispatched")
os._exit(9)  # killed mid-attempt: no result, no end
"""


def test_after_a_killed_process_the_recovery_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    done = subprocess.run([sys.executable, "-c", CRASH, str(db), ART], timeout=60)
    assert done.returncode == 9
    with fe.Store.open(db) as store:
        run = store.resume_run("r")
        flying = run.in_flight()
        assert [(e.seq, e.kind, e.path, e.attempt) for e in flying] == [
            (6, "step", "cut", None),
            (7, "invoke", "cut", 1),
            (8, "result", "cut", 1),
            (9, "invoke", "cut", 2),
        ]
        assert run.next_attempt("cut") == 3 and run.next_attempt("done") == 2
        assert run.next_attempt("never") == 1
        assert run.recover(supersedes=[e.seq for e in run.in_flight()]) == 1
        assert run.in_flight() == []
        assert run.next_attempt("cut") == 3  # superseded attempts still count: numbers never repeat
        run.begin_step("cut")
        assert [e.kind for e in run.in_flight()] == ["step"]
        run.invoke("cut", run.next_attempt("cut"), "op", ART, "not-dispatched")
        assert store.get_step_record("r", "cut")["x-attempts"] == 1


def test_next_attempt_refuses_a_malformed_path(mem_store: fe.Store) -> None:
    with pytest.raises(fe.InvalidRequest):
        mem_store.start_run("wf").next_attempt("a//b")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=5))
def test_superseding_in_flight_is_always_accepted_and_leaves_nothing(steps: list[tuple[int, bool]]) -> None:
    """Whatever was cut short, the one-line recovery is never refused and leaves no work in flight."""
    with fe.Store.open(":memory:") as store:
        run = store.start_run("wf")
        for i, (attempts, ended) in enumerate(steps):
            path = f"s{i}"
            run.begin_step(path)
            for _ in range(attempts):
                attempt = run.next_attempt(path)
                run.invoke(path, attempt, "op", ART, "not-dispatched")
                run.result(path, attempt, "failed", code="x")
            if ended:
                run.end_step(path, "failed")
        open_paths = {f"s{i}" for i, (_, ended) in enumerate(steps) if not ended}
        assert {e.path for e in run.in_flight()} == open_paths
        again = store.resume_run(run.id)  # another handle, folded from the log, agrees
        assert again.in_flight() == run.in_flight()
        again.recover(supersedes=[e.seq for e in again.in_flight()])
        assert again.in_flight() == []
        doc = store.get_run_record(run.id)
        assert set(doc["steps"]) == {f"s{i}" for i, (_, ended) in enumerate(steps) if ended}


def test_plain_decodes_present_values_and_leaves_the_document_alone(mem_store: fe.Store) -> None:
    run = mem_store.start_run("wf", inputs={"n": 1, "f": 1.5, "xs": [None, True, "s"], "m": {"b": 1, "a": 2}})
    run.begin_step("s", arguments=fe.Sensitive({"secret": 1}))
    run.end_step("s", "succeeded", result={"model": "m-1"})
    doc = mem_store.get_run_record(run.id)
    plain = fe.plain(doc)
    assert plain["payloads"]["inputs"]["value"] == {
        "f": 1.5,
        "m": {"a": 2, "b": 1},
        "n": 1,
        "xs": [None, True, "s"],
    }
    assert list(plain["payloads"]["inputs"]["value"]["m"]) == ["a", "b"]  # code-point order
    assert plain["steps"]["s"]["payloads"]["result"]["value"] == {"model": "m-1"}
    assert (
        plain["steps"]["s"]["payloads"]["arguments"] == doc["steps"]["s"]["payloads"]["arguments"]
    )  # withheld
    assert doc["payloads"]["inputs"]["value"]["kind"] == "map"  # the typed form is untouched
    step = fe.plain(mem_store.get_step_record(run.id, "s"))
    assert step["payloads"]["result"]["value"] == {"model": "m-1"}
    with pytest.raises(fe.InvalidRequest):
        fe.plain([])  # type: ignore[arg-type]


@settings(max_examples=50, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.text()
        | st.floats(allow_nan=False, allow_infinity=False),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=10,
    )
)
def test_plain_value_of_json_data_is_the_data(value: object) -> None:
    from forkline_es.records.plain import plain_value

    assert plain_value(fe.encode_value(value)) == value
