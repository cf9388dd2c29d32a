"""Forkline's step store (``SQLiteStore``) as runs of the engine.

The mapping is ``compat.steps``': a Forkline run is a run of workflow ``forkline-steps``;
step ``idx`` is the step at path ``"<idx>"`` begun with arguments ``{"name": name}``; an
event is a ``forkline-logged`` event with ``step`` set, its payload in slot ``payload``. So
the step store's runs get documents, diff and verify like any other (retention once
concluded through the engine), and ``load_run`` is one snapshot read of the log.
Payloads are stored as given (Forkline's step store does not redact); steps Forkline would
accept twice or events for steps never started are refused with a coded error and write
nothing (docs/forkline.md).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final

from forkline_es.compat.recorder import RunRecorder as _Recorder
from forkline_es.compat.recorder import logged_event
from forkline_es.compat.steps import STEP_STORE_WORKFLOW, step_arguments, step_path
from forkline_es.errors import Conflict
from forkline_es.forkline.artifact.migrate import migrate_artifact
from forkline_es.forkline.artifact.schema import RunArtifact
from forkline_es.forkline.core.types import Event, Run, Step
from forkline_es.forkline.version import FORKLINE_VERSION, SCHEMA_VERSION
from forkline_es.log.connection import Durability
from forkline_es.log.events import ONE_OFF_KEY
from forkline_es.log.schema import payload_ids
from forkline_es.recording.run import Run as EngineRun
from forkline_es.recording.state import check_text
from forkline_es.redaction import RedactionPolicy
from forkline_es.values import decode_json, decode_value

__all__ = ["STEP_STORE_WORKFLOW", "SQLiteStore"]

_START_KEY: Final = "forkline-steps:start"
_INDEX: Final = re.compile(r"0|[1-9][0-9]*\Z")
_ROW: Final = "SELECT position, at FROM log WHERE run_id = ? AND {} = ?"
_RUN_ROWS: Final = f"""
SELECT l.position, l.kind, l.at, l.body,
    (SELECT p.value FROM payload AS p WHERE p.id {payload_ids("l.position")}
        AND +p.slot = CASE l.kind WHEN 'step-begun' THEN 'arguments' ELSE 'payload' END)
FROM log AS l
WHERE l.run_id = ? AND l.kind IN ('run-started', 'step-begun', 'step-ended', 'forkline-logged')
ORDER BY l.seq
"""


class SQLiteStore:
    """``SQLiteStore(path="forkline.db")``: runs of numbered steps, each with its events."""

    def __init__(
        self, path: str | os.PathLike[str] = "forkline.db", *, durability: Durability = "normal"
    ) -> None:
        self.path = os.fspath(path)
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        # The compat recorder's handle cache and write-race retry, without its redaction.
        self._recorder = _Recorder(self.path, RedactionPolicy.none(), durability=durability)
        self.store = self._recorder.store
        self._keys = (f"{ONE_OFF_KEY}steps-{uuid.uuid4().hex[:12]}:{n}" for n in range(1, 1 << 62))

    def close(self) -> None:
        self._recorder.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore(path={self.path!r})"

    # -- writing ---------------------------------------------------------------------------

    def start_run(self, run_id: str) -> Run:
        """Start run ``run_id``. Starting it again from the same environment returns it as it
        was started; an id another kind of run holds is a ``conflict``."""
        check_text(run_id, "run_id")
        run = self.store.start_run(workflow=STEP_STORE_WORKFLOW, run_id=run_id, key=_START_KEY)
        self._recorder._remember(run)
        _, created_at = self._row(run_id, "seq", 1)
        return Run(
            run_id=run_id,
            created_at=created_at,
            steps=[],
            forkline_version=FORKLINE_VERSION,
            schema_version=SCHEMA_VERSION,
        )

    def start_step(self, run_id: str, idx: int, name: str) -> Step:
        """Begin step ``idx`` (a new index, or a repeat of the same call) named ``name``."""
        path = step_path(idx)
        check_text(name, "name")
        _, entry = self._recorder._append(
            run_id, lambda r: r.begin_step(path, arguments=step_arguments(name))
        )
        step_id, started_at = self._row(run_id, "entry", entry)
        return Step(
            step_id=step_id,
            run_id=run_id,
            idx=idx,
            name=name,
            started_at=started_at,
            ended_at=None,
            events=[],
        )

    def end_step(self, run_id: str, idx: int, *, outcome: str = "succeeded") -> None:
        """End step ``idx``; ``outcome`` (the engine's step outcome) is what the ``Tracer`` adds."""
        path = step_path(idx)
        self._recorder._append(run_id, lambda r: r.end_step(path, outcome))

    def append_event(self, run_id: str, step_idx: int, type: str, payload_dict: Any) -> Event:
        """Append an event to a started step; its payload as canonical JSON, unredacted."""
        path = step_path(step_idx)
        event, payloads = logged_event(
            self._recorder.redaction_policy, type, payload_dict, self.store.max_payload_bytes, step=path
        )
        key = next(self._keys)

        def append(run: EngineRun) -> int:
            return run._append_event(event, key, payloads, check=_step_begun(run, path))

        _, seq = self._recorder._append(run_id, append)
        position, at = self._row(run_id, "seq", seq)
        return Event(
            event_id=position,
            run_id=run_id,
            step_idx=step_idx,
            type=type,
            created_at=at,
            payload=payload_dict,
        )

    def _row(self, run_id: str, column: str, value: int) -> tuple[int, str]:
        rows = self.store.backend.cursor().execute(_ROW.format(column), (run_id, value)).fetchall()
        return int(rows[0][0]), str(rows[0][1])

    # -- reading ---------------------------------------------------------------------------

    def load_run(self, run_id: str) -> Run | None:
        """The run with its steps (by ``idx``) and their events, in one snapshot; None if unknown.

        Only steps at index paths are steps here: a run recorded through another API shows
        the ones it has. An event whose payload retention removed has payload None.
        """
        if type(run_id) is not str:
            return None
        with self.store.log.snapshot() as cur:
            rows = list(cur.execute(_RUN_ROWS, (run_id,)))
        if not rows or rows[0][1] != "run-started":
            return None
        created_at = str(rows[0][2])
        begun: dict[str, tuple[int, str, str]] = {}
        ended: dict[str, str] = {}
        events: dict[str, list[Event]] = {}
        for position, kind, at, body, value in rows[1:]:
            fields = json.loads(body)
            path = fields.get("step") if kind == "forkline-logged" else fields.get("path")
            if not isinstance(path, str) or _INDEX.match(path) is None:
                continue
            if kind == "step-begun":
                begun[path] = (position, at, _name(value))
                ended.pop(path, None)
                events[path] = []
            elif kind == "step-ended":
                ended[path] = at
            else:
                payload = None if value is None else decode_json(value)
                events.setdefault(path, []).append(
                    Event(
                        event_id=position,
                        run_id=run_id,
                        step_idx=int(path),
                        type=fields["event_type"],
                        created_at=at,
                        payload=payload,
                    )
                )
        steps = [
            Step(
                step_id=position,
                run_id=run_id,
                idx=int(path),
                name=name,
                started_at=at,
                ended_at=ended.get(path),
                events=events.get(path, []),
            )
            for path, (position, at, name) in sorted(begun.items(), key=lambda item: int(item[0]))
        ]
        return Run(
            run_id=run_id,
            created_at=created_at,
            steps=steps,
            forkline_version=FORKLINE_VERSION,
            schema_version=SCHEMA_VERSION,
        )

    def load_artifact(self, run_id: str) -> RunArtifact | None:
        """The run as Forkline's artifact: all steps' events in one list; entrypoint ``""`` as in Forkline."""
        run = self.load_run(run_id)
        if run is None:
            return None
        events = [
            {
                "event_id": e.event_id or 0,
                "run_id": e.run_id,
                "ts": e.created_at,
                "type": e.type,
                "payload": e.payload,
            }
            for step in run.steps
            for e in step.events
        ]
        raw = {
            "schema_version": run.schema_version,
            "run_id": run.run_id,
            "entrypoint": "",
            "started_at": run.created_at,
            "forkline_version": run.forkline_version,
            "events": events,
        }
        return RunArtifact.from_dict(migrate_artifact(raw))

    def export_artifact_json(self, run_id: str, indent: int = 2) -> str | None:
        artifact = self.load_artifact(run_id)
        return None if artifact is None else artifact.to_json(indent=indent)


def _name(value: str | None) -> str:
    """The step name from the step-begun arguments (empty once removed or withheld)."""
    if value is None:
        return ""
    arguments = decode_value(decode_json(value))
    name = arguments.get("name") if isinstance(arguments, dict) else None
    return name if isinstance(name, str) else ""


def _step_begun(run: EngineRun, path: str) -> Callable[[], None]:
    def check() -> None:
        if path not in run._state.path_entries:
            raise Conflict(f"run {run.id!r} has no step {path}: start_step(run_id, {path}, name) first")

    return check
