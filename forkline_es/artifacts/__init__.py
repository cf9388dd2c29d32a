"""Artifacts, the reproducibility manifest, observations, and verify.

The names below load on first use (module ``__getattr__``): the recording path imports
``artifacts.recording`` and ``artifacts.sql`` and must not pay for verify and the manifest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from forkline_es._lazy import lazy_names

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


__getattr__ = lazy_names(__name__, {name: f"{__name__}.{where}" for name, where in _WHERE.items()})
