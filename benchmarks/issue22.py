"""Issue 22's rows: import time, run-handle memory, group commit, the document cache.

Each row is paired with its floor in the same run (``_harness.paired``): the machine is
shared, so read the ratio. Where wall time is noisy the trial measures CPU time
(``time.process_time`` inside a fresh interpreter for imports).

    python -m benchmarks.issue22 [--quick]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

from benchmarks._harness import Row, Trial, paired

__all__ = ["main", "run"]

_IMPORT: Final = "import time; c = time.process_time(); {what}; print(time.process_time() - c)"


def _import_cpu(what: str) -> Trial:
    """CPU seconds one fresh interpreter spends on ``what`` (``import ...``), one unit."""
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT.format(what=what)], check=True, capture_output=True, text=True
    )
    return Trial(1, float(out.stdout))


def imports(repeats: int) -> Row:
    """``import forkline_es`` against ``import apsw, msgspec`` (its two native dependencies)."""
    return paired(
        "import forkline_es (CPU time in a fresh interpreter; target <= 0.08 s)",
        lambda: _import_cpu("import forkline_es"),
        lambda: _import_cpu("import apsw, msgspec"),
        "import apsw, msgspec",
        repeats,
        unit="imports/s",
    )


def run(quick: bool, workdir: Path) -> list[Row]:
    repeats = 5 if quick else 15
    return [imports(repeats)]


def main() -> None:
    from benchmarks.run import standalone

    standalone("issue22")


if __name__ == "__main__":
    main()
