"""The server's Prometheus instruments, in multiprocess mode under `serve`.

gunicorn's API processes and the background worker each write their counters
and histograms to files in one directory (prometheus-client's multiprocess
mode, `PROMETHEUS_MULTIPROC_DIR`); a scrape of any API process adds them all
up. `serve` prepares the directory under the data dir before anything forks
(files of processes no longer running are removed) and marks each process that
exits dead. What the database holds (reservations, queues, systems) is not
kept here: it is read when scraped (services/reads/monitoring.py).

Instruments are made on first use, not at import: multiprocess mode must be
chosen before the first metric exists, and this module may be imported before
`serve` has chosen it.
"""
from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client import multiprocess

ENV = "PROMETHEUS_MULTIPROC_DIR"
_PID = re.compile(r"_(\d+)\.db$")

# Seconds: requests and scheduler events are quick; expiries may be late by minutes when the worker is down.
FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LATE = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)


def directory_for(data_dir: str) -> Path:
    return Path(data_dir).resolve() / "metrics"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prepare(data_dir: str) -> Path:
    """Create the directory, drop the files of processes that are gone, and use it from now on.

    Files of running processes stay: a `lablease-server worker` run apart on this host keeps its counts.
    """
    path = directory_for(data_dir)
    path.mkdir(parents=True, exist_ok=True)
    clean(path)
    use(path)
    return path


def clean(path: Path) -> None:
    """Remove the files of processes that no longer run (named `<kind>_<pid>.db` by prometheus-client)."""
    for file in path.glob("*.db"):
        match = _PID.search(file.name)
        if match is None or not _alive(int(match.group(1))):
            file.unlink(missing_ok=True)


def use(path: Path) -> None:
    """Multiprocess mode into path, for this process and the ones it starts."""
    path.mkdir(parents=True, exist_ok=True)
    os.environ[ENV] = str(path)
    values.ValueClass = values.MultiProcessValue()
    instruments.cache_clear()


def directory() -> str | None:
    return os.environ.get(ENV)


def mark_dead(pid: int) -> None:
    """A process exited: its live gauges no longer count (counters and histograms keep their totals)."""
    if directory():
        multiprocess.mark_process_dead(pid, directory())


@cache
def instruments() -> SimpleNamespace:
    # Multiprocess: the files are the registry (read by MultiProcessCollector). Otherwise (in-process
    # tests, a worker thread) a registry of this process's own.
    registry = None if directory() else CollectorRegistry()
    made = _made(registry)
    made.registry = registry
    return made


def exposition(*collectors) -> bytes:
    """The text format of every process's instruments, plus the given collectors (read now)."""
    registry = CollectorRegistry()
    if directory():
        multiprocess.MultiProcessCollector(registry, directory())
    else:
        registry.register(_Own(instruments().registry))
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry)


class _Own:
    def __init__(self, registry: CollectorRegistry):
        self.registry = registry

    def collect(self):
        return self.registry.collect()


def _made(registry) -> SimpleNamespace:
    return SimpleNamespace(
        requests=Counter("lablease_http_requests_total", "HTTP requests answered, by route (the rule, not the path)",
                         ["route", "method", "status"], registry=registry),
        latency=Histogram("lablease_http_request_duration_seconds", "Time to answer an HTTP request",
                          ["route", "method", "status"], buckets=FAST,
                          registry=registry),
        in_progress=Gauge("lablease_http_requests_in_progress", "Requests being answered",
                          multiprocess_mode="livesum", registry=registry),
        lateness=Histogram("lablease_worker_due_lateness_seconds",
                           "How long after its due time the worker handled an item (expiry, warning...)",
                           ["kind"], buckets=LATE, registry=registry),
        passes=Histogram("lablease_worker_pass_duration_seconds", "Duration of one worker pass", buckets=FAST,
                         registry=registry),
        last_pass=Gauge("lablease_worker_last_pass_timestamp_seconds", "When a running worker last finished a pass",
                        multiprocess_mode="livemax", registry=registry),
        commands=Counter("lablease_commands_total", "Power and netboot commands carried out, by driver and outcome",
                         ["driver", "action", "outcome"], registry=registry),
        deliveries=Counter("lablease_outbox_deliveries_total", "Outbox delivery attempts by channel and outcome",
                           ["channel", "outcome"], registry=registry),
        events=Histogram("lablease_scheduler_event_duration_seconds",
                         "Time spent handling one event (new recipe set, system freed...)", ["event"], buckets=FAST, registry=registry),
    )


@contextmanager
def timed(histogram, **labels):
    started = time.perf_counter()
    try:
        yield
    finally:
        (histogram.labels(**labels) if labels else histogram).observe(time.perf_counter() - started)
