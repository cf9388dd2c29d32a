"""How Forkline's step store (``forkline.db``) maps onto runs of the engine.

Shared by ``forkline_es.forkline``'s ``SQLiteStore``, which records such runs, and the
importer, which brings an existing ``forkline.db`` along: both must write the same thing.
A step-store run is a run of workflow ``STEP_STORE_WORKFLOW``; step ``idx`` is the step at
path ``"<idx>"`` begun with arguments ``{"name": name}``; an event is a ``forkline-logged``
event whose ``step`` is that path.
"""

from __future__ import annotations

from typing import Any, Final

from forkline_es.errors import InvalidRequest, shown
from forkline_es.log.foreign import ForeignFile

__all__ = [
    "STEP_COLUMNS",
    "STEP_EVENT_COLUMNS",
    "STEP_STORE_WORKFLOW",
    "has_step_store_tables",
    "step_arguments",
    "step_path",
]

STEP_STORE_WORKFLOW: Final = "forkline-steps"
#: Forkline 0.5.0's step-store columns, as the importer reads them.
STEP_COLUMNS: Final = ("step_id", "run_id", "idx", "name", "started_at", "ended_at")
STEP_EVENT_COLUMNS: Final = ("event_id", "run_id", "step_idx", "type", "payload_json", "created_at")
_RUN_COLUMNS: Final = ("run_id", "created_at")


def step_path(idx: object) -> str:
    """The engine step path of Forkline step ``idx`` (a zero-based index segment)."""
    if type(idx) is not int or idx < 0:
        raise InvalidRequest(f"a step index is an integer >= 0, not {shown(idx)}")
    return str(idx)


def step_arguments(name: str) -> dict[str, Any]:
    """The arguments a step-store step is begun with: its name."""
    return {"name": name}


def has_step_store_tables(file: ForeignFile) -> bool:
    """Whether a database holds Forkline's step-store tables (``SQLiteStore``'s schema)."""
    wanted = {"runs": _RUN_COLUMNS, "steps": STEP_COLUMNS, "events": STEP_EVENT_COLUMNS}
    return all(set(columns) <= (file.columns(table) or set()) for table, columns in wanted.items())
