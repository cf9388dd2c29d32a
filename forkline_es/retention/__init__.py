"""Retention: a pure policy, its application one run per transaction, and the completion feed.

The names below load on first use (module ``__getattr__``), so that ``import forkline_es``
does not import the application of retention until a process applies it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from forkline_es._lazy import lazy_names

if TYPE_CHECKING:
    from forkline_es.retention.apply import EvictedRun, GcReport, ReducedRun, RetentionReport
    from forkline_es.retention.feed import Completion, Consumer
    from forkline_es.retention.policy import Kept, Plan, RetentionPolicy, RunFacts, plan_retention

__all__ = [
    "Completion",
    "Consumer",
    "EvictedRun",
    "GcReport",
    "Kept",
    "Plan",
    "ReducedRun",
    "RetentionPolicy",
    "RetentionReport",
    "RunFacts",
    "plan_retention",
]

_WHERE: Final[dict[str, str]] = {
    "Completion": "feed",
    "Consumer": "feed",
    "EvictedRun": "apply",
    "GcReport": "apply",
    "Kept": "policy",
    "Plan": "policy",
    "ReducedRun": "apply",
    "RetentionPolicy": "policy",
    "RetentionReport": "apply",
    "RunFacts": "policy",
    "plan_retention": "policy",
}


__getattr__ = lazy_names(__name__, {name: f"{__name__}.{where}" for name, where in _WHERE.items()})
