"""Replay diffing: the diff of two runs, the Replayer guard, golden baselines."""

from forkline_es.replay.align import DEFAULT_WINDOW
from forkline_es.replay.baseline import baseline_document, export_baseline, load_baseline
from forkline_es.replay.diff import CLASSES, KIND_CLASS, KINDS, Divergence, RunDiff, diff_documents, diff_runs
from forkline_es.replay.replayer import Recorded, Replayer

__all__ = [
    "CLASSES",
    "DEFAULT_WINDOW",
    "KINDS",
    "KIND_CLASS",
    "Divergence",
    "Recorded",
    "Replayer",
    "RunDiff",
    "baseline_document",
    "diff_documents",
    "diff_runs",
    "export_baseline",
    "load_baseline",
]
