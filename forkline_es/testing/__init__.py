"""``fe.testing``: helpers for users' test suites.

Imported by ``import forkline_es``, so nothing here may import hypothesis; the
hypothesis strategies live in ``forkline_es.testing.histories``, imported explicitly.
"""

from forkline_es.testing.baseline import assert_matches_baseline, rerecord_command, write_baseline

__all__ = ["assert_matches_baseline", "rerecord_command", "write_baseline"]
