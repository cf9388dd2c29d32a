"""A throwaway PostgreSQL server for tests and benchmarks: a real ``postgres`` process.

``with PostgresServer() as server: dsn = server.create_database("t1")`` runs initdb into a
temporary folder, starts the server listening on 127.0.0.1 only (a free port; its unix
socket in that folder, not /var/run), and stops it and removes the folder at the end of
the block (or at interpreter exit, whichever comes first). It is as durable as a real
server (``fsync``, ``synchronous_commit`` and ``full_page_writes`` on) unless the caller
passes ``settings`` (a benchmark's ``synchronous_commit=off``).

initdb and the server refuse to run as root, which CI is: as root, the folder is given to
the ``postgres`` user and every server command runs as that user (``runuser``). A machine
without the server binaries raises ``PostgresUnavailable`` saying what to install: a test
that needs PostgreSQL fails there, it never skips.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["PostgresServer", "PostgresUnavailable", "create_schema", "drop_schemas", "find_binaries"]

_INSTALL: Final = (
    "install the PostgreSQL server (Debian: apt-get install -y postgresql; it brings "
    "/usr/lib/postgresql/VERSION/bin), or put a folder holding initdb and pg_ctl on PATH"
)
_DATABASE_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: A real server's durability: every commit reaches the disk before it is acknowledged.
_DURABLE: Final[Mapping[str, str]] = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
}
_START_ATTEMPTS: Final = 5  # another process may take the free port before the server binds it


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be found or started here; the message says why and what to do."""


def find_binaries() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``: Debian's newest
    /usr/lib/postgresql/*/bin, else the folder of ``initdb`` on PATH."""

    def version(folder: str) -> tuple[int, ...]:
        name = Path(folder).parent.name
        return tuple(int(p) for p in name.split(".") if p.isdigit())

    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path is not None:
        folders.append(str(Path(on_path).resolve().parent))
    for folder in folders:
        if all(os.access(Path(folder, tool), os.X_OK) for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    raise PostgresUnavailable(f"no PostgreSQL server binaries (initdb, pg_ctl, postgres) found: {_INSTALL}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One throwaway PostgreSQL cluster (see the module docstring). ``settings`` are added to
    (and override) its postgresql.conf; ``dsn(name)`` and ``create_database(name)`` give
    ``postgresql://`` addresses of its databases."""

    def __init__(self, settings: Mapping[str, str] | None = None) -> None:
        self.bin = find_binaries()
        self.settings = {**_DURABLE, **(settings or {})}
        self.folder: Path | None = None
        self.port = 0
        self._user: str | None = None  # the account the server runs as, when we are root

    # -- life ------------------------------------------------------------------------

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """initdb, then start the server; raise ``PostgresUnavailable`` with its log if it cannot."""
        if self.folder is not None:
            raise RuntimeError("this PostgresServer is already started")
        folder = Path(tempfile.mkdtemp(prefix="forkline-pg-"))
        self.folder = folder
        atexit.register(self.stop)
        if os.geteuid() == 0:
            self._as_postgres_user(folder)
        self._run(
            [
                str(self.bin / "initdb"),
                "--pgdata",
                str(self.data),
                "--username",
                "postgres",
                "--auth",
                "trust",  # 127.0.0.1 and the folder's socket only: nobody else reaches it
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",  # initdb's own files: the server is thrown away, never recovered
            ],
            "initdb",
        )
        last = ""
        for _ in range(_START_ATTEMPTS):
            self.port = _free_port()
            self._write_settings()
            try:
                self._run(
                    [
                        str(self.bin / "pg_ctl"),
                        "--pgdata",
                        str(self.data),
                        "--log",
                        str(self.log),
                        "--wait",
                        "--timeout",
                        "60",
                        "start",
                    ],
                    "pg_ctl start",
                )
                return
            except PostgresUnavailable as e:
                last = str(e)
                if "could not bind" not in self._log_text() and "already in use" not in self._log_text():
                    break
        self.stop()
        raise PostgresUnavailable(last)

    def stop(self) -> None:
        """Stop the server (immediately: nothing of it is kept) and remove its folder."""
        folder, self.folder = self.folder, None
        if folder is None:
            return
        atexit.unregister(self.stop)
        try:
            if (folder / "data" / "postmaster.pid").exists():
                with contextlib.suppress(PostgresUnavailable):
                    self._run(
                        [
                            str(self.bin / "pg_ctl"),
                            "--pgdata",
                            str(folder / "data"),
                            "--mode",
                            "immediate",
                            "--wait",
                            "stop",
                        ],
                        "pg_ctl stop",
                        cwd=folder,
                    )
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # -- databases -------------------------------------------------------------------

    def dsn(self, database: str = "postgres") -> str:
        """The address of ``database`` on this server (trust authentication: no password)."""
        if self.folder is None:
            raise RuntimeError("the PostgresServer is not started")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create an empty database ``name`` (lower-case letters, digits, _) and return its DSN."""
        if not _DATABASE_NAME.fullmatch(name):
            raise ValueError(f"database name {name!r} is not a plain lower-case identifier")
        import psycopg  # the postgres extra; only here, so the server can start without it

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # name matched _DATABASE_NAME
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        """Drop database ``name``, ending any connection still open to it (a test's leftovers)."""
        if not _DATABASE_NAME.fullmatch(name):
            raise ValueError(f"database name {name!r} is not a plain lower-case identifier")
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    # -- parts -----------------------------------------------------------------------

    @property
    def data(self) -> Path:
        assert self.folder is not None
        return self.folder / "data"

    @property
    def log(self) -> Path:
        assert self.folder is not None
        return self.folder / "server.log"

    def _log_text(self) -> str:
        if self.folder is None:
            return ""
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def _as_postgres_user(self, folder: Path) -> None:
        """As root: give the folder to the ``postgres`` account, which runs every command."""
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable(
                "running as root, and initdb refuses root, but there is no 'postgres' user to run "
                f"it as: {_INSTALL} (the package creates the user), or run the tests as another user"
            ) from None
        os.chown(folder, account.pw_uid, account.pw_gid)
        self._user = account.pw_name

    def _write_settings(self) -> None:
        assert self.folder is not None
        lines = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": _quoted(str(self.folder)),
            **{k: _quoted(v) for k, v in self.settings.items()},
        }
        conf = self.data / "postgresql.auto.conf"
        text = "".join(f"{k} = {v}\n" for k, v in lines.items())
        if self._user is None:
            conf.write_text(text)
        else:  # the file is the server account's; write it as that account
            self._run(["sh", "-c", f"cat > {shlex.quote(str(conf))}"], "writing settings", stdin=text)

    def _run(self, argv: Sequence[str], what: str, *, cwd: Path | None = None, stdin: str = "") -> None:
        command = list(argv)
        if self._user is not None:
            runuser = shutil.which("runuser")
            if runuser is not None:
                command = [runuser, "-u", self._user, "--", *command]
            else:
                command = ["su", self._user, "-s", "/bin/sh", "-c", shlex.join(command)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        try:
            done = subprocess.run(
                command,
                cwd=cwd or self.folder,  # the server account may not enter the caller's folder
                env=env,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise PostgresUnavailable(f"{what} failed: {e}") from None
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"{what} failed (exit {done.returncode}): {done.stderr.strip() or done.stdout.strip()}"
                f"\n--- server log ---\n{self._log_text()[-4000:]}"
            )


def create_schema(dsn: str, name: str) -> None:
    """Create an empty schema ``name`` (a plain identifier) in the database at ``dsn``,
    dropping one of that name first (a rerun in the same database)."""
    if not _DATABASE_NAME.fullmatch(name):
        raise ValueError(f"schema name {name!r} is not a plain lower-case identifier")
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        conn.execute(f"CREATE SCHEMA {name}")


def drop_schemas(dsn: str, names: Sequence[str]) -> None:
    """Drop the schemas ``names`` in the database at ``dsn`` with everything in them. A
    connection still open on one makes this wait, then fail (lock timeout), showing the leak."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '30s'")
        for name in names:
            if not _DATABASE_NAME.fullmatch(name):
                raise ValueError(f"schema name {name!r} is not a plain lower-case identifier")
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def _quoted(value: str) -> str:
    """A postgresql.conf string value."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
