"""``SQLiteStore`` and ``Tracer``: Forkline's step store as runs of the engine."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.forkline import Event, Run, SQLiteStore, Step, Tracer
from forkline_es.forkline.storage.store import STEP_STORE_WORKFLOW
from forkline_es.forkline.tracer import NoActiveStep


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(str(tmp_path / "forkline.db")) as s:
        yield s


def _log_rows(store: SQLiteStore) -> int:
    return int(store.store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0])


def test_the_default_path_is_forkline_db_and_missing_folders_are_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SQLiteStore() as default:
        assert default.path == "forkline.db"
    assert (tmp_path / "forkline.db").exists()
    with SQLiteStore(str(tmp_path / "a" / "b" / "f.db")):
        pass
    assert (tmp_path / "a" / "b" / "f.db").exists()


def test_a_run_of_steps_and_events_loads_back(store: SQLiteStore) -> None:
    run = store.start_run("r1")
    assert isinstance(run, Run)
    assert (run.run_id, run.steps, run.forkline_version, run.schema_version) == ("r1", [], "0.5.0", "1.0")
    step = store.start_step("r1", 0, "fetch data")
    assert isinstance(step, Step) and (step.idx, step.name, step.ended_at, step.events) == (
        0,
        "fetch data",
        None,
        [],
    )
    event = store.append_event("r1", 0, "llm", {"prompt": "hi", "n": [1, 2.5]})
    assert isinstance(event, Event) and (event.step_idx, event.type, event.payload) == (
        0,
        "llm",
        {"prompt": "hi", "n": [1, 2.5]},
    )
    store.end_step("r1", 0)
    store.start_step("r1", 1, "answer")
    second = store.append_event("r1", 1, "output", {"text": "ok"})
    assert second.event_id is not None and event.event_id is not None and second.event_id > event.event_id

    loaded = store.load_run("r1")
    assert loaded is not None
    assert loaded.created_at == run.created_at
    assert [(s.idx, s.name, s.step_id, s.ended_at is not None) for s in loaded.steps] == [
        (0, "fetch data", step.step_id, True),
        (1, "answer", loaded.steps[1].step_id, False),
    ]
    assert loaded.steps[0].events == [event]
    assert loaded.steps[1].events == [second]
    assert store.load_run("nope") is None


def test_it_is_a_run_of_the_engine(store: SQLiteStore) -> None:
    store.start_run("r1")
    store.start_step("r1", 0, "fetch data")
    store.append_event("r1", 0, "llm", {"a": 1})
    store.end_step("r1", 0)
    record = store.store.get_run_record("r1")
    assert record["run"]["workflow"] == STEP_STORE_WORKFLOW
    assert record["steps"]["0"]["outcome"] == "succeeded"
    arguments = record["steps"]["0"]["payloads"]["arguments"]["value"]
    assert fe.decode_value(arguments) == {"name": "fetch data"}
    assert store.store.verify_run("r1").ok


def test_starting_a_run_again_returns_it_and_another_runs_id_is_a_conflict(store: SQLiteStore) -> None:
    first = store.start_run("r1")
    assert store.start_run("r1") == first
    other = store.store.start_run(workflow="billing", run_id="taken")
    assert other.id == "taken"
    rows = _log_rows(store)
    with pytest.raises(fe.Conflict):
        store.start_run("taken")
    assert _log_rows(store) == rows


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.append_event("r1", 5, "x", {}), fe.Conflict),  # a step never started
        (lambda s: s.append_event("r1", 0, "x", {"v": float("nan")}), fe.InvalidValue),
        (lambda s: s.append_event("r1", 0, "", {}), fe.InvalidRequest),
        (lambda s: s.append_event("ghost", 0, "x", {}), fe.RunNotFound),
        (lambda s: s.start_step("r1", -1, "neg"), fe.InvalidRequest),
        (lambda s: s.start_step("r1", True, "bool"), fe.InvalidRequest),
        (lambda s: s.start_step("r1", 0, "another name"), fe.Conflict),
        (lambda s: s.start_step("ghost", 0, "x"), fe.RunNotFound),
        (lambda s: s.end_step("r1", 7), fe.RecordError),
        (lambda s: s.start_run(""), fe.InvalidRequest),
    ],
)
def test_refused_calls_write_nothing(store: SQLiteStore, call: object, error: type[Exception]) -> None:
    store.start_run("r1")
    store.start_step("r1", 0, "first")
    rows = _log_rows(store)
    with pytest.raises(error):
        call(store)  # type: ignore[operator]
    assert _log_rows(store) == rows


def test_the_step_stores_artifact_flattens_the_steps_events(store: SQLiteStore) -> None:
    store.start_run("r1")
    store.start_step("r1", 0, "a")
    store.append_event("r1", 0, "input", {"q": 1})
    store.start_step("r1", 1, "b")
    store.append_event("r1", 1, "output", {"a": 2})
    text = store.export_artifact_json("r1")
    assert text is not None
    data = json.loads(text)
    assert {k: data[k] for k in ("schema_version", "run_id", "entrypoint", "forkline_version")} == {
        "schema_version": "1.0",
        "run_id": "r1",
        "entrypoint": "",
        "forkline_version": "0.5.0",
    }
    assert [(e["type"], e["payload"]) for e in data["events"]] == [("input", {"q": 1}), ("output", {"a": 2})]
    assert store.export_artifact_json("nope") is None


def test_step_store_events_are_in_the_events_view_with_their_run(store: SQLiteStore, tmp_path: Path) -> None:
    store.start_run("r1")
    store.start_step("r1", 0, "a")
    store.append_event("r1", 0, "input", {"q": 1})
    with sqlite3.connect(tmp_path / "forkline.db") as conn:
        assert conn.execute("SELECT run_id, type, payload FROM events").fetchall() == [
            ("r1", "input", '{"q":1}')
        ]


def test_the_tracer_numbers_steps_in_entry_order_and_records_failures(store: SQLiteStore) -> None:
    with Tracer(store=store, run_id="t1") as tracer:
        with tracer.step("fetch"):
            tracer.record_event("input", {"q": 1})
            with tracer.step("inner") as inner:
                assert inner.idx == 1
                tracer.record_event("output", {"a": [1, 2]})
            tracer.record_event("after", None)
        with pytest.raises(ZeroDivisionError), tracer.step("boom"):
            1 / 0  # noqa: B018
    run = store.load_run("t1")
    assert run is not None
    assert [(s.idx, s.name, [(e.type, e.payload) for e in s.events]) for s in run.steps] == [
        (0, "fetch", [("input", {"q": 1}), ("after", {})]),
        (1, "inner", [("output", {"a": [1, 2]})]),
        (2, "boom", []),
    ]
    outcomes = {p: s["outcome"] for p, s in store.store.get_run_record("t1")["steps"].items()}
    assert outcomes == {"0": "succeeded", "1": "succeeded", "2": "failed"}


def test_an_event_outside_a_step_is_forklines_runtime_error_with_a_code(store: SQLiteStore) -> None:
    with Tracer(store=store) as tracer:
        rows = _log_rows(store)
        with pytest.raises(RuntimeError, match="No active step") as caught:
            tracer.record_event("x", {})
        assert isinstance(caught.value, NoActiveStep) and caught.value.code == "invalid-request"
        assert _log_rows(store) == rows
        assert len(tracer.run_id) == 32


json_leaves = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
# Names and types are Unicode text without NUL (check_text), as every text the engine records.
names = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=12)
step_plans = st.lists(
    st.tuples(
        names,
        st.lists(st.tuples(names, json_values), max_size=4),
    ),
    max_size=5,
)


@settings(max_examples=40)
@given(step_plans)
def test_what_is_recorded_loads_back_exactly(plan: list[tuple[str, list[tuple[str, Any]]]]) -> None:
    with SQLiteStore(":memory:") as store:
        store.start_run("r")
        recorded = []
        for idx, (name, events) in enumerate(plan):
            store.start_step("r", idx, name)
            recorded.append([store.append_event("r", idx, kind, payload) for kind, payload in events])
            if idx % 2 == 0:
                store.end_step("r", idx)
        run = store.load_run("r")
        assert run is not None
        assert [(s.idx, s.name, s.ended_at is not None) for s in run.steps] == [
            (i, name, i % 2 == 0) for i, (name, _) in enumerate(plan)
        ]
        assert [s.events for s in run.steps] == recorded


_APPEND_AT_ONCE = """
import os, sys, time
from forkline_es.forkline import SQLiteStore
db, who, barrier = sys.argv[1], sys.argv[2], sys.argv[3]
store = SQLiteStore(db)
while not os.path.exists(barrier):
    time.sleep(0.0005)
for i in range(100):
    store.append_event("shared", 0, "input", {"who": who, "i": i})
print("done", flush=True)
"""


def test_processes_appending_to_one_step_at_once_lose_no_event(tmp_path: Path) -> None:
    db = tmp_path / "forkline.db"
    with SQLiteStore(str(db)) as store:
        store.start_run("shared")
        store.start_step("shared", 0, "fan-in")
        barrier = tmp_path / "go"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _APPEND_AT_ONCE, str(db), str(who), str(barrier)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for who in range(2)
        ]
        time.sleep(0.2)  # let the interpreters start, so that they race
        barrier.touch()
        outputs = [p.communicate(timeout=120)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        run = store.load_run("shared")
        assert run is not None
        events = run.steps[0].events
        assert len(events) == 200
        assert [e.event_id for e in events] == sorted(e.event_id for e in events if e.event_id is not None)
        for who in range(2):
            assert [e.payload["i"] for e in events if e.payload["who"] == str(who)] == list(range(100))
