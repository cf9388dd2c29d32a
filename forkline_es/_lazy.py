"""Public names that load on first use, so ``import forkline_es`` stays cheap.

A package gives ``lazy_names`` a map from each such name to the module that defines it and
makes the result its module ``__getattr__``; type checkers see the names through the
package's ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` is imported from ``where[name]``
    (a module's full name; a name that is the module's own last part is the module itself)
    once, then cached in the package's namespace."""

    def __getattr__(name: str) -> Any:
        module_name = where.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if module_name.rpartition(".")[2] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
