"""``forkline-es serve`` in a real process, for the browser tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Debian's Chromium (``apt-get install chromium``; .ci/run installs it). Never downloaded.
CHROMIUM = "/usr/bin/chromium"


def forkline_es_command() -> list[str]:
    """The console script of the environment running the tests."""
    script = Path(sys.executable).parent / "forkline-es"
    found = str(script) if script.exists() else shutil.which("forkline-es")
    assert found, "the forkline-es console script is not installed (pip install -e '.[dev]')"
    return [found]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(db: Path, host: str = "127.0.0.1", stderr: list[str] | None = None) -> Iterator[str]:
    """Run ``forkline-es serve --db DB`` until the block ends; yields its base URL.

    ``stderr``: filled with the server's stderr lines once it has stopped.
    """
    port = free_port()
    command = [*forkline_es_command(), "serve", "--db", str(db), "--host", host, "--port", str(port)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                out, err = process.communicate()
                raise AssertionError(f"serve exited with {process.returncode}: {err}{out}")
            try:
                with urllib.request.urlopen(f"{url}/runs", timeout=2) as response:
                    assert response.status == 200
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "serve did not answer within 30 s"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            _, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        if stderr is not None:
            stderr.extend(err.splitlines())
