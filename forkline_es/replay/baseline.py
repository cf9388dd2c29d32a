"""Golden baselines: a run record document with what varies between runs left out.

What is left out is chosen by *position in the document structure*, never by looking at
field names inside user payload values:

- ``run.id``, ``run.started_at``, ``run.parent``, ``run.predecessor``, ``run.generation``;
- ``generation`` of every step record (``steps.*`` and ``entries[].step``) and entry;
- the times: ``x-at`` of entries, ``x-started-at``/``x-ended-at`` of step records,
  ``x-updated-at``/``x-ended-at`` of the run (``replay.entries.TIME_MEMBERS``);
- every top-level ``x-`` extension (executor annotations, host environment facts);
- ``entries[].child`` (a run id) is replaced by the child run's own baseline, recursively,
  so a baseline pins the structure of the whole call tree (dropped when the child run is
  no longer readable).

The host environment recorded at start never reaches the document, so nothing to drop.
A run with logged events (``RunRecorder.log_event``) carries them as ``x-logged``, a list
of ``{"type", "payload"}`` (``{"type", "removed": true}`` once retention removed the
payload), so the diff compares them; a baseline without the member (one exported before
they were kept) leaves them uncompared.
A baseline carries ``"x-baseline": 1`` so tools can tell it from a full export. It is
still a valid input to ``diff_documents``: the diff ignores the same things.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Final, Protocol

import msgspec

from forkline_es.compat.views import Host as ViewsHost
from forkline_es.errors import InvalidRequest, RecordError
from forkline_es.replay.diff import LOGGED_MEMBER, MAX_CHILD_DEPTH, REMOVED_PAYLOAD, Resolve, logged_events
from forkline_es.replay.entries import TIME_MEMBERS, without_varying
from forkline_es.replay.shape import check_document
from forkline_es.values import canonical_json, decode_json

__all__ = ["BASELINE_MARK", "baseline_document", "export_baseline", "live_document", "load_baseline"]

#: The member that marks a baseline document, and its format version.
BASELINE_MARK: Final = "x-baseline"

_RUN_VARIES: Final = frozenset({"id", "started_at", "parent", "predecessor", "generation"} | TIME_MEMBERS)


class Host(ViewsHost, Protocol):
    """What a baseline reads of the store (``store.Store``, above this package): the record,
    and the log for its logged events."""

    def get_run_record(self, run_id: str) -> dict[str, Any]: ...


def baseline_document(
    document: Mapping[str, Any], resolve: Resolve | None = None, *, _depth: int = 0
) -> dict[str, Any]:
    """The baseline of a run record document (see the module docstring for the rule)."""
    out: dict[str, Any] = {k: v for k, v in document.items() if not k.startswith("x-")}
    out["run"] = {k: v for k, v in (document.get("run") or {}).items() if k not in _RUN_VARIES}
    out["steps"] = {p: without_varying(s) for p, s in (document.get("steps") or {}).items()}
    entries: list[dict[str, Any]] = []
    for entry in document.get("entries") or []:
        e = {k: v for k, v in entry.items() if k != "generation" and k not in TIME_MEMBERS}
        if isinstance(e.get("step"), Mapping):
            e["step"] = without_varying(e["step"])
        if e.get("kind") == "child":
            e.pop("child", None)
            child = entry.get("child")
            if isinstance(child, Mapping):
                e["child"] = child  # already a baseline
            elif isinstance(child, str) and resolve is not None and _depth < MAX_CHILD_DEPTH:
                with suppress(RecordError):  # an evicted child: its structure is not pinned
                    e["child"] = baseline_document(resolve(child), resolve, _depth=_depth + 1)
        entries.append(e)
    out["entries"] = entries
    out[BASELINE_MARK] = 1
    return out


def _logged(store: Host, run_id: str) -> list[dict[str, Any]]:
    return [
        {"type": kind, "removed": True} if payload is REMOVED_PAYLOAD else {"type": kind, "payload": payload}
        for _, kind, payload in logged_events(store, run_id)
    ]


def live_document(store: Host, run_id: str) -> dict[str, Any]:
    """The run's record document, with its logged events as ``x-logged`` when it has any:
    what a baseline is diffed against."""
    document = dict(store.get_run_record(run_id))
    logged = _logged(store, run_id)
    if logged:
        document[LOGGED_MEMBER] = logged
    return document


def export_baseline(store: Host, run_id: str) -> bytes:
    """Canonical JSON bytes of the run's baseline, child runs read from the same store."""
    document = baseline_document(store.get_run_record(run_id), store.get_run_record)
    logged = _logged(store, run_id)
    if logged:
        document[LOGGED_MEMBER] = logged
    return canonical_json(document)


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read a baseline (or a full export) from ``path``; a bad file is an ``InvalidRequest``.

    The shape is checked here, so the refusal names the file; ``diff_documents`` checks
    its inputs again (a linear pass), since documents reach it from other places too.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InvalidRequest(
            f"cannot read baseline {str(path)!r} ({e.strerror}); record it with "
            "`forkline-es export RUN --baseline > FILE`"
        ) from None
    try:
        document = decode_json(data)  # any integer; too deep is a DecodeError
    except msgspec.DecodeError as e:
        raise InvalidRequest(f"baseline {str(path)!r} is not JSON: {e}") from None
    return dict(check_document(document, f"baseline {str(path)!r}", MAX_CHILD_DEPTH))
