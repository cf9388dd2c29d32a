"""Artifacts, the reproducibility manifest, observations, and verify.

The names below load on first use (module ``__getattr__``): the recording path imports
``artifacts.recording`` and ``artifacts.sql`` and must not pay for verify and the manifest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from forkline_es.artifacts.manifest import REQUIRED_FACTS, Manifest
    from forkline_es.artifacts.observations import MetricSummary
    from forkline_es.artifacts.store import ArtifactFiles
    from forkline_es.artifacts.verify import PROBLEM_KINDS, Problem, VerifyReport

__all__ = [
    "PROBLEM_KINDS",
    "REQUIRED_FACTS",
    "ArtifactFiles",
    "Manifest",
    "MetricSummary",
    "Problem",
    "VerifyReport",
]

_WHERE: Final[dict[str, str]] = {
    "PROBLEM_KINDS": "verify",
    "REQUIRED_FACTS": "manifest",
    "ArtifactFiles": "store",
    "Manifest": "manifest",
    "MetricSummary": "observations",
    "Problem": "verify",
    "VerifyReport": "verify",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'forkline_es.artifacts' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"forkline_es.artifacts.{where}"), name)
    globals()[name] = value
    return value
