"""Every route of the API, once: path, method, view, documentation and input schemas.

The werkzeug Map, input validation and /openapi.json are all built from
this table, so a route cannot exist undocumented.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Callable

from werkzeug.exceptions import NotFound
from werkzeug.routing import IntegerConverter, Map, Rule, UnicodeConverter

from ..domain.limits import MAX_INT
from . import schemas as s
from ..services.provisioning.installations import EVENTS
from .views import (access, advance, batch, events, health, jobs, labs, meta, provisioning, reservations,
                    schedules, systems, timelines)

BASE = "/api/v1"
EVENT = "<any(" + ", ".join(EVENTS) + "):event>"  # an installer callback's name


class IdConverter(IntegerConverter):
    """`<int:id>`: a whole number; one past the database's ids names nothing (404).

    NotFound rather than werkzeug's ValidationError (here and in NameConverter): that would
    make the matcher try the path's rules for other methods and answer a misleading 405.
    """

    def to_python(self, value: str) -> int:
        ident = super().to_python(value)
        if ident > MAX_INT:
            raise NotFound(f"no such resource: ids are at most {MAX_INT}")
        return ident


class NameConverter(UnicodeConverter):
    """`<name>`: one path segment, never holding NUL (no name can, and PostgreSQL refuses it in text)."""

    def to_python(self, value: str) -> str:
        if "\x00" in value:
            raise NotFound("no such resource: no name holds a NUL character")
        return value


# Every rule of ROUTES is matched with these (api/app.py builds the Map with them).
CONVERTERS = {"int": IdConverter, "default": NameConverter, "string": NameConverter}

_MAPS: dict[str, Map] = {}
_MAPS_LOCK = threading.Lock()


def shared_map(name: str, rules: Callable[[], list[Rule]], **options) -> Map:
    """The process's one Map called `name`, built on first use from `rules()` (`options`: Map's, with
    `strict_slashes=False` and CONVERTERS unless given).

    A Map holds no per-request state, so every application in a process shares it. Building it
    once also keeps werkzeug's rule compiler (ast.parse) off other threads: CPython 3.11.7 keeps
    the AST builder's recursion depth per interpreter, so two threads parsing at once can fail
    with "AST constructor recursion depth mismatch".
    """
    with _MAPS_LOCK:
        if name not in _MAPS:
            built = Map(rules(), **{"strict_slashes": False, "converters": CONVERTERS, **options})
            built.update()  # its matcher compiled now, not by the first request
            _MAPS[name] = built
        return _MAPS[name]


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
    # Failures this route answers beyond those every route can (openapi.failures: 400, 422, 503; 401 with auth;
    # 404 with a path parameter; 413 and 415 with a body): 403, 404, 409, 429 ...
    statuses: tuple[int, ...] = ()
    # Other successes: when they happen, and (when it differs from `response`) their answer's schema
    also: dict[int, str | tuple[str, dict]] = field(default_factory=dict)
    media: str = "application/json"  # of the successful answer
    raw: dict[str, dict] | None = None  # the view reads the body itself: its schema by media type
    read_first: bool = False  # only reads until it locks the calendar (SQLite: short write lock)
    # Other media types of the successful answer, chosen by the request's Accept: their schemas by media type
    alternatives: dict[str, dict] = field(default_factory=dict)
    headers: dict[str, tuple[str, str]] = field(default_factory=dict)  # request headers the view reads: (kind, meaning)

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def writes(self) -> bool:
        return self.method != "GET"

    @property
    def paged(self) -> bool:
        """A list: it answers one page at a time (PAGING), the next page's URL in its Link header."""
        return self.method == "GET" and (self.response or {}).get("type") == "array"


SYSTEM_FILTERS = {
    "arch": ("str", "only this architecture"),
    "condition": ("str", "automated, manual, broken or removed"),
    "lab": ("str", "only systems of this lab"),
    "pool": ("str", "only systems in this pool (an unknown pool is an error)"),
    "owner": ("str", "only systems owned by this user"),
    "health": ("health", "only systems of this health: unknown, good, bad or checking"),
    "reserved_by": ("str", "only systems reserved now by this user ('me' for the caller)"),
    "free_from": ("time", "only systems with no booking in [free_from, free_until)"),
    "free_until": ("time", "end of the free window (open-ended when omitted)"),
}
TOKEN = {"token": ("str", "the installation's secret token, from its kickstart")}
AGENT_AUTH = {"Authorization": ("str", "Bearer <the lab's agent token> (lablease-server lab token NAME)")}
# Every writing route takes it (added by _validating below; the unit of work rolls back instead of committing).
VALIDATE_ONLY = {"validate_only": ("bool", "nothing is kept: the server does all it would (every check, the "
                                           "database's too) and answers what it would have made, then rolls back")}
FORCE_AR = {"force": ("bool", "do it even if it breaks an advance reservation, which then goes into error")}
FORCE_DELETE = {"force": ("bool", "delete it although others still name it: they are changed (the answer, 200, "
                                  "says how) and an advance reservation it breaks goes into error")}
TIMELINE_WINDOW = {"span": ("span", "1d, 7d (default) or 30d, from a seventh of it before now"),
                   "start": ("time", "explicit window start"), "end": ("time", "explicit window end (at most 92 days)")}
# Every list takes these (added by _paged below); the next page's URL is in the answer's Link header.
PAGING = {
    "limit": ("limit", "at most this many entries on a page (default 100, at most 1000)"),
    "after": ("str", "where the page starts: the cursor from the previous page's Link: <...>; rel=\"next\" "
                     "header (opaque; follow that URL rather than building one)"),
}
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
    Route("GET", BASE + "/ready", meta.ready, "Readiness: the database answers, its schema is current and a worker "
          "heartbeat is recent (no authentication); 503 naming what is not ready", "meta", response=s.READINESS,
          auth=False),
    Route("GET", BASE + "/openapi.json", meta.openapi, "This API description (OpenAPI 3.1)", "meta",
          response={"type": "object"}, auth=False),
    Route("GET", BASE + "/me", meta.me, "Who the token belongs to", "meta", response=s.ME),
    Route("POST", BASE + "/batch", batch.run, "Several writes applied in one transaction: all of them or none "
          "(the first refusal is answered, naming its request)", "meta", body=s.BATCH, response=s.BATCH_ANSWER,
          statuses=(403, 404, 409, 429)),
    Route("GET", BASE + "/events", events.listing, "The events the caller may see after a cursor (admins: all), the "
          "same bodies as the webhooks, waiting up to `wait` seconds for the first one; with Accept: "
          "text/event-stream, a stream of them (docs/api.md, \"Events\")", "meta",
          query={"after": ("cursor", "the cursor to read on from: an event's `cursor` (or the answer's), `now` for "
                                  "only what comes next; omitted: from the oldest event kept"),
                 "wait": ("wait", "seconds to wait for a first event when there is none yet (0 to 300, default 0); "
                                  "a stream closes after it (default 30)"),
                 "limit": ("limit", "at most this many events in one answer (default 100, at most 1000)")},
          headers={"Last-Event-ID": ("cursor", "a stream resumes after this cursor (an EventSource sends it when it "
                                    "reconnects); it takes the place of `after` (in a long poll too)")},
          response=s.EVENT_FEED, statuses=(410,), alternatives={"text/event-stream": s.EVENT_STREAM}),
    Route("GET", BASE + "/me/calendar", meta.calendar_show,
          "The address of the caller's iCalendar feed (reservations and loans)", "meta", response=s.CALENDAR),
    Route("POST", BASE + "/me/calendar", meta.calendar_rotate,
          "Make a new address for the caller's calendar feed (the old one stops working)", "meta",
          response=s.CALENDAR),
    # systems
    Route("POST", BASE + "/systems", systems.create, "Add a system (admins)", "systems",
          body=s.SYSTEM_CREATE, response=s.SYSTEM, status=201, statuses=(403, 409)),
    Route("GET", BASE + "/systems", systems.listing, "List systems the caller may see", "systems",
          query=SYSTEM_FILTERS, response=s.list_of(s.SYSTEM)),
    Route("GET", BASE + "/systems/<fqdn>", systems.show, "A system with its current reservation", "systems",
          response=s.SYSTEM, statuses=(404,)),
    Route("PATCH", BASE + "/systems/<fqdn>", systems.update, "Change a system (edit_system)", "systems",
          body=s.SYSTEM_UPDATE, query=FORCE_AR, response=s.SYSTEM, statuses=(403, 404, 409)),
    Route("DELETE", BASE + "/systems/<fqdn>", systems.remove,
          "Mark a system removed; refused while reserved unless force=true, which returns its reservations",
          "systems", query={"force": ("bool", "return open reservations first")}, status=204,
          statuses=(403, 404, 409)),
    Route("GET", BASE + "/systems/<fqdn>/activity", systems.history, "The system's activity log, newest first",
          "systems", response=s.list_of(s.ACTIVITY), statuses=(404,)),
    # health checks (docs/health.md)
    Route("POST", BASE + "/systems/<fqdn>/health-check", health.check_now,
          "Check the system's health as soon as it is free (whoever its recipes may run for)", "health",
          response=s.SYSTEM_HEALTH, status=202, statuses=(403, 404, 409)),
    Route("POST", BASE + "/health-checks", health.create, "Define a health check for a system, pool or arch (admins)",
          "health", body=s.HEALTH_CHECK_CREATE, response=s.HEALTH_CHECK, status=201, statuses=(403, 409)),
    Route("GET", BASE + "/health-checks", health.listing, "The health checks", "health",
          response=s.list_of(s.HEALTH_CHECK)),
    Route("GET", BASE + "/health-checks/<name>", health.show, "A health check", "health", response=s.HEALTH_CHECK,
          statuses=(404,)),
    Route("PATCH", BASE + "/health-checks/<name>", health.update, "Change a health check (admins)", "health",
          body=s.HEALTH_CHECK_UPDATE, response=s.HEALTH_CHECK, statuses=(403, 404, 409)),
    Route("DELETE", BASE + "/health-checks/<name>", health.delete, "Delete a health check (admins)", "health",
          status=204, statuses=(403, 404)),
    # loans
    Route("POST", BASE + "/systems/<fqdn>/loan", access.loan_grant,
          "Lend the system (owner, admins, loan_any to anyone; loan_self to oneself); refused (409) while another "
          "user holds a reservation on it, unless force=true, which returns those reservations", "loans",
          body=s.LOAN_CREATE, query={"force": ("bool", "return other users' reservations of the system first "
                                                        "(their holders are told); admins: lend although it "
                                                        "takes a pool below its automation_floor")},
          response=s.LOAN, status=201, statuses=(403, 404, 409)),
    Route("GET", BASE + "/systems/<fqdn>/loan", access.loan_show, "The current loan (404 when not lent)", "loans",
          response=s.LOAN, statuses=(404,)),
    Route("PATCH", BASE + "/systems/<fqdn>/loan", access.loan_extend,
          "Extend the loan: {end} or {extend_by} (needs loan_self for one's own loan, or loan_any)", "loans",
          body=s.LOAN_UPDATE, response=s.LOAN, statuses=(403, 404)),
    Route("DELETE", BASE + "/systems/<fqdn>/loan", access.loan_return,
          "Return the loan (recipient) or take it back (loan_any); reservations of users who lose access "
          "are returned", "loans", status=204, statuses=(403, 404)),
    Route("GET", BASE + "/systems/<fqdn>/loans", access.loan_history, "The system's loan history, newest first",
          "loans", response=s.list_of(s.LOAN), statuses=(404,)),
    # access policies
    Route("GET", BASE + "/systems/<fqdn>/access-policy", access.policy_show,
          "The system's access policy (its rules, or the pool whose policy it uses)", "access",
          response=s.POLICY, statuses=(404,)),
    Route("PUT", BASE + "/systems/<fqdn>/access-policy", access.policy_put,
          "Replace the rules and/or use a pool's policy instead (edit_policy)", "access", body=s.POLICY_PUT,
          query=FORCE_AR,
          response=s.POLICY, statuses=(403, 404, 409)),
    Route("POST", BASE + "/systems/<fqdn>/access-policy/rules", access.rule_add,
          "Add one rule: {permission, user | group | everybody: true} (edit_policy)", "access",
          body=s.RULE_CREATE, response=s.RULE, status=201, statuses=(403, 404)),
    Route("DELETE", BASE + "/systems/<fqdn>/access-policy/rules/<int:id>", access.rule_remove,
          "Remove one rule (edit_policy)", "access", query=FORCE_AR, status=204, statuses=(403, 404, 409)),
    # groups and the caller
    Route("PATCH", BASE + "/me", access.me_update, "Set the caller's mail address and webhook for notices (a webhook "
          "into the lab's network, unless the site allows it, or with credentials in its URL is 422)", "meta",
          body=s.ME_UPDATE, response={"type": "object"}),
    Route("POST", BASE + "/groups", access.group_create, "Create a group (the caller owns it)", "groups",
          body=s.GROUP_CREATE, response=s.GROUP, status=201, statuses=(409,)),
    Route("GET", BASE + "/groups", access.group_list,
          "Groups with owners and members (each webhook_url only for the group's owners and admins)", "groups",
          response=s.list_of(s.GROUP)),
    Route("GET", BASE + "/groups/<name>", access.group_show, "A group (webhook_url only for its owners and admins)",
          "groups", response=s.GROUP,
          statuses=(404,)),
    Route("PATCH", BASE + "/groups/<name>", access.group_update, "Change description or webhook (owners)",
          "groups", body=s.GROUP_UPDATE, response=s.GROUP, statuses=(403, 404)),
    Route("DELETE", BASE + "/groups/<name>", access.group_delete,
          "Delete a group (owners); 409 naming the access rules and pools that still name it, unless forced",
          "groups", query=FORCE_DELETE, status=204, statuses=(403, 404, 409),
          also={200: ("forced: what it changed (rules removed, pools left to administrators)", s.FORCED_DELETE)}),
    Route("POST", BASE + "/groups/<name>/members", access.member_add, "Add a member, or make one an owner (owners); "
          "409 for a group from the site's directory (its members follow the directory)",
          "groups", body=s.MEMBER_ADD, response=s.GROUP, statuses=(403, 404, 409)),
    Route("DELETE", BASE + "/groups/<name>/members/<user>", access.member_remove, "Remove a member (owners); 409 for "
          "a group from the site's directory", "groups", status=204, statuses=(403, 404, 409)),
    # pools
    Route("POST", BASE + "/pools", access.pool_create, "Create a pool owned by one of the caller's groups",
          "pools", body=s.POOL_CREATE, response=s.POOL, status=201, statuses=(403, 409)),
    Route("GET", BASE + "/pools", access.pool_list, "Pools with their systems", "pools", response=s.list_of(s.POOL)),
    Route("GET", BASE + "/pools/<name>", access.pool_show, "A pool", "pools", response=s.POOL, statuses=(404,)),
    Route("GET", BASE + "/pools/<name>/timeline", timelines.pool,
          "Bookings and loans of the pool's systems over a window (the web's timeline), 50 systems a page",
          "pools", query=TIMELINE_WINDOW | {"page": ("int", "page of 50 systems, from 1")},
          response=s.TIMELINE, statuses=(404,)),
    Route("GET", BASE + "/systems/<fqdn>/timeline", timelines.system,
          "The system's bookings and loans over a window (the web's timeline)", "systems", query=TIMELINE_WINDOW,
          response=s.TIMELINE, statuses=(404,)),
    Route("PATCH", BASE + "/pools/<name>", access.pool_update, "Change description or owning group", "pools",
          body=s.POOL_UPDATE, response=s.POOL, statuses=(403, 404)),
    Route("DELETE", BASE + "/pools/<name>", access.pool_delete,
          "Delete a pool; 409 naming the health checks and the systems using its access policy, unless forced",
          "pools", query=FORCE_DELETE, status=204, statuses=(403, 404, 409),
          also={200: ("forced: what it changed (checks deleted, systems back on their own rules)", s.FORCED_DELETE)}),
    Route("POST", BASE + "/pools/<name>/systems", access.pool_add_system,
          "Add a system (members of the owning group)", "pools", body=s.POOL_MEMBER, response=s.POOL,
          statuses=(403, 404)),
    Route("DELETE", BASE + "/pools/<name>/systems/<fqdn>", access.pool_remove_system,
          "Remove a system (members of the owning group)", "pools", query=FORCE_AR, status=204,
          statuses=(403, 404, 409)),
    Route("GET", BASE + "/pools/<name>/access-policy", access.pool_policy_show,
          "The pool's access policy, used by systems that opt into it", "pools", response=s.POOL_POLICY,
          statuses=(404,)),
    Route("POST", BASE + "/pools/<name>/access-policy/rules", access.pool_rule_add, "Add a rule to the pool's policy",
          "pools", body=s.RULE_CREATE, response=s.RULE, status=201, statuses=(403, 404)),
    Route("DELETE", BASE + "/pools/<name>/access-policy/rules/<int:id>", access.pool_rule_remove,
          "Remove a rule from the pool's policy", "pools", query=FORCE_AR, status=204, statuses=(403, 404, 409)),
    # reservations
    Route("POST", BASE + "/reservations", reservations.create,
          "Reserve a system now or in advance (200 when request_id matched an earlier reservation; 409 when "
          "the request differs from it)",
          "reservations", body=s.RESERVATION_CREATE, response=s.RESERVATION, status=201, statuses=(403, 404, 409),
          also={200: "request_id matched an earlier reservation of the caller's: that one",
                202: "wait: true and no system it may get is free: it waits in the queue (state waiting)"},
          read_first=True,
          query={"force": ("bool", "admins: reserve although it takes a pool below its automation_floor")}),
    Route("GET", BASE + "/reservations", reservations.listing,
          "Reservations, newest first: the caller's (admins: everybody's)", "reservations",
          query={"user": ("str", "this user's ('me' for the caller)"), "system": ("str", "of this system"),
                 "active": ("bool", "true: not yet returned; false: returned; omitted: both")},
          response=s.list_of(s.RESERVATION), statuses=(404,)),
    Route("GET", BASE + "/reservations/<int:id>", reservations.show, "A reservation", "reservations",
          response=s.RESERVATION, statuses=(404,)),
    Route("PATCH", BASE + "/reservations/<int:id>", reservations.update,
          "Extend (or shorten): {end} sets it, {extend_by} adds to the current end; {heartbeat} changes or "
          "(null) stops the heartbeat", "reservations",
          body=s.RESERVATION_UPDATE, response=s.RESERVATION, statuses=(403, 404, 409), read_first=True),
    Route("DELETE", BASE + "/reservations/<int:id>", reservations.give_back, "Return a reservation now",
          "reservations", status=204, statuses=(403, 404, 409), read_first=True),
    Route("POST", BASE + "/reservations/<int:id>/heartbeat", reservations.heartbeat,
          "Renew a heartbeat reservation's deadline", "reservations", response=s.RESERVATION,
          statuses=(403, 404, 409), read_first=True),
    Route("GET", BASE + "/reservations/<int:id>/activity", reservations.history,
          "The reservation's activity log (extensions, return)", "reservations",
          response=s.list_of(s.ACTIVITY), statuses=(404,)),
    # jobs and the scheduler
    Route("POST", BASE + "/jobs", jobs.submit,
          "Submit a job: job XML (application/xml) or the same as JSON; 422 names what is wrong. With "
          "request_id naming one of the caller's unfinished jobs, that job is returned (200); a different job "
          "with that request_id is refused (409)", "jobs",
          query={"request_id": ("str", "a client-chosen id; re-submitting with it while the job is unfinished "
                                       "returns the same job")},
          response=s.JOB, status=201, raw=s.JOB_SUBMISSION, statuses=(403, 409),
          also={200: "request_id matched one of the caller's unfinished jobs: that one"}),
    Route("GET", BASE + "/jobs", jobs.listing, "Jobs, newest first: the caller's (admins: mine=false for all)",
          "jobs", query={"mine": ("bool", "only the caller's (default true)"), "status": ("str", "only this status"),
                         "request_id": ("str", "only jobs submitted with this request id")},
          response=s.list_of(s.JOB)),
    Route("GET", BASE + "/jobs/<int:id>", jobs.show, "A job with its recipe sets and recipes", "jobs",
          response=s.JOB, statuses=(404,)),
    Route("GET", BASE + "/jobs/<int:id>.xml", jobs.export,
          "The job as Beaker job XML (what was submitted, normalised): submitting it again makes an identical job",
          "jobs", response={"type": "string"}, media="application/xml", statuses=(404,)),
    Route("POST", BASE + "/jobs/<int:id>/cancel", jobs.cancel, "Cancel every unfinished recipe of the job", "jobs",
          response=s.JOB, statuses=(403, 404)),
    Route("GET", BASE + "/recipes/<int:id>", jobs.show_recipe, "A recipe; while it waits, why", "jobs",
          response=s.RECIPE, statuses=(404,)),
    Route("PATCH", BASE + "/recipes/<int:id>", jobs.update_recipe,
          "Report task results and/or finish: {status: completed, result} or {status: aborted}", "jobs",
          body=s.RECIPE_UPDATE, response=s.RECIPE, statuses=(403, 404, 409)),
    Route("GET", BASE + "/queue", jobs.queue, "Waiting recipes in scheduling order, each with why it waits", "jobs",
          response=s.list_of(s.QUEUE_ENTRY)),
    Route("GET", BASE + "/systems/<fqdn>/usage", jobs.usage_history,
          "The system's usage and condition history, and time in each usage state", "systems",
          query={"from": ("time", "start of the period (default 7 days ago)"),
                 "until": ("time", "end of the period (default now)")}, response={"type": "object"},
          statuses=(404,)),
    Route("GET", BASE + "/reports/utilisation", jobs.utilisation,
          "Time in each usage state and share busy, per system and in total", "systems",
          query={"from": ("time", "start (default 7 days ago)"), "until": ("time", "end (default now)"),
                 "pool": ("str", "only systems of this pool")}, response={"type": "object"}),
    Route("GET", BASE + "/reports/utilisation/series", jobs.utilisation_series,
          "Recipe, manual, idle and broken seconds per day or hour, from the hours the worker aggregated",
          "systems", query={"from": ("time", "start (default 7 days ago)"), "until": ("time", "end (default now)"),
                            "pool": ("str", "only systems of this pool (default: every system)"),
                            "per": ("per", "day (default) or hour")},
          response=s.UTILISATION_SERIES),
    # advance reservations (Grid Engine's qrsub, qrstat, qralter, qrdel)
    Route("POST", BASE + "/advance-reservations", advance.create,
          "Create an advance reservation (qrsub; admins and arusers): 201 granted; validate_only: 200, nothing made",
          "advance-reservations", body=s.AR_CREATE, response=s.AR, status=201, statuses=(403, 409, 429),
          also={200: ("validate_only: whether it could be granted; nothing made", s.AR_VALIDATION)}),
    Route("GET", BASE + "/advance-reservations", advance.listing, "Advance reservations (qrstat)",
          "advance-reservations", query={"user": ("str", "this user's ('*': everybody's; default: the caller's)")},
          response=s.list_of(s.AR)),
    Route("GET", BASE + "/advance-reservations/<ident>", advance.show, "One advance reservation, by id or name",
          "advance-reservations", query={"explain": ("bool", "say why it is in error (qrstat -explain)")},
          response=s.AR, statuses=(404,)),
    Route("PATCH", BASE + "/advance-reservations/<ident>", advance.update,
          "Change end or duration, ACL, name, mail (qralter; owner and admins), re-checked", "advance-reservations",
          body=s.AR_UPDATE, response=s.AR, statuses=(403, 404, 409)),
    Route("DELETE", BASE + "/advance-reservations/<ident>", advance.remove,
          "Delete (qrdel; owner and admins); refused while bound work exists unless force=true, which aborts it",
          "advance-reservations", query={"force": ("bool", "abort bound work first")}, status=204,
          statuses=(403, 404, 409)),
    Route("GET", BASE + "/advance-reservations/<ident>/accounting", advance.accounting,
          "Reserved system-time against the time bound jobs and reservations used", "advance-reservations",
          response=s.AR_ACCOUNTING, statuses=(404,)),
    # provisioning
    Route("POST", BASE + "/arches", provisioning.arch_add,
          "Add an architecture systems and distro trees may name (admins)", "provisioning", body=s.ARCH_CREATE,
          response=s.ARCH_ITEM, status=201, statuses=(403, 409)),
    Route("GET", BASE + "/arches", provisioning.arch_list, "The architectures the site knows", "provisioning",
          response=s.list_of(s.ARCH_ITEM)),
    Route("POST", BASE + "/distro-trees", provisioning.distro_add, "Register a distro tree (admins)", "provisioning",
          body=s.DISTRO_CREATE, response=s.DISTRO, status=201, statuses=(403, 409)),
    Route("GET", BASE + "/distro-trees", provisioning.distro_list, "Distro trees", "provisioning",
          query={k: ("str", f"only this {k}") for k in ("name", "family", "arch", "variant")},
          response=s.list_of(s.DISTRO)),
    Route("GET", BASE + "/distro-trees/<int:id>", provisioning.distro_show, "A distro tree", "provisioning",
          response=s.DISTRO, statuses=(404,)),
    Route("PATCH", BASE + "/distro-trees/<int:id>", provisioning.distro_update,
          "Change a distro tree's URLs, defaults, tags or labs (admins)", "provisioning", body=s.DISTRO_UPDATE,
          response=s.DISTRO, statuses=(403, 404)),
    Route("DELETE", BASE + "/distro-trees/<int:id>", provisioning.distro_remove,
          "Remove a distro tree (admins); recipes waiting for it are aborted", "provisioning", status=204,
          statuses=(403, 404)),
    Route("POST", BASE + "/systems/<fqdn>/provision", provisioning.provision,
          "Install a distro tree on a system the caller holds: 202 with the installation and its kickstart_url",
          "provisioning", body=s.PROVISION, response=s.INSTALLATION, status=202, statuses=(403, 404, 409)),
    Route("GET", BASE + "/systems/<fqdn>/installations", provisioning.installation_list,
          "The system's installations the caller may see (its requester, the reservation's holder, the system's "
          "owner, admins), newest first; secret variables masked", "provisioning",
          response=s.list_of(s.INSTALLATION), statuses=(404,)),
    Route("GET", BASE + "/installations/<int:id>", provisioning.installation_show,
          "An installation with its kickstart, secret variables masked: for its requester, the reservation's holder, "
          "the system's owner and admins (404 for anybody else)", "provisioning",
          response=s.INSTALLATION, statuses=(404,)),
    Route("POST", BASE + "/systems/<fqdn>/power", provisioning.power,
          "Queue a power action: on, off or reboot (control_system, or the current holder)", "provisioning",
          body=s.POWER, response=s.COMMAND, status=202, statuses=(403, 404, 409)),
    Route("GET", BASE + "/systems/<fqdn>/commands", provisioning.command_list,
          "The system's power and netboot commands, newest first", "provisioning",
          response=s.list_of(s.COMMAND), statuses=(404,)),
    Route("GET", BASE + "/commands/<int:id>", provisioning.command_show, "A command", "provisioning",
          response=s.COMMAND, statuses=(404,)),
    Route("DELETE", BASE + "/commands/<int:id>", provisioning.command_cancel,
          "Cancel a queued or stuck command (administrators); the installation it belonged to fails",
          "provisioning", response=s.COMMAND, statuses=(403, 404, 409)),
    Route("GET", BASE + "/installations/<int:id>/kickstart", provisioning.kickstart,
          "The rendered kickstart, for the installer (authorised by ?token=, no user token, until the installation "
          "is running or over)", "installer",
          query=TOKEN, response={"type": "string"}, media="text/plain", auth=False, statuses=(403,)),
    Route("POST", BASE + "/installations/<int:id>/" + EVENT,
          provisioning.callback, "An installer callback: install_start, install_done, postinstall_done or install_fail "
          "(authorised by ?token=, no user token)", "installer",
          query=TOKEN, status=204, auth=False, statuses=(403, 409)),
    Route("POST", BASE + "/recipes/<int:id>/" + EVENT,
          provisioning.recipe_callback, "The same callback for the recipe's latest installation", "installer",
          query=TOKEN, status=204, auth=False, statuses=(403, 404, 409)),
    # labs and their agents (docs/lab-agents.md)
    Route("GET", BASE + "/labs", labs.listing, "The labs agents serve: each agent's version, when it was last "
          "heard from (online, silent or never), and the lab's commands waiting and running", "labs",
          response=s.list_of(s.LAB)),
    Route("POST", BASE + "/agent/take", labs.take, "A lab agent takes its lab's runnable commands (authorised by "
          "the lab's agent token, no user token), waiting up to `wait` seconds for one", "labs",
          body=s.AGENT_TAKE, response=s.AGENT_TAKEN, auth=False, read_first=True, statuses=(401,),
          headers=AGENT_AUTH),
    Route("POST", BASE + "/agent/commands/<int:id>/report", labs.report, "A lab agent reports one attempt's "
          "outcome (authorised by the lab's agent token); 409 when that attempt is no longer its own", "labs",
          body=s.AGENT_REPORT, response=s.COMMAND, auth=False, statuses=(401, 404, 409),
          headers=AGENT_AUTH),
    # generic schedules
    Route("GET", BASE + "/schedules", schedules.subjects, "Schedule subjects", "schedules",
          response=s.list_of(s.SUBJECT)),
    Route("GET", BASE + "/schedules/<subject>", schedules.subject, "A schedule subject and its resources",
          "schedules", response=s.SUBJECT, statuses=(404,)),
    Route("PUT", BASE + "/schedules/<subject>", schedules.put_subject,
          "Create or change a schedule subject (admins)", "schedules", body=s.SUBJECT_PUT, response=s.SUBJECT,
          statuses=(403,), also={201: "Created"}),
    Route("PUT", BASE + "/schedules/<subject>/resources/<resource_id>", schedules.put_resource,
          "Declare a resource's capacity (admins); resources book exclusively by default", "schedules",
          body=s.RESOURCE_PUT, response=s.RESOURCE, statuses=(403, 404, 409)),
    Route("POST", BASE + "/schedules/<subject>/reservations", schedules.create,
          "Book a resource of the subject (best effort now, or later; for another user: admins)", "schedules",
          body=s.SCHEDULE_CREATE, response=s.SCHEDULE_BOOKING, status=201, statuses=(403, 404, 409)),
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


def _force_in_body_too(route: Route) -> Route:
    """A route taking ?force= takes {"force": true} in its JSON body as well (inputs.merge_force)."""
    if "force" not in route.query:
        return route
    body = route.body or {"type": "object", "additionalProperties": False, "properties": {}}
    force = {"type": "boolean", "description": f"the same as ?force=: {route.query['force'][1]}"}
    return replace(route, body={**body, "properties": {**body["properties"], "force": force}})


def _paged(route: Route) -> Route:
    return replace(route, query={**route.query, **PAGING}) if route.paged else route


def _validating(route: Route) -> Route:
    """A write a token holder makes takes ?validate_only=true (the installer's callbacks do not)."""
    return replace(route, query={**route.query, **VALIDATE_ONLY}) if route.writes and route.auth else route


ROUTES = [_validating(_paged(_force_in_body_too(route))) for route in ROUTES]
