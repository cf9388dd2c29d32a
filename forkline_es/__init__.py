"""forkline_es: an event-sourced run-recording engine for durable executors and agent runtimes."""

from forkline_es import testing
from forkline_es._version import __version__
from forkline_es.artifacts import Manifest, MetricSummary, Problem, VerifyReport
from forkline_es.compat.importer import ImportReport, import_forkline
from forkline_es.compat.recorder import RunRecorder
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
from forkline_es.replay import Divergence, Replayer, RunDiff, diff_documents, diff_runs
from forkline_es.retention import Completion, Consumer, RetentionPolicy, RetentionReport
from forkline_es.store import Store
from forkline_es.values import (
    Duration,
    FileRef,
    Timestamp,
    canonical_json,
    decode_value,
    encode_value,
)

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
