"""``list_runs``: its filters checked into a ``RunQuery``, answered newest first in one snapshot.

Every filter is refused with ``invalid-request`` before anything is read when it is not
what it claims to be; the query itself is ``projections.sql.Persister.list_summaries``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Final

from forkline_es.errors import InvalidRequest, RunNotFound, shown
from forkline_es.projections.render import render_listed
from forkline_es.projections.sql import RunQuery
from forkline_es.recording.state import check_labels, check_text
from forkline_es.records.operations import Host
from forkline_es.values import is_text, time_key, utc_now
from forkline_es.values._time import parse_duration, parse_instant, utc_text
from forkline_es.vocabulary import NONTERMINAL_STATUSES, TERMINAL_OUTCOMES

__all__ = ["list_runs", "resolve_run_id", "run_query"]

#: How many runs an ambiguous prefix's refusal names.
_CANDIDATES = 5

_STATUSES = NONTERMINAL_STATUSES | TERMINAL_OUTCOMES


def _statuses(status: str | Iterable[str] | None) -> tuple[str, ...]:
    if status is None:
        return ()
    wanted = (status,) if isinstance(status, str) else tuple(status) if isinstance(status, Iterable) else None
    if not wanted or any(s not in _STATUSES for s in wanted):
        raise InvalidRequest(
            f"status is one of {', '.join(sorted(_STATUSES))} or a list of them, not {shown(status)}"
        )
    return tuple(sorted(set(wanted)))


def _instant(value: object, what: str, now: str) -> str | None:
    """A bound of the start time as a ``time_key``: an aware datetime, a timestamp text
    (ISO 8601 with an offset), or an age (``"2h"``, a timedelta) counted back from now."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise InvalidRequest(f"{what} must be an aware datetime (set tzinfo), not {shown(value)}")
        return time_key(utc_text(value))
    if isinstance(value, timedelta) or (isinstance(value, str) and value.endswith(tuple("wdhms"))):
        age = parse_duration(value, what)
        start = parse_instant(now)
        assert start is not None
        try:
            return time_key(utc_text(start - age))
        except OverflowError:
            return None  # further back than year 1: every run is within
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.utcoffset() is not None:
            return time_key(utc_text(parsed))
    raise InvalidRequest(
        f"{what} is a timestamp with its offset (like '2026-05-01T12:00:00Z'), an aware datetime, "
        f"or an age like '2h', '30m', '7d', not {shown(value)}"
    )


#: The most label filters one listing takes (a thousand made SQLite's expression tree too deep).
MAX_LABEL_FILTERS: Final = 100


def run_query(
    workflow: str | None = None,
    *,
    status: str | Iterable[str] | None = None,
    since: object = None,
    until: object = None,
    parent: str | None = None,
    labels: Mapping[str, str] | None = None,
    limit: int | None = None,
    now: str | None = None,
) -> RunQuery:
    """The checked filters (``before`` is resolved against the store by ``list_runs``)."""
    if (workflow is not None and not (workflow == "" or is_text(workflow))) or "\x00" in (workflow or ""):
        raise InvalidRequest(
            f"a workflow identity is a string of Unicode text without NUL, not {shown(workflow)}"
        )
    wanted = check_labels(labels) or {}
    if len(wanted) > MAX_LABEL_FILTERS:
        raise InvalidRequest(
            f"at most {MAX_LABEL_FILTERS} label filters in one listing, not {len(wanted)}: each is "
            "one more condition of the query"
        )
    if limit is not None and (type(limit) is not int or not 1 <= limit <= 2**63 - 1):
        raise InvalidRequest(f"limit is a whole number of runs from 1 to 2**63 - 1, not {shown(limit)}")
    at = now or utc_now()
    return RunQuery(
        workflow=workflow,
        statuses=_statuses(status),
        since=_instant(since, "since", at),
        until=_instant(until, "until", at),
        parent=check_text(parent, "parent", optional=True),
        labels=wanted,
        limit=limit,
    )


def list_runs(
    store: Host,
    workflow: str | None = None,
    *,
    before: str | None = None,
    **filters: Any,
) -> list[dict[str, Any]]:
    query = run_query(workflow, **filters)
    check_text(before, "before (a run id)", optional=True)
    persist = store.projections.persist
    with store.log.snapshot() as cur:
        if before is not None:
            key = persist.started_key(cur, before)
            if key is None:
                raise RunNotFound(
                    f"no run {before!r} to continue after (before=); it may have been evicted: "
                    "list again from the newest run"
                )
            query = replace(query, before=(key, before))
        return [render_listed(s, at) for s, at in persist.list_summaries(cur, query)]


def resolve_run_id(store: Host, given: str) -> str:
    """The run id ``given`` names: itself when a run (or an eviction record) has it, else
    the one retained run whose id starts with it. ``given`` comes back unchanged when no
    run matches, so the caller's lookup refuses it as usual; a prefix of several runs is
    ``invalid-request`` naming them."""
    check_text(given, "a run id")
    with store.log.snapshot() as cur:
        if store.log.eviction(given, cur) is not None:
            return given
        found = store.projections.persist.run_ids_from(cur, given, _CANDIDATES + 1)
    matches = [rid for rid in found if rid.startswith(given)]
    if given in matches or not matches:
        return given
    if len(matches) == 1:
        return matches[0]
    more = ", ..." if len(matches) > _CANDIDATES else ""
    raise InvalidRequest(
        f"run id prefix {given!r} is ambiguous: it starts {', '.join(matches[:_CANDIDATES])}{more}; "
        "give more of the id"
    )
