"""Every setting, in one place: its type (the annotation), default, unit and documentation.

Adding a setting is one `setting(...)` line here; docs/configuration.md's table
is generated from these (`python -m lablease.config.reference --write`, and
tests/server/unit/test_docs.py fails until it is). Values are typed when a
Settings is made: durations are timedeltas, lists tuples, networks parsed.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Callable, get_type_hints

from ..domain.destinations import Network
from ..domain.errors import Invalid
from ..domain.reservations import ReservationPolicy
from . import checks
from .kinds import KINDS, WHOLE_NUMBER, Kind, as_text


def hidden(value) -> str:
    """A secret, as `config show` prints it: whether it is set, never what it is."""
    return "********" if value else ""


def url_without_password(url: str) -> str:
    """A database URL with its password hidden (`config show`, `init`'s message)."""
    if not url:
        return url
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # not a URL SQLAlchemy reads: nothing in it can be told safe to show
        return hidden(url)


def setting(default, doc: str, *, unit: str = "", empty: str = "", mask: Callable | None = None,
            choices: tuple = (), minimum: int | None = None, maximum: int | None = None,
            check: Callable | None = None):
    """A setting's field: `default` as the file would write it; `doc` (markdown) says what it does;
    `unit` follows the type in the docs; `empty` says what an empty value means; `mask` hides a secret;
    `choices`, when given, are the only values it takes; a whole number says its `minimum` (and any
    `maximum`); `check(name, value)` returns the typed value if it can work, else raises Invalid
    (config/checks.py, where the rules between settings are too)."""
    metadata = {"doc": doc, "unit": unit, "empty": empty, "mask": mask, "choices": choices, "minimum": minimum,
                "maximum": maximum, "check": check}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Settings:
    data_dir: str = setting("./.lablease", (
        "where the SQLite database, the site key and (by default) the TFTP root, kickstarts and power scripts "
        "live; `init` creates it with mode 0700 (the database and key 0600)"))
    database_url: str = setting("", "SQLAlchemy URL; `postgresql+psycopg://user:pw@host/db` for PostgreSQL",
                                empty="SQLite file `lablease.db` in `data_dir`", mask=url_without_password,
                                check=checks.database_url)
    database_read_url: str = setting("", (
        "PostgreSQL URL of a read-only standby that answers the API's lists and the web pages (which may then be "
        "a moment behind the primary: docs/deployment.md, \"PostgreSQL with a standby\"); every write, and every "
        "read a write decides on, goes to `database_url`"), empty="lists and pages read `database_url`",
        mask=url_without_password, check=checks.database_read_url)
    listen: str = setting("127.0.0.1:8042", "`HOST:PORT` that `serve` binds", check=checks.address)
    public_url: str = setting("", "how clients reach the API (written into the OpenAPI `servers`)",
                              empty="`http://<listen>`", check=checks.http_url)
    default_reservation_duration: timedelta = setting(
        "24h", "length of a reservation made without `duration` or `end`")
    max_reservation_duration: timedelta | None = setting(
        "", "longest reservation (and extension) anybody may ask for", empty="no maximum")
    allow_unlimited_reservations: bool = setting(
        False, "whether `duration: unlimited` is accepted (never together with a maximum)")
    require_purpose: bool = setting(False, (
        "whether manual reservations and loans must give a `purpose` (refused with 422 naming it otherwise); "
        "the purpose is shown with the holder ([access](access.md#purpose-and-maximum-hold))"))
    max_hold_per_user: timedelta | None = setting("", (
        "the most a user may hold at once: the sum of their open manual reservations' remaining time; a "
        "reservation or extension past it is refused with 409 ([access](access.md#purpose-and-maximum-hold))"),
        empty="no maximum")
    max_body_bytes: int = setting(1024 * 1024, "larger request bodies get 413", unit="bytes", minimum=1)
    gunicorn_workers: int = setting(2, "API processes under `serve`", unit="processes", minimum=1)
    gunicorn_worker_class: str = setting("gevent", (
        "how `serve`'s API processes take connections: `gevent` (a slow or idle client costs a greenlet, never a "
        "turn of the application) or `gthread` (threads; only behind a proxy that buffers whole requests) — "
        "[design](design.md#serving)"), choices=("gevent", "gthread"))
    gunicorn_threads: int = setting(4, "threads per API process under `gthread` (more SQLite writers hurt the "
                                       "tail latency)", unit="threads", minimum=1)
    gunicorn_keepalive: timedelta = setting("7s", (
        "how long an idle kept-alive connection stays open (whole seconds, rounded up), and (gevent) how long a "
        "client has to send a request's headers; 7 s is no poll interval clients use (`lablease`'s 2 s, "
        "round 5 or 10 s): [deployment](deployment.md#keep-alive)"))
    worker_max_sleep: timedelta = setting(
        "5m", "the longest the worker sleeps when nothing is due (it is woken by changes)")
    worker_batch: int = setting(500, (
        "reservations the worker returns in one transaction when many are due at once (plain returns only: "
        "[design](design.md), the worker)"), unit="reservations", minimum=1)
    log_level: str = setting("info", "gunicorn and server log level: `debug`, `info`, `warning`, `error` or "
                                      "`critical`", check=lambda _name, value: value.lower(),
                              choices=("debug", "info", "warning", "error", "critical"))
    log_format: str = setting("keyvalue", (
        "one line per event as `key=value` pairs or one JSON object; every line of a request carries its "
        "`request_id` ([monitoring](monitoring.md#logs))"), choices=("keyvalue", "json"))
    metrics_token: str = setting("", (
        "`GET /metrics` answers only with `Authorization: Bearer <this>` ([monitoring](monitoring.md#metrics))"),
        empty="no token asked (then only `metrics_listen` opens it)", mask=hidden)
    metrics_listen: str = setting("", (
        "`HOST:PORT` that `serve` binds too, for the scraper: `GET /metrics` answers only there (and still "
        "asks for `metrics_token` when one is set)"), empty="no such listener; without a token either, "
        "`/metrics` is off (404)", check=checks.optional_address)
    worker_heartbeat_timeout: timedelta = setting("60s", (
        "readiness (`GET /api/v1/ready`) wants a worker heartbeat this recent; a worker beats every third of it"))
    token_cache_seconds: timedelta | None = setting("5s", (
        "how long an API process trusts a token it verified before reading it again; changes made on this host "
        "(revoked tokens, disabled users, group memberships) apply at once, those made by a server on another "
        "host within this time ([access](access.md#tokens))"), empty="every request reads its token")
    password_cache_seconds: timedelta | None = setting("10m", (
        "how long a process remembers a password that passed its argon2id check (as a keyed hash, with the stored "
        "hash it passed against), so that the same person signing in again, as `bkr` does for every command, "
        "skips the check; a wrong password always pays it, and a changed password or a disabled user applies "
        "at once ([access](access.md#passwords))"), empty="every sign-in checks the password")
    idempotency_keep: timedelta = setting("24h", (
        "how long the answer to a writing request sent with an `Idempotency-Key` is kept: the same request sent "
        "again with its key within this time gets that answer instead of making a second object; the worker "
        "deletes older ones ([api](api.md#conventions), 'Retrying a write')"))
    events_keep: timedelta = setting("7d", (
        "how long the event feed (`GET /api/v1/events`) keeps an event: a client whose cursor is older gets 410 "
        "naming the oldest kept; the worker deletes older ones, always keeping the newest "
        "([api](api.md#events))"))
    default_loan_duration: timedelta = setting(
        "7d", "length of a loan asked to be `limited` without a duration (loans are unlimited unless asked)")
    warn_before: timedelta = setting("24h", "holders are warned this long before a reservation or loan ends")
    warn_before_short: timedelta = setting("1h", (
        "the lead time for those shorter than twice `warn_before` (none for ones shorter than this)"))
    smtp_host: str = setting("", "SMTP server for warnings and notices (webhooks are sent without it)",
                             empty="no mail")
    smtp_port: int = setting(25, "its port", minimum=1, maximum=65535)
    smtp_from: str = setting("lablease@localhost", "the From address")
    smtp_user: str = setting("", "SMTP login, if the server needs one")
    smtp_password: str = setting("", "its password", mask=hidden)
    smtp_starttls: bool = setting(False, "upgrade the connection with STARTTLS")
    outbox_max_attempts: int = setting(8, "deliveries of a message tried before it is marked failed",
                                       unit="attempts", minimum=1)
    outbox_retry_delay: timedelta = setting(
        "30s", "wait after the first failed delivery; doubled after each further one")
    webhook_timeout: timedelta = setting("10s", (
        "how long a webhook receiver may take to connect, and to send each part of its answer "
        "(redirects are not followed)"))
    webhook_allowed_networks: tuple[Network, ...] = setting((), (
        "networks webhooks may reach although they are not public (in the environment separated by commas or "
        "spaces) — loopback, private, link-local... are refused otherwise "
        "([access](access.md#webhook-destinations))"))
    max_advance_reservations: int = setting(100, (
        "advance reservations active at once (not exited or deleted); more are refused with 429; "
        "`0` switches them off"), minimum=0)
    ar_duration_offset: timedelta = setting("1m", (
        "work inside an advance reservation must end this long before it does (Grid Engine's DURATION_OFFSET)"))
    secret_key: str = setting("", (
        "signs installation tokens and encrypts stored secrets (webhook secrets, power credentials — "
        "[access](access.md#secrets-at-rest-and-on-disk)); every server and worker process of a site needs the "
        "same one, and changing it makes the stored secrets unreadable"),
        empty="a key generated once in `data_dir/secret.key` (mode 0600)", mask=hidden)
    secret_variables: tuple[str, ...] = setting((), (
        "more `ks_meta` variables whose values are secret (names or shell patterns like `*_pin`), besides the "
        "built-in ones (`root_password`, `*_password`, `*_key`, `*_token`...): never answered by the API nor "
        "logged ([access](access.md#installations-and-their-variables))"))
    tftp_root: str = setting("", "where netboot configs (iPXE, PXELINUX, GRUB2) are written",
                             empty="`data_dir/tftpboot`")
    install_url: str = setting("", (
        "the base URL installing machines reach this server at (written into netboot configs and kickstarts)"),
        empty="`public_url`", check=checks.http_url)
    labs: dict[str, dict[str, str]] = setting({}, (
        "per lab, `{tftp_root, install_url}` overriding the two above (in the environment: YAML or JSON text)"),
        check=checks.lab_urls)
    kickstart_dir: str = setting("", "the site's kickstart templates and snippets, looked up before the built-in ones",
                                 empty="`data_dir/kickstarts`")
    job_kickstarts: str = setting("admins_and_owners", (
        "who may install with a kickstart template of their own given in a job's `<kickstart>` "
        "([jobs](jobs.md#kickstart-customisation)): `admins_and_owners` (administrators, and on systems the "
        "job's owner owns), `everyone`, or `nobody` (such jobs are refused)"),
        choices=("admins_and_owners", "everyone", "nobody"))
    beaker_public_jobs: bool = setting(False, (
        "whether Beaker's hub at /bkr answers reads of jobs (results, state, lists, watchdogs) without a login, "
        "as Beaker does: `bkr job-results`, `job-watch`, `job-list`, `job-logs` and `watchdog-show` never log "
        "in, so without it they are refused; secret `ks_meta` values stay masked ([beaker](beaker.md#jobs))"))
    power_scripts_dir: str = setting("", (
        "the scripts the `command` power driver may run (a system names one, never a path)"),
        empty="`data_dir/power-scripts`")
    install_timeout: timedelta = setting("1h", (
        "an installation with no installer callback for this long fails (the install watchdog)"))
    command_timeout: timedelta = setting(
        "2m", "a power or netboot command taking longer is killed and counts as a failed attempt")
    command_max_attempts: int = setting(3, (
        "attempts before a command fails for good (the system is then marked broken if Automated)"),
        unit="attempts", minimum=1)
    command_retry_delay: timedelta = setting(
        "10s", "wait after the first failed attempt; doubled after each further one")
    command_workers: int = setting(4, (
        "commands (of different systems and power addresses) the worker runs at once"), unit="commands",
        minimum=1)
    agent_silence_limit: timedelta = setting("2m", (
        "a lab whose agent has not asked for work for this long is `degraded` (readiness, `GET /labs`); an "
        "agent's long poll waits at most half of it ([lab agents](lab-agents.md))"))
    agent_server_url: str = setting("", (
        "`lablease-agent`: the server's URL it connects out to (`https://...`)"), check=checks.http_url)
    agent_lab: str = setting("", "`lablease-agent`: the lab it serves (`lablease-server lab add NAME`)")
    agent_token_file: str = setting("", (
        "`lablease-agent`: the file holding its agent token (`lablease-agent save-token`; refused unless only "
        "its own user may read it)"), empty="`data_dir/agent.token`")
    agent_listen: str = setting("", (
        "`lablease-agent`: `HOST:PORT` where it passes the lab's installers' kickstart and callback requests on "
        "to the server (name it in the lab's `install_url`); nothing else of the API is reachable there"),
        empty="no proxy", check=checks.optional_address)
    agent_ca_file: str = setting("", "`lablease-agent`: CA certificates (PEM) the server's certificate is "
                                     "checked against", empty="the system's CA certificates")
    web_session_lifetime: timedelta = setting("12h", (
        "a web sign-in lasts this long, then the person signs in again ([web](web.md#signing-in))"))
    web_trust_remote_user: bool = setting(False, (
        "take the user a front proxy names in `REMOTE_USER` as signed in to the web pages (single sign-on); "
        "only behind a proxy that always sets or strips it ([web](web.md#single-sign-on-remote_user))"))
    ldap_url: str = setting("", (
        "the site's LDAP directory: `ldap://HOST[:PORT]` (upgraded with StartTLS before any password is sent) or "
        "`ldaps://HOST[:PORT]`; people sign in with its passwords and its groups become lablease's "
        "([access](access.md#directory-and-kerberos-sign-in))"), empty="no directory: only lablease's own "
        "passwords", check=checks.ldap_url)
    ldap_ca_file: str = setting("", "the CA certificates (PEM) the directory's certificate is checked against",
                                empty="the system's CA certificates")
    ldap_bind_dn: str = setting("", "the DN lablease searches the directory as (people and groups)",
                                empty="anonymous searches")
    ldap_bind_password: str = setting("", "its password", mask=hidden)
    ldap_user_base: str = setting("", "where people are searched (e.g. `ou=people,dc=example,dc=com`)")
    ldap_user_filter: str = setting("(uid={username})", (
        "the filter that finds one person by the name they sign in with (`{username}`, escaped as RFC 4515 says)"))
    ldap_group_base: str = setting("", "where groups are searched (e.g. `ou=groups,dc=example,dc=com`)",
                                   empty="no groups are read from the directory")
    ldap_group_filter: str = setting(
        "(|(&(objectClass=groupOfNames)(member={dn}))(&(objectClass=posixGroup)(memberUid={username})))", (
            "the filter that finds a person's groups (`{dn}` their entry, `{username}` their name, both escaped); "
            "a group's `cn` is its name in lablease"))
    ldap_timeout: timedelta = setting("5s", (
        "how long the directory may take to connect and to answer each request; past it a sign-in is refused "
        "with 503 naming the directory"))
    ldap_sync_interval: timedelta = setting("15m", (
        "the worker reads every directory person's groups this often; someone no longer in the directory has "
        "their tokens and web sessions ended"))
    kerberos_keytab: str = setting("", (
        "the keytab holding the server's key (`HTTP/<host>@REALM`): `Authorization: Negotiate` (SPNEGO) is "
        "accepted on the API and the pages, and `bkr`'s Kerberos login (`AUTH_METHOD = \"krbv\"`) on the Beaker hub "
        "([access](access.md#directory-and-kerberos-sign-in))"),
        empty="no Kerberos sign-in")
    kerberos_realms: tuple[str, ...] = setting((), (
        "the realms whose principals are lablease users of the same name (`alice@REALM` is `alice`)"),
        empty="only the realm of the server's own principal")
    kerberos_principals: tuple[str, ...] = setting((), (
        "principals that sign in as a user of another name, each `PRINCIPAL=USER` (e.g. "
        "`alice/admin@EXAMPLE.COM=alice`); looked up before the realm rule"), check=checks.principal_map)

    def __post_init__(self):
        for spec in specs():  # every value typed and checked now, whoever made this object
            object.__setattr__(self, spec.name, spec.read(getattr(self, spec.name)))
        checks.check_together(self)  # then the rules between settings

    @property
    def database(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{Path(self.data_dir).resolve() / 'lablease.db'}"

    @property
    def reservation_policy(self) -> ReservationPolicy:
        return ReservationPolicy(default_duration=self.default_reservation_duration,
                                 max_duration=self.max_reservation_duration,
                                 allow_unlimited=self.allow_unlimited_reservations)

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


@dataclass(frozen=True)
class Spec:
    """One setting's definition, read from its field."""

    name: str
    kind: Kind
    default: object
    doc: str
    unit: str
    empty: str
    mask: Callable | None
    choices: tuple = ()
    minimum: int | None = None
    maximum: int | None = None
    check: Callable | None = None

    def read(self, raw) -> object:
        """The typed value, or Invalid naming this setting and why it cannot work."""
        value = self.kind.read(self.name, raw)
        if self.check:
            value = self.check(self.name, value)
        if self.choices and value not in self.choices:
            raise Invalid(self.name, f"{value!r} is not one of: {', '.join(self.choices)}")
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            bounds = f"from {self.minimum} to {self.maximum}" if self.maximum is not None else f"at least {self.minimum}"
            raise Invalid(self.name, f"{value} cannot work: it must be {bounds}")
        return value

    @property
    def variable(self) -> str:
        return f"LABLEASE_{self.name.upper()}"

    def show(self, value) -> object:
        """The value as `config show` prints it (a JSON value), a secret masked."""
        return self.mask(value) if self.mask else self.kind.show(value)

    def default_text(self) -> str:
        """The default as docs/configuration.md writes it."""
        shown = as_text(self.kind.show(self.kind.read(self.name, self.default)))
        if shown:
            return f"`{shown}`"
        return f"empty: {self.empty}" if self.empty else "empty"


@cache
def specs() -> tuple[Spec, ...]:
    """Every setting, in the order they are defined; a setting of a type without a kind is refused here."""
    hints = get_type_hints(Settings)
    found = []
    for item in fields(Settings):
        kind = KINDS.get(hints[item.name])
        if kind is None or "doc" not in item.metadata:
            raise TypeError(f"setting {item.name}: declare it with setting(...) and a type of {list(KINDS)}")
        if kind is WHOLE_NUMBER and item.metadata["minimum"] is None:  # 0 or -1 processes, attempts, bytes...
            raise TypeError(f"setting {item.name}: a whole number says its minimum (setting(..., minimum=N))")
        default = item.default_factory() if callable(item.default_factory) else item.default
        found.append(Spec(item.name, kind, default, **item.metadata))
    return tuple(found)


specs()  # a setting declared wrongly fails the import, not the first use
