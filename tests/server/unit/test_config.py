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
