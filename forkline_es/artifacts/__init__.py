"""Artifacts, the reproducibility manifest, observations, and verify."""

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
