"""``forkline.storage``: the run recorder and the step store, both on the engine's log."""

from forkline_es.forkline.storage.recorder import RunRecorder
from forkline_es.forkline.storage.store import SQLiteStore

__all__ = ["RunRecorder", "SQLiteStore"]
