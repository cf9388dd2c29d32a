"""The benchmark harness: paired measurements, medians with spread, one table.

A benchmark module plugs in by defining ``run(quick: bool, workdir: Path) -> list[Row]``
(and usually ``main()`` for running it alone). It measures with :func:`paired`, which
alternates our trial and the peer's trial so that both see the same disk, the same page
cache and the same background noise, and computes the ratio pair by pair within the run:
a ratio of two medians taken minutes apart would mostly measure the machine's drift.

A trial is a callable that does its own set-up, times only the work, and returns a
:class:`Trial` (units done, seconds taken).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Final

import apsw

__all__ = [
    "DURABILITY_NOTE",
    "Row",
    "Timer",
    "Trial",
    "commit_each",
    "environment",
    "format_table",
    "paired",
    "peak_rss_kb",
    "single",
    "spread",
    "workdir",
]

#: What "normal" means on both sides of every comparison unless a row says otherwise.
DURABILITY_NOTE: Final = "WAL + synchronous=NORMAL on both sides unless the row says FULL"


@dataclass(frozen=True, slots=True)
class Trial:
    """One timed repetition: ``count`` units of work in ``seconds``."""

    count: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("inf")


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table.

    ``ours``/``theirs`` are medians of the repetitions (rates: higher is better);
    ``ratio`` is the median of the per-pair ratios ours/theirs; ``spread`` and
    ``theirs_spread`` are (max - min) / median over the repetitions, as a fraction.
    """

    workload: str
    ours: float
    theirs: float | None
    peer: str | None
    unit: str
    spread: float
    theirs_spread: float | None = None
    ratio: float | None = None
    durability: str = "normal"
    repeats: int = 1
    target: float | None = None  # the ratio the issue asks for, if any
    note: str = ""

    @property
    def meets_target(self) -> bool | None:
        if self.target is None or self.ratio is None:
            return None
        return self.ratio >= self.target


class Timer:
    """``with Timer() as t: ...`` then ``t.seconds``: perf_counter around the work only."""

    seconds: float = 0.0

    def __enter__(self) -> Timer:
        self._start = perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = perf_counter() - self._start


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: how far apart the repetitions of one side were."""
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else 0.0


def commit_each(conn: apsw.Connection, sql: str, values: Sequence[Sequence[object]]) -> Trial:
    """Run ``sql`` once per value, each in its own ``BEGIN IMMEDIATE ... COMMIT``, then close
    ``conn``: the raw single-insert side of a comparison, values built before the clock."""
    cur = conn.cursor()
    with Timer() as t:
        for v in values:
            cur.execute("BEGIN IMMEDIATE")
            cur.execute(sql, v)
            cur.execute("COMMIT")
    conn.close()
    return Trial(len(values), t.seconds)


def paired(
    workload: str,
    ours: Callable[[], Trial],
    theirs: Callable[[], Trial],
    peer: str,
    repeats: int,
    *,
    unit: str = "events/s",
    durability: str = "normal",
    target: float | None = None,
    note: str = "",
) -> Row:
    """Run ``theirs`` and ``ours`` ``repeats`` times each, interleaved; one row of medians."""
    mine: list[float] = []
    peers: list[float] = []
    ratios: list[float] = []
    for i in range(repeats):
        if i % 2:  # alternate who goes first, so neither side always meets a warmer machine
            o = ours().rate
            t = theirs().rate
        else:
            t = theirs().rate
            o = ours().rate
        peers.append(t)
        mine.append(o)
        ratios.append(o / t if t else float("inf"))
    return Row(
        workload=workload,
        ours=statistics.median(mine),
        theirs=statistics.median(peers),
        peer=peer,
        unit=unit,
        spread=spread(mine),
        theirs_spread=spread(peers),
        ratio=statistics.median(ratios),
        durability=durability,
        repeats=repeats,
        target=target,
        note=note,
    )


def single(
    workload: str,
    ours: Callable[[], Trial],
    repeats: int,
    *,
    unit: str = "events/s",
    durability: str = "normal",
    note: str = "",
) -> Row:
    """A row with no peer (a figure of our own, e.g. the executor path)."""
    mine = [ours().rate for _ in range(repeats)]
    return Row(
        workload=workload,
        ours=statistics.median(mine),
        theirs=None,
        peer=None,
        unit=unit,
        spread=spread(mine),
        durability=durability,
        repeats=repeats,
        note=note,
    )


def peak_rss_kb() -> int:
    """This process's own peak resident set size, in KB.

    ``/proc/self/status`` VmHWM is the high-water mark of the current address space, so a
    subprocess reports its own peak. ``getrusage(...).ru_maxrss`` is only the fallback:
    on Linux it survives ``execve``, so a child started by a large parent (the benchmark
    runner after recording a million events) reports the parent's peak instead.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


@contextmanager
def workdir(base: Path | None = None) -> Iterator[Path]:
    """A fresh directory for database files, removed afterwards (same disk for every side)."""
    with tempfile.TemporaryDirectory(prefix="fe-bench-", dir=base) as d:
        yield Path(d)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _filesystem(path: Path) -> str:
    """The filesystem type that holds ``path`` (from /proc/mounts), or 'unknown'."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and str(path).startswith(parts[1]) and len(parts[1]) > len(best):
                    best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def environment(where: Path) -> dict[str, str]:
    """The facts a figure is meaningless without."""
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{_cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "disk": f"{where} ({_filesystem(where.resolve())})",
        "durability": DURABILITY_NOTE,
    }


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def format_table(rows: Sequence[Row], env: dict[str, str], markdown: bool = False) -> str:
    """The header and one line per row; ``markdown`` for docs/benchmarks.md."""
    head = ["workload", "ours", "peer", "theirs", "ratio", "target", "spread ours/theirs", "unit", "sync"]
    body = []
    for r in rows:
        mark = {True: " ok", False: " MISSED", None: ""}[r.meets_target]
        spread = f"{r.spread:.0%}" + (f" / {r.theirs_spread:.0%}" if r.theirs_spread is not None else "")
        body.append(
            [
                r.workload + (f" ({r.note})" if r.note else ""),
                _num(r.ours),
                r.peer or "-",
                _num(r.theirs),
                f"{r.ratio:.2f}" if r.ratio is not None else "-",
                (f">= {r.target:.1f}" + mark) if r.target is not None else "-",
                spread,
                r.unit,
                r.durability,
            ]
        )
    lines = [f"{k}: {v}" for k, v in env.items()]
    if markdown:
        lines = [f"- {line}" for line in lines] + [""]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join("---" for _ in head) + "|")
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    right = {1, 3, 4}
    lines.append("")

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    lines.append(fmt(head))
    lines.append("  ".join("-" * w for w in widths))
    lines += [fmt(cells) for cells in body]
    return "\n".join(lines)
