"""Settings: one typed object, loaded from defaults, then the file, then LABLEASE_* variables."""
from dataclasses import replace
from datetime import timedelta
from ipaddress import ip_network

import pytest

from lablease.config import OTHER_VARIABLES, Loaded, Settings, load, load_settings, specs
from lablease.config.reference import effective
from lablease.domain.errors import Invalid


def test_defaults_work_out_of_the_box():
    settings = load_settings(environ={})
    assert settings.database.startswith("sqlite:///") and settings.database.endswith("/.lablease/lablease.db")
    assert settings.listen == "127.0.0.1:8042"
    assert settings.reservation_policy.default_duration == timedelta(hours=24)
    assert settings.reservation_policy.max_duration is None


def test_durations_are_timedeltas_from_the_start():
    settings = Settings()
    assert settings.command_timeout == timedelta(minutes=2)
    assert settings.worker_max_sleep == timedelta(minutes=5)
    assert settings.default_loan_duration == timedelta(days=7)
    assert settings.max_reservation_duration is None


def test_the_constructor_takes_text_as_the_file_does():
    settings = Settings(command_timeout="1s", warn_before="PT2H", outbox_retry_delay=90, smtp_port="2525",
                        max_reservation_duration="2d", webhook_allowed_networks=("127.0.0.1/32",))
    assert settings.command_timeout == timedelta(seconds=1)
    assert settings.warn_before == timedelta(hours=2)
    assert settings.outbox_retry_delay == timedelta(seconds=90)
    assert settings.smtp_port == 2525
    assert settings.max_reservation_duration == timedelta(days=2)
    assert settings.webhook_allowed_networks == (ip_network("127.0.0.1/32"),)
    assert replace(settings, listen="0.0.0.0:1").command_timeout == timedelta(seconds=1)
    assert replace(settings, command_timeout="3m").command_timeout == timedelta(minutes=3)


@pytest.mark.parametrize("overrides, named", [
    ({"command_timeout": "soon"}, "command_timeout"),
    ({"command_timeout": timedelta(0)}, "command_timeout"),
    ({"warn_before": "1y"}, "warn_before"),
    ({"gunicorn_workers": "two"}, "gunicorn_workers"),
    ({"smtp_starttls": "maybe"}, "smtp_starttls"),
    ({"webhook_allowed_networks": ("10.1.0.0/33",)}, "webhook_allowed_networks"),
    ({"labs": {"qemu": {"tftp": "/srv"}}}, "labs"),
    ({"listen": ["a", "b"]}, "listen"),
])
def test_a_bad_value_is_refused_naming_the_setting(overrides, named):
    with pytest.raises(Invalid) as refused:
        Settings(**overrides)
    assert refused.value.field == named


@pytest.mark.parametrize("overrides, named, why", [
    # an address without its port (gunicorn would bind 8000 while the log names the port-less URL)
    ({"listen": "localhost"}, "listen", "'localhost' is not HOST:PORT with a port from 1 to 65535"),
    ({"listen": "127.0.0.1:0"}, "listen", "is not HOST:PORT"),
    ({"listen": "::1:8042"}, "listen", "is not HOST:PORT"),  # an IPv6 host goes in brackets
    ({"metrics_listen": "0.0.0.0"}, "metrics_listen", "is not HOST:PORT"),
    ({"metrics_listen": "127.0.0.1:8042"}, "metrics_listen", "is listen's address"),
    # URLs written into kickstarts, netboot configs and links
    ({"public_url": "lablease.example.com"}, "public_url", "is not an http:// or https:// URL"),
    ({"install_url": "ftp://10.0.2.2"}, "install_url", "is not an http:// or https:// URL"),
    ({"labs": {"qemu": {"install_url": "10.0.2.2:8042"}}}, "labs.qemu.install_url", "is not an http:// or https://"),
    # databases and drivers lablease does not run on
    ({"database_url": "postgres://u:s3cret@db/lablease"}, "database_url", "for PostgreSQL write postgresql+psycopg://"),
    ({"database_url": "postgresql://u:s3cret@db/lablease"}, "database_url", "for PostgreSQL write postgresql+psycopg://"),
    ({"database_url": "mysql://u@db/lablease"}, "database_url", "mysql:// is not a database lablease runs on"),
    ({"database_url": "db.example.com"}, "database_url", "is not a database URL"),
    # a standby to read from is PostgreSQL's, beside a PostgreSQL primary
    ({"database_read_url": "sqlite:////srv/copy.db"}, "database_read_url", "only PostgreSQL has"),
    ({"database_read_url": "postgres://u:s3cret@db2/lablease"}, "database_read_url", "postgresql+psycopg://"),
    ({"database_read_url": "postgresql+psycopg://u:s3cret@db2/lablease"}, "database_read_url",
     "database_url is not one"),
    ({"log_level": "verbose"}, "log_level", "'verbose' is not one of: debug, info, warning, error, critical"),
    # counts that must be positive (0 API processes hangs every request)
    *[({name: 0}, name, "0 cannot work: it must be at least 1") for name in (
        "gunicorn_workers", "gunicorn_threads", "max_body_bytes", "worker_batch", "outbox_max_attempts",
        "command_max_attempts", "command_workers")],
    ({"smtp_port": 0}, "smtp_port", "0 cannot work: it must be from 1 to 65535"),
    ({"smtp_port": 70000}, "smtp_port", "must be from 1 to 65535"),
    ({"max_advance_reservations": -1}, "max_advance_reservations", "must be at least 0"),
    # durations that must be ordered, and settings that never go together
    ({"max_reservation_duration": "1h"}, "max_reservation_duration",
     "1h is shorter than default_reservation_duration (1d): every reservation made without a duration would be "
     "refused"),
    ({"max_hold_per_user": "8h"}, "max_hold_per_user", "8h is shorter than default_reservation_duration (1d)"),
    ({"max_reservation_duration": "2d", "allow_unlimited_reservations": True}, "allow_unlimited_reservations",
     "cannot be true while max_reservation_duration (2d) is set"),
    ({"max_hold_per_user": "2d", "allow_unlimited_reservations": True}, "allow_unlimited_reservations",
     "cannot be true while max_hold_per_user (2d) is set"),
    ({"warn_before": "30m"}, "warn_before", "30m is shorter than warn_before_short (1h)"),
])
def test_a_value_that_cannot_work_is_refused_naming_the_setting_and_why(overrides, named, why):
    with pytest.raises(Invalid) as refused:
        Settings(**overrides)
    assert refused.value.field == named and why in refused.value.detail
    assert "s3cret" not in refused.value.detail  # a database URL is never repeated: it may hold a password


def test_values_that_work_are_taken():
    settings = Settings(listen="[::1]:8042", metrics_listen="127.0.0.1:9188", log_level="WARNING",
                        database_url="postgresql+psycopg://u:pw@db/lablease", public_url="https://lablease.example.com",
                        default_reservation_duration="4h", max_reservation_duration="4h", max_hold_per_user="1d",
                        max_advance_reservations=0, warn_before="1h", warn_before_short="1h")
    assert (settings.listen, settings.log_level, settings.max_reservation_duration) == (
        "[::1]:8042", "warning", timedelta(hours=4))
    assert Settings(allow_unlimited_reservations=True).reservation_policy.allow_unlimited


def test_every_whole_number_setting_says_its_minimum():
    from lablease.config.kinds import WHOLE_NUMBER

    assert all(spec.minimum is not None for spec in specs() if spec.kind is WHOLE_NUMBER)


def test_file_then_environment(tmp_path):
    config = tmp_path / "lablease.yml"
    config.write_text("default_reservation_duration: 8h\nrequire_purpose: true\nlisten: 0.0.0.0:9000\n")
    loaded = load(str(config), environ={"LABLEASE_LISTEN": "127.0.0.1:9001", "LABLEASE_MAX_RESERVATION_DURATION": "2w"})
    settings = loaded.settings
    assert settings.reservation_policy.default_duration == timedelta(hours=8)
    assert settings.require_purpose is True
    assert settings.reservation_policy.max_duration == timedelta(weeks=2)
    assert settings.listen == "127.0.0.1:9001"
    assert loaded.config_file == str(config)
    assert {name: loaded.sources[name] for name in ("listen", "default_reservation_duration",
                                                    "max_reservation_duration", "warn_before")} == {
        "listen": "environment", "default_reservation_duration": "file",
        "max_reservation_duration": "environment", "warn_before": "default"}


def test_the_config_file_may_come_from_the_environment(tmp_path):
    config = tmp_path / "lablease.yml"
    config.write_text("smtp_port: 2525\n")
    loaded = load(None, environ={"LABLEASE_CONFIG": str(config)})
    assert loaded.settings.smtp_port == 2525 and loaded.sources["smtp_port"] == "file"


def test_environment_text_is_read_as_each_type():
    settings = load_settings(None, environ={
        "LABLEASE_SMTP_PORT": "2525", "LABLEASE_SMTP_STARTTLS": "yes", "LABLEASE_WEBHOOK_TIMEOUT": "1:30",
        "LABLEASE_INSTALL_TIMEOUT": "PT90M", "LABLEASE_SECRET_VARIABLES": "*_pin, site_code other",
        "LABLEASE_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32,fd00::/8",
        "LABLEASE_LABS": '{"qemu": {"install_url": "http://10.0.2.2:8042"}}'})
    assert settings.smtp_port == 2525 and settings.smtp_starttls is True
    assert settings.webhook_timeout == timedelta(minutes=1, seconds=30)
    assert settings.install_timeout == timedelta(minutes=90)
    assert settings.secret_variables == ("*_pin", "site_code", "other")
    assert settings.webhook_allowed_networks == (ip_network("127.0.0.1/32"), ip_network("fd00::/8"))
    assert settings.install_url_for("qemu") == "http://10.0.2.2:8042"


def test_mistakes_are_named(tmp_path):
    config = tmp_path / "lablease.yml"
    config.write_text("default_reservation_durations: 8h\n")
    with pytest.raises(Invalid, match="default_reservation_durations"):
        load_settings(str(config), environ={})
    with pytest.raises(Invalid, match="default_reservation_duration"):
        load_settings(None, environ={"LABLEASE_DEFAULT_RESERVATION_DURATION": "soon"})
    with pytest.raises(Invalid, match="allow_unlimited_reservations"):
        load_settings(None, environ={"LABLEASE_ALLOW_UNLIMITED_RESERVATIONS": "maybe"})


def test_the_worker_class_is_one_gunicorn_offers_here():
    assert load_settings(None, environ={}).gunicorn_worker_class == "gevent"
    assert load_settings(None, environ={"LABLEASE_GUNICORN_WORKER_CLASS": "gthread"}).gunicorn_worker_class == "gthread"
    with pytest.raises(Invalid, match="gunicorn_worker_class"):
        load_settings(None, environ={"LABLEASE_GUNICORN_WORKER_CLASS": "eventlet"})


def test_serve_gives_the_worker_its_own_address_and_public_url():
    from dataclasses import replace

    from lablease.cli.serve import worker_environ

    settings = replace(load_settings(None, environ={}), listen="0.0.0.0:9000")
    env = worker_environ(settings, {"LABLEASE_LISTEN": "127.0.0.1:8042", "PATH": "/bin"})
    assert env == {"LABLEASE_LISTEN": "0.0.0.0:9000", "LABLEASE_PUBLIC_URL": "http://0.0.0.0:9000", "PATH": "/bin"}
    assert load_settings(None, environ=env).base_url == settings.base_url


def test_no_query_string_survives_in_the_server_log():
    from lablease.cli.serve import without_query

    line = "Invalid HTTP request line: 'GET /api/v1/installations/7/kickstart?token=abc-DEF_1 HTTP/1.1'"
    assert without_query(line) == "Invalid HTTP request line: 'GET /api/v1/installations/7/kickstart?[query removed] HTTP/1.1'"


def test_an_unknown_name_in_the_file_names_the_close_one(tmp_path):
    config = tmp_path / "lablease.yml"
    config.write_text("warn_befor: 2h\nsmtp_hots: mail\nfrobnicate: 1\n")
    with pytest.raises(Invalid) as refused:
        load_settings(str(config), environ={})
    assert refused.value.detail == (
        f"{config}: unknown settings 'warn_befor' (did you mean 'warn_before'?), "
        "'smtp_hots' (did you mean 'smtp_host'?), 'frobnicate'; docs/configuration.md lists them all")


def test_an_unknown_variable_names_the_close_one():
    with pytest.raises(Invalid) as refused:
        load_settings(None, environ={"LABLEASE_COMAND_TIMEOUT": "1m", "HOME": "/root"})
    assert refused.value.detail == ("environment: unknown setting 'LABLEASE_COMAND_TIMEOUT' "
                                    "(did you mean 'LABLEASE_COMMAND_TIMEOUT'?); docs/configuration.md lists them all")
    with pytest.raises(Invalid, match=r"unknown setting 'LABLEASE_VERSION'; docs"):
        load_settings(None, environ={"LABLEASE_VERSION": "2"})


def test_the_other_lablease_variables_are_left_alone():
    assert {"LABLEASE_URL", "LABLEASE_TOKEN", "LABLEASE_CONFIG"} <= set(OTHER_VARIABLES)
    environ = {name: "x" for name in OTHER_VARIABLES if name != "LABLEASE_CONFIG"}
    assert load(None, environ=environ).settings == Settings()


def test_secrets_are_masked_when_shown():
    settings = Settings(smtp_password="hunter2", secret_key="k" * 40, smtp_user="mailer",
                        database_url="postgresql+psycopg://lablease:pw@db.example.com/lablease")
    shown = {row["setting"]: row["value"] for row in effective(load_for(settings))}
    assert shown["smtp_password"] == "********" and shown["secret_key"] == "********"
    assert shown["database_url"] == "postgresql+psycopg://lablease:***@db.example.com/lablease"
    assert shown["smtp_user"] == "mailer"
    assert "hunter2" not in repr(shown) and "k" * 40 not in repr(shown) and ":pw@" not in repr(shown)
    unset = {row["setting"]: row["value"] for row in effective(load_for(Settings()))}
    assert unset["smtp_password"] == "" and unset["secret_key"] == ""  # whether it is set is no secret


def test_values_are_shown_as_the_file_writes_them():
    shown = {row["setting"]: row["value"] for row in effective(load_for(Settings(
        command_timeout="90s", webhook_allowed_networks=["10.0.0.0/8"], smtp_starttls=True)))}
    assert shown["command_timeout"] == "1m30s" and shown["default_loan_duration"] == "1w"  # as messages write them
    assert shown["max_reservation_duration"] == ""
    assert shown["webhook_allowed_networks"] == ["10.0.0.0/8"] and shown["smtp_starttls"] is True
    assert Settings(**{name: value for name, value in shown.items() if value != "" and "*" not in str(value)}) \
        == Settings(command_timeout="90s", webhook_allowed_networks=["10.0.0.0/8"], smtp_starttls=True)


def load_for(settings: Settings) -> Loaded:
    return Loaded(settings, {spec.name: "default" for spec in specs()}, None)
