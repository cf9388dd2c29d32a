"""Forkline's ``ReplayEngine`` and ``ReplayContext`` over runs read from the engine's log.

The engine only reads: ``SQLiteStore.load_run`` gives each run as one snapshot of the log,
and comparing never writes (a replay with an executor compares in memory; nothing is
recorded for it, as in Forkline). Comparison halts at the first divergence.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator

from forkline_es.forkline.artifact.migrate import _rank
from forkline_es.forkline.core._compare import compare_steps
from forkline_es.forkline.core._errors import MissingArtifactError, ReplayOrderError
from forkline_es.forkline.core._results import (
    DivergencePoint,
    FieldDiff,
    ReplayPolicy,
    ReplayResult,
    ReplayStatus,
    ReplayStepResult,
)
from forkline_es.forkline.core.types import Event, Run, Step
from forkline_es.forkline.storage.store import SQLiteStore
from forkline_es.forkline.version import DEFAULT_SCHEMA_VERSION, SCHEMA_VERSION

__all__ = ["Executor", "ReplayContext", "ReplayEngine", "replay"]

Executor = Callable[[Step, "ReplayContext"], Step]


def _check_schema_version(run: Run) -> None:
    """Warn (never raise) about a run without a schema version or from a newer one."""
    version = run.schema_version
    if version is None:
        warnings.warn(
            f"Run '{run.run_id}' has no schema_version. This artifact may predate schema versioning. "
            f"Loading with default assumptions (schema '{DEFAULT_SCHEMA_VERSION}').",
            UserWarning,
            stacklevel=3,
        )
    elif _rank(version) > _rank(SCHEMA_VERSION):
        warnings.warn(
            f"Run '{run.run_id}' has schema_version '{version}' which is newer than the current version "
            f"'{SCHEMA_VERSION}'. Attempting best-effort replay. Upgrade Forkline for full support.",
            UserWarning,
            stacklevel=3,
        )


def _compare(original: Run, replayed: Run, replay_run_id: str, ignore_timestamps: bool) -> ReplayResult:
    """Step by step, halting at the first divergence; a replay with fewer steps that agrees
    so far is INCOMPLETE, one with more steps diverges before any comparison."""
    if len(replayed.steps) > len(original.steps):
        return ReplayResult(
            original.run_id,
            replay_run_id,
            ReplayStatus.DIVERGED,
            0,
            0,
            DivergencePoint(
                len(original.steps),
                "<beyond original>",
                None,
                "extra_steps_in_replay",
                [FieldDiff("steps.(length)", len(original.steps), len(replayed.steps))],
            ),
        )
    results, events = _walk(zip(original.steps, replayed.steps, strict=False), ignore_timestamps)
    last = results[-1] if results else None
    if last is not None and not last.matched:
        return ReplayResult(
            original.run_id,
            replay_run_id,
            ReplayStatus.DIVERGED,
            len(results),
            events,
            last.divergence,
            results,
        )
    status = ReplayStatus.INCOMPLETE if len(replayed.steps) < len(original.steps) else ReplayStatus.MATCH
    return ReplayResult(original.run_id, replay_run_id, status, len(results), events, None, results)


def _walk(
    pairs: Iterable[tuple[Step, Step]], ignore_timestamps: bool, start: int = 0
) -> tuple[list[ReplayStepResult], int]:
    """Compare (recorded, actual) step pairs; stop after the first that diverges. Returns the
    step results and the events compared (a diverging step counts those before its
    diverging event)."""
    results: list[ReplayStepResult] = []
    events = 0
    for i, (step, actual) in enumerate(pairs, start):
        matched, divergence = compare_steps(step, actual, ignore_timestamps)
        results.append(
            ReplayStepResult(i, step.name, min(len(step.events), len(actual.events)), matched, divergence)
        )
        if not matched:
            if divergence is not None and divergence.event_idx is not None:
                events += divergence.event_idx
            break
        events += len(step.events)
    return results, events


class ReplayEngine:
    """Loads runs from a ``SQLiteStore`` (``forkline.db`` by default) and compares them."""

    def __init__(self, store: SQLiteStore | None = None) -> None:
        self.store = store if store is not None else SQLiteStore()

    def load_run(self, run_id: str) -> Run | None:
        """The run, or None; warns about a missing or newer schema version."""
        run = self.store.load_run(run_id)
        if run is not None:
            _check_schema_version(run)
        return run

    def compare_runs(
        self, original_run_id: str, replay_run_id: str, ignore_timestamps: bool = True
    ) -> ReplayResult:
        """The first divergence of ``replay_run_id`` from ``original_run_id`` (ORIGINAL_NOT_FOUND
        or REPLAY_NOT_FOUND when one is not in the store)."""
        original = self.load_run(original_run_id)
        if original is None:
            return ReplayResult(original_run_id, replay_run_id, ReplayStatus.ORIGINAL_NOT_FOUND, 0, 0)
        replayed = self.load_run(replay_run_id)
        if replayed is None:
            return ReplayResult(original_run_id, replay_run_id, ReplayStatus.REPLAY_NOT_FOUND, 0, 0)
        return _compare(original, replayed, replayed.run_id, ignore_timestamps)

    def compare_loaded_runs(self, original: Run, replay: Run, ignore_timestamps: bool = True) -> ReplayResult:
        """``compare_runs`` for runs already in memory."""
        return _compare(original, replay, replay.run_id, ignore_timestamps)

    def validate_run(self, run_id: str) -> ReplayResult:
        """The run against itself: MATCH for any run the store holds."""
        return self.compare_runs(run_id, run_id)

    def replay(
        self, run_id: str, *, policy: ReplayPolicy | None = None, executor: Executor | None = None
    ) -> ReplayResult:
        """Replay a recorded run: without ``executor``, check that it holds what the policy
        needs; with one, call ``executor(step, ctx)`` for each recorded step and compare what
        it returns with the step. An executor that raises gives status ERROR.

        Raises ``MissingArtifactError`` for an unknown run, and (unless the policy is
        lenient) for a run without steps, a step without events, a ``tool_call`` without
        ``result`` or an empty ``llm_call``/``output`` event.
        """
        policy = policy or ReplayPolicy.default()
        recorded = self.load_run(run_id)
        if recorded is None:
            raise MissingArtifactError(f"Run not found: {run_id}", run_id=run_id, artifact_type="run")
        if not recorded.steps:
            if policy.fail_on_missing_artifact:
                raise MissingArtifactError(
                    f"Run has no steps: {run_id}", run_id=run_id, artifact_type="steps"
                )
            return ReplayResult(run_id, run_id, ReplayStatus.MATCH, 0, 0)
        if executor is None:
            return _validate(recorded, policy)
        return _execute(recorded, ReplayContext(recorded), executor, policy)


def _validate(run: Run, policy: ReplayPolicy) -> ReplayResult:
    strict = policy.fail_on_missing_artifact
    results: list[ReplayStepResult] = []
    for i, step in enumerate(run.steps):
        if strict and not step.events:
            raise MissingArtifactError(
                f"Step has no events: {step.name}", run_id=run.run_id, step_idx=i, artifact_type="events"
            )
        if strict and policy.compare_tool_outputs:
            for n, event in enumerate(e for e in step.events if e.type == "tool_call"):
                if "result" not in event.payload:
                    name = event.payload.get("name", "unknown")
                    raise MissingArtifactError(
                        f"Tool call missing result: {name}",
                        run_id=run.run_id,
                        step_idx=i,
                        event_idx=n,
                        artifact_type="tool_result",
                    )
        if strict and policy.compare_llm_outputs:
            for n, event in enumerate(e for e in step.events if e.type in ("llm_call", "output")):
                if not event.payload:
                    raise MissingArtifactError(
                        "LLM call missing output",
                        run_id=run.run_id,
                        step_idx=i,
                        event_idx=n,
                        artifact_type="llm_output",
                    )
        results.append(ReplayStepResult(i, step.name, len(step.events), True))
    total = sum(len(step.events) for step in run.steps)
    return ReplayResult(run.run_id, run.run_id, ReplayStatus.MATCH, len(results), total, None, results)


def _execute(run: Run, ctx: ReplayContext, executor: Executor, policy: ReplayPolicy) -> ReplayResult:
    replay_run_id = f"replay-{uuid.uuid4().hex[:8]}"
    results: list[ReplayStepResult] = []
    events = 0
    for i, step in enumerate(run.steps):
        try:
            actual = executor(step, ctx)
        except Exception as error:  # the executor's failure is the replay's outcome, as in Forkline
            return ReplayResult(
                run.run_id,
                replay_run_id,
                ReplayStatus.ERROR,
                i,
                events,
                None,
                results,
                f"Executor failed at step {i}: {error}",
            )
        (result,), counted = _walk([(step, actual)], policy.ignore_timestamps, i)
        results.append(result)
        events += counted
        if not result.matched:
            return ReplayResult(
                run.run_id,
                replay_run_id,
                ReplayStatus.DIVERGED,
                i + 1,
                events,
                result.divergence,
                results,
            )
    return ReplayResult(run.run_id, replay_run_id, ReplayStatus.MATCH, len(results), events, None, results)


class ReplayContext:
    """The recorded run as an oracle for an executor: steps, events, and a per-step cursor
    that hands out events in their recorded order."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._step_cursor = 0
        self._event_cursors: dict[int, int] = {}

    @classmethod
    def from_run(cls, run: Run) -> ReplayContext:
        return cls(run)

    @classmethod
    def from_store(cls, store: SQLiteStore, run_id: str) -> ReplayContext | None:
        run = store.load_run(run_id)
        return None if run is None else cls(run)

    def get_step(self, step_idx: int) -> Step | None:
        return self.run.steps[step_idx] if 0 <= step_idx < len(self.run.steps) else None

    def get_step_by_name(self, name: str) -> Step | None:
        """The first step of that name (names need not be unique)."""
        return next((s for s in self.run.steps if s.name == name), None)

    def get_event(self, step_idx: int, event_idx: int) -> Event | None:
        step = self.get_step(step_idx)
        if step is None or not 0 <= event_idx < len(step.events):
            return None
        return step.events[event_idx]

    def get_events_by_type(self, step_idx: int, event_type: str) -> list[Event]:
        step = self.get_step(step_idx)
        return [] if step is None else [e for e in step.events if e.type == event_type]

    def iter_events(self, step_idx: int) -> Iterator[Event]:
        step = self.get_step(step_idx)
        if step is not None:
            yield from step.events

    def peek_event(self, step_idx: int) -> Event | None:
        """The step's next event without moving its cursor; None when exhausted."""
        step = self.get_step(step_idx)
        cursor = self._event_cursors.get(step_idx, 0)
        if step is None or cursor >= len(step.events):
            return None
        return step.events[cursor]

    def next_event(self, step_idx: int, expected_type: str | None = None) -> Event | None:
        """The step's next event, moving its cursor; ``ReplayOrderError`` (cursor unmoved)
        when it is not of ``expected_type``."""
        event = self.peek_event(step_idx)
        if event is None:
            return None
        cursor = self._event_cursors.get(step_idx, 0)
        if expected_type is not None and event.type != expected_type:
            raise ReplayOrderError(
                f"Expected event type '{expected_type}' at step[{step_idx}]/event[{cursor}], "
                f"got '{event.type}'"
            )
        self._event_cursors[step_idx] = cursor + 1
        return event

    def reset_cursor(self, step_idx: int | None = None) -> None:
        """Rewind one step's cursor, or every cursor."""
        if step_idx is None:
            self._event_cursors.clear()
            self._step_cursor = 0
        else:
            self._event_cursors[step_idx] = 0


def replay(run_id: str, store: SQLiteStore | None = None) -> Run | None:
    """Forkline's older API: the run loaded from ``store`` (``forkline.db`` by default), or None."""
    return ReplayEngine(store).load_run(run_id)
