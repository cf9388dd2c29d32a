"""``forkline.testing``: ``assert_no_diff``, a golden-file check for a script's recorded run."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from forkline_es.forkline.ci.commands import ci_record, diff_event_lists
from forkline_es.forkline.ci.exitcodes import EXIT_SUCCESS
from forkline_es.forkline.ci.normalize import normalize_artifact

__all__ = ["ArtifactDiffError", "assert_no_diff"]


class ArtifactDiffError(AssertionError):
    """The script's behaviour changed; ``diff_result`` is the CI diff document."""

    def __init__(self, message: str, diff_result: dict[str, Any]) -> None:
        super().__init__(message)
        self.diff_result = diff_result


def assert_no_diff(
    entrypoint: str,
    expected_artifact: str,
    *,
    offline: bool = True,
    script_args: list[str] | None = None,
    normalize_timestamps: bool = True,
    normalize_metadata: bool = True,
) -> None:
    """Run ``entrypoint``, record it, and raise ``ArtifactDiffError`` if its events differ
    from the baseline ``expected_artifact`` (``forkline-es forkline ci record`` writes one).

    ``FileNotFoundError`` for a missing script or baseline; ``RuntimeError`` when recording
    fails (the script exits non-zero, or touches the network while ``offline``).
    """
    if not os.path.isfile(entrypoint):
        raise FileNotFoundError(f"Entrypoint not found: {entrypoint}")
    if not os.path.isfile(expected_artifact):
        raise FileNotFoundError(f"Expected artifact not found: {expected_artifact}")
    options = {"normalize_timestamps": normalize_timestamps, "normalize_metadata": normalize_metadata}
    with open(expected_artifact, encoding="utf-8") as f:
        expected = normalize_artifact(json.load(f), **options)
    with tempfile.TemporaryDirectory() as folder:
        actual_path = os.path.join(folder, "actual.run.json")
        code = ci_record(entrypoint, actual_path, offline=offline, script_args=script_args)
        if code != EXIT_SUCCESS:
            raise RuntimeError(f"Recording failed with exit code {code}. Check stderr for details.")
        with open(actual_path, encoding="utf-8") as f:
            actual = normalize_artifact(json.load(f), **options)
    diff = diff_event_lists(expected.get("events", []), actual.get("events", []))
    if not diff["identical"]:
        snippet = json.dumps(diff, indent=2, sort_keys=True, default=str)
        raise ArtifactDiffError(
            f"Behavioral diff detected at event[{diff.get('first_divergent_index', 0)}].\n\n"
            f"Expected artifact: {expected_artifact}\nDiff details:\n{snippet}\n\n"
            f"To re-record the baseline:\n"
            f"  forkline ci record --entrypoint {entrypoint} --out {expected_artifact}",
            diff_result=diff,
        )
