"""The real Forkline 0.5.0 package, imported beside this test package.

pytest puts tests/ on ``sys.path``, so inside the suite ``import forkline`` is this folder.
``load()`` imports the installed ``forkline`` with tests/ left out of the path, keeps its
submodules (``forkline.core`` and the rest) registered, and gives ``forkline`` back to the
test package.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[1]
_SUBMODULES = (
    "core",
    "core.replay",
    "ci",
    "ci.commands",
    "cli",
    "storage.recorder",
    "storage.store",
    "testing",
)


def load() -> ModuleType:
    cached = sys.modules.get("_real_forkline")
    if cached is not None:
        return cached
    ours = sys.modules.pop("forkline", None)
    path = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != TESTS]
    try:
        real = importlib.import_module("forkline")
        for name in _SUBMODULES:
            importlib.import_module(f"forkline.{name}")
        assert real.FORKLINE_VERSION == "0.5.0", real.__file__
    finally:
        sys.path[:] = path
        if ours is not None:
            sys.modules["forkline"] = ours
    sys.modules["_real_forkline"] = real
    return real
