"""Finding power drivers: every driver is an entry point in the "lablease.power" group.

Built-in drivers are registered in lablease's own pyproject.toml, exactly as a
site's package would register its own; nothing here names a driver.
"""
from __future__ import annotations

from importlib.metadata import entry_points

from . import PowerDriver, PowerError, PowerTarget, cannot_interrupt

GROUP = "lablease.power"


class UnknownDriver(KeyError):
    """No driver of that name is installed; the message lists the ones that are."""

    def __str__(self) -> str:
        return self.args[0]


def _entry_points() -> dict:
    return {point.name: point for point in entry_points(group=GROUP)}


def driver_names() -> list[str]:
    return sorted(_entry_points())


def load(name: str) -> type[PowerDriver]:
    point = _entry_points().get(name)
    if point is None:
        raise UnknownDriver(f"unknown power driver {name!r} (installed: {', '.join(driver_names()) or 'none'})")
    driver = point.load()
    if not (isinstance(driver, type) and issubclass(driver, PowerDriver)):
        raise UnknownDriver(f"power driver {name!r} ({point.value}) is not a PowerDriver")
    return driver


def check_settings(settings: dict) -> None:
    """Refuse, with a sentence for the admin, power settings that could never work."""
    if not isinstance(settings, dict):
        raise ValueError("power settings must be an object")
    name = settings.get("driver")
    if not name:
        raise ValueError(f"power settings need a driver (one of: {', '.join(driver_names())})")
    try:
        driver = load(str(name))
    except UnknownDriver as error:
        raise ValueError(str(error)) from None
    driver.check(settings)


def refuses(settings: dict, action: str) -> str | None:
    """Why the system's driver cannot do `action`, asked before it is queued (an interrupt, of a driver that
    sends no NMI); None when it can, or when the driver is not installed (the command then fails saying so)."""
    try:
        driver = load(str(settings.get("driver")))
    except UnknownDriver:
        return None
    return cannot_interrupt(driver.name) if action == "interrupt" and not driver.interrupts else None


def driver_for(target: PowerTarget) -> PowerDriver:
    """The driver named in the target's settings; PowerError when there is none, so a worker logs one line."""
    name = target.settings.get("driver")
    if not name:
        raise PowerError(f"{target.fqdn} has no power driver configured")
    try:
        return load(str(name))(target)
    except UnknownDriver as error:
        raise PowerError(f"{target.fqdn}: {error}") from None
