"""Running the real ``forkline-es`` on a pseudo-terminal: what a person at a terminal sees."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

EXE: Final = str(Path(sys.executable).with_name("forkline-es"))


def run_on_pty(
    args: list[str],
    env: Mapping[str, str],
    *,
    stdin_tty: bool = False,
    stderr_tty: bool = False,
    timeout: float = 60,
) -> tuple[bytes, str, int]:
    """(what reached the pty, stderr unless it went to the pty too, exit status) of
    ``forkline-es ARGS`` whose stdout is a pty; stdin is the pty too with ``stdin_tty``
    (the pager needs both), else empty."""
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [EXE, *args],
        stdin=follower if stdin_tty else subprocess.DEVNULL,
        stdout=follower,
        stderr=follower if stderr_tty else subprocess.PIPE,
        env=dict(env),
    ) as p:
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the pty closes with the process's last descriptor on it
                break
            if not chunk:
                break
            out += chunk
        err = p.stderr.read().decode() if p.stderr else ""
        status = p.wait(timeout=timeout)
    os.close(leader)
    return out, err, status
