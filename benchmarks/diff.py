"""``diff_runs`` on two 100,000-entry runs that diverge only at their very end.

Both runs are recorded through the ordinary Run API: a start, 24,999 action steps of four
entries each (begin with arguments, invoke, result with a small result, end), one last
begin/end step whose outcome differs between the runs, and the conclusion: 100,000
entries each. The timed work is the library call ``fe.diff_runs(store, a, b)``, which
reads both runs' canonical record bytes from the projections (default durability: WAL,
``synchronous=NORMAL``; diff only reads), decodes what the alignment needs, and compares
every matched pair. Each trial runs in a fresh process so its peak RSS (VmHWM) is the
diff's own (reading, decoding, aligning), not the recording's. A second row times the
part of it that is reading: ``export_run_record`` of both runs.

    python -m benchmarks.diff [--quick]
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Final

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, peak_rss_kb, single

__all__ = ["build", "main", "measure", "run"]

FULL: Final = 24_999  # action steps: 4 * 24,999 + start + last begin/end + conclude = 100,000
QUICK: Final = 1_249  # 5,000 entries
ART: Final = "sha256:" + "ab" * 32


def build(store: fe.Store, steps: int, last_outcome: str) -> str:
    """One run of ``4 * steps + 4`` entries; only the last step's outcome is a parameter."""
    run = store.start_run("bench/diff", inputs={"n": steps})
    for i in range(steps):
        path = f"s{i}"
        run.begin_step(path, arguments={"i": i})
        run.invoke(path, 1, "http.get", ART, "ambiguous", arguments={"i": i})
        run.result(path, 1, "succeeded", result={"ok": True, "i": i})
        run.end_step(path, "succeeded")
    run.begin_step("last")
    run.end_step("last", last_outcome)
    run.conclude("succeeded")
    return run.id


def measure(db: str, a: str, b: str) -> dict[str, float]:
    """Run in a fresh process: seconds of one diff_runs call and the process's peak RSS."""
    with fe.Store.open(db) as store:
        with Timer() as t:
            diff = fe.diff_runs(store, a, b)
        rss_kb = peak_rss_kb()
        with Timer() as core:
            store.export_run_record(a)
            store.export_run_record(b)
    first = diff.first
    assert first is not None and first.path == "last" and len(diff.divergences) == 1, diff.divergences
    entries = float(first.seq_a or 0)
    return {"seconds": t.seconds, "core": core.seconds, "rss_mb": rss_kb / 1024, "entries": entries}


def _trial(db: Path, a: str, b: str, peaks: list[float], cores: list[Trial]) -> Trial:
    code = "import json, sys; from benchmarks.diff import measure; print(json.dumps(measure(*sys.argv[1:])))"
    out = subprocess.run(
        [sys.executable, "-c", code, str(db), a, b],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout
    result = json.loads(out)
    peaks.append(result["rss_mb"])
    cores.append(Trial(int(result["entries"]) * 2, result["core"]))
    return Trial(int(result["entries"]) * 2, result["seconds"])


def run(quick: bool, workdir: Path) -> list[Row]:
    steps = QUICK if quick else FULL
    db = workdir / "diff.db"
    with Timer() as setup, fe.Store.open(db) as store:
        a = build(store, steps, "succeeded")
        b = build(store, steps, "failed")
        entries = len(store.get_run_record(a)["entries"])
    peaks: list[float] = []
    cores: list[Trial] = []
    row = single(
        f"diff_runs, two {entries:,}-entry runs diverging at the last step",
        lambda: _trial(db, a, b, peaks, cores),
        2 if quick else 3,
        unit="entries/s",
    )
    seconds = 2 * entries / row.ours
    note = f"{seconds:.1f} s; peak RSS {max(peaks):.0f} MB (fresh process); setup {setup.seconds:.0f} s"
    core = iter(cores)
    align_only = single(
        "  of which reading both records (export_run_record bytes)",
        lambda: next(core),
        len(cores),
        unit="entries/s",
    )
    core_s = 2 * entries / align_only.ours
    return [replace(row, note=note), replace(align_only, note=f"{core_s:.1f} s")]


def main() -> None:
    from benchmarks.run import standalone

    standalone("diff")


if __name__ == "__main__":
    main()
