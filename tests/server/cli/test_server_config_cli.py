"""`lablease-server config show` as an administrator runs it: the effective settings, where each came
from, secrets masked; a mistyped setting stops every command with the name it was meant to be."""
import json
import os
import subprocess

from tests.support.live import BIN


def run(tmp_path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABLEASE_")}
    env.update(variables, LABLEASE_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run([str(BIN / "lablease-server"), *args], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


def write_config(tmp_path) -> str:
    config = tmp_path / "lablease.yml"
    config.write_text("listen: 0.0.0.0:9000\nsmtp_password: hunter2\nwarn_before: 12h\n"
                      "database_url: postgresql+psycopg://lablease:s3cret@db.example.com/lablease\n")
    return str(config)


def test_config_show_says_where_each_value_came_from(tmp_path):
    config = write_config(tmp_path)
    result = run(tmp_path, "--config", config, "config", "show", LABLEASE_WARN_BEFORE="2h",
                 LABLEASE_URL="http://x", LABLEASE_TOKEN="t")
    assert result.returncode == 0, result
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[2:]}
    assert result.stdout.splitlines()[0] == f"settings file: {config}"
    assert result.stdout.splitlines()[1].split() == ["SETTING", "VALUE", "SOURCE"]
    assert rows["listen"] == ["0.0.0.0:9000", "file"]
    assert rows["warn_before"] == ["2h", "environment"]  # the environment wins over the file
    assert rows["data_dir"] == [str(tmp_path / "data"), "environment"]
    assert rows["command_timeout"] == ["2m", "default"]
    assert rows["smtp_password"] == ["********", "file"]
    assert rows["database_url"] == ["postgresql+psycopg://lablease:***@db.example.com/lablease", "file"]
    assert "hunter2" not in result.stdout and "s3cret" not in result.stdout


def test_config_show_json_for_machines(tmp_path):
    config = write_config(tmp_path)
    result = run(tmp_path, "config", "show", "--json", LABLEASE_CONFIG=config, LABLEASE_SECRET_KEY="k" * 44)
    assert result.returncode == 0, result
    shown = json.loads(result.stdout)
    assert shown["config_file"] == config
    assert shown["settings"]["warn_before"] == {"value": "12h", "source": "file"}
    assert shown["settings"]["secret_key"] == {"value": "********", "source": "environment"}
    assert shown["settings"]["smtp_starttls"] == {"value": False, "source": "default"}
    assert shown["settings"]["webhook_allowed_networks"] == {"value": [], "source": "default"}
    assert "hunter2" not in result.stdout and "k" * 44 not in result.stdout


def test_a_mistyped_setting_stops_the_command_naming_the_right_one(tmp_path):
    result = run(tmp_path, "config", "show", LABLEASE_COMAND_TIMEOUT="1m")
    assert result.returncode == 2  # settings that cannot be used: the usage status
    assert result.stderr.strip() == ("lablease-server: environment: unknown setting 'LABLEASE_COMAND_TIMEOUT' "
                                     "(did you mean 'LABLEASE_COMMAND_TIMEOUT'?); docs/configuration.md lists them all")
    (tmp_path / "bad.yml").write_text("comand_timeout: 1m\n")
    result = run(tmp_path, "--config", str(tmp_path / "bad.yml"), "init")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().endswith("unknown setting 'comand_timeout' (did you mean 'command_timeout'?); "
                                          "docs/configuration.md lists them all")
    assert not (tmp_path / "data").exists()  # refused before anything was written
