"""What happened, as typed events: a use case emits one, the unit of work hands it to the handler
table (services/handlers.py), and whatever must follow elsewhere follows there — no use case calls
another module's use case back in a circle.

Two kinds, told by `at_once`:
- a consequence (`at_once = True`) is part of the change that raised it and is handled as soon as it
  is emitted, so the rest of that change sees it done (an aborted recipe's set is refreshed after
  the abort, a closed reservation's release action is queued before the system is offered again);
- a notice to other parts (`at_once = False`) is collected and handled once the use case is done,
  before the transaction commits (UnitOfWork.dispatch): the scheduler and the advance reservations
  look at a freed or changed system then.
`name` is the event's label in metrics and logs.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from .permissions import Actor


@dataclass(frozen=True)
class Event:
    name: ClassVar[str]
    at_once: ClassVar[bool] = False


# --- notices, handled before the commit -------------------------------------------------------------

@dataclass(frozen=True)
class SystemFreed(Event):
    """A system's calendar has room from `now` (a reservation or loan ended, an AR let it go)."""
    name: ClassVar[str] = "system_freed"
    system_id: int
    now: datetime


@dataclass(frozen=True)
class SystemChanged(Event):
    """A system's requirements, pools, access or condition changed. `force`: what the API request said
    (False: a change that would break an advance reservation is refused; None: no request asked, as
    for the worker's and the web pages' changes, which just happen)."""
    name: ClassVar[str] = "system_changed"
    system_id: int
    now: datetime
    force: bool | None = None


@dataclass(frozen=True)
class RecipeSetQueued(Event):
    """Recipe sets wait for systems: a new job's, in the job's order (one event: the scheduler finds the head of
    the queue once for them all), or sets a passed health check may let start now."""
    name: ClassVar[str] = "recipe_set_new"
    recipe_set_ids: tuple[int, ...]
    now: datetime


@dataclass(frozen=True)
class DistroTreeRemoved(Event):
    """A distro tree was removed: recipes waiting for it cannot run."""
    name: ClassVar[str] = "distro_tree_removed"
    tree_id: int
    now: datetime


@dataclass(frozen=True)
class PoolFloorLowered(Event):
    """A pool's floor of idle Automated systems was lowered: a reservation waiting for one of its systems,
    held back by the floor, may be granted now."""
    name: ClassVar[str] = "pool_floor_lowered"
    system_ids: tuple[int, ...]
    now: datetime


# --- consequences, handled at once ------------------------------------------------------------------

@dataclass(frozen=True)
class ReservationClosed(Event):
    """A reservation ended (`reason` as in its return_reason): its installation stops, the release
    action runs."""
    name: ClassVar[str] = "reservation_closed"
    at_once: ClassVar[bool] = True
    reservation_id: int
    now: datetime
    reason: str


@dataclass(frozen=True)
class RecipeSystemTaken(Event):
    """The server ends the reservation a recipe holds its system by (the system removed, the owner's loan
    ended, ...; `why` is recorded): a recipe using the system is aborted, a recipe set only holding it
    while it waits gives its systems back and queues again. Its system never stays claimed by a recipe
    whose reservation is gone."""
    name: ClassVar[str] = "recipe_system_taken"
    at_once: ClassVar[bool] = True
    recipe_id: int
    now: datetime
    why: str


@dataclass(frozen=True)
class SystemRemoved(Event):
    """A system was removed (forced while held or lent): its open reservations are returned (a recipe on
    one aborted) and its loan ends, before anything looks at the system again."""
    name: ClassVar[str] = "system_removed"
    at_once: ClassVar[bool] = True
    system_id: int
    now: datetime
    actor: Actor | None


@dataclass(frozen=True)
class RecipeAborted(Event):
    """A recipe cannot go on (`why` is recorded): it is finished as aborted, and its recipe set's
    state refreshed when `refresh` (a caller that refreshes the set itself afterwards says False)."""
    name: ClassVar[str] = "recipe_aborted"
    at_once: ClassVar[bool] = True
    recipe_id: int
    now: datetime
    why: str
    refresh: bool = True


@dataclass(frozen=True)
class RecipeFinished(Event):
    """A recipe reached its end (completed, aborted or cancelled): a health check's outcome sets its
    system's health, any other recipe counts towards the system's next check (services/lifecycle/health.py).
    At once: a failed check makes the system Broken before anything offers it again."""
    name: ClassVar[str] = "recipe_finished"
    at_once: ClassVar[bool] = True
    recipe_id: int
    status: str
    now: datetime


@dataclass(frozen=True)
class InstallationCommandFailed(Event):
    """A power or netboot command of a system failed for good, or was cancelled: the installation it
    served (`installation_id`), or else every unfinished one of the system, fails with `why`."""
    name: ClassVar[str] = "installation_command_failed"
    at_once: ClassVar[bool] = True
    system_id: int
    now: datetime
    why: str
    installation_id: int | None = None


@dataclass(frozen=True)
class AdvanceReservationEnded(Event):
    """An advance reservation ends now in `state` (x: its end, d: deleted): its work is aborted, its
    reservations returned, its systems let go."""
    name: ClassVar[str] = "advance_reservation_ended"
    at_once: ClassVar[bool] = True
    ar_id: int
    now: datetime
    state: str
    actor: Actor | None
    why: str
