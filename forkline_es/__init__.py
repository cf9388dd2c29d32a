"""forkline_es: an event-sourced run-recording engine for durable executors and agent runtimes.

The recording path (``Store``, ``Run``, values, errors) is imported here; the heavier parts
(replay, testing, the Forkline compatibility layer) load on first use of their names through
the module ``__getattr__`` below, so ``import forkline_es`` stays cheap for a process that
only records (issue 22: <= 0.08 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from forkline_es._lazy import lazy_names
from forkline_es._version import __version__
from forkline_es.errors import (
    Conflict,
    DeterminismViolation,
    ForklineError,
    InvalidRequest,
    InvalidValue,
    RecordError,
    RunNotFound,
    RunNotRetained,
    StepNotFound,
    StoreDamaged,
    StoreError,
)
from forkline_es.recording import MISSING, NOT_RECORDED, Partial, Run, Sensitive
from forkline_es.records.plain import plain
from forkline_es.redaction import RedactionPolicy, RedactionRule
from forkline_es.store import Store
from forkline_es.values import (
    Duration,
    FileRef,
    Timestamp,
    canonical_json,
    decode_value,
    encode_value,
)

if TYPE_CHECKING:
    from forkline_es import testing
    from forkline_es.artifacts.manifest import Manifest
    from forkline_es.artifacts.observations import MetricSummary
    from forkline_es.artifacts.verify import Problem, VerifyReport
    from forkline_es.compat.importer import ImportReport, import_forkline
    from forkline_es.compat.recorder import RunRecorder
    from forkline_es.replay import Divergence, Replayer, RunDiff, diff_documents, diff_runs
    from forkline_es.retention.apply import RetentionReport
    from forkline_es.retention.feed import Completion, Consumer
    from forkline_es.retention.policy import RetentionPolicy

#: Public names loaded on first use: name -> the module that defines it.
_LAZY: Final[dict[str, str]] = {
    "testing": "forkline_es.testing",
    "ImportReport": "forkline_es.compat.importer",
    "import_forkline": "forkline_es.compat.importer",
    "RunRecorder": "forkline_es.compat.recorder",
    "Divergence": "forkline_es.replay",
    "Replayer": "forkline_es.replay",
    "RunDiff": "forkline_es.replay",
    "diff_documents": "forkline_es.replay",
    "diff_runs": "forkline_es.replay",
    "Manifest": "forkline_es.artifacts.manifest",
    "MetricSummary": "forkline_es.artifacts.observations",
    "Problem": "forkline_es.artifacts.verify",
    "VerifyReport": "forkline_es.artifacts.verify",
    "RetentionReport": "forkline_es.retention.apply",
    "RetentionPolicy": "forkline_es.retention.policy",
    "Completion": "forkline_es.retention.feed",
    "Consumer": "forkline_es.retention.feed",
}


__getattr__ = lazy_names(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "MISSING",
    "NOT_RECORDED",
    "Completion",
    "Conflict",
    "Consumer",
    "DeterminismViolation",
    "Divergence",
    "Duration",
    "FileRef",
    "ForklineError",
    "ImportReport",
    "InvalidRequest",
    "InvalidValue",
    "Manifest",
    "MetricSummary",
    "Partial",
    "Problem",
    "RecordError",
    "RedactionPolicy",
    "RedactionRule",
    "Replayer",
    "RetentionPolicy",
    "RetentionReport",
    "Run",
    "RunDiff",
    "RunNotFound",
    "RunNotRetained",
    "RunRecorder",
    "Sensitive",
    "StepNotFound",
    "Store",
    "StoreDamaged",
    "StoreError",
    "Timestamp",
    "VerifyReport",
    "__version__",
    "canonical_json",
    "decode_value",
    "diff_documents",
    "diff_runs",
    "encode_value",
    "import_forkline",
    "plain",
    "testing",
]
