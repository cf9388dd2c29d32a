"""Run every benchmark module and print one table.

A module in ``benchmarks/`` is a benchmark when it defines
``run(quick: bool, workdir: Path) -> list[Row]`` (see ``benchmarks._harness``). Modules
whose names start with ``_`` and this runner are skipped. ``--quick`` asks each module
for a smoke-sized run (the whole quick run stays under a minute).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Final, cast

from benchmarks._harness import Row, environment, format_table, workdir

__all__ = ["discover", "main", "standalone"]

_SKIP: Final = {"run"}

RunFn = Callable[[bool, Path], list[Row]]


def discover(only: Sequence[str] = ()) -> list[tuple[str, RunFn]]:
    """(name, run) of every benchmark module, in name order; ``only`` filters by name."""
    import benchmarks

    found: list[tuple[str, RunFn]] = []
    for info in sorted(pkgutil.iter_modules(benchmarks.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in _SKIP or (only and info.name not in only):
            continue
        module: ModuleType = importlib.import_module(f"benchmarks.{info.name}")
        fn = getattr(module, "run", None)
        if callable(fn):
            found.append((info.name, cast(RunFn, fn)))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke-sized runs (under a minute)")
    parser.add_argument("--only", action="append", default=[], help="run only this module (repeatable)")
    parser.add_argument("--dir", type=Path, default=None, help="where the database files go (the disk)")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args(argv)

    modules = discover(args.only)
    if not modules:
        print("no benchmark module matched", file=sys.stderr)
        return 2
    rows: list[Row] = []
    failed: list[str] = []
    with workdir(args.dir) as where:
        env = environment(where.parent)
        for name, fn in modules:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            sub = where / name
            sub.mkdir()
            try:
                rows.extend(fn(args.quick, sub))
            except Exception:  # one broken module must not hide the others' figures
                traceback.print_exc()
                failed.append(name)
    print(format_table(rows, env, markdown=args.markdown))
    if failed:
        print(f"\nfailed: {', '.join(failed)} (traceback above)", file=sys.stderr)
        return 1
    return 0


def standalone(name: str) -> None:
    """``main()`` of a single module: the runner restricted to that module."""
    sys.exit(main(["--only", name, *sys.argv[1:]]))
