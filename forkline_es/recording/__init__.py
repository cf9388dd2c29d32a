"""The executor write path: the run's validation fold and the Run handle that appends."""

from forkline_es.recording.markers import MISSING, NOT_RECORDED, Partial, Sensitive
from forkline_es.recording.run import Run

__all__ = ["MISSING", "NOT_RECORDED", "Partial", "Run", "Sensitive"]
