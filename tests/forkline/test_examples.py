"""The seed's ``minimal.py`` runs on Forkline 0.5.0's recorder with only its import changed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

MINIMAL = Path(__file__).parents[1] / "compat" / "examples" / "minimal.py"


def test_minimal_py_with_the_forkline_import(tmp_path: Path) -> None:
    source = MINIMAL.read_text(encoding="utf-8")
    assert source.startswith("from forkline_es import RunRecorder\n")
    script = tmp_path / "minimal.py"
    script.write_text(
        source.replace(
            "from forkline_es import RunRecorder",
            "from forkline_es.forkline.storage.recorder import RunRecorder",
            1,
        )
        + "\nprint(recorder.get_run(run_id)['forkline_version'], len(recorder.list_runs()))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0.5.0 1\n"
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        assert conn.execute("SELECT entrypoint, status FROM runs").fetchall() == [
            ("examples/minimal.py", "success")
        ]
        assert conn.execute("SELECT type, payload FROM events ORDER BY event_id").fetchall() == [
            ("input", '{"prompt":"hello"}'),
            ("output", '{"result":"world"}'),
        ]
