"""Extend and return take SQLite's write lock (PostgreSQL: their writing transaction) at the read that is their
check, and hold it to the commit: reading the caller's token happens before, in a transaction that ended. A
heartbeat reads without a lock and its writing transaction is its one conditional UPDATE."""
import pytest
from sqlalchemy import event

from lablease.config import Settings

from .conftest import Lab


@pytest.fixture
def watched(db, tmp_path):
    """A lab that reads every token (no cache), and the database's transactions and statements as they run."""
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), token_cache_seconds=None))
    log = []
    engines = {"writer": db.writer} if db.reader is db.writer else {"writer": db.writer, "reader": db.reader}
    for tag, engine in engines.items():
        event.listen(engine, "begin", lambda conn, tag=tag: log.append(("begin", tag)))
        event.listen(engine, "commit", lambda conn, tag=tag: log.append(("end", tag)))
        event.listen(engine, "rollback", lambda conn, tag=tag: log.append(("end", tag)))
        event.listen(engine, "before_cursor_execute",
                     lambda conn, cursor, sql, *rest, tag=tag: log.append(("sql", tag, " ".join(sql.split()))))
    return lab, log


def _first(log, start, match):
    return next(i for i in range(start, len(log)) if match(log[i]))


@pytest.mark.parametrize("method, path, body, answer", [
    ("PATCH", "/reservations/{id}", {"extend_by": "1h"}, 200),
    ("DELETE", "/reservations/{id}", None, 204),
])
def test_the_lock_spans_the_read_to_the_commit(watched, method, path, body, answer):
    lab, log = watched
    lab.system()
    _, made = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h", "heartbeat": "10m"})
    log.clear()
    status, _ = lab.alice.call(method, path.format(id=made["id"]), body)
    assert status == answer

    token = _first(log, 0, lambda e: e[0] == "sql" and "FROM tokens" in e[2])
    read = _first(log, token, lambda e: e[0] == "sql" and "FROM reservations" in e[2])
    locked_by = log[read][1]
    began = max(i for i in range(read) if log[i] == ("begin", locked_by))
    # The token was read in a transaction that ended before the locked one began ...
    assert any(log[i] == ("end", log[token][1]) for i in range(token, began)), log
    if lab.db.dialect == "sqlite":  # ... and not under the write lock
        assert (log[token][1], locked_by) == ("reader", "writer")
    # ... and the locked transaction holds from the read through the writes to its commit.
    ended = _first(log, read, lambda e: e == ("end", locked_by))
    assert any(e[0] == "sql" and e[2].startswith(("UPDATE", "DELETE")) for e in log[read:ended]), log[read:ended]


def _transactions(log) -> list[list[str]]:
    """The statements of each transaction, in order (BEGIN and COMMIT left out)."""
    found, current = [], None
    for entry in log:
        if entry[0] == "begin":
            current = []
        elif entry[0] == "end" and current is not None:
            found.append(current)
            current = None
        elif entry[0] == "sql" and current is not None and not entry[2].startswith("BEGIN"):
            current.append(entry[2])
    return found


def test_a_heartbeat_writes_in_a_transaction_of_one_statement(watched):
    lab, log = watched
    lab.system()
    _, made = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h", "heartbeat": "10m"})
    log.clear()
    lab.clock.advance(minutes=3)
    status, beat = lab.alice.post(f"/reservations/{made['id']}/heartbeat")
    assert status == 200 and beat["due"] == "2026-11-22T12:13:00Z"
    writing = [t for t in _transactions(log) if any(sql.startswith("UPDATE") for sql in t)]
    assert len(writing) == 1 and len(writing[0]) == 1, writing  # the UPDATE alone: nothing read under the lock
    assert writing[0][0].startswith("UPDATE reservations")
    assert lab.alice.get(f"/reservations/{made['id']}")[1]["due"] == "2026-11-22T12:13:00Z"


def test_a_heartbeat_decided_on_what_changed_meanwhile_writes_nothing(watched):
    """The conditional UPDATE misses when the reservation changed between the read and the write (here an
    extension); the service then decides again under the lock."""
    from lablease.domain.lease import decide_heartbeat
    from lablease.store import lease_rows
    from lablease.store.uow import UnitOfWork

    lab, _ = watched
    lab.system()
    _, made = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h", "heartbeat": "10m"})
    with UnitOfWork(lab.db, write=False) as uow:
        seen = lease_rows.read(uow.session, lease_rows.HEARTBEAT_PEEK, made["id"])
    assert lab.alice.patch(f"/reservations/{made['id']}", {"extend_by": "1h"})[0] == 200
    with UnitOfWork(lab.db) as uow:
        assert not lease_rows.beat_if_unchanged(uow.session, seen, decide_heartbeat(seen, lab.clock()))
        uow.commit()
    with UnitOfWork(lab.db) as uow:  # as it is now, it goes through
        now_seen = lease_rows.read(uow.session, lease_rows.HEARTBEAT_PEEK, made["id"])
        assert lease_rows.beat_if_unchanged(uow.session, now_seen, decide_heartbeat(now_seen, lab.clock()))
        uow.commit()
