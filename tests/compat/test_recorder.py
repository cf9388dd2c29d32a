"""RunRecorder: the seed's semantics, keys and defaults, and the refusals where Forkline is wrong."""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
from forkline_es.compat import recorder as recorder_module


@pytest.fixture
def recorder(db_path: Path) -> Any:
    with fe.RunRecorder(db_path) as r:
        yield r


def _log_rows(recorder: fe.RunRecorder) -> int:
    return int(recorder.store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0])


def _utc(text: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(text)
    assert parsed.utcoffset() == dt.timedelta(0), text
    return parsed


def test_the_seed_example_records_a_run_and_its_events(recorder: fe.RunRecorder) -> None:
    run_id = recorder.start_run(entrypoint="examples/minimal.py")
    first = recorder.log_event(run_id, event_type="input", payload={"prompt": "hello"})
    second = recorder.log_event(run_id, event_type="output", payload={"result": "world"})
    recorder.end_run(run_id, status="success")

    run = recorder.get_run(run_id)
    assert run is not None
    assert list(run) == [
        "run_id",
        "schema_version",
        "entrypoint",
        "started_at",
        "ended_at",
        "status",
        "python_version",
        "platform",
        "cwd",
    ]
    assert run["run_id"] == run_id
    assert run["schema_version"] == "0.1"
    assert run["entrypoint"] == "examples/minimal.py"
    assert run["status"] == "success"
    assert _utc(run["started_at"]) <= _utc(run["ended_at"])
    assert run["python_version"] == platform.python_version()
    assert run["platform"] == platform.platform()
    assert run["cwd"] == os.getcwd()

    events = recorder.get_events(run_id)
    assert [list(e) for e in events] == [["event_id", "run_id", "ts", "type", "payload"]] * 2
    assert [e["event_id"] for e in events] == [first, second]
    assert isinstance(first, int) and first < second
    assert [(e["type"], e["payload"]) for e in events] == [
        ("input", {"prompt": "hello"}),
        ("output", {"result": "world"}),
    ]
    assert {e["run_id"] for e in events} == {run_id}
    assert _utc(run["started_at"]) <= _utc(events[0]["ts"]) <= _utc(events[1]["ts"])


def test_an_open_run_has_no_end_and_no_status(recorder: fe.RunRecorder) -> None:
    run_id = recorder.start_run("job.py")
    run = recorder.get_run(run_id)
    assert run is not None
    assert (run["ended_at"], run["status"]) == (None, None)


def test_generated_ids_are_uuid_hex_and_explicit_ids_are_kept(recorder: fe.RunRecorder) -> None:
    generated = recorder.start_run("a.py")
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    assert recorder.start_run("b.py", run_id="my-run") == "my-run"
    assert recorder.get_run("my-run") is not None


def test_unknown_runs_read_as_none_and_empty(recorder: fe.RunRecorder) -> None:
    assert recorder.get_run("nope") is None
    assert recorder.get_events("nope") == []


def test_runs_db_in_the_current_directory_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with fe.RunRecorder() as r:
        r.start_run("x.py")
    assert (tmp_path / "runs.db").is_file()


def test_the_parent_folder_is_created(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "runs.db"
    with fe.RunRecorder(db_path=str(path)) as r:
        r.start_run("x.py")
    assert path.is_file()


def test_events_keep_their_order_across_runs(recorder: fe.RunRecorder) -> None:
    a = recorder.start_run("a.py")
    b = recorder.start_run("b.py")
    ids = [recorder.log_event(run, "input", {"n": n}) for n, run in enumerate([a, b, a, b, a])]
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [e["payload"]["n"] for e in recorder.get_events(a)] == [0, 2, 4]
    assert [e["payload"]["n"] for e in recorder.get_events(b)] == [1, 3]


def test_any_json_value_is_a_payload(recorder: fe.RunRecorder) -> None:
    run_id = recorder.start_run("x.py")
    payloads: list[Any] = [
        [1, "two", None],
        {"big": 2**70, "neg": -0.5, "tiny": 1.5e-7, "nested": {"t": (1, 2)}, "u": "é\u2603"},
        {},
    ]
    for p in payloads:
        recorder.log_event(run_id, "tool_call", p)
    got = [e["payload"] for e in recorder.get_events(run_id)]
    assert got == [[1, "two", None], {**payloads[1], "nested": {"t": [1, 2]}}, {}]


# -- refusals: where Forkline is silently wrong ---------------------------------------------


def test_a_duplicate_run_id_is_a_conflict_and_writes_nothing(recorder: fe.RunRecorder) -> None:
    recorder.start_run("a.py", run_id="r1")
    before = _log_rows(recorder)
    for entrypoint in ("a.py", "b.py"):
        with pytest.raises(fe.Conflict) as refused:
            recorder.start_run(entrypoint, run_id="r1")
        assert refused.value.code == "conflict"
    assert _log_rows(recorder) == before


def test_a_second_recorder_cannot_restart_a_taken_id(db_path: Path) -> None:
    with fe.RunRecorder(db_path) as one, fe.RunRecorder(db_path) as two:
        one.start_run("a.py", run_id="r1")
        with pytest.raises(fe.Conflict):
            two.start_run("a.py", run_id="r1")


def test_store_start_under_a_taken_id_with_another_key_is_a_conflict(store: fe.Store) -> None:
    """Core fix: a start with a new idempotency key used to append a second run-started."""
    run = store.start_run(workflow="w", run_id="r", key="k1")
    assert store.start_run(workflow="w", run_id="r", key="k1").id == run.id  # a repeat
    with pytest.raises(fe.Conflict):
        store.start_run(workflow="w", run_id="r", key="k2")
    kinds = [k for (k,) in store.conn.execute("SELECT kind FROM log WHERE run_id = 'r'").fetchall()]
    assert kinds == ["run-started"]


@pytest.mark.parametrize("call", ["log_event", "end_run"])
def test_an_unknown_run_is_run_not_found(recorder: fe.RunRecorder, call: str) -> None:
    with pytest.raises(fe.RunNotFound) as refused:
        if call == "log_event":
            recorder.log_event("ghost", "input", {"a": 1})
        else:
            recorder.end_run("ghost")
    assert refused.value.code == "run-not-found"
    assert _log_rows(recorder) == 0


class _Thing:
    pass


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({"x": math.nan}, "$<key 0>"),
        ({"x": [1, math.inf]}, "$<key 0>[1]"),
        ({"x": {"y": -math.inf}}, "$<key 0><key 0>"),
        ({"blob": b"\x00\x01"}, "$<key 0>"),
        ({"tags": {"a", "b"}}, "$<key 0>"),
        ({"m": {1: "one"}}, "$<key 0><key 0>"),
        ({"obj": _Thing()}, "$<key 0>"),
        ({"when": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}, "$<key 0>"),
    ],
)
def test_payloads_json_cannot_carry_are_refused_with_their_path(
    recorder: fe.RunRecorder, payload: Any, path: str
) -> None:
    run_id = recorder.start_run("x.py")
    before = _log_rows(recorder)
    with pytest.raises(fe.InvalidValue) as refused:
        recorder.log_event(run_id, "input", payload)
    assert refused.value.code == "invalid-value"
    assert refused.value.path == path
    assert _log_rows(recorder) == before
    assert recorder.get_events(run_id) == []


@pytest.mark.parametrize("event_type", ["", None, 3])
def test_an_event_type_is_a_nonempty_string(recorder: fe.RunRecorder, event_type: Any) -> None:
    run_id = recorder.start_run("x.py")
    with pytest.raises(fe.InvalidRequest):
        recorder.log_event(run_id, event_type, {})
    assert recorder.get_events(run_id) == []


# -- ending ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "outcome", "code", "shown"),
    [
        ("success", "succeeded", None, "success"),
        ("failure", "failed", None, "failure"),
        ("error", "failed", "error", "error"),
        ("cancelled", "cancelled", None, "cancelled"),
        ("stopped", "stopped", None, "stopped"),
        ("succeeded", "succeeded", None, "success"),  # the engine's own words, as they are
        ("failed", "failed", None, "failure"),
    ],
)
def test_end_run_maps_forkline_statuses_to_outcomes(
    recorder: fe.RunRecorder, status: str, outcome: str, code: str | None, shown: str
) -> None:
    run_id = recorder.start_run("x.py")
    recorder.end_run(run_id, status=status)
    run = recorder.get_run(run_id)
    assert run is not None and run["status"] == shown
    summary = recorder.store.get_run_record(run_id)["run"]
    assert summary["status"] == outcome
    assert summary.get("code") == code


def test_end_run_defaults_to_success(recorder: fe.RunRecorder) -> None:
    run_id = recorder.start_run("x.py")
    recorder.end_run(run_id)
    assert (recorder.get_run(run_id) or {})["status"] == "success"


@pytest.mark.parametrize("status", ["ok", "SUCCESS", "", None, ["success"]])
def test_an_unknown_status_is_refused(recorder: fe.RunRecorder, status: Any) -> None:
    run_id = recorder.start_run("x.py")
    with pytest.raises(fe.InvalidRequest):
        recorder.end_run(run_id, status=status)
    assert (recorder.get_run(run_id) or {})["status"] is None


def test_ending_twice_is_a_no_op_and_ending_otherwise_a_conflict(recorder: fe.RunRecorder) -> None:
    run_id = recorder.start_run("x.py")
    recorder.end_run(run_id, "error")
    rows = _log_rows(recorder)
    recorder.end_run(run_id, "error")
    assert _log_rows(recorder) == rows
    for other in ("success", "failure"):  # failure: the same outcome, another code
        with pytest.raises(fe.Conflict, match=r"is concluded \(failed\); nothing more can be recorded"):
            recorder.end_run(run_id, other)
    assert (recorder.get_run(run_id) or {})["status"] == "error"


def test_an_ended_run_takes_no_more_events(recorder: fe.RunRecorder) -> None:
    run_id = recorder.start_run("x.py")
    recorder.end_run(run_id)
    with pytest.raises(fe.Conflict, match=r"is concluded \(succeeded\); nothing more can be recorded"):
        recorder.log_event(run_id, "output", {"late": True})  # the refusal itself, not a lost race
    assert recorder.get_events(run_id) == []


# -- one log, several writers ---------------------------------------------------------------


def test_two_recorders_interleave_on_one_run(db_path: Path) -> None:
    with fe.RunRecorder(db_path) as one, fe.RunRecorder(db_path) as two:
        run_id = one.start_run("x.py")
        ids = [
            one.log_event(run_id, "input", {"n": 0}),
            two.log_event(run_id, "input", {"n": 1}),
            one.log_event(run_id, "input", {"n": 2}),  # one's handle is stale: re-read, not lost
            two.log_event(run_id, "input", {"n": 2}),  # the same payload twice is two events
        ]
        two.end_run(run_id)
        assert ids == sorted(set(ids))
        assert [e["payload"]["n"] for e in one.get_events(run_id)] == [0, 1, 2, 2]
        with pytest.raises(fe.Conflict):
            one.log_event(run_id, "input", {"n": 3})


_LOG_AT_ONCE = """
import os, sys, time
import forkline_es as fe
db, run_id, who, barrier = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
recorder = fe.RunRecorder(db_path=db)
while not os.path.exists(barrier):
    time.sleep(0.0005)
for i in range(150):
    recorder.log_event(run_id, "input", {"who": who, "i": i})
print("done", flush=True)
"""


def test_processes_logging_to_one_run_at_once_lose_no_event(db_path: Path, tmp_path: Path) -> None:
    """Forkline accepts this; here each race for the next seq is caught up and retried."""
    with fe.RunRecorder(db_path) as recorder:
        run_id = recorder.start_run("x.py")
        barrier = tmp_path / "go"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _LOG_AT_ONCE, str(db_path), run_id, str(who), str(barrier)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for who in range(3)
        ]
        time.sleep(0.2)  # let the interpreters start, so that they race
        barrier.touch()
        outputs = [p.communicate(timeout=120)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], outputs
        events = recorder.get_events(run_id)
        assert len(events) == 450
        for who in range(3):  # each writer's events in its own order
            assert [e["payload"]["i"] for e in events if e["payload"]["who"] == str(who)] == list(range(150))
        recorder.end_run(run_id)
        with pytest.raises(fe.Conflict):  # a real refusal is still one
            recorder.log_event(run_id, "input", {})


def test_a_long_run_is_not_remembered_event_by_event(recorder: fe.RunRecorder) -> None:
    """Each call's key is unique, so neither the recorder's handle nor a resumed one keeps
    them: a run of a million events would otherwise hold about 500 MB."""
    run_id = recorder.start_run("x.py")
    ids = [recorder.log_event(run_id, "input", {"n": n}) for n in range(1_000)]
    assert ids == sorted(set(ids))
    assert recorder._handles[run_id]._state.remembered_keys == 1  # the start's
    resumed = recorder.store.resume_run(run_id)
    assert resumed._state.remembered_keys == 1 and resumed._state.seq == 1_001
    recorder.end_run(run_id)
    assert [e["payload"]["n"] for e in recorder.get_events(run_id)] == list(range(1_000))


def test_the_recorder_keeps_the_handles_of_its_newest_runs_only(recorder: fe.RunRecorder) -> None:
    """A long-lived recorder starting run after run holds a bounded number of handles, and
    the ones it keeps are those of the runs it started last, the ones still being logged to."""
    limit = recorder_module._HANDLES
    ids = [recorder.start_run("x.py") for _ in range(limit + 3)]
    assert limit >= 256
    assert list(recorder._handles) == ids[3:]
    recorder.log_event(ids[0], "input", {"old": True})  # an evicted handle is re-read on demand
    assert [e["payload"] for e in recorder.get_events(ids[0])] == [{"old": True}]
    assert len(recorder._handles) == limit and ids[0] in recorder._handles


def test_a_recorder_commits_with_synchronous_normal_by_default(db_path: Path) -> None:
    """durability="normal" (docs/forkline.md); "full" costs an fsync per event."""
    with fe.RunRecorder(db_path) as r:
        assert r.store.conn.execute("PRAGMA synchronous").fetchall() == [(1,)]
    with fe.RunRecorder(db_path, durability="full") as r:
        assert r.store.conn.execute("PRAGMA synchronous").fetchall() == [(2,)]


def test_the_recorder_s_store_records_executor_runs_under_the_same_policy(db_path: Path) -> None:
    """``recorder.store`` is the database's one store: what its policy masks in a logged
    payload, it withholds in an executor run started through it."""
    with fe.RunRecorder(db_path) as recorder:
        run = recorder.store.start_run(workflow="w", inputs={"api_key": "sk-live-123"})
        document = recorder.store.get_run_record(run.id)
        assert document["payloads"]["inputs"] == {"class": "inputs", "state": "withheld"}
    assert b"sk-live-123" not in db_path.read_bytes()


def test_a_reopened_recorder_continues_a_run(db_path: Path) -> None:
    with fe.RunRecorder(db_path) as r:
        run_id = r.start_run("x.py")
        r.log_event(run_id, "input", {"a": 1})
    with fe.RunRecorder(db_path) as r:
        r.log_event(run_id, "output", {"b": 2})
        r.end_run(run_id)
        assert [e["type"] for e in r.get_events(run_id)] == ["input", "output"]


def test_a_forkline_run_is_a_run_of_the_engine(recorder: fe.RunRecorder) -> None:
    run_id = recorder.start_run("examples/minimal.py")
    recorder.log_event(run_id, "input", {"prompt": "hello"})
    recorder.end_run(run_id, "success")
    store = recorder.store
    (listed,) = [s for s in store.list_runs() if s["id"] == run_id]
    assert listed["workflow"] == "examples/minimal.py"
    assert listed["status"] == "succeeded"
    document = store.get_run_record(run_id)
    assert [e["kind"] for e in document["entries"]] == ["start", "conclude"]
    kinds = [
        k for (k,) in store.conn.execute("SELECT kind FROM log WHERE run_id = ? ORDER BY seq", (run_id,))
    ]
    assert kinds == ["run-started", "forkline-logged", "run-concluded"]


class ForklinePolicy:
    """The shape of Forkline's own RedactionPolicy: another method, other rules."""

    def redact(self, event_type: str, payload: dict[str, Any]) -> dict[str, Any]:
        return payload


def test_a_foreign_redaction_policy_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wanted = r"must be a forkline_es\.RedactionPolicy, not ForklinePolicy"
    with pytest.raises(fe.InvalidRequest, match=r"redaction_policy " + wanted):
        fe.RunRecorder(db, redaction_policy=ForklinePolicy())  # type: ignore[arg-type]
    with pytest.raises(fe.InvalidRequest, match=r"redaction " + wanted):
        fe.Store.open(db, redaction=ForklinePolicy())  # type: ignore[arg-type]
    assert not db.exists()

    with fe.Store.open(db) as store:
        source = tmp_path / "forkline.db"
        conn = sqlite3.connect(source)
        conn.execute("CREATE TABLE runs (run_id TEXT)")
        conn.close()
        with pytest.raises(fe.InvalidRequest, match=r"redaction_policy " + wanted):
            fe.import_forkline(source, store, redaction_policy=ForklinePolicy())  # type: ignore[arg-type]
        assert store.list_runs() == []


def test_verify_diff_and_eviction_work_on_forkline_runs(recorder: fe.RunRecorder) -> None:
    ids = []
    for status in ("success", "error"):
        run_id = recorder.start_run("agent.py")
        recorder.log_event(run_id, "input", {"prompt": "hello"})
        recorder.end_run(run_id, status)
        ids.append(run_id)
    store = recorder.store
    report = store.verify_run(ids[0])
    assert report.ok, report.problems
    assert not fe.diff_runs(store, ids[0], ids[1]).is_match  # succeeded vs failed
    assert fe.diff_runs(store, ids[0], ids[0]).is_match
    store.evict_run(ids[0], reason="test")
    assert recorder.get_run(ids[0]) is None
    assert recorder.get_events(ids[0]) == []
    assert len(recorder.get_events(ids[1])) == 1
    with pytest.raises(fe.RunNotRetained):
        recorder.log_event(ids[0], "input", {})
    with pytest.raises(fe.Conflict):
        recorder.start_run("agent.py", run_id=ids[0])  # an evicted run's id is never reused
