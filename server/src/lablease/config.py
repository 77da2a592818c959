"""Settings: one YAML file plus LABLEASE_* environment overrides.

Every setting has a default that works out of the box; docs/configuration.md
lists them all (a test checks that it does).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from functools import cached_property
from datetime import timedelta
from pathlib import Path

import yaml

from .domain.errors import Invalid
from .domain.reservations import ReservationPolicy
from .timeparse import parse_duration


@dataclass(frozen=True)
class Settings:
    data_dir: str = "./.lablease"
    database_url: str = ""  # default: SQLite file in data_dir
    listen: str = "127.0.0.1:8042"
    public_url: str = ""  # how clients reach the API; default http://<listen>
    default_reservation_duration: str = "24h"
    max_reservation_duration: str = ""  # empty: no maximum
    allow_unlimited_reservations: bool = False
    max_body_bytes: int = 1024 * 1024
    gunicorn_workers: int = 2
    gunicorn_threads: int = 4
    worker_max_sleep: str = "5m"  # the worker sleeps until the next due time, at most this long
    log_level: str = "info"
    default_loan_duration: str = "7d"  # when a loan is asked to be limited without a duration
    warn_before: str = "24h"
    warn_before_short: str = "1h"  # for reservations and loans shorter than twice warn_before
    smtp_host: str = ""  # empty: no mail is sent (webhooks still are)
    smtp_port: int = 25
    smtp_from: str = "lablease@localhost"
    smtp_user: str = ""
    smtp_password: str = ""
    smtp_starttls: bool = False
    outbox_max_attempts: int = 8
    outbox_retry_delay: str = "30s"  # doubled after each failed attempt
    webhook_timeout: str = "10s"

    @property
    def database(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{Path(self.data_dir).resolve() / 'lablease.db'}"

    @cached_property
    def reservation_policy(self) -> ReservationPolicy:
        maximum = self.max_reservation_duration
        return ReservationPolicy(
            default_duration=parse_duration(self.default_reservation_duration, "default_reservation_duration"),
            max_duration=parse_duration(maximum, "max_reservation_duration") if maximum else None,
            allow_unlimited=self.allow_unlimited_reservations,
        )

    def duration(self, name: str) -> timedelta:
        """A duration setting, parsed (the name is in any error)."""
        cache = self.__dict__.setdefault("_durations", {})
        if name not in cache:
            cache[name] = parse_duration(getattr(self, name), name)
        return cache[name]

    @property
    def worker_max_sleep_seconds(self) -> float:
        return parse_duration(self.worker_max_sleep, "worker_max_sleep").total_seconds()

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.listen}").rstrip("/")


def _coerce(name: str, kind, raw):
    if kind is bool or kind == "bool":
        if isinstance(raw, bool):
            return raw
        if str(raw).lower() in ("1", "true", "yes", "on"):
            return True
        if str(raw).lower() in ("0", "false", "no", "off", ""):
            return False
        raise Invalid(name, f"{raw!r} is not true or false")
    if kind is int or kind == "int":
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise Invalid(name, f"{raw!r} is not a whole number") from None
    return "" if raw is None else str(raw)


def load_settings(config_file: str | None = None, environ: dict | None = None) -> Settings:
    """Defaults, then the YAML file, then LABLEASE_<NAME> variables."""
    environ = os.environ if environ is None else environ
    config_file = config_file or environ.get("LABLEASE_CONFIG")
    known = {f.name: f.type for f in fields(Settings)}
    values: dict = {}
    if config_file:
        with open(config_file, encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle) or {}
        if not isinstance(loaded, dict):
            raise Invalid("config", f"{config_file} must hold a mapping of settings")
        unknown = sorted(set(loaded) - set(known))
        if unknown:
            raise Invalid("config", f"unknown setting(s) in {config_file}: {', '.join(unknown)}")
        values.update(loaded)
    for name in known:
        env_name = f"LABLEASE_{name.upper()}"
        if env_name in environ:
            values[name] = environ[env_name]
    settings = replace(Settings(), **{k: _coerce(k, known[k], v) for k, v in values.items()})
    settings.reservation_policy  # noqa: B018 - validates the durations now, not on first use
    for name in DURATIONS:
        settings.duration(name)
    return settings


DURATIONS = ("worker_max_sleep", "default_loan_duration", "warn_before", "warn_before_short",
             "outbox_retry_delay", "webhook_timeout")

