"""Every route of the API, once: path, method, view, documentation and input schemas.

The werkzeug Map, input validation and /openapi.json are all built from
this table, so a route cannot exist undocumented.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import schemas as s
from .views import meta, reservations, schedules, systems

BASE = "/api/v1"


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    view: Callable
    summary: str
    tag: str
    body: dict | None = None
    query: dict[str, tuple[str, str]] = field(default_factory=dict)
    response: dict | None = None
    status: int = 200
    auth: bool = True
    statuses: tuple[int, ...] = ()  # failures worth documenting beyond 400/401/422

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def writes(self) -> bool:
        return self.method != "GET"


SYSTEM_FILTERS = {
    "arch": ("str", "only this architecture"),
    "condition": ("str", "automated, manual, broken or removed"),
    "lab": ("str", "only systems of this lab"),
    "pool": ("str", "only systems in this pool (an unknown pool is an error)"),
    "owner": ("str", "only systems owned by this user"),
    "reserved_by": ("str", "only systems reserved now by this user ('me' for the caller)"),
    "free_from": ("time", "only systems with no booking in [free_from, free_until)"),
    "free_until": ("time", "end of the free window (open-ended when omitted)"),
}
LIMIT = {"limit": ("int", "at most this many entries (default 200)")}
SCHEDULE_FILTERS = {
    "resource_id": ("str", "only this resource"),
    "user": ("str", "only this user's bookings"),
    "slice": ("str", "only this slice"),
    "start": ("time", "bookings touching the period from here"),
    "end": ("time", "... to here"),
}

ROUTES: list[Route] = [
    Route("GET", "/health", meta.health, "Liveness (no authentication)", "meta", response=s.HEALTH, auth=False),
    Route("GET", BASE + "/health", meta.health, "Liveness (no authentication)", "meta", response=s.HEALTH, auth=False),
    Route("GET", BASE + "/openapi.json", meta.openapi, "This API description (OpenAPI 3.1)", "meta",
          response={"type": "object"}, auth=False),
    Route("GET", BASE + "/me", meta.me, "Who the token belongs to", "meta", response=s.ME),
    # systems
    Route("POST", BASE + "/systems", systems.create, "Add a system (admins)", "systems",
          body=s.SYSTEM_CREATE, response=s.SYSTEM, status=201, statuses=(403, 409)),
    Route("GET", BASE + "/systems", systems.listing, "List systems the caller may see", "systems",
          query=SYSTEM_FILTERS, response=s.list_of(s.SYSTEM)),
    Route("GET", BASE + "/systems/<fqdn>", systems.show, "A system with its current reservation", "systems",
          response=s.SYSTEM, statuses=(404,)),
    Route("PATCH", BASE + "/systems/<fqdn>", systems.update, "Change a system (edit_system)", "systems",
          body=s.SYSTEM_UPDATE, response=s.SYSTEM, statuses=(403, 404)),
    Route("DELETE", BASE + "/systems/<fqdn>", systems.remove,
          "Mark a system removed; refused while reserved unless force=true, which returns its reservations",
          "systems", query={"force": ("bool", "return open reservations first")}, status=204,
          statuses=(403, 404, 409)),
    Route("GET", BASE + "/systems/<fqdn>/activity", systems.history, "The system's activity log, newest first",
          "systems", query=LIMIT, response=s.list_of(s.ACTIVITY), statuses=(404,)),
    # reservations
    Route("POST", BASE + "/reservations", reservations.create,
          "Reserve a system now or in advance (200 when request_id matched an earlier reservation)",
          "reservations", body=s.RESERVATION_CREATE, response=s.RESERVATION, status=201, statuses=(403, 404, 409)),
    Route("GET", BASE + "/reservations", reservations.listing,
          "Reservations, newest first: the caller's (admins: everybody's)", "reservations",
          query={"user": ("str", "this user's ('me' for the caller)"), "system": ("str", "of this system"),
                 "active": ("bool", "true: not yet returned; false: returned; omitted: both")},
          response=s.list_of(s.RESERVATION)),
    Route("GET", BASE + "/reservations/<int:id>", reservations.show, "A reservation", "reservations",
          response=s.RESERVATION, statuses=(404,)),
    Route("PATCH", BASE + "/reservations/<int:id>", reservations.update,
          "Extend (or shorten): {end} sets it, {extend_by} adds to the current end", "reservations",
          body=s.RESERVATION_UPDATE, response=s.RESERVATION, statuses=(403, 404, 409)),
    Route("DELETE", BASE + "/reservations/<int:id>", reservations.give_back, "Return a reservation now",
          "reservations", status=204, statuses=(403, 404)),
    Route("POST", BASE + "/reservations/<int:id>/heartbeat", reservations.heartbeat,
          "Renew a heartbeat reservation's deadline", "reservations", response=s.RESERVATION, statuses=(403, 404)),
    Route("GET", BASE + "/reservations/<int:id>/activity", reservations.history,
          "The reservation's activity log (extensions, return)", "reservations", query=LIMIT,
          response=s.list_of(s.ACTIVITY), statuses=(404,)),
    # generic schedules
    Route("GET", BASE + "/schedules", schedules.subjects, "Schedule subjects", "schedules",
          response=s.list_of(s.SUBJECT)),
    Route("GET", BASE + "/schedules/<subject>", schedules.subject, "A schedule subject and its resources",
          "schedules", response=s.SUBJECT, statuses=(404,)),
    Route("PUT", BASE + "/schedules/<subject>", schedules.put_subject,
          "Create or change a schedule subject (admins)", "schedules", body=s.SUBJECT_PUT, response=s.SUBJECT,
          statuses=(403,)),
    Route("PUT", BASE + "/schedules/<subject>/resources/<resource_id>", schedules.put_resource,
          "Declare a resource's capacity (admins); resources book exclusively by default", "schedules",
          body=s.RESOURCE_PUT, response=s.RESOURCE, statuses=(403, 404, 409)),
    Route("POST", BASE + "/schedules/<subject>/reservations", schedules.create,
          "Book a resource of the subject (best effort now, or later)", "schedules", body=s.SCHEDULE_CREATE,
          response=s.SCHEDULE_BOOKING, status=201, statuses=(404, 409)),
    Route("GET", BASE + "/schedules/<subject>/reservations", schedules.find,
          "Find bookings: every one touching the period and matching the filters", "schedules",
          query=SCHEDULE_FILTERS, response=s.list_of(s.SCHEDULE_BOOKING), statuses=(404,)),
    Route("GET", BASE + "/schedules/<subject>/reservations/<int:id>", schedules.show, "A booking", "schedules",
          response=s.SCHEDULE_BOOKING, statuses=(404,)),
    Route("PATCH", BASE + "/schedules/<subject>/reservations/<int:id>", schedules.update,
          "Move a booking or change its spec or slice", "schedules", body=s.SCHEDULE_UPDATE,
          response=s.SCHEDULE_BOOKING, statuses=(403, 404, 409)),
    Route("DELETE", BASE + "/schedules/<subject>/reservations/<int:id>", schedules.cancel, "Cancel a booking",
          "schedules", status=204, statuses=(403, 404)),
]
