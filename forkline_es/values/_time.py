"""Timestamps and durations: canonical UTC text, display zones, whole milliseconds.

A typed timestamp carries two facts, the instant and the zone it was recorded in, and a
typed duration is a signed count of milliseconds. Python's ``datetime`` and ``timedelta``
cannot hold every such value exactly (``"+00:00"`` and ``"Z"`` are the same tzinfo; a
duration may exceed ``timedelta.max``), so decoding returns :class:`Timestamp` and
:class:`Duration`. Both compare equal to the ``datetime`` / ``timedelta`` that would encode
to the same typed value, which keeps ``decode(encode(v)) == v`` true for the stdlib types.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from forkline_es.errors import InvalidRequest, InvalidValue, shown
from forkline_es.values._paths import Refused

__all__ = [
    "Duration",
    "Timestamp",
    "canonical_timestamp",
    "format_duration",
    "is_valid_zone",
    "parse_canonical_timestamp",
    "parse_duration",
    "parse_instant",
    "time_key",
    "timedelta_ms",
    "utc_now",
    "utc_text",
    "zone_of",
]

_UTC = UTC
_MS = timedelta(milliseconds=1)
# Canonical form only: 1-6 fraction digits with no trailing zero, so one instant has one text.
_CANONICAL = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{0,5}[1-9]))?Z\Z"
)
_OFFSET = re.compile(r"([+-])([01][0-9]|2[0-3]):([0-5][0-9])\Z")
_IANA = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*\Z")
# Names zoneinfo can load that are not zone identities but this machine's configuration.
_NOT_ZONES = frozenset({"localtime", "posixrules"})


def utc_text(dt: datetime) -> str:
    """Canonical UTC text of an aware datetime; the caller has checked it is aware."""
    try:
        u = dt.astimezone(_UTC) if dt.tzinfo is not _UTC else dt
    except OverflowError:
        raise Refused("timestamp is outside the years 0001-9999 once converted to UTC") from None
    text = f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}"
    if u.microsecond:
        return f"{text}.{u.microsecond:06d}".rstrip("0") + "Z"
    return text + "Z"


def time_key(text: str) -> str:
    """Canonical UTC text in a fixed width (six fraction digits, no ``Z``), whose text
    order is time order: the canonical form drops a zero fraction, and ``...:05Z`` sorts
    after ``...:05.5Z`` as text. Indexes that order runs by time hold this key."""
    base, _, fraction = text[:-1].partition(".")
    return f"{base}.{fraction.ljust(6, '0')}"


def parse_instant(text: str) -> datetime | None:
    """The aware UTC datetime for canonical text, or None when the text is not canonical."""
    match = _CANONICAL.match(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    micro = int(fraction.ljust(6, "0")) if fraction else 0
    try:
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro, _UTC)
    except ValueError:
        return None


def canonical_timestamp(dt: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS[.fraction]Z`` for an aware datetime (decisions.md, Timestamps)."""
    if not isinstance(dt, datetime) or dt.utcoffset() is None:
        raise InvalidValue("canonical_timestamp needs an aware datetime (set tzinfo)", "$")
    try:
        return utc_text(dt)
    except Refused as refused:
        raise InvalidValue(refused.message, "$") from None


def parse_canonical_timestamp(s: str) -> datetime:
    """Aware UTC datetime from canonical text; anything non-canonical is refused."""
    parsed = parse_instant(s) if type(s) is str else None
    if parsed is None:
        raise InvalidValue(f"{s!r} is not a canonical timestamp (YYYY-MM-DDTHH:MM:SS[.fraction]Z, UTC)", "$")
    return parsed


def utc_now() -> str:
    """The current instant in canonical form (every recorded event asks for one)."""
    return utc_text_of_ns(time.time_ns())


_second: list[tuple[int, str]] = [(0, "1970-01-01T00:00:00")]  # the last second formatted


def utc_text_of_ns(ns: int) -> str:
    """``utc_text`` of the instant ``ns`` nanoseconds after the epoch, microseconds floored as
    ``datetime.now`` floors them; the seconds' text is formatted once per second."""
    seconds, micro = divmod(ns // 1000, 1_000_000)
    cached = _second[0]
    if cached[0] == seconds:
        text = cached[1]
    else:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second[0] = (seconds, text)
    if micro:
        return f"{text}.{micro:06d}".rstrip("0") + "Z"
    return text + "Z"


@functools.lru_cache(maxsize=1024)
def is_valid_zone(zone: str) -> bool:
    """``Z``, a numeric offset ``+HH:MM``, or an IANA zone name this machine's tzdata knows."""
    if zone == "Z" or _OFFSET.match(zone):
        return True
    if zone in _NOT_ZONES or not _IANA.match(zone):
        return False
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def zone_of(dt: datetime) -> str:
    """The display zone an aware datetime records as: its IANA key, else its offset.

    A zero fixed offset is ``"Z"``: ``timezone(timedelta(0))`` is ``timezone.utc`` in Python,
    so ``"+00:00"`` can only be asked for explicitly with :class:`Timestamp`.
    """
    tz = dt.tzinfo
    if tz is _UTC:
        return "Z"
    if isinstance(tz, ZoneInfo) and tz.key is not None and is_valid_zone(tz.key):
        return tz.key
    offset = dt.utcoffset()
    if offset is None:
        raise Refused("naive datetime (no tzinfo); pass an aware datetime")
    if not offset:
        return "Z"
    if offset % timedelta(minutes=1):
        raise Refused(f"UTC offset {offset} is not whole minutes; use Timestamp with a zone")
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(offset) // timedelta(minutes=1)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def timedelta_ms(td: timedelta) -> int:
    """Whole milliseconds of a timedelta; a sub-millisecond remainder is refused, not rounded."""
    micros = (td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds
    if micros % 1000:
        raise Refused(
            f"timedelta {td!r} is not a whole number of milliseconds; round it first "
            "(durations are recorded in milliseconds)"
        )
    return micros // 1000


@dataclass(frozen=True, slots=True, eq=False)
class Timestamp:
    """An instant and the zone it is displayed in: the value of kind ``timestamp``.

    ``instant`` is stored as an aware UTC datetime (any aware datetime is converted);
    ``zone`` is ``"Z"``, a numeric offset such as ``"+05:30"`` or ``"+00:00"``, or an IANA
    name such as ``"Europe/Paris"``, kept verbatim so re-encoding gives the same text.

    Equality: two Timestamps are equal when instant and zone are; a Timestamp equals an
    aware datetime when that datetime would encode to the same typed value (same instant,
    and its zone spelling, see :func:`zone_of`, equals ``zone``). The hash is the instant's,
    as for aware datetimes (Python hashes a datetime in a DST fold as if ``fold=0``, so only
    there can an equal datetime hash differently).
    """

    instant: datetime
    zone: str = "Z"

    def __post_init__(self) -> None:
        instant = self.instant
        if not isinstance(instant, datetime) or instant.utcoffset() is None:
            raise InvalidValue("Timestamp.instant must be an aware datetime", "$")
        if type(self.zone) is not str or not is_valid_zone(self.zone):
            raise InvalidValue(
                f"Timestamp.zone {self.zone!r} is not Z, a +HH:MM offset or a known IANA zone",
                "$",
            )
        if instant.tzinfo is not _UTC:
            try:
                object.__setattr__(self, "instant", instant.astimezone(_UTC))
            except OverflowError:
                message = "Timestamp.instant is outside the years 0001-9999 in UTC"
                raise InvalidValue(message, "$") from None

    @classmethod
    def from_datetime(cls, dt: datetime) -> Timestamp:
        """The Timestamp an aware datetime encodes as (zone from :func:`zone_of`)."""
        if not isinstance(dt, datetime):
            raise InvalidValue(f"expected an aware datetime, got {type(dt).__name__}", "$")
        try:
            return cls(dt, zone_of(dt))
        except Refused as refused:
            raise InvalidValue(refused.message, "$") from None

    def to_datetime(self) -> datetime:
        """The instant as an aware datetime in the display zone."""
        zone = self.zone
        if zone == "Z":
            return self.instant
        match = _OFFSET.match(zone)
        if match is None:
            return self.instant.astimezone(ZoneInfo(zone))
        sign, hours, minutes = match.groups()
        offset = timedelta(hours=int(hours), minutes=int(minutes))
        return self.instant.astimezone(timezone(-offset if sign == "-" else offset))

    def canonical_instant(self) -> str:
        """The instant in canonical UTC text, as stored."""
        return utc_text(self.instant)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Timestamp):
            return self.zone == other.zone and self.instant == other.instant
        if isinstance(other, datetime):
            if other.utcoffset() is None:
                return False
            try:
                zone = zone_of(other)
            except Refused:
                return False
            # Convert first: Python answers False to any cross-zone == on a DST fold time.
            try:
                return zone == self.zone and other.astimezone(_UTC) == self.instant
            except OverflowError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.instant)


@dataclass(frozen=True, slots=True, eq=False)
class Duration:
    """A signed whole number of milliseconds: the value of kind ``duration``.

    Unlike ``timedelta`` it has no range limit, so every typed duration decodes. It equals
    a ``timedelta`` of the same length (and hashes like it when one exists).
    """

    ms: int

    def __post_init__(self) -> None:
        if type(self.ms) is not int:
            raise InvalidValue(f"Duration.ms must be an int, got {type(self.ms).__name__}", "$")

    @classmethod
    def from_timedelta(cls, td: timedelta) -> Duration:
        """Exact conversion; a timedelta with a sub-millisecond part is refused."""
        try:
            return cls(timedelta_ms(td))
        except Refused as refused:
            raise InvalidValue(refused.message, "$") from None

    def to_timedelta(self) -> timedelta:
        """The same length as a timedelta (OverflowError beyond ``timedelta.max``)."""
        return self.ms * _MS

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Duration):
            return self.ms == other.ms
        if isinstance(other, timedelta):
            return timedelta_ms_or_none(other) == self.ms
        return NotImplemented

    def __hash__(self) -> int:
        try:
            return hash(self.ms * _MS)
        except OverflowError:
            return hash(("Duration", self.ms))


def timedelta_ms_or_none(td: timedelta) -> int | None:
    """Whole milliseconds of a timedelta, or None when it has a sub-millisecond part."""
    micros = (td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds
    return None if micros % 1000 else micros // 1000


#: Durations as text (``30d``, ``1d12h``): retention policies and listing filters.
_UNITS: Final = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_DURATION: Final = re.compile(r"(?:[0-9]+[wdhms])+\Z")
_PART: Final = re.compile(r"([0-9]+)([wdhms])")


def parse_duration(value: timedelta | str, what: str = "duration") -> timedelta:
    """``timedelta`` or text such as ``30d``, ``12h``, ``1d12h``, ``90m``, ``2w``, ``45s``."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise InvalidRequest(f"{what} must not be negative, got {value}")
        return value
    if isinstance(value, str) and _DURATION.match(value.strip()):
        try:  # a number past 4,300 digits is a ValueError of int(), and too long anyway
            seconds = sum(int(n) * _UNITS[u] for n, u in _PART.findall(value.strip()))
            return timedelta(seconds=seconds)
        except (OverflowError, ValueError):
            raise InvalidRequest(
                f"{what} {shown(value)} is longer than a timedelta holds (999,999,999 days)"
            ) from None
    raise InvalidRequest(
        f"{what} is a timedelta or text like '30d', '12h', '1d12h' (units w, d, h, m, s), not {shown(value)}"
    )


def format_duration(d: timedelta) -> str:
    """The shortest ``parse_duration`` text for ``d`` (whole seconds; sub-second is dropped)."""
    seconds = int(d.total_seconds())
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in _UNITS.items():
        if unit == "w":
            continue  # days read better than weeks in reports
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts)
