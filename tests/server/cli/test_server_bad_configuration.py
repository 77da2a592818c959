"""Every `lablease-server` command, given settings that cannot work, says so in one line and exits 2.

The commands are read from the parser, so a command added later is walked too. Each is run through main()
as the program runs it (its own exception handling included: anything it lets through fails the test), and
the program itself once per kind, to see its real stderr.
"""
import argparse
import os
import subprocess

import pytest

from lablease.cli.server import main, parser
from tests.support.live import BIN

USAGE = 2
ROLE_MISSING = 'role "nosuch" does not exist'

# Settings that cannot work, each with what the one line must say. In the environment unless it is a file.
BAD = {
    "log level": ({"LABLEASE_LOG_LEVEL": "verbose"}, "log_level: 'verbose' is not one of: debug, info, warning"),
    "not YAML": ({"file": "listen: [127.0.0.1:8042\n"}, "is not YAML: expected ',' or ']'"),
    "not UTF-8": ({"file": b"listen: \xff\n"}, "is not UTF-8 text"),
    "postgres://": ({"LABLEASE_DATABASE_URL": "postgres://lablease:s3cret@127.0.0.1/lablease"},
                    "database_url: postgres:// is not a driver lablease uses: for PostgreSQL write "
                    "postgresql+psycopg://"),
    "listen without a port": ({"LABLEASE_LISTEN": "localhost"}, "listen: 'localhost' is not HOST:PORT"),
    "no API process": ({"LABLEASE_GUNICORN_WORKERS": "0"}, "gunicorn_workers: 0 cannot work: it must be at least 1"),
    "maximum below the default": ({"LABLEASE_MAX_RESERVATION_DURATION": "1h"},
                                  "max_reservation_duration: 1h is shorter than default_reservation_duration (1d)"),
    "maximum and unlimited": ({"LABLEASE_MAX_RESERVATION_DURATION": "2d",
                               "LABLEASE_ALLOW_UNLIMITED_RESERVATIONS": "true"},
                              "allow_unlimited_reservations: cannot be true while max_reservation_duration (2d)"),
}


def leaves(command: argparse.ArgumentParser, words=()):
    """(words, parser) of every command that runs something: `user add`, `serve`, `db downgrade`..."""
    groups = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield list(words), command
    for group in groups:
        for name, child in group.choices.items():
            yield from leaves(child, [*words, name])


def example(words: list[str], command: argparse.ArgumentParser) -> list[str]:
    """The command with a value for each argument it requires (the first choice where it has choices)."""
    argv = list(words)
    for action in command._actions:
        if action.option_strings and not action.required:
            continue
        value = action.choices[0] if action.choices else "base"  # base: also a revision (db downgrade)
        argv += [*action.option_strings[:1], value]
    return argv


COMMANDS = [example(words, command) for words, command in leaves(parser())]


def test_the_walk_finds_every_command():
    names = {" ".join(words) for words, _ in leaves(parser())}
    assert {"init", "user add", "system import", "serve", "status", "worker", "restore", "db downgrade",
            "config show"} <= names
    for argv in COMMANDS:
        parser().parse_args(argv)  # each example is a command line the parser takes


def uses_database(argv: list[str]) -> bool:
    return getattr(parser().parse_args(argv), "database", True)


@pytest.fixture
def environment(tmp_path, monkeypatch):
    """No LABLEASE_ variable of the outer environment; the data directory in tmp_path."""
    for name in [name for name in os.environ if name.startswith("LABLEASE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LABLEASE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)

    def set_up(variables: dict) -> list[str]:
        """The settings in place; the global options that name the file, when there is one."""
        variables = dict(variables)
        if "file" in variables:
            config = tmp_path / "lablease.yml"
            text = variables.pop("file")
            config.write_bytes(text if isinstance(text, bytes) else text.encode())
            return ["--config", str(config)]
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        return []

    return set_up


@pytest.mark.parametrize("kind", BAD)
def test_every_command_refuses_settings_that_cannot_work_in_one_line(kind, environment, capsys):
    variables, message = BAD[kind]
    options = environment(variables)
    for argv in COMMANDS:
        assert main([*options, *argv]) == USAGE, argv
        out, err = capsys.readouterr()
        assert (out, err.count("\n")) == ("", 1), (argv, err)
        assert err.startswith("lablease-server: ") and message in err, (argv, err)
        assert "s3cret" not in err


def test_every_command_that_opens_the_database_names_a_role_postgresql_does_not_know(postgres, environment, capsys):
    environment({"LABLEASE_DATABASE_URL": postgres.url().replace("postgres@", "nosuch:s3cret@")})
    opening = [argv for argv in COMMANDS if uses_database(argv)]
    assert ["config", "show"] not in opening and len(opening) > 10
    for argv in opening:
        assert main(argv) == USAGE, argv
        out, err = capsys.readouterr()
        assert (out, err.count("\n")) == ("", 1), (argv, err)
        assert err.startswith("lablease-server: cannot use the database postgresql+psycopg://nosuch:***@127.0.0.1:")
        assert ROLE_MISSING in err and "s3cret" not in err
    assert main(["config", "show"]) == 0  # it only reads the settings, which are right
    capsys.readouterr()


def run(tmp_path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABLEASE_")}
    env.update(variables, LABLEASE_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run([str(BIN / "lablease-server"), *args], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("kind", ["not YAML", "postgres://", "listen without a port"])
def test_the_program_itself_prints_one_line_and_no_traceback(kind, tmp_path):
    variables, message = BAD[kind]
    options = []
    if "file" in variables:
        (tmp_path / "lablease.yml").write_bytes(variables["file"] if isinstance(variables["file"], bytes)
                                                else variables["file"].encode())
        options = ["--config", str(tmp_path / "lablease.yml")]
    result = run(tmp_path, *options, "serve", **{k: v for k, v in variables.items() if k != "file"})
    assert result.returncode == USAGE and message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert not (tmp_path / "data").exists()  # refused before anything was made


def test_a_role_postgresql_does_not_know_stops_serve_before_it_binds(postgres, tmp_path):
    url = postgres.url().replace("postgres@", "nosuch@")
    result = run(tmp_path, "serve", "--listen", "127.0.0.1:9", LABLEASE_DATABASE_URL=url)
    assert result.returncode == USAGE and ROLE_MISSING in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1


def test_restore_of_a_file_that_is_not_a_backup_is_one_line(environment, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not an archive\n")
    (tmp_path / "cut.tar.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 40)  # a gzip header, then nothing
    for file, message in (("notes.txt", "notes.txt is not a lablease backup"),
                          ("cut.tar.gz", "cut.tar.gz is not a lablease backup"),
                          ("missing.tar.gz", "missing.tar.gz: cannot be read: No such file or directory")):
        assert main(["restore", file]) == USAGE, file
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("option, message", [
    (("--listen", "localhost"), "argument --listen: 'localhost' is not HOST:PORT"),
    (("--workers", "0"), "argument --workers: 0 cannot work: it must be at least 1"),
    (("--threads", "-1"), "argument --threads: -1 cannot work: it must be at least 1"),
])
def test_serves_options_are_checked_as_the_settings_they_override(option, message, environment, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["serve", *option])
    assert stop.value.code == USAGE and message in capsys.readouterr().err.splitlines()[-1]
