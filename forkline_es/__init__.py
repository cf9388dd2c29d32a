"""forkline_es: an event-sourced run-recording engine for durable executors and agent runtimes."""

__version__ = "0.1.0"

from forkline_es.errors import (  # noqa: E402
    Conflict,
    ForklineError,
    InvalidRequest,
    InvalidValue,
    RecordError,
    RunNotFound,
    RunNotRetained,
    StepNotFound,
    StoreError,
)
from forkline_es.recording import MISSING, NOT_RECORDED, Partial, Run, Sensitive  # noqa: E402
from forkline_es.redaction import RedactionPolicy, RedactionRule  # noqa: E402
from forkline_es.store import Store  # noqa: E402
from forkline_es.values import (  # noqa: E402
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
    "Conflict",
    "Duration",
    "FileRef",
    "ForklineError",
    "InvalidRequest",
    "InvalidValue",
    "Partial",
    "RecordError",
    "RedactionPolicy",
    "RedactionRule",
    "Run",
    "RunNotFound",
    "RunNotRetained",
    "Sensitive",
    "StepNotFound",
    "Store",
    "StoreError",
    "Timestamp",
    "__version__",
    "canonical_json",
    "decode_value",
    "encode_value",
]
