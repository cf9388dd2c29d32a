"""``RedactionPolicy``: apply rules to a payload before it reaches the storage boundary.

First matching rule wins. The input is never mutated: containers are rebuilt, leaves shared.
Redaction is idempotent because its outputs are fixed points: a string equal to the mask, or a
digest in the form this policy's hash rules produce, is already redacted, so no rule changes
it again (a hash rule would otherwise re-hash its own output, and a later rule could act on a
value an earlier pattern rule had already masked).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, Final, TypeVar, overload

from forkline_es.errors import InvalidRequest
from forkline_es.redaction._defaults import default_rules
from forkline_es.redaction._hashing import hash_value, is_hash_output
from forkline_es.redaction._paths import Located, format_location
from forkline_es.redaction._rules import RedactionRule
from forkline_es.redaction._words import key_words, unqualified
from forkline_es.values import FileRef
from forkline_es.values._canonical import MAX_JSON_DEPTH

__all__ = ["DEFAULT_MASK", "RedactionPolicy", "checked_policy"]

K = TypeVar("K")
T = TypeVar("T")

DEFAULT_MASK: Final = "[REDACTED]"
_NO_RULE: Final = 1 << 62  # sorts after every rule index
_KEY_CACHE_LIMIT: Final = 65536
_DROP: Final = object()  # the result of dropping a map entry
# Strings up to this length are first tried against all patterns at once (``_any_pattern``):
# one call instead of one per pattern. The alternation has no literal to scan for, so on
# longer strings the patterns one by one are faster (measured crossover: about 40 chars).
_SHORT: Final = 32
_CONTAINERS: Final = (dict, list, tuple)
# Leaves no key- or pattern-less rule can look into: kept unless their key's rule matches.
_SCALARS: Final = frozenset({int, float, bool, type(None)})


class RedactionPolicy:
    """An ordered list of rules, compiled once; see the module docstring for the guarantees.

    Actions:
    - ``mask``: the value (of any type, containers included) becomes the mask string.
    - ``hash``: the value becomes ``sha256:<hex>`` of its canonical JSON (sorted keys, so map
      order never matters), or ``hmac-sha256:<hex>`` keyed by ``hash_salt``. Only plain JSON
      values can be hashed: NaN, infinities or a non-JSON object (a datetime, ...) at a hashed
      location raise ``forkline_es.errors.InvalidValue`` naming the location.
    - ``drop``: a map entry is removed. A list element or the root value cannot disappear
      without shifting the positions of others (and so changing what path rules match), so it
      becomes the mask instead.

    Only ``dict``, ``list`` and ``tuple`` are traversed (a dict comes back as a plain ``dict``,
    a tuple as a tuple); any other object is a leaf, returned as is unless a rule matches it.
    A ``FileRef`` is one value too (kind ``file``): key and path rules match where it sits,
    and pattern rules search its text (reference, name, media_type, digest), because that
    text is stored; a match applies the rule to the whole FileRef (a mask replaces it). Only
    ``FileRef`` itself is looked into: the typed encoder refuses its subclasses anyway.

    Pattern rules search map keys too, since a key is stored like a value (a token used as a
    cache key, ``{"sk_live_...": 1}``). The key cannot be masked apart from its map, so a
    map with a matching key is one value to the rule: masked (or hashed, or dropped) whole.
    ``redact`` of a map whose own keys match gives the mask (or digest), not a map.

    Containers nested deeper than canonical JSON allows (``MAX_JSON_DEPTH``; a cycle too) are
    refused with ``InvalidValue`` naming where, as canonical JSON would refuse them, rather
    than running out of stack first.
    """

    __slots__ = (
        "_any_pattern",
        "_has_hash",
        "_key_cache",
        "_key_rules",
        "_path_rules",
        "_pattern_floor",
        "_pattern_rules",
        "_plain",
        "_rules",
        "hash_salt",
        "mask",
    )

    def __init__(
        self,
        rules: Sequence[RedactionRule],
        *,
        mask: str = DEFAULT_MASK,
        hash_salt: bytes | None = None,
    ) -> None:
        if isinstance(rules, RedactionRule | str | bytes):
            raise InvalidRequest("rules must be a sequence of RedactionRule, not a single value")
        for index, rule in enumerate(rules):
            if not isinstance(rule, RedactionRule):
                raise InvalidRequest(f"rules[{index}] is a {type(rule).__name__}, not a RedactionRule")
        if not isinstance(mask, str):
            raise InvalidRequest(f"mask must be a string, got {type(mask).__name__}")
        if hash_salt is not None and (not isinstance(hash_salt, bytes) or not hash_salt):
            raise InvalidRequest("hash_salt must be non-empty bytes, or None for plain sha256")
        self._rules: tuple[RedactionRule, ...] = tuple(rules)
        self.mask: str = mask
        self.hash_salt: bytes | None = hash_salt
        self._key_rules: tuple[tuple[int, tuple[str, ...]], ...] = tuple(
            (i, key_words(r.key)) for i, r in enumerate(self._rules) if r.key is not None
        )
        by_length: dict[int, list[tuple[int, tuple[str, ...]]]] = {}
        for i, r in enumerate(self._rules):
            if r.path is not None:
                segments = r.path_segments()
                by_length.setdefault(len(segments), []).append((i, segments))
        self._path_rules: dict[int, tuple[tuple[int, tuple[str, ...]], ...]] = {
            n: tuple(found) for n, found in by_length.items()
        }
        self._pattern_rules: tuple[tuple[int, re.Pattern[str]], ...] = tuple(
            (i, re.compile(r.pattern)) for i, r in enumerate(self._rules) if r.pattern is not None
        )
        self._any_pattern = _alternation(self._pattern_rules)
        #: The first pattern rule's index: a value whose key rule comes before it needs no search.
        self._pattern_floor: int = self._pattern_rules[0][0] if self._pattern_rules else _NO_RULE
        self._has_hash: bool = any(r.action == "hash" for r in self._rules)
        #: Per map key: (its first key rule, its first pattern rule), since keys recur.
        self._key_cache: dict[str, tuple[int, int]] = {}
        #: Without path rules a rule depends on the key and the value only, not on where
        #: they sit: ``_plain_map`` then walks without building a location per entry.
        self._plain: bool = not self._path_rules

    @property
    def rules(self) -> tuple[RedactionRule, ...]:
        """The rules, in the order they are tried."""
        return self._rules

    @classmethod
    def default(cls, *, mask: str = DEFAULT_MASK) -> RedactionPolicy:
        """Mask credentials: by key (api keys, tokens, passwords, secrets, authorization,
        cookies, private keys, session ids) and by value shape (bearer tokens, JWTs, AWS
        access key ids, PEM private keys, URL credentials, common provider keys)."""
        return cls(default_rules(), mask=mask)

    @classmethod
    def none(cls) -> RedactionPolicy:
        """Redact nothing: for stores whose payloads are known to be public."""
        return cls(())

    def __repr__(self) -> str:
        return f"RedactionPolicy({len(self._rules)} rules, mask={self.mask!r})"

    # -- public operations ------------------------------------------------------------------

    # A container keeps its kind but not the types inside it (a masked int becomes a string);
    # a string may become the mask or a digest; any other root value is returned unchanged.
    @overload
    def redact(self, value: dict[K, Any]) -> dict[K, Any] | str: ...
    @overload
    def redact(self, value: list[Any]) -> list[Any]: ...
    @overload
    def redact(self, value: tuple[Any, ...]) -> tuple[Any, ...]: ...
    @overload
    def redact(self, value: T) -> T: ...

    def redact(self, value: object) -> object:
        """A redacted copy of ``value``; ``value`` itself and everything in it stay unchanged."""
        try:
            if self._plain and (type(value) is dict or type(value) is list or type(value) is tuple):
                return self._redact_plain(value)
            index = self._pattern_index(value, _NO_RULE) if self._pattern_rules else _NO_RULE
            if index == _NO_RULE:
                return self._walk(value, ()) if isinstance(value, _CONTAINERS) else value
            # A string, a FileRef or a map with a matching key: a mask or a digest, or a dropped root.
            result = self._apply(self._rules[index], value, ())
        except Located as refused:
            raise refused.invalid(value) from None
        return self.mask if result is _DROP else result

    def sensitive_paths(self, value: object) -> list[str]:
        """Where ``redact`` would change ``value`` (``$.headers.authorization``), in order.

        Empty exactly when ``redact(value) == value``; the executor API withholds a whole
        payload slot when this is not empty.
        """
        try:
            return list(self._changes(value, (), is_root=True))
        except Located as refused:
            raise refused.invalid(value) from None

    def is_sensitive(self, value: object) -> bool:
        """Whether ``redact`` would change anything in ``value``; stops at the first change."""
        try:
            return next(self._changes(value, (), is_root=True), None) is not None
        except Located as refused:
            raise refused.invalid(value) from None

    # -- matching ---------------------------------------------------------------------------

    def _is_output(self, value: str) -> bool:
        """Whether ``value`` is already redacted, and so a fixed point of every rule."""
        if value == self.mask:
            return True
        return self._has_hash and is_hash_output(value, self.hash_salt)

    def _key_index(self, key: str) -> int:
        """The first key rule matching ``key``."""
        found = self._key_cache.get(key)
        return (found if found is not None else self._key_verdict(key))[0]

    def _key_verdict(self, key: str) -> tuple[int, int]:
        """(the first key rule matching ``key``, the first pattern rule its text matches),
        computed once per key and cached (bounded: cleared when full)."""
        by_key = _NO_RULE
        for words in {key_words(key), unqualified(key_words(key))}:
            for index, rule_words in self._key_rules:
                n = len(rule_words)
                if index < by_key and len(words) >= n and words[len(words) - n :] == rule_words:
                    by_key = index
                    break
        by_pattern = self._first_pattern(key, _NO_RULE) if self._pattern_rules else _NO_RULE
        if len(self._key_cache) >= _KEY_CACHE_LIMIT:
            self._key_cache.clear()
        found = self._key_cache[key] = (by_key, by_pattern)
        return found

    def _path_index(self, location: tuple[object, ...], best: int) -> int:
        for index, segments in self._path_rules.get(len(location), ()):
            if index >= best:
                break
            if all(
                s == "*" or s == (str(k) if isinstance(k, int) else k)
                for s, k in zip(segments, location, strict=True)
            ):
                return index
        return best

    def _pattern_index(self, value: object, best: int) -> int:
        """The first pattern rule before ``best`` matching a leaf (a string, or a FileRef's
        text) or a key of a map."""
        if not self._pattern_rules:
            return best
        if isinstance(value, str):
            return best if self._is_output(value) else self._first_pattern(value, best)
        if type(value) is FileRef:
            return self._file_pattern(value, best)
        if isinstance(value, dict):
            return self._keys_pattern(value, best)
        return best

    def _keys_pattern(self, value: dict[Any, Any], best: int) -> int:
        """The first pattern rule before ``best`` matching any key of ``value``."""
        cache = self._key_cache
        for key in value:
            if type(key) is not str:
                continue  # not a value of the domain: the encoder refuses it, by position
            found = cache.get(key)
            by_pattern = (found if found is not None else self._key_verdict(key))[1]
            if by_pattern < best:
                best = by_pattern
        return best

    def _file_pattern(self, ref: FileRef, best: int) -> int:
        """The first pattern rule before ``best`` matching any text member of ``ref``.

        Each member is tried as a string would be, so a FileRef is sensitive exactly when its
        text as plain strings would be (``FileRef("https://user:pw@host/x")`` like the URL).
        """
        for text in (ref.reference, ref.name, ref.media_type, ref.digest):
            if text is not None and not self._is_output(text):
                best = self._first_pattern(text, best)
        return best

    def _first_pattern(self, value: str, best: int) -> int:
        """The first pattern rule before ``best`` that ``value`` matches, else ``best``."""
        if len(value) <= _SHORT and self._any_pattern is not None and self._any_pattern.search(value) is None:
            return best
        for index, compiled in self._pattern_rules:
            if index >= best:
                break
            if compiled.search(value) is not None:
                return index
        return best

    def _entry_index(self, key: object, location: tuple[object, ...], value: object) -> int:
        """The first rule matching a map entry or list element, or ``_NO_RULE``."""
        text = value if isinstance(value, str) else None
        if text is not None and self._is_output(text):
            return _NO_RULE
        best = _NO_RULE
        if isinstance(key, str) and self._key_rules:
            best = self._key_index(key)
        if self._path_rules:
            best = self._path_index(location, best)
        if text is not None:
            if self._pattern_rules:
                return self._first_pattern(text, best)
        elif self._pattern_rules:  # only non-strings pay for these checks
            if type(value) is FileRef:
                return self._file_pattern(value, best)
            if isinstance(value, dict):
                return self._keys_pattern(value, best)
        return best

    # -- applying ---------------------------------------------------------------------------

    def _apply(self, rule: RedactionRule, value: object, location: tuple[object, ...]) -> object:
        if rule.action == "mask":
            return self.mask
        if rule.action == "hash":
            return hash_value(value, self.hash_salt, location)
        return _DROP

    def _walk(self, value: object, location: tuple[object, ...]) -> object:
        """Rebuild containers below a location no rule matched; leaves are shared."""
        if isinstance(value, dict):
            if len(location) >= MAX_JSON_DEPTH:
                raise _too_deep(location)
            out: dict[object, object] = {}
            for key, item in value.items():
                where = (*location, key)
                index = self._entry_index(key, where, item)
                if index == _NO_RULE:
                    out[key] = self._walk(item, where) if isinstance(item, _CONTAINERS) else item
                    continue
                result = self._apply(self._rules[index], item, where)
                if result is not _DROP:
                    out[key] = result
            return out
        if isinstance(value, list | tuple):
            if len(location) >= MAX_JSON_DEPTH:
                raise _too_deep(location)
            items: list[object] = []
            for position, item in enumerate(value):
                where = (*location, position)
                index = self._entry_index(None, where, item)
                if index == _NO_RULE:
                    items.append(self._walk(item, where) if isinstance(item, _CONTAINERS) else item)
                    continue
                result = self._apply(self._rules[index], item, where)
                items.append(self.mask if result is _DROP else result)
            return items if isinstance(value, list) else tuple(items)
        return value

    # -- the walk of a policy without path rules ----------------------------------------------
    # The same answers as ``_walk`` (tests/redaction/test_plain_walk.py compares them), for
    # the common policies (the default one has no path rules) at about half the cost: one
    # cache lookup per key gives both its key rule and whether its text is a secret, a
    # location is built only where it is needed (recursion, a rule applied, an error), and a
    # map's keys are matched while it is walked rather than in a pass of their own before.

    def _redact_plain(self, value: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> object:
        if not isinstance(value, dict):
            return self._plain_seq(value, ())
        try:
            out, best = self._plain_map(value, ())
        except Located as refused:
            best = self._refused_unless_keys_match(value, refused)
            out = value
        if best == _NO_RULE:
            return out
        result = self._apply(self._rules[best], value, ())
        return self.mask if result is _DROP else result

    def _refused_unless_keys_match(self, value: dict[Any, Any], refused: Located) -> int:
        """Where walking ``value`` was ``refused`` (too deep, an unhashable value) but a key
        of it matches a pattern, the whole map is that rule's, as ``_walk`` decides without
        looking inside; otherwise the refusal stands."""
        best = self._keys_pattern(value, _NO_RULE)
        if best == _NO_RULE:
            raise refused
        return best

    def _plain_map(self, value: dict[Any, Any], location: tuple[object, ...]) -> tuple[dict[Any, Any], int]:
        """The redacted map and the first pattern rule any of its keys matches."""
        if len(location) >= MAX_JSON_DEPTH:
            raise _too_deep(location)
        cache = self._key_cache
        is_output = self._is_output
        out: dict[Any, Any] = {}
        keys_best = _NO_RULE
        for key, item in value.items():
            if type(key) is str:
                verdict = cache.get(key)
                if verdict is None:
                    verdict = self._key_verdict(key)
                best, by_pattern = verdict
                if by_pattern < keys_best:
                    keys_best = by_pattern
            elif isinstance(key, str):
                best = self._key_index(key)
            else:
                best = _NO_RULE
            kind = type(item)
            if kind is str:
                if is_output(item):
                    out[key] = item
                    continue
                if best > self._pattern_floor:
                    best = self._first_pattern(item, best)
            elif kind is dict:
                if best == _NO_RULE:
                    try:
                        inner, best = self._plain_map(item, (*location, key))
                    except Located as refused:
                        best = self._refused_unless_keys_match(item, refused)
                    if best == _NO_RULE:
                        out[key] = inner
                        continue
                elif best > self._pattern_floor:
                    best = self._keys_pattern(item, best)
            elif kind is list or kind is tuple:
                if best == _NO_RULE:
                    out[key] = self._plain_seq(item, (*location, key))
                    continue
            elif kind not in _SCALARS:  # a FileRef, a subclass: the general path
                where = (*location, key)
                best = self._entry_index(key, where, item)
                if best == _NO_RULE:
                    out[key] = self._walk(item, where) if isinstance(item, _CONTAINERS) else item
                    continue
            if best == _NO_RULE:
                out[key] = item
                continue
            result = self._apply(self._rules[best], item, (*location, key))
            if result is not _DROP:
                out[key] = result
        return out, keys_best

    def _plain_seq(self, value: list[Any] | tuple[Any, ...], location: tuple[object, ...]) -> object:
        if len(location) >= MAX_JSON_DEPTH:
            raise _too_deep(location)
        patterns = self._pattern_rules
        is_output = self._is_output
        mask = self.mask
        items: list[object] = []
        for position, item in enumerate(value):
            kind = type(item)
            best = _NO_RULE
            if kind is str:
                if is_output(item):
                    items.append(item)
                    continue
                if patterns:
                    best = self._first_pattern(item, _NO_RULE)
            elif kind is dict:
                try:
                    inner, best = self._plain_map(item, (*location, position))
                except Located as refused:
                    best = self._refused_unless_keys_match(item, refused)
                if best == _NO_RULE:
                    items.append(inner)
                    continue
            elif kind is list or kind is tuple:
                items.append(self._plain_seq(item, (*location, position)))
                continue
            elif kind not in _SCALARS:
                where = (*location, position)
                best = self._entry_index(None, where, item)
                if best == _NO_RULE:
                    items.append(self._walk(item, where) if isinstance(item, _CONTAINERS) else item)
                    continue
            if best == _NO_RULE:
                items.append(item)
                continue
            result = self._apply(self._rules[best], item, (*location, position))
            items.append(mask if result is _DROP else result)
        return items if type(value) is list else tuple(items)

    def _changes(
        self, value: object, location: tuple[object, ...], *, is_root: bool = False
    ) -> Iterator[str]:
        """Locations where a rule applies and changes the value, in document order."""
        if is_root and self._pattern_index(value, _NO_RULE) != _NO_RULE:
            yield "$"
            return
        if isinstance(value, dict):
            entries: Iterator[tuple[object, object]] = iter(value.items())
            keyed = True
        elif isinstance(value, list | tuple):
            entries = iter(enumerate(value))
            keyed = False
        else:
            return
        if len(location) >= MAX_JSON_DEPTH:
            raise _too_deep(location)
        for key, item in entries:
            where = (*location, key)
            index = self._entry_index(key if keyed else None, where, item)
            if index == _NO_RULE:
                if isinstance(item, _CONTAINERS):  # a leaf no rule matched has no changes
                    yield from self._changes(item, where)
            else:
                # Every applied rule changes the value: outputs never reach this point, and
                # any non-output becomes the mask, a digest, or disappears.
                yield format_location(where)


def _too_deep(location: tuple[object, ...]) -> Located:
    """The refusal ``canonical_json`` gives a container this deep: same message, same path."""
    return Located(f"nesting deeper than {MAX_JSON_DEPTH} levels", location)


def _alternation(patterns: Sequence[tuple[int, re.Pattern[str]]]) -> re.Pattern[str] | None:
    """One regex matching where any of ``patterns`` does, or None when that cannot be built.

    Without capturing groups a pattern has no backreference, so inside an alternation it
    matches exactly where it does alone; a pattern with global inline flags (``(?i)...``)
    cannot be embedded at all (re refuses it).
    """
    if not patterns or any(compiled.groups for _, compiled in patterns):
        return None
    try:
        return re.compile("|".join(f"(?:{compiled.pattern})" for _, compiled in patterns))
    except re.error:
        return None


def checked_policy(policy: object, what: str) -> RedactionPolicy:
    """``policy`` if it is a ``RedactionPolicy``, else ``invalid-request`` saying what to pass.

    Forkline's own ``RedactionPolicy`` (or any look-alike) has other rules and methods: taken
    as it is, it would fail deep inside a call, or redact nothing.
    """
    if not isinstance(policy, RedactionPolicy):
        raise InvalidRequest(
            f"{what} must be a forkline_es.RedactionPolicy, not {type(policy).__name__} "
            "(use RedactionPolicy.default(), RedactionPolicy([RedactionRule(...), ...]) "
            "or RedactionPolicy.none())"
        )
    return policy
