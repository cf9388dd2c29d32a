"""The demo: a small durable executor and a sample workflow recorded with it."""

from forkline_es.demo.executor import ActionFailed, Ambiguous, Executor, Held
from forkline_es.demo.workflow import demo_ids, record_demo, report, sample_actions

__all__ = [
    "ActionFailed",
    "Ambiguous",
    "Executor",
    "Held",
    "demo_ids",
    "record_demo",
    "report",
    "sample_actions",
]
