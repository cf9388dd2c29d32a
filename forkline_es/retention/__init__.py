"""Retention: a pure policy, its application one run per transaction, and the completion feed."""

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
