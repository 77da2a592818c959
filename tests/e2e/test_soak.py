"""Two minutes of bench/soak.py's mixed load on SQLite and PostgreSQL at once: no error, no memory growth.

The soak on demand runs 30 minutes and measures growth after its first 5 (docs/performance.md, "Soak");
here each row covers 30 s and growth is measured after the first 30 s, against the last 90 s. The CI
jobs are a tenth of the full 500 heartbeating every 30 s. Latency is printed, not asserted: the suite
shares its cores with everything else it runs. Fewer people (3 and 2 letting theirs expire, not 8 and 4)
keep the set-up short: each user is made by the real `lablease-server user add`.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import soak  # noqa: E402 - bench/soak.py

SECONDS, WARMUP, EVERY, SCALE = 120, 30, 30, 0.1


def test_two_minutes_of_mixed_load_on_both_databases(tmp_path, postgres):
    urls = {"sqlite": f"sqlite:///{tmp_path / 'soak.db'}", "postgresql": postgres.create_database("soak_test")}
    results, failures = {}, []

    def run(name: str) -> None:
        try:
            results[name] = soak.soak(name, urls[name], tmp_path / name, SECONDS, WARMUP, SCALE, EVERY,
                                      people=3, expiring=2)
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread below
            failures.append((name, repr(error)))

    threads = [threading.Thread(target=run, args=(name,)) for name in urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SECONDS + 120)
    assert failures == [] and set(results) == set(urls), failures
    for name, found in results.items():
        assert found["errors"] == 0, (name, found["error_samples"])
        assert found["rss_growth"] <= 0.10, (name, [row["rss"] for row in found["minutes"]])
        assert found["webhooks"] > 0 and found["expired"] > 0, name  # the worker's side of the load ran too
