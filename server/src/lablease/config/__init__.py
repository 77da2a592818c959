"""Settings: one YAML file plus LABLEASE_* environment overrides, read into one typed object.

Every setting has a default that works out of the box. settings.py defines
them all (type, default, unit, documentation); docs/configuration.md's table
is generated from it; `lablease-server config show` prints the effective ones.
"""
from .loading import OTHER_VARIABLES, Loaded, load, load_settings
from .settings import Settings, Spec, specs, url_without_password

__all__ = ["OTHER_VARIABLES", "Loaded", "Settings", "Spec", "load", "load_settings", "specs", "url_without_password"]
