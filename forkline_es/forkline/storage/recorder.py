"""Forkline 0.5.0's ``RunRecorder``: ``forkline_es.compat``'s recorder plus 0.5.0's additions.

Same log, same ``runs`` and ``events`` views: this subclass only adds what 0.5.0 added to
Recording v0 (``forkline_version`` in run rows, ``list_runs``, ``log_tool_call``,
``with_config``, ``load_artifact``, ``export_artifact_json``) and takes Forkline's
redaction API. Run rows carry 0.5.0's columns in its order, with its ``schema_version``
(``1.0``, which its artifacts need); the views keep the seed's (``0.1``).
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Final

from forkline_es.compat.recorder import RunRecorder as _Recorder
from forkline_es.compat.views import RUN_COLUMNS
from forkline_es.errors import InvalidRequest, shown
from forkline_es.forkline.artifact.migrate import migrate_artifact
from forkline_es.forkline.artifact.schema import RunArtifact
from forkline_es.forkline.core.redaction import create_default_policy, load_redaction_config
from forkline_es.forkline.version import FORKLINE_VERSION, SCHEMA_VERSION
from forkline_es.log.connection import Durability
from forkline_es.recording.payloads import DEFAULT_MAX_PAYLOAD_BYTES
from forkline_es.redaction import RedactionPolicy as EnginePolicy

__all__ = ["RUN_FIELDS", "RunRecorder"]

#: Forkline 0.5.0's run columns, in its order.
RUN_FIELDS: Final = (
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
)
#: Newest first by time (``started_key``: canonical times drop trailing zeros, so their text
#: order is not time order: "...45.7Z" sorts after "...45.71Z").
_LIST: Final = (
    f"SELECT {', '.join(f'r.{c}' for c in RUN_COLUMNS)} FROM runs AS r "
    "JOIN run_summary AS s ON s.run_id = r.run_id ORDER BY s.started_key DESC, r.run_id DESC"
)
_ENV: Final = ("python_version", "platform", "cwd")


class RunRecorder(_Recorder):
    """``RunRecorder(db_path="runs.db", redaction_policy=None)``, as in Forkline 0.5.0.

    ``redaction_policy=None`` is ``create_default_policy()`` (forkline_es's default rules);
    a Forkline-style ``RedactionPolicy`` of this package or an ``fe.RedactionPolicy`` both work.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] = "runs.db",
        redaction_policy: EnginePolicy | None = None,
        *,
        durability: Durability = "normal",
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        if redaction_policy is None:
            redaction_policy = create_default_policy()
        elif type(redaction_policy).__module__.split(".")[0] == "forkline":
            raise InvalidRequest(
                "redaction_policy is a RedactionPolicy of the forkline package: import RedactionPolicy, "
                "RedactionRule and RedactionAction from forkline_es.forkline.core.redaction instead"
            )
        super().__init__(
            db_path, redaction_policy, durability=durability, max_payload_bytes=max_payload_bytes
        )

    def __enter__(self) -> RunRecorder:
        return self

    @classmethod
    def with_config(cls, db_path: str = "runs.db", redact_config_path: str | None = None) -> RunRecorder:
        """A recorder whose policy comes from a redaction config file (the default without one)."""
        policy = None if redact_config_path is None else load_redaction_config(redact_config_path).to_policy()
        return cls(db_path=db_path, redaction_policy=policy)

    def log_tool_call(
        self,
        run_id: str,
        tool_name: str,
        request: dict[str, Any],
        response: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        timing: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        invocation_id: str | None = None,
    ) -> int:
        """One ``tool_call`` event in Forkline's payload layout; returns its ``event_id``."""
        payload: dict[str, Any] = {
            "tool_name": tool_name,
            "invocation_id": uuid.uuid4().hex if invocation_id is None else invocation_id,
            "request": request,
            "timing": timing or {},
        }
        if response is not None:
            payload["response"] = response
        if error is not None:
            payload["error"] = error
        if metadata:
            payload["metadata"] = metadata
        return self.log_event(run_id, "tool_call", payload)

    # -- reading ---------------------------------------------------------------------------

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run's row with 0.5.0's columns (``forkline_version`` included), or None."""
        row = super().get_run(run_id)
        return None if row is None else _forkline_row(row)

    def list_runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Every run of the store, newest first; ``limit`` > 0 keeps that many (else all, as a
        limit past every count does)."""
        if limit is not None and (type(limit) is not int):
            raise InvalidRequest(f"limit must be an integer or None, not {shown(limit)}")
        sql = _LIST if limit is None or not 0 < limit < 2**63 else f"{_LIST} LIMIT {limit}"
        with self.store.log.snapshot() as cur:
            rows = [dict(zip(RUN_COLUMNS, row, strict=True)) for row in cur.execute(sql)]
        return [_forkline_row(row) for row in rows]

    def load_artifact(self, run_id: str) -> RunArtifact | None:
        """The run as a schema 1.0 ``RunArtifact`` (its environment in ``metadata``), or None."""
        run = self.get_run(run_id)
        if run is None:
            return None
        raw: dict[str, Any] = {
            "schema_version": run["schema_version"],
            "run_id": run["run_id"],
            "entrypoint": run["entrypoint"],
            "started_at": run["started_at"],
            "ended_at": run["ended_at"],
            "status": run["status"],
            "forkline_version": run["forkline_version"],
            "events": self.get_events(run_id),
            "metadata": {name: run[name] for name in _ENV if run[name] is not None},
        }
        return RunArtifact.from_dict(migrate_artifact(raw))

    def export_artifact_json(self, run_id: str, indent: int = 2) -> str | None:
        """``load_artifact(run_id)`` as Forkline's artifact JSON, or None for an unknown run."""
        artifact = self.load_artifact(run_id)
        return None if artifact is None else artifact.to_json(indent=indent)


def _forkline_row(row: dict[str, Any]) -> dict[str, Any]:
    fields = {**row, "schema_version": SCHEMA_VERSION, "forkline_version": FORKLINE_VERSION}
    return {name: fields[name] for name in RUN_FIELDS}
