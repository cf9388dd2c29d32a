"""Forkline 0.5.0's version constants, so code that reads or stamps them keeps working.

``FORKLINE_VERSION`` is the Forkline API this layer reproduces (not forkline_es's own
version, which every run's environment snapshot records). ``SCHEMA_VERSION`` is the artifact
schema its exports carry.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_FORKLINE_VERSION",
    "DEFAULT_SCHEMA_VERSION",
    "FORKLINE_VERSION",
    "LEGACY_SCHEMA_VERSION",
    "SCHEMA_VERSION",
]

FORKLINE_VERSION: Final = "0.5.0"
SCHEMA_VERSION: Final = "1.0"
#: The schema of artifacts written before Forkline stamped versions.
LEGACY_SCHEMA_VERSION: Final = "recording_v0"
#: What Forkline reports for a run stored without version columns.
DEFAULT_FORKLINE_VERSION: Final = "0.1.0"
DEFAULT_SCHEMA_VERSION: Final = "recording_v0"
