"""What makes settings usable, checked in one place when a Settings is made.

A value of the right type can still not work: `listen: localhost` has no port
(gunicorn then binds 8000), `gunicorn_workers: 0` serves nobody, a maximum
reservation shorter than the default one refuses every plain reserve. Each
such setting is refused when the settings are loaded — so by every
`lablease-server` command, the server and the worker at start — with a line
naming the setting and why (docs/configuration.md, "Checks").

Two kinds of check: of one value (`check=` and `minimum=` of a setting in
settings.py, run right after the value is typed) and between settings
(TOGETHER below, run once every value is typed).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from ..domain.errors import Invalid
from ..domain.times import format_human


def address(name: str, value: str) -> str:
    """`HOST:PORT` as gunicorn binds it (an IPv6 host in brackets); the port is required."""
    host, _, port = value.rpartition(":")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or ":" in host and bare == host or not port.isdigit() or not 0 < int(port) < 65536:
        raise Invalid(name, f"{value!r} is not HOST:PORT with a port from 1 to 65535 "
                            "(e.g. 127.0.0.1:8042, 0.0.0.0:8042 or [::1]:8042)")
    return value


def optional_address(name: str, value: str) -> str:
    return value and address(name, value)


def http_url(name: str, value: str) -> str:
    """Empty, or an http(s) URL with a host: it is written into netboot configs, kickstarts and links."""
    if value and (urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname):
        raise Invalid(name, f"{value!r} is not an http:// or https:// URL with a host "
                            "(e.g. https://lablease.example.com)")
    return value


def ldap_url(name: str, value: str) -> str:
    """Empty, or ldap:// or ldaps:// with a host (a directory on this host is named too: 127.0.0.1)."""
    if value and (urlsplit(value).scheme not in ("ldap", "ldaps") or not urlsplit(value).hostname
                  or urlsplit(value).path not in ("", "/")):
        raise Invalid(name, f"{value!r} is not ldap://HOST[:PORT] or ldaps://HOST[:PORT]")
    return value


def principal_map(name: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """Each entry PRINCIPAL=USER with a realm in the principal (the same name in two realms is two people)."""
    for entry in values:
        principal, _, user = entry.rpartition("=")
        if "@" not in principal or not user:
            raise Invalid(name, f"{entry!r} is not PRINCIPAL@REALM=USER (e.g. alice/admin@EXAMPLE.COM=alice)")
    return values


def lab_urls(name: str, labs: dict) -> dict:
    for lab, values in labs.items():
        http_url(f"{name}.{lab}.install_url", values.get("install_url", ""))
    return labs


DATABASES = "postgresql+psycopg://USER:PASSWORD@HOST/DATABASE for PostgreSQL, sqlite:////PATH/lablease.db for SQLite"


def database_url(name: str, value: str) -> str:
    """Empty (SQLite in data_dir), or a URL of a database and driver lablease installs. The value is never
    repeated in the message: it may hold a password."""
    if not value:
        return value
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        driver = make_url(value).drivername
    except ArgumentError:
        raise Invalid(name, f"is not a database URL; write {DATABASES}") from None
    if driver in ("postgres", "postgresql") or driver.startswith(("postgres+", "postgresql+")) and \
            driver != "postgresql+psycopg":
        raise Invalid(name, f"{driver}:// is not a driver lablease uses: for PostgreSQL write "
                            "postgresql+psycopg://USER:PASSWORD@HOST/DATABASE (psycopg 3, which lablease installs)")
    if driver not in ("postgresql+psycopg", "sqlite", "sqlite+pysqlite"):
        raise Invalid(name, f"{driver}:// is not a database lablease runs on; write {DATABASES}")
    return value


def database_read_url(name: str, value: str) -> str:
    """Empty, or a PostgreSQL URL (a standby's): SQLite has nothing to read from but its one file."""
    value = database_url(name, value)
    if value and not value.startswith("postgresql+psycopg"):
        raise Invalid(name, "names a standby to read from, which only PostgreSQL has: write "
                            "postgresql+psycopg://USER:PASSWORD@HOST/DATABASE (or leave it empty)")
    return value


def _read_url_beside_postgresql(settings) -> None:
    if settings.database_read_url and not settings.database_url.startswith("postgresql+psycopg"):
        raise Invalid("database_read_url", "is a standby of a PostgreSQL database, but database_url is not one "
                                           "(set database_url to the primary, or leave database_read_url empty)")


def _at_most(longer: str, shorter: str, why: str):
    """`shorter` (when set) may not be longer than `longer` (when set)."""
    def rule(settings) -> None:
        low, high = getattr(settings, shorter), getattr(settings, longer)
        if low is not None and high is not None and high < low:
            raise Invalid(longer, f"{format_human(high)} is shorter than {shorter} ({format_human(low)}): {why}")
    return rule


def _not_with_unlimited(maximum: str, why: str):
    def rule(settings) -> None:
        if settings.allow_unlimited_reservations and getattr(settings, maximum) is not None:
            raise Invalid("allow_unlimited_reservations", f"cannot be true while {maximum} "
                                                          f"({format_human(getattr(settings, maximum))}) is set: {why}")
    return rule


def _listeners_differ(settings) -> None:
    if settings.metrics_listen and settings.metrics_listen == settings.listen:
        raise Invalid("metrics_listen", f"is listen's address ({settings.listen}): the scraper's listener needs an "
                                        "address of its own (or leave it empty)")


# Rules between settings: each refuses a combination that cannot work, naming the setting to change.
TOGETHER = (
    _at_most("max_reservation_duration", "default_reservation_duration",
             "every reservation made without a duration would be refused; raise the maximum or lower the default"),
    _at_most("max_hold_per_user", "default_reservation_duration",
             "a user's first reservation made without a duration would be refused; raise it or lower the default"),
    _not_with_unlimited("max_reservation_duration", "an unlimited reservation is longer than any maximum; "
                                                    "unset one of the two"),
    _not_with_unlimited("max_hold_per_user", "an unlimited reservation never fits in a maximum hold; "
                                             "unset one of the two"),
    _at_most("warn_before", "warn_before_short", "the lead time of short reservations and loans would be the "
                                                 "longer one; make warn_before_short the shorter"),
    _listeners_differ,
    _read_url_beside_postgresql,
)


def check_together(settings) -> None:
    for rule in TOGETHER:
        rule(settings)
