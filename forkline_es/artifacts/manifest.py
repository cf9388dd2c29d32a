"""The reproducibility manifest: what a run was, as facts, and a digest of those facts alone.

``capture(...)`` observes the automatic facts; ``build_manifest(...)`` merges them with
the caller's, works out which are unknown and whether the manifest is complete, and
digests the facts. A fact that was never observed is ``None`` (JSON null, SQL NULL),
never ``0`` or ``""``. Nothing here writes; ``artifacts.recording`` appends the event
and writes ``manifest.json``.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from forkline_es.errors import InvalidRequest
from forkline_es.values import canonical_json, sha256_digest

__all__ = [
    "GIT_TIMEOUT_S",
    "REQUIRED_FACTS",
    "Manifest",
    "build_manifest",
    "git_commit",
    "manifest_file_bytes",
    "package_versions",
]

#: The facts without which a run cannot be reproduced; ``complete`` needs every one of
#: them stated, plus a version for every package the caller named.
REQUIRED_FACTS: Final = (
    "forkline_es_version",
    "python",
    "platform",
    "git_commit",
    "config_hash",
    "definition_digest",
)

#: How long ``git rev-parse HEAD`` may take before the commit counts as unknown.
GIT_TIMEOUT_S: Final = 5.0

_COMMIT: Final = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")


@dataclass(frozen=True, slots=True)
class Manifest:
    """The facts, their digest, the unknown fields (dotted for packages) and completeness."""

    facts: dict[str, Any]
    digest: str
    unknown_fields: list[str]
    complete: bool
    seq: int | None = None  # the manifest-recorded event, once recorded


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """HEAD of the git work tree at ``cwd``; None when not a repository or git is missing."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and _COMMIT.match(commit) else None


def package_versions(names: Iterable[str]) -> dict[str, str | None]:
    """The installed version of each named distribution; None when it is not installed."""
    import importlib.metadata  # about 14 ms: only when a manifest asks for versions

    out: dict[str, str | None] = {}
    for name in names:
        if not isinstance(name, str) or not name:
            raise InvalidRequest(f"packages lists distribution names (nonempty strings), not {name!r}")
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def capture(
    version: str,
    pins: Mapping[str, str] | None,
    packages: Iterable[str] = (),
    config: Any = None,
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """The automatic facts of this process and run."""
    return {
        "forkline_es_version": version,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": git_commit(cwd),
        "packages": package_versions(packages),
        "config_hash": None if config is None else sha256_digest(canonical_json(config)),
        "definition_digest": (pins or {}).get("definition"),
        "pins": None if pins is None else dict(pins),
    }


def build_manifest(captured: Mapping[str, Any], stated: Mapping[str, Any]) -> Manifest:
    """Merge captured and stated facts (stated wins), then list unknowns and digest.

    Refuses facts outside the canonical JSON domain (``InvalidValue`` with the path).
    """
    facts = dict(captured)
    for name, value in stated.items():
        if not name:
            raise InvalidRequest("a manifest fact needs a nonempty name")
        facts[name] = value
    data = canonical_json(facts)  # refuses NaN, bytes, ... naming the fact
    unknown = sorted(name for name, value in facts.items() if value is None)
    packages = facts.get("packages")
    if isinstance(packages, dict):
        unknown += sorted(f"packages.{n}" for n, v in packages.items() if v is None)
    required_unknown = [n for n in REQUIRED_FACTS if facts.get(n) is None]
    complete = not required_unknown and not any(u.startswith("packages.") for u in unknown)
    return Manifest(facts, sha256_digest(data), unknown, complete)


def manifest_file_bytes(run_id: str, manifest: Manifest) -> bytes:
    """The canonical bytes of ``manifest.json``: exactly reproducible from the log."""
    return canonical_json(
        {
            "complete": manifest.complete,
            "digest": manifest.digest,
            "facts": manifest.facts,
            "run_id": run_id,
            "unknown_fields": manifest.unknown_fields,
        }
    )
