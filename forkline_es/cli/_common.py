"""What every command shares: --db and --json, opening a store, rendering, exit codes.

Exit status (docs/cli.md): 0 success, 1 a check found a difference or a mismatch, 2 a usage
error or a refusal (its code is printed). A read command opens its database read-only
(``open_read_only``): it never creates, migrates or changes one.
"""

from __future__ import annotations

import functools
import io
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

import click
import msgspec

from forkline_es.errors import RecordError, StoreDamaged, StoreError
from forkline_es.log.opening import driver_errors, is_dsn, translate_driver_error
from forkline_es.store import Store

__all__ = [
    "ARTIFACTS",
    "EXIT_DIFFERENCE",
    "EXIT_OK",
    "EXIT_REFUSED",
    "NO_PAGER",
    "Lines",
    "artifacts_folder",
    "db_option",
    "echo_json",
    "fail",
    "is_dsn",
    "json_option",
    "json_text",
    "one_line",
    "open_for_read",
    "open_for_write",
    "open_read_only",
    "paged",
    "print_table",
    "refusals",
    "say",
    "visible",
]

EXIT_OK: Final = 0
EXIT_DIFFERENCE: Final = 1
EXIT_REFUSED: Final = 2

F = TypeVar("F", bound=Callable[..., Any])

_pretty: Final = msgspec.json.Encoder(order="sorted")


def db_option(f: F) -> F:
    return click.option(
        "--db",
        default="runs.db",
        show_default=True,
        type=click.Path(dir_okay=False),
        metavar="STORE",
        help="The store: a SQLite file or a postgresql:// URL ($FORKLINE_ES_DB gives its default).",
    )(f)


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines instead of text.")(f)


class _Screen(io.StringIO):
    """What a paged command prints, held until it ends; a terminal to whoever asks
    (``isatty``), so rich and click still colour and size it as for the screen."""

    def isatty(self) -> bool:
        return True


def _write_paged(text: str) -> None:
    """``text`` to the real stdout, through $PAGER (else ``less -R``) when it is longer
    than the screen is high; the terminal's own size (or $LINES) decides."""
    if text.count("\n") < shutil.get_terminal_size().lines - 1:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    # click: $PAGER, else less with LESS=-R; colours are kept only where the pager shows them
    click.echo_via_pager(text, color=None)


@contextmanager
def _pager(enabled: bool) -> Iterator[None]:
    """Hold a command's stdout and page it on a terminal; pass it through when piped or
    ``--no-pager``. Output already held still reaches the screen if the command fails."""
    if not enabled or not sys.stdout.isatty() or not sys.stdin.isatty():
        yield
        return
    real, screen = sys.stdout, _Screen()
    sys.stdout = screen
    try:
        yield
    finally:
        sys.stdout = real
        _write_paged(screen.getvalue())


def paged(f: F) -> F:
    """A read command whose text output goes through a pager on a terminal (long output
    only; never when piped); adds ``--no-pager``. ``forkline-es --no-pager CMD`` works too."""

    @functools.wraps(f)
    def wrapper(*args: Any, no_pager: bool, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        # a stream (--ndjson) is read as it comes, never held for a pager
        off = no_pager or bool(ctx.find_root().meta.get(NO_PAGER)) or bool(kwargs.get("ndjson"))
        with _pager(not off):
            return f(*args, **kwargs)

    option = click.option("--no-pager", is_flag=True, help="Print straight to the terminal, without a pager.")
    return option(wrapper)  # type: ignore[return-value]


#: The root context's meta key ``forkline-es --no-pager`` sets.
NO_PAGER: Final = "forkline_es.no_pager"
#: Where ``forkline-es --artifacts DIR`` (or $FORKLINE_ES_ARTIFACTS) keeps the folder for the store.
ARTIFACTS: Final = "forkline_es.artifacts"


def fail(message: str, code: int = EXIT_REFUSED) -> None:
    """Print ``error: message`` to stderr and exit with ``code``.

    Messages quote recorded text (a run id, a code, a value's path), so they are made
    ``visible`` like everything else the CLI prints.
    """
    say(f"error: {message}", err=True)
    sys.exit(code)


@contextmanager
def refusals(damaged: int = EXIT_REFUSED) -> Iterator[None]:
    """Map the library's errors to a message that says what to do, and exit status 2
    (``damaged`` for a damaged file: ``verify`` counts it as a problem found)."""
    try:
        yield
    except RecordError as e:
        fail(f"{e.code}: {e.message}")
    except StoreDamaged as e:
        fail(str(e), damaged)
    except StoreError as e:
        fail(str(e))
    except driver_errors() as e:  # met outside the log's own transactions, which translate theirs
        error = translate_driver_error(e, "read")
        fail(str(error), damaged if isinstance(error, StoreDamaged) else EXIT_REFUSED)
    except (UnicodeDecodeError, msgspec.DecodeError) as e:  # read past the Store's own methods
        fail(str(StoreDamaged.undecodable("read", e)), damaged)


def _refuse_missing(db: str) -> None:
    """A missing database is an error that suggests the demo.

    An empty file counts as missing: SQLite would take it for an empty database, and
    opening it would write a schema into it, which a read never does. A PostgreSQL URL is
    the server's to answer (a database without the schema is refused when opened).
    """
    if is_dsn(db):
        return
    if not os.path.exists(db) or os.path.getsize(db) == 0:
        what = "an empty file" if os.path.exists(db) else "no database"
        fail(f"{what} at {db}; record one with `forkline-es demo --db {db}`, or pass --db PATH")


def artifacts_folder() -> str | None:
    """The artifact folder ``forkline-es --artifacts DIR`` names: a PostgreSQL store keeps
    none beside it, so commands that read or add artifact files need it there."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.find_root().meta.get(ARTIFACTS)


def open_read_only(db: str, damaged: int = EXIT_REFUSED) -> Store:
    """Open an existing database for a read command (``runs``, ``show``, ``verify``, ...).

    Read-only: nothing is created, migrated or written, so a read-only file, folder or
    mount reads too. ``damaged``: the exit status for a damaged file.
    """
    _refuse_missing(db)
    with refusals(damaged):
        return Store.open(db, read_only=True, artifacts=artifacts_folder())
    raise AssertionError("unreachable")


def open_for_read(db: str) -> Store:
    """Open an existing database to change it (``rebuild``, ``evict``, ...); a missing one is
    an error that suggests the demo. Read commands use ``open_read_only``."""
    _refuse_missing(db)
    return open_for_write(db)


def open_for_write(db: str) -> Store:
    """Open or create a database; a Forkline runs.db is refused with the commands that import it."""
    try:
        return Store.open(db, artifacts=artifacts_folder())
    except StoreError as e:
        fail(str(e))
    except RecordError as e:
        fail(f"{e.code}: {e.message}")
    raise AssertionError("unreachable")


#: Every control character a terminal could act on: C0, DEL and C1 (U+0080-U+009F).
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")
#: Tab-separated output escapes backslash too, so that every cell reads back unambiguously
#: (as PostgreSQL's COPY text format does).
_CONTROL_OR_BACKSLASH: Final = re.compile("[\\\\\x00-\x1f\x7f-\x9f]")
_NAMED: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}
#: DEL and C1 in UTF-8 JSON text: JSON allows them raw, a terminal may act on C1. Both byte
#: forms occur only inside strings (0xC2 is never a continuation byte), so replacing them
#: with a \u escape leaves the same JSON value.
_RAW_JSON_CONTROL: Final = re.compile(b"\x7f|\xc2[\x80-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def _json_escaped(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode())


def visible(text: str) -> str:
    """``text`` with every control character written as an escape: the one sanitiser.

    Recorded text (names, codes, reasons, paths, values; often model output) must never
    drive the terminal: ``ESC]0;`` would set its title, ``ESC[2J`` clear it, OSC 8 plant a
    link. Tab, newline and carriage return become ``\\t``, ``\\n``, ``\\r``; every other C0
    character, DEL and C1 become ``\\xNN`` (``\\x1b``, ``\\x7f``, ``\\x9b``). Everything
    else, backslash included, is left as written.
    """
    return _CONTROL.sub(_escaped, text)


def one_line(text: str) -> str:
    """``text`` as one tab-separated cell: ``visible``, and backslash written ``\\\\``."""
    return _CONTROL_OR_BACKSLASH.sub(_escaped, text)


def json_text(data: bytes) -> bytes:
    """JSON text with DEL and C1 characters written as ``\\u007f``..``\\u009f``: the same value.

    msgspec (like canonical JSON) already escapes C0; these two it writes raw.
    """
    return _RAW_JSON_CONTROL.sub(_json_escaped, data)


def say(text: str, *, err: bool = False) -> None:
    """One line of text that may quote recorded text, made ``visible``, on stdout (or stderr)."""
    click.echo(visible(text), err=err)


def echo_json(value: Any) -> None:
    """JSON on stdout: indented for a person on a terminal, compact when piped.

    Exact JSON either way; no control character reaches the output unescaped (``json_text``).
    """
    data = _pretty.encode(value)
    if sys.stdout.isatty():
        data = msgspec.json.format(data, indent=2)
    click.echo(json_text(data).decode())


#: Colours of statuses, outcomes and dispatches on a terminal (never when piped).
_STATUS_STYLE: Final = {
    "failed": "red",
    "held": "yellow",
    "ambiguous": "yellow",
    "succeeded": "green",
}
_COLOURED_COLUMNS: Final = frozenset({"status", "outcome", "dispatch"})


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


class Lines(str):
    """A cell whose newlines are layout (indented JSON), kept as line breaks on a terminal;
    every line is still made ``visible``, and piped the cell is one line like any other."""


def _shown(value: Any) -> str:
    if isinstance(value, Lines):
        return "\n".join(visible(line) for line in value.split("\n"))
    return visible(_cell(value))


def print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    section: bool = False,
    whole: Sequence[str] = (),
) -> None:
    """A rich table on a terminal; tab-separated plain text when piped.

    Recorded text goes into the table as ``rich.text.Text``, never as markup: a workflow
    named ``[bold]`` or a reason with ``[link=...]`` is shown as written. Every cell and the
    title are made ``visible`` first (``one_line`` when piped). A ``section`` of a command
    that prints several tables is, piped, ``# title``, the header line, its rows and an
    empty line, so a reader splits the output on empty lines into one table per section.
    The ``whole`` columns (ids, statuses, short times) are never wrapped or cut on a
    terminal; the others give way when the screen is narrow.
    """
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(title=None if title is None else Text(visible(title)))
        for n, c in enumerate(columns):
            if c in whole:
                width = max((len(_shown(r[n])) for r in rows if n < len(r)), default=0)
                table.add_column(c, no_wrap=True, min_width=max(width, len(c)))
            else:
                table.add_column(c, overflow="fold")  # wrapped, never cut
        coloured = [c in _COLOURED_COLUMNS for c in columns]
        for r in rows:
            cells = (
                Text(_shown(v), style=_STATUS_STYLE.get(v, "") if paint and isinstance(v, str) else "")
                for v, paint in zip(r, coloured, strict=False)
            )
            table.add_row(*cells)
        Console().print(table)  # rich honours NO_COLOR
        return
    if section:
        click.echo(f"# {one_line(title or '')}")
    click.echo("\t".join(columns))
    for r in rows:
        click.echo("\t".join(one_line(_cell(v)) for v in r))
    if section:
        click.echo()
