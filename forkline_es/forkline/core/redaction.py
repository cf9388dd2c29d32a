"""Forkline's redaction API (``RedactionPolicy(rules, regex_rules)``, ``redact(event_type,
payload)``) compiled onto ``forkline_es.redaction``.

A policy here *is* an engine policy (a subclass), so ``fe.RunRecorder``, ``fe.Store.open(
redaction=...)`` and this package's recorder all take it, and it gets the engine's walk:
no input mutated, depth and cycle checks, ``FileRef`` and map keys searched, idempotence.
What it changes is matching, to Forkline's rules, because callers wrote their rules for them:

- ``RedactionRule(action, key_pattern=, path_pattern=)``: a case-insensitive *substring* of
  a map key and/or of its dotted path (list positions are not part of a path); both given,
  both must match; first rule wins. A caller's own rule masks what it masked in Forkline.
- ``RegexRedactionRule``: a match anywhere in a string replaces the *whole* string by the
  rule's replacement (Forkline replaces only the match: the rest could still leak context).
- ``hash``: ``sha256:<hex>`` of canonical JSON, not Forkline's ``hash:<hex>`` of
  ``json.dumps(default=str)``.
- ``create_default_policy()`` is forkline_es's default (whole-word key matching plus value
  shapes), not Forkline's substring list that masks ``author`` and ``max_tokens``.

docs/forkline.md lists these differences with their reasons.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from forkline_es.errors import InvalidRequest, shown
from forkline_es.redaction import DEFAULT_MASK
from forkline_es.redaction import RedactionPolicy as EnginePolicy
from forkline_es.redaction import RedactionRule as EngineRule
from forkline_es.redaction._defaults import default_rules
from forkline_es.redaction._hashing import is_hash_output

__all__ = [
    "RedactionAction",
    "RedactionConfig",
    "RedactionPolicy",
    "RedactionRule",
    "RegexRedactionRule",
    "create_default_policy",
    "load_redaction_config",
]

_UNSET: Final = object()
# Inline forms of the flags a compiled pattern may carry; the engine compiles pattern text.
_FLAGS: Final = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))


class RedactionAction(str, Enum):  # noqa: UP042 - Forkline's type: members compare equal to plain strings
    MASK = "mask"
    HASH = "hash"
    DROP = "drop"


def _action(value: object) -> RedactionAction:
    try:
        return RedactionAction(value)
    except ValueError:
        raise InvalidRequest(
            f"redaction action {shown(value)} is unknown: use 'mask', 'hash' or 'drop'"
        ) from None


@dataclass(frozen=True)
class RedactionRule:
    """A structural rule: ``key_pattern`` and/or ``path_pattern``, case-insensitive substrings."""

    action: RedactionAction
    key_pattern: str | None = None
    path_pattern: str | None = None
    replacement: str = DEFAULT_MASK

    def __post_init__(self) -> None:
        if self.key_pattern is None and self.path_pattern is None:
            raise InvalidRequest("RedactionRule requires at least one pattern: key_pattern= or path_pattern=")
        for name in ("key_pattern", "path_pattern"):
            given = getattr(self, name)
            if given is not None and not isinstance(given, str):
                raise InvalidRequest(f"{name} must be a string, not {shown(given)}")
        if not isinstance(self.replacement, str):
            raise InvalidRequest(f"replacement must be a string, not {shown(self.replacement)}")
        object.__setattr__(self, "action", _action(self.action))

    def matches(self, key: str, path: str) -> bool:
        return (self.key_pattern is None or self.key_pattern.lower() in key.lower()) and (
            self.path_pattern is None or self.path_pattern.lower() in path.lower()
        )


@dataclass(frozen=True)
class RegexRedactionRule:
    """A value rule: a string in which ``pattern`` matches becomes ``replacement``."""

    name: str
    pattern: re.Pattern[str]
    replacement: str

    @classmethod
    def from_config(cls, name: str, pattern_str: str, replacement: str) -> RegexRedactionRule:
        try:
            compiled = re.compile(pattern_str)
        except (re.error, TypeError) as exc:
            raise InvalidRequest(f"redaction pattern {shown(pattern_str)} does not compile: {exc}") from None
        return cls(name=name, pattern=compiled, replacement=replacement)

    def pattern_text(self) -> str:
        """The pattern as text, with the compiled flags inline (the engine compiles text)."""
        if not isinstance(self.pattern, re.Pattern) or not isinstance(self.pattern.pattern, str):
            raise InvalidRequest(f"RegexRedactionRule {self.name!r}: pattern must be a compiled str regex")
        inline = "".join(letter for flag, letter in _FLAGS if self.pattern.flags & flag)
        return f"(?{inline}){self.pattern.pattern}" if inline else self.pattern.pattern


class RedactionPolicy(EnginePolicy):
    """Forkline's policy: structural rules (first match wins), then regex rules on strings.

    ``redact(event_type, payload)`` as in Forkline; ``redact(payload)`` as the engine calls it.
    """

    __slots__ = ("_forkline_rules", "_outputs", "_replacements", "_structural", "regex_rules")

    def __init__(
        self, rules: Sequence[RedactionRule], regex_rules: Sequence[RegexRedactionRule] | None = None
    ) -> None:
        self._compile(list(rules), list(regex_rules or ()), ())

    def _compile(
        self, rules: list[RedactionRule], regex_rules: list[RegexRedactionRule], engine: Sequence[EngineRule]
    ) -> None:
        for i, rule in enumerate(rules):
            if not isinstance(rule, RedactionRule):
                raise InvalidRequest(f"rules[{i}] is a {type(rule).__name__}, not a forkline RedactionRule")
        for i, regex in enumerate(regex_rules):
            if not isinstance(regex, RegexRedactionRule):
                raise InvalidRequest(
                    f"regex_rules[{i}] is a {type(regex).__name__}, not a RegexRedactionRule"
                )
        # Engine rule i stands for structural rule i: the placeholder's path is never compared
        # (``_path_index`` below matches Forkline's way); it carries the action and index.
        stand_ins = [
            EngineRule(action=r.action.value, path=f"forkline-rule-{i}") for i, r in enumerate(rules)
        ]
        # ``_path_index`` answers for every path rule, so engine rules must bring none.
        assert all(rule.path is None for rule in engine), "engine path rules would be shadowed"
        patterns = [EngineRule(action="mask", pattern=r.pattern_text()) for r in regex_rules]
        super().__init__([*stand_ins, *engine, *patterns])
        self._forkline_rules: list[RedactionRule] = rules
        self.regex_rules: list[RegexRedactionRule] = regex_rules
        self._structural: tuple[RedactionRule, ...] = tuple(rules)
        replacements: dict[EngineRule, str] = {}
        for stand_in, rule in zip(stand_ins, rules, strict=True):
            replacements[stand_in] = rule.replacement
        for engine_rule, regex in zip(patterns, regex_rules, strict=True):
            replacements.setdefault(engine_rule, regex.replacement)  # the same pattern: the first wins
        self._replacements: dict[EngineRule, str] = replacements
        self._outputs: frozenset[str] = frozenset(replacements.values())

    @property
    def rules(self) -> list[RedactionRule]:  # type: ignore[override]  # Forkline's: its structural rules
        return self._forkline_rules

    def __repr__(self) -> str:
        return f"forkline RedactionPolicy({len(self._structural)} rules, {len(self.regex_rules)} regex rules)"

    def redact(self, event_type: Any, payload: Any = _UNSET) -> Any:
        """A redacted copy: ``redact(event_type, payload)`` (Forkline) or ``redact(payload)``."""
        value = event_type if payload is _UNSET else payload
        return super().redact(value)

    # -- Forkline's matching on the engine's walk ---------------------------------------------

    def _path_index(self, location: tuple[object, ...], best: int) -> int:
        key = location[-1] if location else None
        if type(key) is not str:
            return best  # Forkline's structural rules apply to map entries only
        path = ".".join(k for k in location if type(k) is str)  # list positions are not in paths
        for index, rule in enumerate(self._structural[:best]):
            if rule.matches(key, path):
                return index
        return best

    def _is_output(self, value: str) -> bool:
        return (
            value == self.mask
            or value in self._outputs
            or (self._has_hash and is_hash_output(value, self.hash_salt))
        )

    def _apply(self, rule: EngineRule, value: object, location: tuple[object, ...]) -> object:
        if rule.action == "mask":
            return self._replacements.get(rule, self.mask)
        return super()._apply(rule, value, location)


def create_default_policy() -> RedactionPolicy:
    """forkline_es's default policy behind Forkline's API (see the module docstring)."""
    policy = RedactionPolicy.__new__(RedactionPolicy)
    policy._compile([], [], default_rules())
    return policy


@dataclass
class RedactionConfig:
    """Rules as a config file gives them: keys and paths to mask, regexes to replace."""

    redact_keys: list[str] = field(default_factory=list)
    redact_paths: list[str] = field(default_factory=list)
    redact_regex: list[dict[str, str]] = field(default_factory=list)

    def to_policy(self) -> RedactionPolicy:
        rules = [RedactionRule(action=RedactionAction.MASK, key_pattern=k) for k in self.redact_keys]
        rules += [RedactionRule(action=RedactionAction.MASK, path_pattern=p) for p in self.redact_paths]
        regexes = []
        for i, entry in enumerate(self.redact_regex):
            if not isinstance(entry, dict) or "name" not in entry or "pattern" not in entry:
                raise InvalidRequest(f"redact_regex[{i}] needs 'name' and 'pattern'")
            replacement = entry.get("replacement", f"[REDACTED:{entry['name']}]")
            regexes.append(RegexRedactionRule.from_config(entry["name"], entry["pattern"], replacement))
        return RedactionPolicy(rules, regexes)


def load_redaction_config(path: str | os.PathLike[str]) -> RedactionConfig:
    """A config from a ``.json`` file, or ``.yaml``/``.yml`` with the ``pyyaml`` package.

    The rules sit under ``fields:`` or at the top level: ``redact_keys``, ``redact_paths``,
    ``redact_regex`` (``name``, ``pattern``, optional ``replacement``).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Redaction config not found: {path}")
    ext = os.path.splitext(path)[1].lower()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    data: Any
    if ext in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise ImportError("PyYAML is required for YAML config files: pip install pyyaml") from None
        data = yaml.safe_load(text)
    elif ext == ".json":
        data = json.loads(text)
    else:
        raise ValueError(f"Unsupported config file extension: {ext}. Use .yaml, .yml, or .json")
    data = data or {}
    fields = data.get("fields", data) if isinstance(data, dict) else None
    if not isinstance(fields, dict):
        raise InvalidRequest(
            f"{path}: a redaction config is a mapping of redact_keys, redact_paths, redact_regex"
        )
    config = RedactionConfig(
        redact_keys=list(fields.get("redact_keys") or []),
        redact_paths=list(fields.get("redact_paths") or []),
        redact_regex=list(fields.get("redact_regex") or []),
    )
    config.to_policy()  # refuse a bad file here, not at the first event
    return config
