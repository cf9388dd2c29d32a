"""Instructions per event on the append path, counted by callgrind: paired, and repeatable.

Timing cannot show a 5% change on a shared 2-core VM (trials of the same code differ by
up to 40%); callgrind counts the CPU work of a run instead, the same count every time. Each
workload records N events, then 3N, into a fresh store; the difference divided by 2N is
one event's cost, free of start-up and imports. Disk waits are not counted (both versions
write the same pages). Compare two checkouts by running this script from each with the
same arguments (docs/benchmarks.md, "What the hardening for real operations cost the append path").

    python -m benchmarks.instructions [--events 1000]

Needs valgrind (Debian's `valgrind`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

__all__ = ["WORKLOADS", "count", "main"]

# An LLM call as agents log it: 15 entries in 5 maps and a list, one long message.
_PAYLOAD: Final = """{
    "model": "gpt-4o", "temperature": 0.2, "max_tokens": 512,
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Summarise the quarterly report for the board, in five bullet points."},
    ],
    "usage": {"prompt_tokens": 412, "completion_tokens": 128},
    "headers": {"x-request-id": "req_8f2a9c", "content-type": "application/json"},
}"""

_LOG_EVENT: Final = """
import os, sys, tempfile
import forkline_es as fe
n = int(sys.argv[1])
policy = fe.RedactionPolicy.{policy}()
rec = fe.RunRecorder(os.path.join(tempfile.mkdtemp(), "runs.db"), redaction_policy=policy)
run_id = rec.start_run("agent.py")
payload = {payload}
for _ in range(n):
    rec.log_event(run_id, "llm_call", payload)
"""

_REDACT: Final = """
import sys
import forkline_es as fe
n = int(sys.argv[1])
policy = fe.RedactionPolicy.default()
payload = {payload}
for _ in range(n):
    policy.redact(payload)
"""

_STEP: Final = """
import os, sys, tempfile
import forkline_es as fe
n = int(sys.argv[1])
store = fe.Store.open(os.path.join(tempfile.mkdtemp(), "runs.db"))
run = store.start_run("wf", run_id="r", inputs={{"n": n}})
ARTIFACT = "sha256:" + "ab" * 32
payload = {payload}
for i in range(n // 4):
    path = f"s{{i}}"
    run.begin_step(path)
    run.invoke(path, 1, "llm.call", ARTIFACT, "not-dispatched", payload)
    run.result(path, 1, "succeeded", result={{"text": "five bullet points"}})
    run.end_step(path, "succeeded")
"""

# The log layer alone: one prebuilt row (and its payload value) per EventLog.append.
_LAYER: Final = """
import os, sys, tempfile
from forkline_es.log.connection import open_connection
from forkline_es.log.eventlog import EventLog
from forkline_es.log.rows import NewRow
from forkline_es.log.sqlite import SqliteBackend
n = int(sys.argv[1])
log = EventLog(SqliteBackend(open_connection(os.path.join(tempfile.mkdtemp(), "runs.db"))))
digest = "sha256:" + "ab" * 32
body = ('{{"event_type":"input","slots":{{"payload":{{"digest":"' + digest + '","state":"present"}}}},'
        '"type":"forkline-logged"}}').encode()
value = b'{{"prompt":"hello"}}'
rows = [
    NewRow("r", i, None, 0, "forkline-logged", "2026-01-01T00:00:00.1Z", f"forkline:k:{{i}}", body, digest,
           None, (("payload", value),))
    for i in range(1, n + 1)
]
for row in rows:
    log.append((row,))
"""

#: name -> a script that records argv[1] events
WORKLOADS: Final = {
    "RunRecorder.log_event, default policy": _LOG_EVENT.format(policy="default", payload=_PAYLOAD),
    "RunRecorder.log_event, RedactionPolicy.none()": _LOG_EVENT.format(policy="none", payload=_PAYLOAD),
    "RedactionPolicy.default().redact alone": _REDACT.format(payload=_PAYLOAD),
    "executor step: begin, invoke, result, end (per event)": _STEP.format(payload=_PAYLOAD),
    "the log layer: EventLog.append of one prebuilt row and its payload value": _LAYER.format(),
}
_TOTAL: Final = re.compile(rb"^summary: (\d+)", re.MULTILINE)


def count(script: str, n: int) -> int:
    """Instructions callgrind counts for ``script`` run with argument ``n``."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, "workload.py")
        source.write_text(script)
        out = Path(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        subprocess.run(
            [*command, str(source), str(n)],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        found = _TOTAL.search(out.read_bytes())
        assert found is not None, "callgrind wrote no summary"
        return int(found[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000, help="N: each workload runs N, then 3N events")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is missing: apt-get install valgrind")
    n = args.events
    print(f"| workload ({n} and {3 * n} events) | instructions per event |")
    print("| --- | --- |")
    for name, script in WORKLOADS.items():
        per_event = (count(script, 3 * n) - count(script, n)) / (2 * n)
        print(f"| {name} | {per_event:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
