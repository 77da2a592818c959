"""Loading settings: the defaults, then one YAML file, then LABLEASE_<NAME> environment variables.

A name that is not a setting is an error naming the setting it was probably
meant to be, in the file and in the environment alike, so a typo never falls
back to a default in silence.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass

import yaml

from ..domain.errors import Invalid
from .settings import Settings, specs

# LABLEASE_ variables that are not settings, and what sets or reads them. Any other LABLEASE_ name
# that is not a setting is refused (docs/configuration.md lists these, from here).
OTHER_VARIABLES = {
    "LABLEASE_CONFIG": "the settings file, as `lablease-server --config FILE`",
    "LABLEASE_URL": "the server's URL, for the client `lablease` and the Ansible collection",
    "LABLEASE_TOKEN": "an API token, for the client `lablease` and the Ansible collection",
    "LABLEASE_FQDN": "set by the `command` power driver for the site's power scripts",
    "LABLEASE_TEST_RECORD": "the project's playbook tests (where their callback records task results)",
    "LABLEASE_BENCH_MINIMAL_DB": "the project's benchmark (bench/reserve.py)",
}

DEFAULT, FILE, ENVIRONMENT = "default", "file", "environment"


@dataclass(frozen=True)
class Loaded:
    settings: Settings
    sources: dict  # setting name -> DEFAULT, FILE or ENVIRONMENT: where its value came from
    config_file: str | None


def load(config_file: str | None = None, environ=None) -> Loaded:
    """The settings and where each came from; Invalid names a bad value or an unknown name."""
    environ = os.environ if environ is None else environ
    config_file = config_file or environ.get("LABLEASE_CONFIG") or None
    values, sources = {}, {}
    if config_file:
        for name, value in _from_file(config_file).items():
            values[name], sources[name] = value, FILE
    for name, value in _from_environment(environ).items():
        values[name], sources[name] = value, ENVIRONMENT
    settings = Settings(**values)
    return Loaded(settings, {spec.name: sources.get(spec.name, DEFAULT) for spec in specs()}, config_file)


def load_settings(config_file: str | None = None, environ=None) -> Settings:
    return load(config_file, environ).settings


def _from_file(config_file: str) -> dict:
    loaded = _read_yaml(config_file) or {}
    if not isinstance(loaded, dict):
        raise Invalid(config_file, "must hold a mapping of settings")
    known = [spec.name for spec in specs()]
    _refuse_unknown(config_file, [str(key) for key in loaded if key not in known], known)
    return loaded


def _read_yaml(config_file: str):
    """The file's YAML; a file that cannot be read or is not YAML is Invalid, in one line naming the place."""
    try:
        with open(config_file, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except OSError as error:
        raise Invalid(config_file, f"cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise Invalid(config_file, "is not UTF-8 text (a YAML settings file)") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise Invalid(config_file, f"is not YAML: {problem}{where}") from None


def _from_environment(environ) -> dict:
    by_variable = {spec.variable: spec.name for spec in specs()}
    names = sorted(key for key in environ if key.startswith("LABLEASE_"))
    _refuse_unknown("environment", [n for n in names if n not in by_variable and n not in OTHER_VARIABLES],
                    [*by_variable, *OTHER_VARIABLES])
    return {by_variable[n]: environ[n] for n in names if n in by_variable}


def _refuse_unknown(where: str, unknown: list[str], known: list[str]) -> None:
    if not unknown:
        return
    stem = {name.removeprefix("LABLEASE_"): name for name in known}  # LABLEASE_ alike in all: compare the rest
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name.removeprefix("LABLEASE_"), stem, n=1)
        named.append(f"{name!r}" + (f" (did you mean {stem[close[0]]!r}?)" if close else ""))
    raise Invalid(where, f"unknown setting{'s' if len(named) > 1 else ''} {', '.join(named)}; "
                         "docs/configuration.md lists them all")
