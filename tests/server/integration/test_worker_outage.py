"""The worker when its database is away: one line per failed pass, a doubling pause, never an exception.

(Coming back once the database does is shown through real processes: tests/e2e/test_chaos.py.)
"""
import logging

from lablease.config import Settings
from lablease.store.db import Database
from lablease.worker.loop import MAX_BACKOFF, Worker
from tests.support.postgres import free_port


def test_a_worker_whose_database_is_unreachable_backs_off_and_logs_one_line_a_pass(tmp_path, caplog):
    db = Database(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nothing_listens_here")
    worker = Worker(Settings(data_dir=str(tmp_path), secret_key="k"), db)
    try:
        with caplog.at_level(logging.WARNING, logger="lablease.worker"):
            pauses = [worker.run_pass() for _ in range(6)]
    finally:
        worker.commands.stop()
        db.dispose()
    assert pauses == [0.5, 1.0, 2.0, 4.0, MAX_BACKOFF, MAX_BACKOFF]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 6, lines
    assert all(line.startswith("worker pass failed (database unavailable: ") for line in lines), lines
    assert not any(r.exc_info for r in caplog.records), "an outage is no bug: no traceback"
    assert not worker.recovered  # taking back what a stopped worker left waits for the database
