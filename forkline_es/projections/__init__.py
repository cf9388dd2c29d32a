"""Read models folded from the log: pure folds, their SQL kept apart, and the runner."""

from forkline_es.projections.runner import Projections, Projector

__all__ = ["Projections", "Projector"]
