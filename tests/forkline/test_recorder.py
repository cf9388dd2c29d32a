"""Forkline 0.5.0's ``RunRecorder``: the compat recorder plus 0.5.0's additions, on one log."""

from __future__ import annotations

import json
import sqlite3
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.forkline import (
    RunArtifact,
    RunRecorder,
    SchemaVersionError,
    create_default_policy,
    migrate_artifact,
)
from forkline_es.forkline.artifact import register_migration

COLUMNS = [
    "run_id",
    "schema_version",
    "forkline_version",
    "entrypoint",
    "started_at",
    "ended_at",
    "status",
    "python_version",
    "platform",
    "cwd",
]


@pytest.fixture
def recorder(db_path: Path) -> Iterator[RunRecorder]:
    with RunRecorder(db_path) as r:
        yield r


def test_it_is_the_engines_recorder_with_forklines_default_policy_type(recorder: RunRecorder) -> None:
    assert isinstance(recorder, fe.RunRecorder)
    assert type(recorder.redaction_policy) is type(create_default_policy())
    assert recorder.redaction_policy.redact("e", {"password": "p"}) == {"password": "[REDACTED]"}


def test_get_run_has_0_5_0s_columns_and_versions(recorder: RunRecorder) -> None:
    run_id = recorder.start_run("examples/minimal.py")
    row = recorder.get_run(run_id)
    assert row is not None
    assert list(row) == COLUMNS
    assert (row["schema_version"], row["forkline_version"], row["status"]) == ("1.0", "0.5.0", None)
    recorder.end_run(run_id, status="error")
    ended = recorder.get_run(run_id)
    assert ended is not None and ended["status"] == "error" and ended["ended_at"] is not None
    assert recorder.get_run("nope") is None


def test_list_runs_is_newest_first_and_limit_keeps_that_many(recorder: RunRecorder) -> None:
    ids = [recorder.start_run(f"e{i}.py", run_id=f"r{i}") for i in range(3)]
    listed = recorder.list_runs()
    assert [r["run_id"] for r in listed] == ids[::-1]
    assert all(list(r) == COLUMNS for r in listed)
    assert [r["run_id"] for r in recorder.list_runs(limit=2)] == ["r2", "r1"]
    assert len(recorder.list_runs(limit=0)) == len(recorder.list_runs(limit=-1)) == 3
    assert len(recorder.list_runs(limit=2**63)) == len(recorder.list_runs(limit=10**30)) == 3  # all
    with pytest.raises(fe.InvalidRequest):
        recorder.list_runs(limit="2")  # type: ignore[arg-type]


def test_list_runs_orders_by_time_where_trimmed_fractions_sort_otherwise_as_text(
    recorder: RunRecorder,
) -> None:
    """Canonical times drop trailing zeros: ``.7Z`` is before ``.71Z`` in time and after it
    as text. Both the listing and the ``runs`` view a person reads with sqlite3 go by time.
    (Three runs started in one test once came back out of order this way.)"""
    for run_id, at in [
        ("a", "2026-12-04T10:00:00.71Z"),
        ("b", "2026-12-04T10:00:00.7Z"),
        ("c", "2026-12-04T10:00:00.705Z"),
    ]:
        with recorder.store._recorded_at(at):
            recorder.start_run(f"{run_id}.py", run_id=run_id)
    assert [r["run_id"] for r in recorder.list_runs()] == ["a", "c", "b"]
    view = recorder.store.conn.execute("SELECT run_id FROM runs").fetchall()
    assert [run_id for (run_id,) in view] == ["b", "c", "a"]


def test_log_tool_call_writes_forklines_payload_through_redaction(recorder: RunRecorder) -> None:
    run_id = recorder.start_run("tools.py")
    event_id = recorder.log_tool_call(
        run_id,
        "http.request",
        {"url": "https://x", "headers": {"Authorization": "Bearer abc123def456"}},
        response={"status": 200},
        timing={"duration_ms": 3.5},
        metadata={},
        invocation_id="inv-1",
    )
    [event] = recorder.get_events(run_id)
    assert event["event_id"] == event_id and event["type"] == "tool_call"
    assert event["payload"] == {
        "tool_name": "http.request",
        "invocation_id": "inv-1",
        "request": {"url": "https://x", "headers": {"Authorization": "[REDACTED]"}},
        "response": {"status": 200},
        "timing": {"duration_ms": 3.5},
    }
    recorder.log_tool_call(run_id, "db.query", {"sql": "select 1"}, error={"type": "Timeout"})
    second = recorder.get_events(run_id)[1]["payload"]
    assert set(second) == {"tool_name", "invocation_id", "request", "timing", "error"}
    assert len(second["invocation_id"]) == 32 and second["timing"] == {}


def test_with_config_loads_a_policy_or_uses_the_default(tmp_path: Path) -> None:
    config = tmp_path / "redact.json"
    config.write_text(json.dumps({"redact_keys": ["customer"]}))
    with RunRecorder.with_config(str(tmp_path / "a.db"), str(config)) as configured:
        run_id = configured.start_run("x.py")
        configured.log_event(run_id, "input", {"customer_name": "Ada", "password": "p"})
        # Only the file's rules apply: Forkline's with_config replaces the default policy.
        assert configured.get_events(run_id)[0]["payload"] == {"customer_name": "[REDACTED]", "password": "p"}
    with RunRecorder.with_config(str(tmp_path / "b.db")) as default:
        run_id = default.start_run("x.py")
        default.log_event(run_id, "input", {"password": "p"})
        assert default.get_events(run_id)[0]["payload"] == {"password": "[REDACTED]"}


def test_the_artifact_is_forklines_schema_1_0(recorder: RunRecorder) -> None:
    run_id = recorder.start_run("examples/minimal.py")
    first = recorder.log_event(run_id, "input", {"prompt": "hello"})
    recorder.log_event(run_id, "output", {"result": "world"})
    recorder.end_run(run_id)
    artifact = recorder.load_artifact(run_id)
    assert isinstance(artifact, RunArtifact)
    assert artifact.validate() == []
    assert (artifact.schema_version, artifact.forkline_version, artifact.status) == (
        "1.0",
        "0.5.0",
        "success",
    )
    assert set(artifact.metadata) == {"python_version", "platform", "cwd"}
    text = recorder.export_artifact_json(run_id)
    assert text is not None
    data = json.loads(text)
    assert sorted(data) == [
        "ended_at", "entrypoint", "events", "forkline_version", "metadata",
        "run_id", "schema_version", "started_at", "status",
    ]  # fmt: skip
    assert data["events"][0] == {
        "event_id": first,
        "run_id": run_id,
        "ts": data["events"][0]["ts"],
        "type": "input",
        "payload": {"prompt": "hello"},
    }
    assert text == json.dumps(data, indent=2, sort_keys=True)
    assert RunArtifact.from_json(text) == artifact
    assert recorder.load_artifact("nope") is None and recorder.export_artifact_json("nope") is None


def test_an_open_runs_artifact_omits_end_and_status(recorder: RunRecorder) -> None:
    run_id = recorder.start_run("x.py")
    data = json.loads(recorder.export_artifact_json(run_id, indent=0) or "")
    assert "ended_at" not in data and "status" not in data and data["events"] == []


def test_one_log_the_engine_and_the_views_see_the_same_runs(db_path: Path) -> None:
    with RunRecorder(db_path) as recorder:
        run_id = recorder.start_run("x.py")
        recorder.log_event(run_id, "input", {"a": 1})
        recorder.end_run(run_id, status="failure")
        assert recorder.store.get_run_record(run_id)["run"]["status"] == "failed"
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT run_id, status FROM runs").fetchall() == [(run_id, "failure")]
        assert conn.execute("SELECT type, payload FROM events").fetchall() == [("input", '{"a":1}')]


def test_migrations_follow_forklines_rules() -> None:
    v0 = {
        "schema_version": "recording_v0",
        "run_id": "r",
        "script": "old.py",
        "started_at": "t",
        "python_version": "3.11",
        "cwd": "/w",
        "events": [{"event_id": 1, "run_id": "r", "created_at": "t1", "type": "input", "payload": {}}],
    }
    migrated = migrate_artifact(v0)
    assert migrated["schema_version"] == "1.0" and migrated["entrypoint"] == "old.py"
    assert migrated["metadata"] == {"python_version": "3.11", "cwd": "/w"}
    assert migrated["events"][0]["ts"] == "t1" and "created_at" not in migrated["events"][0]
    assert v0["script"] == "old.py"  # the input is not changed
    with pytest.raises(SchemaVersionError) as missing:
        migrate_artifact({"run_id": "r"})
    assert missing.value.version is None
    with pytest.raises(SchemaVersionError, match="No migration path") as old:
        migrate_artifact({"schema_version": "0.1"})
    assert old.value.version == "0.1"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert migrate_artifact({"schema_version": "2.0", "x": 1}) == {"schema_version": "2.0", "x": 1}
    assert "newer" in str(caught[0].message)
    with pytest.raises(ValueError, match="already registered"):
        register_migration("recording_v0", "1.0", lambda d: d)
    with pytest.raises(SchemaVersionError):
        RunArtifact.from_dict({"run_id": "r"})


def test_a_policy_of_the_forkline_package_is_refused_with_the_import_to_change(db_path: Path) -> None:
    class RedactionPolicy:  # stands for forkline.core.redaction.RedactionPolicy
        def redact(self, event_type: str, payload: object) -> object:
            return payload

    RedactionPolicy.__module__ = "forkline.core.redaction"
    with pytest.raises(fe.InvalidRequest, match=r"forkline_es\.forkline\.core\.redaction"):
        RunRecorder(db_path, redaction_policy=RedactionPolicy())  # type: ignore[arg-type]
    assert not db_path.exists()
