"""One redaction rule: what to do (``action``) and where it applies (one matcher)."""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from forkline_es.errors import InvalidRequest
from forkline_es.redaction._words import key_words

__all__ = ["Action", "RedactionRule"]

Action = Literal["mask", "hash", "drop"]
_ACTIONS: frozenset[str] = frozenset({"mask", "hash", "drop"})


class RedactionRule(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What to do with a value, and which values: exactly one of ``key``, ``path``, ``pattern``.

    - ``key``: a map key anywhere whose words end with the rule's words (whole words, any case,
      split on ``_ - .``, spaces and camelCase). The last word of a compound names what the
      value is: ``access_token`` is a token, ``token_count`` and ``max_tokens`` are counts, so
      ``key="token"`` matches the first and not the others.
    - ``path``: one exact location from the payload root, dotted (``headers.authorization``);
      ``*`` stands for any one map key or list index; a number also matches a list index.
      Map keys compare case-sensitively, as JSON does.
    - ``pattern``: a regular expression searched in string values; a string that contains a
      match is replaced whole (a partial replacement would leave context around the secret and
      could not be made idempotent for every pattern).

    A Struct so that rules can also be loaded from configuration with ``msgspec.convert``.
    """

    action: Action
    key: str | None = None
    path: str | None = None
    pattern: str | None = None

    def __post_init__(self) -> None:
        if self.action not in _ACTIONS:
            raise InvalidRequest(f"redaction action {self.action!r} is unknown: use 'mask', 'hash' or 'drop'")
        given = [name for name in ("key", "path", "pattern") if getattr(self, name) is not None]
        if len(given) != 1:
            raise InvalidRequest(
                "a redaction rule needs exactly one of key=, path= or pattern=, "
                f"got {', '.join(given) or 'none'}"
            )
        if self.key is not None:
            self._check_key(self.key)
        elif self.path is not None:
            self._check_path(self.path)
        elif self.pattern is not None:
            self._check_pattern(self.pattern)

    @staticmethod
    def _check_key(key: object) -> None:
        if not isinstance(key, str) or not key_words(key):
            raise InvalidRequest(f"redaction key {key!r} has no words to match: give a key such as 'api_key'")

    @staticmethod
    def _check_path(path: object) -> None:
        if not isinstance(path, str) or not path or any(not s for s in path.split(".")):
            raise InvalidRequest(
                f"redaction path {path!r} is malformed: give dotted map keys or list indices "
                "from the payload root, such as 'headers.authorization' or 'items.*.token'"
            )

    @staticmethod
    def _check_pattern(pattern: object) -> None:
        if not isinstance(pattern, str):
            raise InvalidRequest(f"redaction pattern {pattern!r} is not a string")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise InvalidRequest(f"redaction pattern {pattern!r} does not compile: {exc}") from None
        if compiled.search("") is not None:
            raise InvalidRequest(
                f"redaction pattern {pattern!r} matches the empty string, so it would redact "
                "every string: anchor it on the text that identifies the secret"
            )

    def path_segments(self) -> tuple[str, ...]:
        """The dotted path split into segments (empty when this is not a path rule)."""
        return tuple(self.path.split(".")) if self.path is not None else ()
