"""The append-only event log: the storage seam and its backends, schema, vocabulary, append, read."""

from forkline_es.log.backend import Backend, Cursor, Dialect
from forkline_es.log.connection import open_connection
from forkline_es.log.eventlog import EventLog
from forkline_es.log.rows import LogRow, NewRow

__all__ = ["Backend", "Cursor", "Dialect", "EventLog", "LogRow", "NewRow", "open_connection"]
