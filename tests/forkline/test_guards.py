"""Replay mode guards: ``replay_mode()``, ``guard_live_call()``, and the tool-call recorder."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import forkline_es.forkline as fl


def test_outside_replay_mode_a_live_call_passes() -> None:
    assert not fl.is_replay_mode_active()
    assert fl.get_replay_run_id() is None
    fl.guard_live_call("LLM call")
    fl.assert_not_in_replay_mode()


def test_inside_replay_mode_a_live_call_raises_forklines_error() -> None:
    with fl.replay_mode("run-9"):
        assert fl.is_replay_mode_active()
        assert fl.get_replay_run_id() == "run-9"
        with pytest.raises(fl.DeterminismViolationError) as caught:
            fl.guard_live_call("LLM call")
    err = caught.value
    assert isinstance(err, fl.ReplayError)
    assert (err.step_idx, err.violation_type) == (-1, "live_call_during_replay")
    assert (err.expected, err.actual) == ("<recorded artifact>", "<live LLM call>")
    assert str(err) == (
        "DeterminismViolationError at step -1 [live_call_during_replay]: Live LLM call attempted "
        "during replay of run 'run-9'. Replay mode forbids live calls to ensure determinism. "
        "Use recorded artifacts instead."
    )
    assert not fl.is_replay_mode_active()


def test_an_unnamed_replay_says_unknown_and_nesting_restores_the_outer_mode() -> None:
    with fl.replay_mode():
        with pytest.raises(fl.DeterminismViolationError, match="run 'unknown'"):
            fl.assert_not_in_replay_mode("tool execution")
        with fl.replay_mode("inner"):
            assert fl.get_replay_run_id() == "inner"
        assert fl.get_replay_run_id() is None
        assert fl.is_replay_mode_active()
    assert not fl.is_replay_mode_active()


def test_the_mode_is_left_on_an_exception() -> None:
    with pytest.raises(KeyError), fl.replay_mode("r"):
        raise KeyError("x")
    assert not fl.is_replay_mode_active()


def test_other_threads_and_tasks_started_outside_are_not_in_replay_mode() -> None:
    seen: list[bool] = []
    with fl.replay_mode("r"):
        worker = threading.Thread(target=lambda: seen.append(fl.is_replay_mode_active()))
        worker.start()
        worker.join()

    async def outside() -> bool:
        return fl.is_replay_mode_active()

    async def main() -> tuple[bool, bool]:
        task = asyncio.create_task(outside())
        with fl.replay_mode("r"):
            inner = await asyncio.create_task(outside())
        return await task, inner

    assert seen == [False]
    assert asyncio.run(main()) == (False, True)


def test_a_tool_call_refuses_to_run_in_replay_mode_unless_allowed(tmp_path: Path) -> None:
    with fl.RunRecorder(tmp_path / "runs.db") as recorder:
        run_id = recorder.start_run("tools.py")
        ran: list[str] = []
        with fl.replay_mode(run_id):
            with (
                pytest.raises(fl.DeterminismViolationError, match=r"tool call: http\.get"),
                fl.ToolCallRecorder(recorder, run_id, "http.get"),
            ):
                ran.append("live")
            with fl.ToolCallRecorder(recorder, run_id, "cache.get", allow_in_replay=True) as tc:
                tc.set_response({"hit": True})
        assert ran == []
        assert [e["payload"]["tool_name"] for e in recorder.get_events(run_id)] == ["cache.get"]


def test_missing_artifact_error_names_where() -> None:
    err = fl.MissingArtifactError("no output", run_id="r", step_idx=2, event_idx=0, artifact_type="output")
    assert str(err) == "MissingArtifactError(run=r, step=2, event=0, type=output): no output"
    assert isinstance(err, fl.ReplayError)
    assert not issubclass(fl.ReplayOrderError, fl.ReplayError)
