"""The Forkline-compatible recorder over the engine, and the importer of Forkline's runs.db."""

from forkline_es.compat.importer import ImportReport, import_forkline
from forkline_es.compat.recorder import RunRecorder

__all__ = ["ImportReport", "RunRecorder", "import_forkline"]
