"""Settings: one YAML file plus LABLEASE_* environment overrides.

Every setting has a default that works out of the box; docs/configuration.md
lists them all (a test checks that it does).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from datetime import timedelta
from pathlib import Path

import yaml

from .domain.destinations import parse_networks
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
    gunicorn_worker_class: str = "gevent"  # or gthread, behind a proxy that buffers requests (docs/design.md)
    gunicorn_threads: int = 4  # gthread only
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
    # Networks webhooks may reach although they are not public (loopback, private...): CIDR blocks
    webhook_allowed_networks: tuple = ()
    # ks_meta variables whose values are secret besides *password*, *key*, *token*... (patterns like *_pin)
    secret_variables: tuple = ()
    # Advance reservations (docs/advance-reservations.md)
    max_advance_reservations: int = 100  # active (not exited or deleted) at once; 0 switches them off
    ar_duration_offset: str = "1m"  # work inside an AR must end this long before the AR does
    # Provisioning (docs/provisioning.md)
    secret_key: str = ""  # signs installation tokens; empty: a key generated once in data_dir/secret.key
    tftp_root: str = ""  # netboot configs are written here; empty: data_dir/tftpboot
    install_url: str = ""  # how installing machines reach this server; empty: public_url
    labs: dict = field(default_factory=dict)  # per lab: {tftp_root, install_url} overriding the two above
    kickstart_dir: str = ""  # site kickstart templates and snippets; empty: data_dir/kickstarts
    power_scripts_dir: str = ""  # scripts of the `command` power driver; empty: data_dir/power-scripts
    install_timeout: str = "1h"  # an install with no callback for this long is aborted
    command_timeout: str = "2m"  # a power or netboot command running longer is killed and counts as failed
    command_max_attempts: int = 3
    command_retry_delay: str = "10s"  # doubled after each failed attempt
    command_workers: int = 4  # commands of different systems run at once, up to this many

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

    @cached_property
    def webhook_networks(self) -> tuple:
        """webhook_allowed_networks, parsed."""
        return parse_networks(self.webhook_allowed_networks)

    @property
    def worker_max_sleep_seconds(self) -> float:
        return parse_duration(self.worker_max_sleep, "worker_max_sleep").total_seconds()

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.listen}").rstrip("/")

    def _data_path(self, value: str, default: str) -> Path:
        return Path(value) if value else Path(self.data_dir) / default

    def tftp_root_for(self, lab: str | None) -> Path:
        """The TFTP root netboot configs of a system in this lab are written to."""
        return self._data_path(self.labs.get(lab or "", {}).get("tftp_root") or self.tftp_root, "tftpboot")

    def install_url_for(self, lab: str | None) -> str:
        """The base URL an installing machine in this lab reaches the server at (e.g. 10.0.2.2 under QEMU)."""
        return (self.labs.get(lab or "", {}).get("install_url") or self.install_url or self.base_url).rstrip("/")

    @property
    def kickstart_path(self) -> Path:
        return self._data_path(self.kickstart_dir, "kickstarts")

    @property
    def power_scripts_path(self) -> Path:
        return self._data_path(self.power_scripts_dir, "power-scripts")


def _coerce(name: str, kind, raw):
    if kind is bool or kind == "bool":
        if isinstance(raw, bool):
            return raw
        if str(raw).lower() in ("1", "true", "yes", "on"):
            return True
        if str(raw).lower() in ("0", "false", "no", "off", ""):
            return False
        raise Invalid(name, f"{raw!r} is not true or false")
    if kind is dict or kind == "dict":
        return _lab_settings(name, yaml.safe_load(raw) if isinstance(raw, str) else raw)
    if kind is tuple or kind == "tuple":
        return _list(name, raw)
    if kind is int or kind == "int":
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise Invalid(name, f"{raw!r} is not a whole number") from None
    return "" if raw is None else str(raw)


def _list(name: str, raw) -> tuple:
    """A list: a YAML list, or text separated by commas or spaces (the environment)."""
    values = raw.replace(",", " ").split() if isinstance(raw, str) else (raw or [])
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, (str, int, float)) for v in values):
        raise Invalid(name, "must be a list (in the environment: separated by commas or spaces)")
    return tuple(str(v) for v in values)


LAB_KEYS = ("tftp_root", "install_url")


def _lab_settings(name: str, labs) -> dict:
    """labs: {lab name: {tftp_root?, install_url?}} (from YAML, or YAML/JSON text in the environment)."""
    labs = labs or {}
    if not isinstance(labs, dict) or not all(isinstance(v, dict) for v in labs.values()):
        raise Invalid(name, "must map lab names to {tftp_root, install_url}")
    for lab, values in labs.items():
        unknown = sorted(set(values) - set(LAB_KEYS))
        if unknown:
            raise Invalid(name, f"lab {lab}: unknown key(s) {', '.join(unknown)}; known: {', '.join(LAB_KEYS)}")
    return {str(lab): {k: str(v) for k, v in values.items()} for lab, values in labs.items()}


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
    if settings.gunicorn_worker_class not in WORKER_CLASSES:
        raise Invalid("gunicorn_worker_class", f"{settings.gunicorn_worker_class!r} is not one of: "
                                               f"{', '.join(WORKER_CLASSES)}")
    settings.reservation_policy  # noqa: B018 - validates the durations now, not on first use
    for name in DURATIONS:
        settings.duration(name)
    try:
        settings.webhook_networks  # noqa: B018 - validated now, like the durations
    except ValueError as error:
        raise Invalid("webhook_allowed_networks", str(error).partition(": ")[2]) from None
    return settings


WORKER_CLASSES = ("gevent", "gthread")
DURATIONS = ("worker_max_sleep", "default_loan_duration", "warn_before", "warn_before_short",
             "outbox_retry_delay", "webhook_timeout", "install_timeout", "command_timeout", "ar_duration_offset",
             "command_retry_delay")

