"""SQLite's writers of one process queue on the process's lock (store/db.py): every writer gets its turn, and the
lock is handed on however a transaction ends — commit, rollback, or a connection thrown away."""
import threading

import pytest
from sqlalchemy import text

from lablease.store.db import Database


@pytest.fixture
def sqlite(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'writers.db'}")
    with db.writer.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE log (id INTEGER PRIMARY KEY, who TEXT NOT NULL)")
    yield db
    db.dispose()


def count(db) -> int:
    with db.reader.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM log")).scalar_one()


def test_concurrent_writers_all_get_their_turn(sqlite):
    errors, barrier = [], threading.Barrier(8)

    def writer(n):
        barrier.wait()
        try:
            for i in range(25):
                with sqlite.writer.begin() as conn:
                    conn.execute(text("INSERT INTO log (who) VALUES (:who)"), {"who": f"{n}-{i}"})
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and count(sqlite) == 200


def test_a_rolled_back_writer_hands_the_lock_on(sqlite):
    with pytest.raises(RuntimeError):
        with sqlite.writer.begin() as conn:
            conn.execute(text("INSERT INTO log (who) VALUES ('lost')"))
            raise RuntimeError("the use case failed")
    with sqlite.writer.begin() as conn:  # would wait out the busy timeout and fail if the lock stayed taken
        conn.execute(text("INSERT INTO log (who) VALUES ('next')"))
    assert count(sqlite) == 1


def test_a_connection_thrown_away_mid_transaction_hands_the_lock_on(sqlite):
    conn = sqlite.writer.connect()
    conn.begin()
    conn.execute(text("INSERT INTO log (who) VALUES ('lost')"))
    conn.invalidate()  # e.g. the database failed under it
    conn.close()
    with sqlite.writer.begin() as other:
        other.execute(text("INSERT INTO log (who) VALUES ('next')"))
    assert count(sqlite) == 1
