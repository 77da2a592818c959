"""The one handler table: which use cases follow each event (domain/events.py).

A use case emits an event (`uow.emit(event)`) instead of calling another module's
use case; the unit of work hands it to the functions listed here for its type, in this order —
a consequence at once, anything else when the use case is done, before the commit
(store/uow.py). docs/architecture.md ("How a change flows") lists them.
"""
from __future__ import annotations

from ..domain import events as ev
from ..observe import metrics
from ..store.db import Database
from ..store.queries import freed_system_wanted
from ..store.tables import System
from ..store.uow import UnitOfWork
from .lifecycle import advance_states, health, jobs, loans
from .provisioning import installations
from .queue import scheduling


def _timed(handler):
    """The scheduler's cost per event, by the event's name (lablease_scheduler_event_duration_seconds)."""
    def timed(uow, event):
        with metrics.timed(metrics.instruments().events, event=event.name):
            handler(uow, event)
    timed.__name__ = handler.__name__
    return timed


@_timed
def place_new_sets(uow, event: ev.RecipeSetQueued) -> None:
    scheduling.on_new_sets(uow, event.recipe_set_ids, event.now)


@_timed  # every system_freed counts, the ones nothing could take too (their cost is the check)
def offer_freed_system(uow, event: ev.SystemFreed) -> None:
    """Offer the system to the holder and the queue, then to the advance reservations holding it — only when
    something could take it (one statement, store/queries.py): a return nothing waits for had spent three
    times its own work finding that out."""
    if freed_system_wanted(uow.session, event.system_id):
        scheduling.on_system_freed(uow, event.system_id, event.now)
        advance_states.on_system_freed(uow, event)


@_timed
def offer_changed_system(uow, event: ev.SystemChanged) -> None:
    scheduling.on_system_changed(uow, event.system_id, event.now)


@_timed
def offer_unfloored_systems(uow, event: ev.PoolFloorLowered) -> None:
    systems = [uow.session.get(System, system_id) for system_id in event.system_ids]
    scheduling.offer_to_waits(uow, [s for s in systems if s is not None], event.now)


HANDLERS: dict[type, tuple] = {
    ev.RecipeSetQueued: (place_new_sets, advance_states.on_new_sets),
    ev.SystemFreed: (offer_freed_system,),
    ev.SystemChanged: (offer_changed_system, advance_states.on_system_changed),
    ev.PoolFloorLowered: (offer_unfloored_systems,),
    ev.DistroTreeRemoved: (jobs.on_distro_tree_removed,),
    ev.SystemRemoved: (loans.on_system_removed,),
    ev.ReservationClosed: (installations.on_reservation_closed,),
    ev.RecipeAborted: (jobs.on_recipe_aborted,),
    ev.RecipeSystemTaken: (jobs.on_recipe_system_taken,),
    ev.RecipeFinished: (health.on_recipe_finished,),
    ev.InstallationCommandFailed: (installations.on_command_failed,),
    ev.AdvanceReservationEnded: (advance_states.on_ended,),
}


def unit_of_work(db: Database, settings=None, waker=None, write: bool = True, read_first: bool = False,
                 replica: bool = False) -> UnitOfWork:
    """A unit of work whose events (a freed system, a new recipe set) reach their handlers here."""
    return UnitOfWork(db, write=write, waker=waker, settings=settings, handlers=HANDLERS, read_first=read_first,
                      replica=replica)
