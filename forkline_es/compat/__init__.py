"""The Forkline-compatible recorder over the engine: delegation, no logic of its own."""

from forkline_es.compat.recorder import RunRecorder

__all__ = ["RunRecorder"]
