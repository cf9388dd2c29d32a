"""The append-only event log: connection set-up, schema, the event vocabulary, append and read."""

from forkline_es.log.connection import open_connection
from forkline_es.log.eventlog import EventLog
from forkline_es.log.rows import LogRow, NewRow

__all__ = ["EventLog", "LogRow", "NewRow", "open_connection"]
