"""Retention: a pure policy, its application one run per transaction, and the completion feed.

The names below load on first use (module ``__getattr__``), so that ``import forkline_es``
does not import the application of retention until a process applies it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

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


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'forkline_es.retention' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"forkline_es.retention.{where}"), name)
    globals()[name] = value
    return value
