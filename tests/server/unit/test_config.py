from datetime import timedelta

import pytest

from lablease.config import load_settings
from lablease.domain.errors import Invalid


def test_defaults_work_out_of_the_box():
    settings = load_settings(environ={})
    assert settings.database.startswith("sqlite:///") and settings.database.endswith("/.lablease/lablease.db")
    assert settings.listen == "127.0.0.1:8042"
    assert settings.reservation_policy.default_duration == timedelta(hours=24)
    assert settings.reservation_policy.max_duration is None


def test_file_then_environment(tmp_path):
    config = tmp_path / "lablease.yml"
    config.write_text("default_reservation_duration: 8h\nallow_unlimited_reservations: true\nlisten: 0.0.0.0:9000\n")
    settings = load_settings(str(config), environ={"LABLEASE_LISTEN": "127.0.0.1:9001",
                                                   "LABLEASE_MAX_RESERVATION_DURATION": "2w"})
    assert settings.reservation_policy.default_duration == timedelta(hours=8)
    assert settings.reservation_policy.allow_unlimited is True
    assert settings.reservation_policy.max_duration == timedelta(weeks=2)
    assert settings.listen == "127.0.0.1:9001"


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
