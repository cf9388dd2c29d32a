"""The additional projectors every store folds beside the core read models.

A capability with its own read model (artifacts, observations, Forkline views) adds one
line here; the runner gives each the append's cursor and every event.
"""

from __future__ import annotations

from forkline_es.projections.runner import Projector

__all__ = ["extra_projectors"]


def extra_projectors() -> list[Projector]:
    """Fresh instances of every additional projector, in the order they fold."""
    # Imported here: compat imports the store, which imports this module.
    from forkline_es.artifacts.projectors import projectors as artifact_projectors
    from forkline_es.compat.views import ForklineViews

    return [ForklineViews(), *artifact_projectors()]
