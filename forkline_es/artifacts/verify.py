"""``verify``: re-check a run's history against itself and its files, and report every problem.

What is checked, per run (docs/verify.md says what that proves):

- the hash chain: seq consecutive from 1, each row's digest recomputed from its columns,
  each ``prev`` equal to the previous row's digest;
- every payload value still stored against the digest its event's slot records (a value
  removed by retention is not a problem);
- every artifact file: present, of the recorded size, with the recorded sha256, and not
  reached through a symbolic link inside the artifact folder (one is reported, not followed);
- the manifest: its digest recomputed from the recorded facts, and ``manifest.json`` on
  disk byte for byte what the log says it is;
- when the chain holds: the run's projections against a refold of its rows alone, which
  sees what a chain cannot, rows deleted at the run's end and a run rewritten to its end
  after it was folded (``projections.check.RunRefolder``);
- given anchors taken earlier (``artifacts.anchors``): the row at each anchored seq still
  has the anchored digest, which no rewrite at or before it can keep;
- for the store: the log's triggers are the ones its schema makes (``log.triggers``).

Nothing is ever repaired: a problem is reported, with its kind and the seq of the event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import msgspec

from forkline_es._logging import get_logger
from forkline_es.artifacts.anchors import Anchor, checked_anchors
from forkline_es.artifacts.manifest import Manifest, manifest_file_bytes
from forkline_es.artifacts.store import ArtifactFiles, file_checksum, open_regular
from forkline_es.errors import RunNotFound, RunNotRetained
from forkline_es.log.backend import Backend, Cursor, Dialect
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import ArtifactAdded, EventBody, ManifestRecorded, PayloadsRemoved
from forkline_es.log.rows import LogRow, row_digest
from forkline_es.projections.check import Extra, RunRefolder
from forkline_es.projections.runner import Projections
from forkline_es.values import canonical_json, check_text, sha256_digest

__all__ = [
    "PROBLEM_KINDS",
    "STORE_KINDS",
    "Checksums",
    "Problem",
    "VerifyReport",
    "check_chain",
    "store_problems",
    "verify_all",
    "verify_run",
]

#: Every problem kind verify reports, and what it means.
PROBLEM_KINDS: Final = {
    "seq-gap": "a row is missing: seq is not consecutive from 1 (deleted or moved)",
    "row-digest": "a row's digest does not match its columns (edited, or its seq was changed)",
    "chain-link": "a row's prev is not the previous row's digest (a row before it was replaced)",
    "body-undecodable": "a row's body is not an event this version understands",
    "payload-digest": "a stored payload value does not match the digest its event records",
    "payload-unexpected": "a payload value is stored for a slot its event does not hold as present",
    "payload-missing": (
        "a slot its event holds as present has no value, and no payloads-removed event records "
        "its removal (deleted behind the triggers)"
    ),
    "artifact-path": "an artifact's recorded path leaves the artifact folder",
    "artifact-symlink": (
        "a symbolic link inside the artifact folder lies on an artifact's or manifest.json's path "
        "(planted: the store never writes or reads through one)"
    ),
    "artifact-missing": "an artifact file is gone",
    "artifact-size": "an artifact file has another size than recorded",
    "artifact-checksum": "an artifact file has the recorded size but other content",
    "manifest-digest": "the recorded manifest facts do not hash to the recorded digest",
    "manifest-file-missing": "manifest.json is gone",
    "manifest-file": "manifest.json differs from the manifest the log records",
    "run-missing": "the projections list a run the log has no rows for (and no eviction)",
    "projection-mismatch": (
        "the run's projections differ from a refold of its rows: rows deleted at its end, "
        "or the run rewritten (digests recomputed) after it was folded"
    ),
    "anchor-mismatch": (
        "the run's row at an anchored seq has another digest or is gone, or the run vanished "
        "(no rows, no eviction record): it was rewritten at or before that seq"
    ),
    "trigger-missing": "a trigger the schema makes is gone: the log's rows could be changed",
    "trigger-altered": "a trigger the schema makes has other SQL than the schema gives it",
    "trigger-unexpected": "a trigger the schema does not make is on one of the log's tables",
}

#: Problems of the store rather than of one run (reported with ``seq`` None).
STORE_KINDS: Final = frozenset({"trigger-missing", "trigger-altered", "trigger-unexpected"})

#: Problems of the rows themselves, each pinned to a seq; the projection comparison is
#: only made without them (it would restate the same change less precisely).
_CHAIN_KINDS: Final = frozenset({"seq-gap", "row-digest", "chain-link", "body-undecodable"})

_log = get_logger("forkline_es.verify")


class Host(Protocol):
    """What verification asks of the store (``store.Store``, above this package)."""

    @property
    def path(self) -> str: ...

    @property
    def backend(self) -> Backend: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def projections(self) -> Projections: ...

    @property
    def artifact_files(self) -> ArtifactFiles: ...


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: its ``kind`` (see PROBLEM_KINDS), where, what was expected and found."""

    kind: str
    seq: int | None
    message: str
    path: str | None = None
    expected: Any = None
    actual: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "seq": self.seq,
            "path": self.path,
            "expected": self.expected,
            "actual": self.actual,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of verifying one run: ``ok`` when ``problems`` is empty.

    ``run_id`` is None for the store's own report (its triggers), which ``verify_all`` puts
    first when the store has a problem.
    """

    run_id: str | None
    problems: tuple[Problem, ...] = ()
    events: int = 0
    artifacts: int = 0
    manifests: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "ok": self.ok,
            "events": self.events,
            "artifacts": self.artifacts,
            "manifests": self.manifests,
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass(slots=True)
class Checksums:
    """Checksums of files already read in this pass: shared content is hashed once."""

    seen: dict[str, tuple[int, str]] = field(default_factory=dict)

    def of(self, files: ArtifactFiles, relative: str) -> tuple[int, str] | None:
        known = self.seen.get(relative)
        if known is not None:
            return known
        target = files.resolve(relative)
        assert target is not None
        try:
            result = file_checksum(target)
        except OSError:  # gone, or no longer a readable file (a folder in its place): missing
            return None
        self.seen[relative] = result
        return result


# -- the chain (pure) ---------------------------------------------------------------------


def check_chain(rows: Iterable[LogRow]) -> Iterator[tuple[LogRow, list[Problem]]]:
    """Walk one run's rows in seq order; yield each row with the chain problems found at it."""
    expected_seq = 1
    prev: str | None = None
    for row in rows:
        found: list[Problem] = []
        if row.seq != expected_seq:
            found.append(
                Problem(
                    "seq-gap",
                    expected_seq,
                    f"seq {expected_seq} is missing: the next row has seq {row.seq}",
                    expected=expected_seq,
                    actual=row.seq,
                )
            )
        recomputed = row_digest(
            row.run_id, row.seq, row.entry, row.generation, row.kind, row.at, row.key, row.prev, row.body
        )
        if recomputed != row.digest:
            found.append(
                Problem(
                    "row-digest",
                    row.seq,
                    f"row seq {row.seq} was changed after it was written: its columns hash to "
                    f"{recomputed}, it records {row.digest}",
                    expected=row.digest,
                    actual=recomputed,
                )
            )
        if row.prev != prev:
            found.append(
                Problem(
                    "chain-link",
                    row.seq,
                    f"row seq {row.seq} does not follow the row before it: prev is {row.prev}, "
                    f"the previous row's digest is {prev}",
                    expected=prev,
                    actual=row.prev,
                )
            )
        yield row, found
        prev = row.digest
        expected_seq = row.seq + 1


# -- the per-event checks -------------------------------------------------------------------


def _payload_problems(row: LogRow, event: EventBody, values: dict[str, str]) -> list[Problem]:
    found: list[Problem] = []
    slots = getattr(event, "slots", None) or {}
    for slot, value in sorted(values.items()):
        recorded = slots.get(slot)
        if recorded is None or recorded.state != "present" or recorded.digest is None:
            found.append(
                Problem(
                    "payload-unexpected",
                    row.seq,
                    f"a value is stored for slot {slot!r} of seq {row.seq}, which records no present value",
                    path=slot,
                )
            )
            continue
        actual = sha256_digest(value.encode())
        if actual != recorded.digest:
            found.append(
                Problem(
                    "payload-digest",
                    row.seq,
                    f"the stored value of slot {slot!r} at seq {row.seq} does not match its recorded digest",
                    path=slot,
                    expected=recorded.digest,
                    actual=actual,
                )
            )
    return found


def _missing_values(
    decoded: list[tuple[LogRow, EventBody]], payloads: dict[int, dict[str, str]]
) -> list[Problem]:
    """Slots recorded present whose value is gone though no payloads-removed event names it.

    Retention deletes a value only after recording its removal (the triggers hold for any
    client); a value gone without that record was deleted behind them, and the document
    would pass it off as ``removed``.
    """
    removed = {(p, s) for _, e in decoded if isinstance(e, PayloadsRemoved) for p, s in e.removed}
    found: list[Problem] = []
    for row, event in decoded:
        stored = payloads.get(row.position, {})
        for slot, recorded in sorted((getattr(event, "slots", None) or {}).items()):
            if recorded.state == "present" and slot not in stored and (row.position, slot) not in removed:
                found.append(
                    Problem(
                        "payload-missing",
                        row.seq,
                        f"the value of slot {slot!r} at seq {row.seq} is gone, "
                        "and no payloads-removed event records its removal",
                        path=slot,
                    )
                )
    return found


def _artifact_problems(
    seq: int, event: ArtifactAdded, files: ArtifactFiles, sums: Checksums
) -> list[Problem]:
    where = files.resolve(event.path)
    if where is None:
        return [
            Problem(
                "artifact-path",
                seq,
                f"artifact {event.name!r} points outside the artifact folder",
                event.path,
            )
        ]
    link = _link(seq, f"artifact {event.name!r}", event.path, files)
    if link is not None:
        return [link]
    found = sums.of(files, event.path)
    if found is None:
        return [
            Problem(
                "artifact-missing",
                seq,
                f"artifact {event.name!r} (seq {seq}) is missing: no readable file at {where}",
                event.path,
                expected=event.sha256,
            )
        ]
    size, digest = found
    if size != event.size_bytes:
        return [
            Problem(
                "artifact-size",
                seq,
                f"artifact {event.name!r} (seq {seq}) has {size} bytes, {event.size_bytes} were recorded",
                event.path,
                expected=event.size_bytes,
                actual=size,
            )
        ]
    if digest != event.sha256:
        return [
            Problem(
                "artifact-checksum",
                seq,
                f"artifact {event.name!r} (seq {seq}) has other content than recorded",
                event.path,
                expected=event.sha256,
                actual=digest,
            )
        ]
    return []


def _link(seq: int, what: str, relative: str, files: ArtifactFiles) -> Problem | None:
    """A planted symbolic link on the file's way: reported, never followed."""
    link = files.link_on(relative)
    if link is None:
        return None
    return Problem(
        "artifact-symlink",
        seq,
        f"{what} (seq {seq}) is reached through the symbolic link {link}, which verify does not follow",
        relative,
        actual=str(link),
    )


def _manifest_problems(run_id: str, seq: int, event: ManifestRecorded, files: ArtifactFiles) -> list[Problem]:
    found: list[Problem] = []
    actual = sha256_digest(canonical_json(event.facts))
    if actual != event.digest:
        found.append(
            Problem(
                "manifest-digest",
                seq,
                f"the manifest facts recorded at seq {seq} hash to {actual}, the run cites {event.digest}",
                expected=event.digest,
                actual=actual,
            )
        )
    if event.path is None:
        return found
    where = files.resolve(event.path)
    if where is None:
        found.append(
            Problem("artifact-path", seq, "manifest.json points outside the artifact folder", event.path)
        )
        return found
    link = _link(seq, "manifest.json", event.path, files)
    if link is not None:
        return [*found, link]
    try:
        with open_regular(where) as f:
            on_disk = f.read()
    except OSError:  # gone, or not a readable file any more (a FIFO is not waited on)
        found.append(
            Problem(
                "manifest-file-missing", seq, f"manifest.json of seq {seq} is missing: {where}", event.path
            )
        )
        return found
    wanted = manifest_file_bytes(
        run_id, Manifest(event.facts, event.digest, event.unknown_fields, event.complete)
    )
    if on_disk != wanted:
        found.append(
            Problem(
                "manifest-file",
                seq,
                f"{where} differs from the manifest recorded at seq {seq}{_file_detail(on_disk, event)}",
                event.path,
                expected=sha256_digest(wanted),
                actual=sha256_digest(on_disk),
            )
        )
    return found


def _file_detail(data: bytes, event: ManifestRecorded) -> str:
    try:
        doc = msgspec.json.decode(data)
        facts = doc["facts"]
        digest = sha256_digest(canonical_json(facts))
    except Exception:
        return " (it is not a manifest document)"
    if digest != event.digest:
        return f" (its facts hash to {digest}, the run cites {event.digest})"
    return " (same facts, other bytes)"


# -- runs ---------------------------------------------------------------------------------


def _by_position(values: list[tuple[int, str, str]]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    for position, slot, value in values:
        out.setdefault(position, {})[slot] = value
    return out


def verify_run(
    store: Host,
    run_id: str,
    sums: Checksums | None = None,
    *,
    projections: bool = True,
    refolder: RunRefolder | None = None,
    anchors: Mapping[str, Any] | None = None,
    extra: Extra,
) -> VerifyReport:
    """Verify one run; refuses a run that is unknown (run-not-found) or evicted.

    ``projections``: also compare its projections with a refold of its rows (in
    ``refolder``'s scratch database when given, else in one of its own). ``anchors``: as
    ``store.anchors()`` returned them (invalid-request when malformed); the run's anchor,
    if it has one, is checked. The store's triggers are checked too: the run's evidence
    depends on them.
    """
    check_text(run_id, "a run identifier")  # as every read refuses it (get_run_record, ...)
    checked = checked_anchors(anchors) if anchors is not None else {}
    with ExitStack() as stack:
        if projections and refolder is None:
            refolder = stack.enter_context(RunRefolder(extra))
        return _verify_run(store, run_id, sums, projections, refolder, checked.get(run_id), with_store=True)


def _verify_run(
    store: Host,
    run_id: str,
    sums: Checksums | None,
    projections: bool,
    refolder: RunRefolder | None,
    anchor: Anchor | None,
    *,
    with_store: bool,
) -> VerifyReport:
    sums = sums if sums is not None else Checksums()
    problems: list[Problem] = []
    events = artifacts = manifests = 0
    to_check: list[tuple[int, ArtifactAdded | ManifestRecorded]] = []
    with store.log.snapshot() as cur:
        if with_store:
            problems.extend(store_problems(store.backend, cur))
        try:
            values = store.log.run_payloads(run_id, cur)
        except UnicodeDecodeError:  # a damaged file: a value that is no longer UTF-8
            values = store.log.run_payloads_bytes(run_id, cur)
        payloads = _by_position(values)
        try:
            stored = list(store.log.read_run(run_id, cur))
        except UnicodeDecodeError:  # a damaged file: the row's digest no longer matches
            stored = list(store.log.read_run_bytes(run_id, cur))
        rows: list[LogRow] = []
        decoded: list[tuple[LogRow, EventBody]] = []
        for row, found in check_chain(stored):
            rows.append(row)
            events += 1
            problems.extend(found)
            try:
                event = row.event()
            except msgspec.DecodeError as e:
                if not found:
                    problems.append(Problem("body-undecodable", row.seq, f"seq {row.seq}: {e}"))
                continue
            decoded.append((row, event))
            problems.extend(_payload_problems(row, event, payloads.get(row.position, {})))
            if isinstance(event, ArtifactAdded | ManifestRecorded):
                to_check.append((row.seq, event))
        problems.extend(_missing_values(decoded, payloads))
        if events == 0:
            evicted = store.log.eviction(run_id, cur)
            if evicted is not None:
                raise RunNotRetained(
                    f"run {run_id!r} was evicted at {evicted[0]}; there is nothing to verify"
                )
            listed = store.projections.persist.load_summary(cur, run_id) is not None
            if not listed and anchor is None:
                raise RunNotFound(f"no run {run_id!r} in {store.path}; `forkline-es runs` lists the runs")
            problems.extend(_vanished(run_id, listed, anchor))
        else:
            if anchor is not None:
                problems.extend(_anchor_problems(run_id, rows, anchor))
            if projections and not any(p.kind in _CHAIN_KINDS for p in problems):
                assert refolder is not None  # verify_run and verify_all make one when asked for projections
                problems.extend(_projection_problems(cur, run_id, rows, values, refolder))
    # Files are read outside the read transaction. A run with none needs no folder (a
    # PostgreSQL store opened without ``artifacts=`` has none to give).
    files = store.artifact_files if to_check else None
    for seq, event in to_check:
        assert files is not None
        if isinstance(event, ArtifactAdded):
            artifacts += 1
            problems.extend(_artifact_problems(seq, event, files, sums))
        else:
            manifests += 1
            problems.extend(_manifest_problems(run_id, seq, event, files))
    report = VerifyReport(run_id, tuple(problems), events, artifacts, manifests)
    _log.info("verified", run_id=run_id, ok=report.ok, problems=len(problems), events=events)
    return report


def _run_ids(dialect: Dialect, cur: Cursor) -> list[str]:
    """Every run id the log holds, in order; in a damaged file, an id that is no longer
    UTF-8 with its bad bytes replaced (its rows are then a seq gap of the run they left)."""
    try:
        return [r for (r,) in cur.execute("SELECT DISTINCT run_id FROM log ORDER BY run_id")]
    except UnicodeDecodeError:
        ids = cur.execute(f"SELECT DISTINCT {dialect.text_bytes('run_id')} FROM log").fetchall()
        return sorted({bytes(r).decode("utf-8", "replace") for (r,) in ids})


def store_problems(backend: Backend, cur: Cursor) -> list[Problem]:
    """The store's own problems, in ``cur``'s snapshot: a trigger of the log gone, altered or added."""
    found: list[Problem] = []
    for t in backend.trigger_differences(cur):
        if t.state == "missing":
            found.append(
                Problem(
                    "trigger-missing",
                    None,
                    f"trigger {t.name} on {t.table} is gone: the rows it guards can be changed "
                    "or deleted by any client (only an anchor kept elsewhere shows whether they were)",
                    path=t.name,
                    expected=t.expected,
                )
            )
        elif t.state == "altered":
            found.append(
                Problem(
                    "trigger-altered",
                    None,
                    f"trigger {t.name} on {t.table} is not the one the schema makes",
                    path=t.name,
                    expected=t.expected,
                    actual=t.actual,
                )
            )
        else:
            found.append(
                Problem(
                    "trigger-unexpected",
                    None,
                    f"trigger {t.name} on {t.table} is not made by the schema: it can refuse, "
                    "change or silently skip writes to the log",
                    path=t.name,
                    actual=t.actual,
                )
            )
    return found


def _anchor_problems(run_id: str, rows: list[LogRow], anchor: Anchor) -> list[Problem]:
    """The row at the anchored seq, against the anchored digest."""
    seq, digest = anchor
    at = next((r for r in rows if r.seq == seq), None)
    if at is None:
        return [
            Problem(
                "anchor-mismatch",
                seq,
                f"run {run_id!r} has no row seq {seq}, which its anchor records with digest {digest} "
                f"(the run ends at seq {rows[-1].seq}): rows were deleted or renumbered",
                expected=digest,
            )
        ]
    if at.digest != digest:
        return [
            Problem(
                "anchor-mismatch",
                seq,
                f"run {run_id!r}: row seq {seq} has digest {at.digest}, its anchor records {digest}: "
                f"the run was rewritten at or before seq {seq}",
                expected=digest,
                actual=at.digest,
            )
        ]
    return []


def _vanished(run_id: str, listed: bool, anchor: Anchor | None) -> list[Problem]:
    """A run without rows or eviction record: listed by the projections, anchored, or both."""
    found = [_missing(run_id)] if listed else []
    if anchor is not None:
        seq, digest = anchor
        found.append(
            Problem(
                "anchor-mismatch",
                seq,
                f"run {run_id!r} is gone: its anchor records seq {seq} with digest {digest}, and "
                "the log holds none of its rows and no eviction record",
                expected=digest,
            )
        )
    return found


def _projection_problems(
    cur: Any,
    run_id: str,
    rows: list[LogRow],
    values: list[tuple[int, str, str]],
    refolder: RunRefolder,
) -> list[Problem]:
    """The rows and values the chain walk read, refolded (no second read of the run). Only
    the refold's own errors are the rows' problem: reading the live projections may fail
    as any read does (a lost connection), and that is the store's error, not a mismatch."""
    try:
        folded = refolder.refold(run_id, rows, values)
    except Exception as e:  # rows forged to fold into nothing valid: report it, never crash
        found = [f"the run's rows do not fold: {type(e).__name__}: {e}"]
    else:
        found = refolder.compare(cur, run_id, folded)
    return [Problem("projection-mismatch", None, f"run {run_id!r}: {line}") for line in found]


def _missing(run_id: str) -> Problem:
    return Problem("run-missing", None, f"run {run_id!r} is listed but the log holds none of its rows")


def verify_all(
    store: Host,
    progress: Callable[[int, int], None] | None = None,
    *,
    projections: bool = True,
    anchors: Mapping[str, Any] | None = None,
    extra: Extra,
) -> list[VerifyReport]:
    """Verify every run the log holds, and flag listed runs whose rows are all gone.

    ``anchors``: as ``store.anchors()`` returned them; an anchored run that is neither in
    the log nor evicted gets a report of its own. The store's own problems (its triggers)
    come first, in a report whose ``run_id`` is None, only when there are some.
    """
    checked = checked_anchors(anchors) if anchors is not None else {}
    with store.log.snapshot() as cur:
        own = store_problems(store.backend, cur)
        in_log = _run_ids(store.log.dialect, cur)
        listed = {
            r
            for (r,) in cur.execute(
                "SELECT run_id FROM run_summary AS s WHERE NOT EXISTS "
                "(SELECT 1 FROM log AS l WHERE l.run_id = s.run_id) "
                "AND NOT EXISTS (SELECT 1 FROM eviction AS e WHERE e.run_id = s.run_id)"
            )
        }
        retained = set(in_log)
        vanished = {r for r in checked if r not in retained and store.log.eviction(r, cur) is None}
    sums = Checksums()
    reports: list[VerifyReport] = [VerifyReport(None, tuple(own))] if own else []
    gone = sorted(listed | vanished)
    total = len(in_log) + len(gone)
    done = 0
    with ExitStack() as stack:
        refolder = stack.enter_context(RunRefolder(extra)) if projections else None
        for run_id in in_log:
            with suppress(RunNotRetained, RunNotFound):  # evicted since the listing: nothing to verify
                reports.append(
                    _verify_run(
                        store, run_id, sums, projections, refolder, checked.get(run_id), with_store=False
                    )
                )
            done += 1
            if progress is not None:
                progress(done, total)
    for run_id in gone:
        reports.append(VerifyReport(run_id, tuple(_vanished(run_id, run_id in listed, checked.get(run_id)))))
        done += 1
        if progress is not None:
            progress(done, total)
    return reports
