"""Where the subprocess executors live (run by path, not imported by the tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

WORKER: Final = Path(__file__).with_name("_worker.py")
