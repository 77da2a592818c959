"""Which database errors are outages (503 with Retry-After, the worker backs off) and which are bugs."""
import sqlite3

import pytest
from sqlalchemy.exc import IntegrityError, InterfaceError, InternalError, OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from lablease.store.outage import BUSY, DISK_FULL, READ_ONLY, TOO_MANY, UNAVAILABLE, outage, reason


def operational(message: str) -> OperationalError:
    return OperationalError("INSERT INTO reservations ...", {}, sqlite3.OperationalError(message))


@pytest.mark.parametrize("message, expected", [
    ("database or disk is full", DISK_FULL),  # SQLite
    ("could not extend file \"base/16384/2619\": No space left on device", DISK_FULL),  # PostgreSQL
    ("FATAL:  sorry, too many clients already", TOO_MANY),
    ("FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute", TOO_MANY),
    ("database is locked", BUSY),
    ("deadlock detected", BUSY),
    ("connection failed: Connection refused\n\tIs the server running on that host?", UNAVAILABLE),
    ("terminating connection due to administrator command", UNAVAILABLE),
    ("the database system is shutting down", UNAVAILABLE),
])
def test_database_failures_are_outages_by_their_message(message, expected):
    assert outage(operational(message)) is expected


def test_a_write_on_a_read_only_server_is_an_outage():
    """A standby (mid-failover, or named by a wrong URL): PostgreSQL's read_only_sql_transaction is an InternalError
    in psycopg, told by its SQLSTATE; SQLite's read-only file by its message."""
    import psycopg

    refused = psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction")
    assert refused.sqlstate == "25006"
    assert outage(InternalError("INSERT INTO systems ...", {}, refused)) is READ_ONLY
    assert outage(operational("attempt to write a readonly database")) is READ_ONLY


def test_a_closed_connection_and_an_exhausted_pool_are_outages():
    assert outage(InterfaceError("SELECT 1", {}, Exception("the connection is closed"))) is UNAVAILABLE
    assert outage(PoolTimeout("QueuePool limit of size 8 overflow 16 reached")) is TOO_MANY


@pytest.mark.parametrize("error", [
    IntegrityError("INSERT ...", {}, Exception("UNIQUE constraint failed: users.name")),
    ProgrammingError("SELECT nope", {}, Exception("no such column: nope")),
    KeyError("field"), ValueError("bad"),
])
def test_bugs_and_refusals_are_not_outages(error):
    assert outage(error) is None


def test_only_contention_leaves_the_rest_of_the_database_usable():
    assert [o.away for o in (UNAVAILABLE, DISK_FULL, TOO_MANY, READ_ONLY, BUSY)] == [True, True, True, True, False]
    assert {o.retry_after for o in (UNAVAILABLE, DISK_FULL, TOO_MANY, READ_ONLY, BUSY)} <= set(range(1, 10))


def test_the_reason_is_the_database_s_first_line():
    assert reason(operational("connection refused\n\tIs the server running?")) == "connection refused"
