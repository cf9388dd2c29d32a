"""Retention policy and planning: pure functions from run facts and a clock to a plan.

Nothing here reads or writes the store, so the rules can be tested exhaustively and
``--dry-run`` shows exactly what ``apply`` would do. The rules (docs/retention.md):

* Only terminal runs are candidates; active, suspended and held runs are never touched
  and do not count towards ``keep_last``.
* A completed run is *selected* for eviction when any rule selects it: it is not among
  the ``keep_last`` most recently ended completed runs of its workflow, or it ended more
  than ``max_age`` before ``now``. Rules compose as a union of evictions.
* A selected run is still kept while a registered consumer has not acknowledged its
  completion, and while its parent run is retained: a call tree is evicted from the
  root down, so a retained run's ``child`` entries always name retained (or running)
  children. Parents come first in the plan, so an interrupted application never leaves
  a child evicted under a retained parent.
* A retained completed run that ended more than ``drop_payloads_after`` before ``now``
  loses the payload values of ``payload_classes`` (all classes when None).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from forkline_es.errors import InvalidRequest, shown
from forkline_es.values._time import format_duration, parse_duration
from forkline_es.vocabulary import TERMINAL_OUTCOMES

__all__ = [
    "PAYLOAD_CLASSES",
    "Kept",
    "Plan",
    "PlannedEviction",
    "PlannedReduction",
    "RetentionPolicy",
    "RunFacts",
    "before",
    "format_duration",
    "parse_duration",
    "plan_retention",
]

#: The payload classes of 002 (decisions.md, Payload slots).
PAYLOAD_CLASSES: Final = frozenset({"inputs", "arguments", "results", "events", "outputs"})


def before(now: datetime, age: timedelta) -> datetime:
    """``now - age``, or the earliest datetime when ``age`` reaches back past year 1: a
    policy of "older than 5,000 years" selects nothing, it is not an error."""
    try:
        return now - age
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True, init=False)
class RetentionPolicy:
    """What to evict and which payload values to drop; every field is optional.

    ``keep_last``: keep the N most recently ended completed runs per workflow.
    ``max_age``: evict completed runs that ended longer ago than this.
    ``drop_payloads_after``: remove payload values of completed runs ended longer ago.
    ``payload_classes``: the classes that removal applies to (default: all).
    """

    keep_last: int | None
    max_age: timedelta | None
    drop_payloads_after: timedelta | None
    payload_classes: frozenset[str] | None

    def __init__(
        self,
        keep_last: int | None = None,
        max_age: timedelta | str | None = None,
        drop_payloads_after: timedelta | str | None = None,
        payload_classes: Iterable[str] | None = None,
    ) -> None:
        if keep_last is not None and (type(keep_last) is not int or not 0 <= keep_last <= 2**63 - 1):
            raise InvalidRequest(
                f"keep_last is an integer from 0 to 2**63 - 1 or None, not {shown(keep_last)}"
            )
        classes: frozenset[str] | None = None
        if payload_classes is not None:
            if isinstance(payload_classes, str):
                payload_classes = [payload_classes]
            try:
                classes = frozenset(payload_classes)
            except TypeError:
                raise InvalidRequest(
                    f"payload_classes is a list of payload classes, not {shown(payload_classes)}"
                ) from None
            unknown = sorted(shown(c) for c in classes if c not in PAYLOAD_CLASSES)
            if unknown or not classes:
                raise InvalidRequest(
                    f"payload_classes must be a nonempty subset of {sorted(PAYLOAD_CLASSES)}, "
                    f"got unknown {', '.join(unknown) or 'nothing'}"
                )
        object.__setattr__(self, "keep_last", keep_last)
        object.__setattr__(self, "max_age", None if max_age is None else parse_duration(max_age, "max_age"))
        object.__setattr__(
            self,
            "drop_payloads_after",
            None
            if drop_payloads_after is None
            else parse_duration(drop_payloads_after, "drop_payloads_after"),
        )
        object.__setattr__(self, "payload_classes", classes)

    def describe(self) -> str:
        """Stable text of the policy, stored with every eviction and payload removal."""
        parts = []
        if self.keep_last is not None:
            parts.append(f"keep-last={self.keep_last}")
        if self.max_age is not None:
            parts.append(f"max-age={format_duration(self.max_age)}")
        if self.drop_payloads_after is not None:
            parts.append(f"drop-payloads-after={format_duration(self.drop_payloads_after)}")
            classes = "all" if self.payload_classes is None else ",".join(sorted(self.payload_classes))
            parts.append(f"classes={classes}")
        return " ".join(parts) or "keep-everything"


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What planning needs to know of one run (from its summary and conclusion row)."""

    run_id: str
    workflow: str
    status: str
    ended_at: datetime | None = None
    parent: str | None = None
    concluded_at_position: int | None = None  # log position of its run-concluded event


@dataclass(frozen=True, slots=True)
class PlannedEviction:
    run_id: str
    workflow: str
    reason: str


@dataclass(frozen=True, slots=True)
class PlannedReduction:
    run_id: str
    classes: frozenset[str] | None  # None: every class


@dataclass(frozen=True, slots=True)
class Kept:
    """A run some rule selected for eviction, kept for ``why``."""

    run_id: str
    why: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Evictions (parents before children), payload reductions, and selected-but-kept runs."""

    evict: tuple[PlannedEviction, ...] = ()
    reduce: tuple[PlannedReduction, ...] = ()
    kept: tuple[Kept, ...] = field(default=())


def _ended_key(r: RunFacts) -> tuple[datetime, int, str]:
    assert r.ended_at is not None
    return (r.ended_at, r.concluded_at_position or 0, r.run_id)


def _selected(policy: RetentionPolicy, done: Sequence[RunFacts], now: datetime) -> dict[str, str]:
    """run_id -> reason for every completed run some eviction rule selects."""
    reasons: dict[str, str] = {}
    if policy.keep_last is not None:
        by_workflow: dict[str, list[RunFacts]] = {}
        for r in done:
            by_workflow.setdefault(r.workflow, []).append(r)
        for runs in by_workflow.values():
            runs.sort(key=_ended_key, reverse=True)
            for r in runs[policy.keep_last :]:
                reasons[r.run_id] = f"not among the last {policy.keep_last} completed runs of its workflow"
    if policy.max_age is not None:
        cutoff = before(now, policy.max_age)
        for r in done:
            if r.run_id not in reasons and r.ended_at is not None and r.ended_at < cutoff:
                reasons[r.run_id] = f"ended more than {format_duration(policy.max_age)} ago"
    return reasons


def plan_retention(
    policy: RetentionPolicy,
    runs: Iterable[RunFacts],
    now: datetime,
    acknowledged_through: int | None = None,
) -> Plan:
    """The plan for ``runs`` at ``now``.

    ``acknowledged_through``: the lowest checkpoint of the registered consumers (None
    when there are none); a run whose completion lies after it is kept.
    """
    if now.tzinfo is None:
        raise InvalidRequest("now must be an aware datetime (e.g. datetime.now(UTC))")
    now = now.astimezone(UTC)
    facts: Mapping[str, RunFacts] = {r.run_id: r for r in runs}
    done = [r for r in facts.values() if r.status in TERMINAL_OUTCOMES and r.ended_at is not None]
    selected = _selected(policy, done, now)

    kept: dict[str, str] = {}
    for run_id in selected:
        position = facts[run_id].concluded_at_position
        if acknowledged_through is not None and (position is None or position > acknowledged_through):
            kept[run_id] = "its completion is not yet acknowledged by every registered consumer"

    evicted: dict[str, bool] = {}

    def evictable(run_id: str, seen: frozenset[str]) -> bool:
        if run_id in evicted:
            return evicted[run_id]
        if run_id not in selected or run_id in kept or run_id in seen:
            return False  # a parent cycle (ids are caller-supplied) keeps the whole cycle
        parent = facts[run_id].parent
        ok = parent is None or parent not in facts or evictable(parent, seen | {run_id})
        if not ok and run_id not in kept:
            kept[run_id] = f"its parent run {parent!r} is retained"
        evicted[run_id] = ok
        return ok

    order: list[str] = []
    placed: set[str] = set()

    def place(run_id: str) -> None:
        """Append ``run_id`` after its evicted ancestors (parents first)."""
        if run_id in placed:
            return
        parent = facts[run_id].parent
        if parent is not None and evicted.get(parent):
            place(parent)
        placed.add(run_id)
        order.append(run_id)

    for run_id in sorted(selected):
        evictable(run_id, frozenset())
    for run_id in sorted(r for r, ok in evicted.items() if ok):
        place(run_id)

    reduce: list[PlannedReduction] = []
    if policy.drop_payloads_after is not None:
        cutoff = before(now, policy.drop_payloads_after)
        for r in sorted(done, key=lambda r: r.run_id):
            if not evicted.get(r.run_id) and r.ended_at is not None and r.ended_at < cutoff:
                reduce.append(PlannedReduction(r.run_id, policy.payload_classes))

    return Plan(
        evict=tuple(PlannedEviction(r, facts[r].workflow, selected[r]) for r in order),
        reduce=tuple(reduce),
        kept=tuple(Kept(r, kept[r]) for r in sorted(kept)),
    )
