"""Telling a database outage from a bug.

An outage is the database failing for reasons of its own: PostgreSQL down or
restarting (a refused connection, a connection it terminated), every
connection slot taken, SQLite's disk full or its write lock held too long,
a write reaching a read-only server (a standby: mid-failover, or named by a
wrong URL).
None of that says anything about the request or the item being handled: the
API answers 503 with Retry-After (the same request will work once the
database is back) and the worker logs one line and backs off. Anything else
that raises is a bug: a 500 with an error id, or an item parked by the worker.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout


@dataclass(frozen=True)
class Outage:
    kind: str  # the problem type's last word: database-unavailable, disk-full, too-many-connections, busy,
    # database-read-only
    title: str
    detail: str
    retry_after: int  # seconds, for the Retry-After header
    away: bool = True  # the whole database is away (False: contention on some rows, which others may not meet)


UNAVAILABLE = Outage("database-unavailable", "Database unavailable",
                     "the database cannot be reached or lost the connection (restarting?); retry shortly", 2)
DISK_FULL = Outage("disk-full", "Database disk full",
                   "the database cannot write: its disk is full (or failing); nothing was changed, retry once space is freed", 5)
TOO_MANY = Outage("too-many-connections", "Too many database connections",
                  "every database connection is in use; nothing was changed, retry shortly", 2)
READ_ONLY = Outage("database-read-only", "Database read-only",
                   "the database refused to write: it is a read-only standby (a failover not yet done, or the "
                   "server's database_url names a standby); nothing was changed, retry shortly", 2)
BUSY = Outage("busy", "Service busy", "the database is busy; nothing was changed, retry shortly", 1, away=False)

READ_ONLY_SQLSTATE = "25006"  # PostgreSQL's read_only_sql_transaction (psycopg's InternalError, not operational)

# The database's own words (SQLite's, PostgreSQL's and psycopg's messages), most specific first.
_MESSAGES = (
    (("read-only transaction", "attempt to write a readonly database"), READ_ONLY),
    (("database or disk is full", "disk i/o error", "no space left on device", "could not extend file",
      "could not write"), DISK_FULL),
    (("too many clients", "too many connections", "remaining connection slots"), TOO_MANY),
    (("database is locked", "deadlock detected", "could not serialize", "lock timeout",
      "canceling statement due to statement timeout"), BUSY),
)


def outage(error: BaseException) -> Outage | None:
    """The outage this error shows, or None when it is not one (a bug, or a refusal of the request)."""
    if isinstance(error, PoolTimeout):  # this process's own pool is exhausted: its connections are all in use
        return TOO_MANY
    if getattr(getattr(error, "orig", None), "sqlstate", None) == READ_ONLY_SQLSTATE:
        return READ_ONLY
    if not isinstance(error, (OperationalError, InterfaceError)) and not (
            isinstance(error, DBAPIError) and error.connection_invalidated):
        return None
    text = str(getattr(error, "orig", None) or error).lower()
    for needles, found in _MESSAGES:
        if any(needle in text for needle in needles):
            return found
    return UNAVAILABLE  # a refused, closed or terminated connection, and any other operational failure


def reason(error: BaseException) -> str:
    """The database's own message, first line (SQLAlchemy's adds lines about the statement and autoflush)."""
    cause = getattr(error, "orig", None) or error
    return (str(cause).strip() or type(cause).__name__).splitlines()[0]
