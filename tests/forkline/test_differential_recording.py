"""The names that record (and their helpers) beside Forkline 0.5.0: canonical bytes, replay
guards, Tracer, RunRecorder's 0.5.0 additions, tool calls, artifacts, and a Forkline
``forkline.db`` imported with ``import-forkline`` then compared by both replay engines.

Values that differ on purpose (ids, times, the ``ok``/``success`` words) are left out of
each comparison, and docs/forkline.md lists them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
import forkline_es.forkline as ours

from ._real import load

forkline = load()
PACKAGES = (forkline, ours)

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(alphabet=st.sampled_from("aé\r\n\u0301e \t")),
        st.binary(max_size=4),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.text(alphabet="abc", max_size=2), inner, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(value=values)
def test_canon_bytes_and_hashes_agree(value: Any) -> None:
    theirs = forkline.canon(value)
    assert ours.canon(value) == theirs
    assert ours.sha256_hex(theirs) == forkline.sha256_hex(theirs)
    assert ours.core.bytes_preview(theirs, 5) == forkline.core.bytes_preview(theirs, 5)


def test_replay_mode_guards_agree() -> None:
    seen = []
    for pkg in PACKAGES:
        outside = (pkg.is_replay_mode_active(), pkg.get_replay_run_id())
        with pkg.replay_mode("r-1"):
            inside = (pkg.is_replay_mode_active(), pkg.get_replay_run_id())
            with pytest.raises(pkg.DeterminismViolationError) as caught:
                pkg.guard_live_call("LLM call")
        error = caught.value
        seen.append((outside, inside, str(error), error.violation_type, error.step_idx, error.actual))
        assert isinstance(error, pkg.ReplayError)
    assert seen[0] == seen[1]


def _trace(pkg: Any, folder: str) -> Any:
    store = pkg.SQLiteStore(os.path.join(folder, f"{pkg.__name__}-trace.db"))
    with pkg.Tracer(store=store, run_id="t") as tracer:
        with tracer.step("plan"):
            tracer.record_event("input", {"goal": "x"})
        with pytest.raises(ValueError), tracer.step("act"):
            tracer.record_event("tool_call", {"name": "search", "result": [1, 2.5]})
            raise ValueError("tool down")
        with tracer.step("answer"):
            tracer.record_event("output", {"text": "done"})
    run = store.load_run("t")
    return [
        (s.idx, s.name, s.ended_at is not None, [(e.step_idx, e.type, e.payload) for e in s.events])
        for s in run.steps
    ], (run.forkline_version, run.schema_version)


def test_tracer_runs_load_alike(tmp_path: Path) -> None:
    assert _trace(ours, str(tmp_path)) == _trace(forkline, str(tmp_path))


def _recorded(pkg: Any, folder: str) -> dict[str, Any]:
    recorder = pkg.RunRecorder(db_path=os.path.join(folder, f"{pkg.__name__}-runs.db"))
    first = recorder.start_run(entrypoint="agent.py", run_id="first")
    second = recorder.start_run(entrypoint="other.py")
    recorder.log_event(first, "input", {"prompt": "hi", "n": [1, 2]})
    recorder.log_tool_call(
        first, "search", {"q": "w"}, response={"hits": 3}, timing={"duration_ms": 2}, invocation_id="inv-1"
    )
    with pkg.ToolCallRecorder(recorder, first, "calc") as call:
        call.set_request({"x": 1})
        call.set_response({"y": 2})
        call.set_metadata({"m": True})

    @pkg.record_tool_call(recorder, first, "add")
    def add(a: int, b: int) -> int:
        return a + b

    add(2, b=3)
    recorder.end_run(first)
    row = recorder.get_run(first)
    events = recorder.get_events(first)
    artifact = recorder.load_artifact(first).to_dict()
    tool_calls = [
        {k: v for k, v in e["payload"].items() if k not in ("invocation_id", "timing")}
        for e in events
        if e["type"] == "tool_call"
    ]
    with pkg.replay_mode("r"), pytest.raises(pkg.DeterminismViolationError):
        add(1, b=1)
    return {
        "row_keys": list(row),
        "row": {k: row[k] for k in ("run_id", "entrypoint", "status", "schema_version", "forkline_version")},
        "list": [(r["entrypoint"], r["status"], list(r)) for r in recorder.list_runs()],
        "limited": len(recorder.list_runs(limit=1)),
        "unknown": (recorder.get_run("nope"), recorder.load_artifact("nope")),
        "events": [(e["type"], sorted(e)) for e in events],
        "first_payload": events[0]["payload"],
        "tool_calls": tool_calls,
        "given_id": events[1]["payload"]["invocation_id"],
        "artifact_keys": sorted(artifact),
        "artifact_meta": sorted(artifact.get("metadata", {})),
        "artifact_events": [(e["type"], sorted(e)) for e in artifact["events"]],
        "second": second != first,
    }


def test_run_recorder_0_5_additions_agree(tmp_path: Path) -> None:
    assert _recorded(ours, str(tmp_path)) == _recorded(forkline, str(tmp_path))


def test_artifact_round_trip_and_normalization_agree(tmp_path: Path) -> None:
    texts = []
    for pkg in PACKAGES:
        recorder = pkg.RunRecorder(db_path=str(tmp_path / f"{pkg.__name__}-art.db"))
        run_id = recorder.start_run(entrypoint="a.py", run_id="fixed")
        recorder.log_event(run_id, "output", {"ts": "now", "v": 1})
        recorder.end_run(run_id)
        artifact = pkg.RunArtifact.from_json(recorder.export_artifact_json(run_id))
        normalized = pkg.normalize_artifact(artifact.to_dict(), normalize_ids=True)
        texts.append({k: v for k, v in normalized.items() if k != "forkline_version"})
    assert texts[0] == texts[1]


def _forkline_step_store(folder: str) -> str:
    path = os.path.join(folder, "forkline.db")
    store = forkline.SQLiteStore(path)
    for run_id, weather in (("base", "sunny"), ("new", "rain"), ("short", None)):
        with forkline.Tracer(store=store, run_id=run_id) as tracer:
            with tracer.step("plan"):
                tracer.record_event("input", {"city": "Paris", "ratio": 0.5})
            if weather is not None:
                with tracer.step("forecast"):
                    tracer.record_event("output", {"weather": weather})
    return path


def test_an_imported_forkline_db_compares_as_in_forkline() -> None:
    with tempfile.TemporaryDirectory() as folder:
        source = _forkline_step_store(folder)
        target = os.path.join(folder, "imported.db")
        with fe.Store.open(target) as store:
            report = fe.import_forkline(source, store, redaction_policy=fe.RedactionPolicy.none())
        assert report.runs == 3
        views = []
        for pkg, path in ((forkline, source), (ours, target)):
            steps = pkg.SQLiteStore(path)
            engine = pkg.ReplayEngine(steps)
            views.append(
                [
                    engine.compare_runs("base", "new").to_dict(),
                    engine.compare_runs("base", "short").summary(),
                    engine.compare_runs("short", "base").to_dict(),
                    engine.replay("base").summary(),
                    pkg.find_first_divergence(steps.load_run("base"), steps.load_run("new")).to_dict(),
                ]
            )
        assert views[0] == views[1]
        assert views[1][0]["status"] == "diverged"


def test_custom_redaction_rules_and_config_files_agree(tmp_path: Path) -> None:
    config = tmp_path / "redact.json"
    config.write_text('{"redact_keys": ["card"], "redact_paths": ["user.email"]}', encoding="utf-8")
    payload = {"card_no": "4111", "user": {"email": "a@b.c", "name": "Ann"}, "amount": 5, "debug": [1]}
    seen = []
    for pkg in PACKAGES:
        red = pkg.core.redaction
        policy = red.RedactionPolicy(
            rules=[
                red.RedactionRule(action=red.RedactionAction.MASK, key_pattern="CARD", replacement="***"),
                red.RedactionRule(action=red.RedactionAction.DROP, key_pattern="debug"),
                red.RedactionRule(action=red.RedactionAction.MASK, path_pattern="user.email"),
            ]
        )
        recorder = pkg.RunRecorder.with_config(
            db_path=str(tmp_path / f"{pkg.__name__}.db"), redact_config_path=str(config)
        )
        run_id = recorder.start_run(entrypoint="x.py")
        recorder.log_event(run_id, "input", payload)
        seen.append((policy.redact("input", payload), recorder.get_events(run_id)[0]["payload"]))
    assert seen[0] == seen[1]
    assert seen[1][1] == {
        "card_no": "[REDACTED]",
        "user": {"email": "[REDACTED]", "name": "Ann"},
        "amount": 5,
        "debug": [1],
    }


def test_offline_context_agrees() -> None:
    import socket

    seen = []
    for pkg in PACKAGES:
        before = socket.create_connection
        with pkg.offline_context(), pytest.raises(pkg.ForklineOfflineError) as caught:
            socket.create_connection(("127.0.0.1", 9))
        seen.append(str(caught.value))
        assert socket.create_connection is before
    assert seen[0] == seen[1]


def test_compare_events_agrees() -> None:
    seen = []
    for pkg in PACKAGES:
        a = pkg.Event(1, "r", 0, "output", "t", {"v": [1, 2], "ts": 1, "k": {"x": None}})
        b = pkg.Event(2, "r", 0, "llm_call", "u", {"v": [1], "ts": 2, "k": {"x": 0}})
        seen.append([[str(d) for d in pkg.compare_events(a, b, flag)] for flag in (True, False)])
    assert seen[0] == seen[1]
