"""The completion feed: run-concluded events in log order, with named consumer checkpoints.

A consumer is a name and a checkpoint (a log position). ``completions(consumer)``
returns the runs that concluded after the checkpoint, in log-position order;
``acknowledge(consumer, position)`` moves the checkpoint forward (never back). While a
registered consumer's checkpoint lies before a run's conclusion, retention keeps the
run: eviction waits until every registered consumer has seen it. Checkpoints live in
the ``consumer`` table beside the log, so they survive restarts and projection rebuilds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final, Literal, Protocol

import msgspec

from forkline_es._logging import get_logger
from forkline_es.errors import InvalidRequest, shown
from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.recording.state import LARGEST_NUMBER, check_text
from forkline_es.values import utc_now

__all__ = [
    "Completion",
    "Consumer",
    "acknowledge",
    "acknowledged_through",
    "completions",
    "consumers",
    "register_consumer",
    "unacknowledged_by",
    "unregister_consumer",
]

_log = get_logger("forkline_es.retention")

_status: Final = msgspec.json.Decoder(dict[str, Any])


class Host(Protocol):
    """What the feed asks of the store (``store.Store``, above this package)."""

    @property
    def backend(self) -> Backend: ...

    @property
    def log(self) -> EventLog: ...


@dataclass(frozen=True, slots=True)
class Completion:
    """One run's conclusion: ``position`` is what a consumer acknowledges."""

    position: int
    run_id: str
    workflow: str
    status: str
    ended_at: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Consumer:
    name: str
    position: int
    registered_at: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_name(name: object) -> str:
    return check_text(name, "a consumer name")


def _load(cur: Cursor, name: str) -> Consumer | None:
    rows = cur.execute(
        "SELECT name, position, registered_at FROM consumer WHERE name = ?", (name,)
    ).fetchall()
    return Consumer(*rows[0]) if rows else None


def _known(cur: Cursor, name: str) -> Consumer:
    consumer = _load(cur, name)
    if consumer is None:
        raise InvalidRequest(
            f"no consumer {name!r}; register it first with store.register_consumer({name!r})"
        )
    return consumer


def register_consumer(store: Host, name: str, since: Literal["start", "now"] = "start") -> Consumer:
    """Register ``name`` (idempotent: an existing consumer keeps its checkpoint).

    ``since="start"`` sees every retained completion; ``"now"`` only later ones.
    """
    _check_name(name)
    if since not in ("start", "now"):
        raise InvalidRequest(f"since is 'start' or 'now', not {shown(since)}")
    with store.log.transaction("register consumer") as cur:
        existing = _load(cur, name)
        if existing is not None:
            return existing
        position = 0
        if since == "now":
            position = store.backend.horizon(cur)
        consumer = Consumer(name, position, utc_now())
        # Another host may register the same name between the look above and this insert
        # (PostgreSQL's transactions do not lock the table as BEGIN IMMEDIATE does): its
        # row wins, as an existing consumer's does.
        added = cur.execute(
            "INSERT INTO consumer (name, position, registered_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO NOTHING RETURNING name",
            (consumer.name, consumer.position, consumer.registered_at),
        ).fetchall()
        if not added:
            return _known(cur, name)
    _log.info("consumer_registered", consumer=name, position=consumer.position)
    return consumer


def unregister_consumer(store: Host, name: str) -> bool:
    """Drop a consumer and the protection it gave; True when it existed."""
    _check_name(name)
    with store.log.transaction("unregister consumer") as cur:
        dropped = bool(cur.execute("DELETE FROM consumer WHERE name = ? RETURNING name", (name,)).fetchall())
    if dropped:
        _log.info("consumer_unregistered", consumer=name)
    return dropped


def consumers(store: Host) -> list[Consumer]:
    with store.log.snapshot() as cur:
        return [
            Consumer(*r)
            for r in cur.execute("SELECT name, position, registered_at FROM consumer ORDER BY name")
        ]


def completions(
    store: Host, consumer: str | None = None, after: int = 0, limit: int = 100
) -> list[Completion]:
    """Retained runs that concluded after ``consumer``'s checkpoint (or ``after``), oldest first."""
    if type(limit) is not int or not 1 <= limit <= LARGEST_NUMBER:
        raise InvalidRequest(f"limit is an integer from 1 to 2**63 - 1, not {shown(limit)}")
    if type(after) is not int or not 0 <= after <= LARGEST_NUMBER:
        raise InvalidRequest(f"after is a log position from 0 to 2**63 - 1, not {shown(after)}")
    with store.log.snapshot(following=True) as cur:
        if consumer is not None:
            after = _known(cur, _check_name(consumer)).position
        rows = cur.execute(
            "SELECT l.position, l.run_id, coalesce(s.workflow, ''), l.body, l.at FROM log AS l "
            "LEFT JOIN run_summary AS s ON s.run_id = l.run_id "
            "WHERE l.kind = 'run-concluded' AND l.position > ? AND l.position <= ? "
            "ORDER BY l.position LIMIT ?",
            (after, store.backend.horizon(cur), limit),
        ).fetchall()
    return [Completion(p, r, w, str(_status.decode(b)["status"]), at) for p, r, w, b, at in rows]


def acknowledge(store: Host, consumer: str, position: int) -> Consumer:
    """Move ``consumer``'s checkpoint to ``position``; an older position changes nothing."""
    _check_name(consumer)
    if type(position) is not int or not 0 <= position <= LARGEST_NUMBER:
        raise InvalidRequest(f"position is a log position from 0 to 2**63 - 1, not {shown(position)}")
    with store.log.transaction("acknowledge") as cur:
        current = _known(cur, consumer)
        top = store.backend.horizon(cur)
        if position > top:
            raise InvalidRequest(
                f"position {position} is beyond the end of the log ({top}); "
                "acknowledge a position that completions() returned"
            )
        if position <= current.position:
            return current
        # Only forward, decided on the row itself: another host's later checkpoint may have
        # committed since ``current`` was read (READ COMMITTED re-reads the row it waited for).
        moved = cur.execute(
            "UPDATE consumer SET position = ? WHERE name = ? AND position < ? RETURNING name",
            (position, consumer, position),
        ).fetchall()
        if not moved:
            return _known(cur, consumer)
    _log.info("acknowledged", consumer=consumer, position=position)
    return Consumer(consumer, position, current.registered_at)


def acknowledged_through(cur: Cursor) -> int | None:
    """The lowest checkpoint of the registered consumers; None when there are none."""
    value = cur.execute("SELECT min(position) FROM consumer").fetchall()[0][0]
    return None if value is None else int(value)


def unacknowledged_by(cur: Cursor, concluded_at: int) -> list[str]:
    """The consumers that have not yet acknowledged a conclusion at ``concluded_at``."""
    sql = "SELECT name FROM consumer WHERE position < ? ORDER BY name"
    return [n for (n,) in cur.execute(sql, (concluded_at,))]
