"""JSON schemas of request bodies and answers: used to validate and to describe (OpenAPI).

The description promises what the server takes: a request that matches these schemas is refused only
for what a schema cannot say (a name that names nobody, a start in the past, a booked calendar).
"""
from __future__ import annotations

from ..domain.health import HEALTHS
from ..domain.waitline import NOT_WITH_WAIT, WAIT_ONLY
from ..domain.inventory import INVENTORY_SCHEMA
from ..domain.systems import ARCH_PATTERN, FQDN_MAX, FQDN_PATTERN
from ..services.people.users import NAME_PATTERN
from ..domain.limits import MAX_INT, SPACE
from ..domain.paging import DEFAULT_LIMIT, MAX_LIMIT
from ..domain.windows import MAX_SECONDS  # the longest duration (about 68 years): stored as seconds
from ..timeparse import DURATION_PATTERN

DURATION = {
    "description": "ISO 8601 (PT4H), 30m 4h 2d 1w, h:m:s, or seconds; at least a second, at most about 68 years",
    "oneOf": [{"type": "string", "pattern": DURATION_PATTERN, "maxLength": 64},
              {"type": "number", "minimum": 1, "maximum": MAX_SECONDS}],
}
# The calendar's range is 1970 to 9000 (domain/windows.py): the pattern says the year.
TIME = {"type": "string", "format": "date-time", "pattern": "^(19[7-9][0-9]|[2-8][0-9]{3})-",
        "description": "RFC 3339 with a zone, e.g. 2026-11-22T14:00:00Z, from 1970 to 9000"}
NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}
NAME = {"type": "string", "minLength": 1, "maxLength": 255}
# A user, group, pool or schedule subject: letters, digits, _ . @ -, up to 64 (services.people.users.check_name)
ENTITY = {"type": "string", "pattern": NAME_PATTERN, "maxLength": 64,
          "description": "a name: letters, digits, _ . @ -; up to 64"}
FQDN = {"type": "string", "pattern": FQDN_PATTERN, "maxLength": FQDN_MAX, "description": "a host name"}
ARCH = {"type": "string", "pattern": ARCH_PATTERN, "maxLength": 16,
        "description": "an architecture the site knows (GET /api/v1/arches; administrators add more)"}
# Ids and counts are integer columns: 32 bits on PostgreSQL, so no id or count passes MAX_INT.
ID = {"type": "integer", "format": "int32", "minimum": 1, "maximum": MAX_INT}
COUNT = {"type": "integer", "minimum": 1, "maximum": MAX_INT}
# Query parameters by kind (routes.py); inputs.query_value reads them. An empty value is the same as none
# only for strings: a time, a boolean or a number must be one. The one number is a list's page size.
QUERY_KINDS = {"time": TIME, "bool": {"type": "boolean"},
               "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
               "int": {"type": "integer", "minimum": 1, "maximum": MAX_INT},  # e.g. a timeline's page number
               "span": {"type": "string", "enum": ["1d", "7d", "30d"]},  # a timeline's quick spans (domain/timeline)
               "per": {"type": "string", "enum": ["day", "hour"]},  # a utilisation report's step
               "health": {"type": "string", "enum": list(HEALTHS)},  # a system's health (domain/health.py)
               "wait": {"type": "integer", "minimum": 0, "maximum": 300},  # seconds a long poll waits (events)
               "cursor": {"type": "string", "pattern": "^(now|[0-9]{1,18})$"},  # the event feed's (services/records/feed.py)
               "str": {"type": "string"}}
# Path parameters by name (routes.py)
PATH_PARAMETERS = {
    "fqdn": FQDN, "name": ENTITY, "user": ENTITY, "subject": ENTITY,
    "resource_id": NAME,
    "ident": {"type": "string", "minLength": 1, "maxLength": 128, "description": "an id, or a name"},
}


def rule(message: str, **keywords) -> dict:
    """A rule over several fields (oneOf, anyOf, not of `required`s), and the message that says it is broken.

    inputs.check_body names the first field of the rule with this message."""
    return {**keywords, "description": message}

SCALAR = {"type": ["string", "number", "boolean"]}
SETTINGS_OBJECT = {"type": "object", "description": "driver settings; secrets (password, key, token) are never shown back"}

SYSTEM_FIELDS = {
    "arch": ARCH,
    "cpus": {**COUNT, "type": ["integer", "null"]},
    "memory_mb": {**COUNT, "type": ["integer", "null"]},
    "lab": {"type": ["string", "null"], "maxLength": 64},
    "attributes": {"type": "object", "description": "key -> value or list of values",
                   "additionalProperties": {"anyOf": [SCALAR, {"type": "array", "items": SCALAR}]}},
    "condition": {"enum": ["automated", "manual", "broken", "removed"]},
    "owner": {"type": ["string", "null"], "description": "user name"},
    "power": SETTINGS_OBJECT,
    "netboot": SETTINGS_OBJECT,
    "release_action": {"enum": ["power_off", "leave_on", "reprovision"],
                       "description": "what happens when a reservation of the system ends"},
    "reprovision_distro_tree": {**ID, "type": ["integer", "null"],
                                "description": "distro tree id installed by the reprovision release action"},
    "inventory": INVENTORY_SCHEMA,
}

SYSTEM_CREATE = {
    "type": "object",
    "required": ["fqdn", "arch"],
    "properties": {"fqdn": FQDN, **SYSTEM_FIELDS},
    "additionalProperties": False,
}
SYSTEM_UPDATE = {"type": "object", "properties": SYSTEM_FIELDS, "additionalProperties": False}
# One system of `lablease-server system import`: added as POST /systems or changed as PATCH /systems/{fqdn}.
SYSTEM_IMPORT = {**SYSTEM_CREATE, "required": ["fqdn"]}

RESERVATION_SUMMARY = {
    "type": ["object", "null"],
    "properties": {"id": {"type": "integer"}, "user": {"type": "string"}, "start": TIME, "end": NULLABLE_TIME,
                   "purpose": {"type": ["string", "null"], "description": "what the holder said it is for"}},
}
SYSTEM_HEALTH = {"type": "object", "description": "its health, apart from its condition (docs/health.md)", "properties": {
    "state": {"enum": ["unknown", "good", "bad", "checking"]}, "since": NULLABLE_TIME,
    "result": {"type": ["string", "null"], "description": "the last check's outcome"},
    "last_check": NULLABLE_TIME, "passed_at": NULLABLE_TIME, "check": {"type": ["string", "null"]},
    "recipe": {"type": ["integer", "null"], "description": "the running check's recipe"},
    "next_check": NULLABLE_TIME}}
SYSTEM = {
    "type": "object",
    "properties": {
        "fqdn": {"type": "string"},
        **SYSTEM_FIELDS,
        "usage": {"enum": ["idle", "scheduled", "waiting", "installing", "running", "pending"]},
        "reservation": RESERVATION_SUMMARY,
        "loan": {"type": ["object", "null"]},
        "power_state": {"enum": ["on", "off", "unknown"], "description": "last known, from completed commands"},
        "installation": {"type": ["object", "null"], "description": "the latest installation: {id, status}"},
        "pools": {"type": "array", "items": {"type": "string"}},
        "policy_pool": {"type": ["string", "null"], "description": "the pool whose access policy it uses"},
        "guest": {"type": "boolean", "description": "a guest recipe's virtual machine (docs/jobs.md, \"Guest "
                                                   "recipes\"): never scheduled, reserved or lent on its own"},
        "advance_reservations": {"type": "array", "description": "active advance reservations holding it",
                                 "items": {"type": "object", "properties": {
                                     "id": {"type": "integer"}, "name": {"type": ["string", "null"]},
                                     "state": {"type": "string"}, "start": TIME, "end": TIME}}},
        "created_at": TIME,
        "health": SYSTEM_HEALTH,
    },
}

PURPOSE = {"type": "string", "maxLength": 2000,
           "description": "what the system is for, shown with the holder; required where the site sets "
                          "require_purpose"}
END_OR_DURATION = rule("give either end or duration, not both", **{"not": {"required": ["duration", "end"]}})
RESERVATION_CREATE = {
    "type": "object",
    "allOf": [END_OR_DURATION,
              rule("give the system to reserve, or requires/pools to wait for any matching system",
                   anyOf=[{"required": ["system"]},
                          *({"required": ["wait", what], "properties": {"wait": {"const": True}, what: kind}}
                            for what, kind in (("requires", {"type": "object"}), ("pools", {"minItems": 1})))]),
              # domain/waitline.py check_fields and wanted: what goes with wait, and what never does
              {"if": {"required": ["wait"], "properties": {"wait": {"const": True}}},
               "then": {"allOf": [
                   rule("a reservation that waits starts when it is granted: give duration, not start or end",
                        **{"not": {"anyOf": [{"required": [name]} for name in NOT_WITH_WAIT]}}),
                   rule("give either a system or requires/pools to wait for, not both",
                        **{"not": {"anyOf": [{"required": ["system", "requires"]}, {"required": ["system", "pools"]}]}})]},
               "else": rule("is only for a reservation that waits (wait: true)",
                            **{"not": {"anyOf": [{"required": [name]} for name in WAIT_ONLY]}})}],
    "properties": {
        "system": {**FQDN, "description": "fqdn of the system"},
        "wait": {"type": "boolean", "default": False,
                 "description": "when the system (or every system matching requires/pools) is taken, wait in the "
                                "scheduler's queue (202, state waiting) instead of a 409"},
        "requires": {"type": ["object", "null"],
                     "description": "with wait: any system matching this hostRequires filter (job JSON form)"},
        "pools": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 100,
                  "description": "with wait: any system in one of these pools"},
        "priority": {"enum": ["Low", "Medium", "Normal", "High", "Urgent"],
                     "description": "with wait: its place in the queue, as a job's (default Normal)"},
        "take_by": {**DURATION, "description": "with wait: returned unless confirmed (heartbeat or PATCH) this "
                                               "long after it is granted"},
        "start": {**TIME, "description": "default now; a later start reserves in advance"},
        "end": TIME,
        "duration": {"oneOf": [*DURATION["oneOf"], {"const": "unlimited"}],
                     "description": DURATION["description"] + "; or 'unlimited' where the site allows"},
        "return_loan": {"type": "boolean", "default": False},
        "heartbeat": {**DURATION, "description": "return the reservation when no heartbeat came for this long"},
        "request_id": {"type": "string", "minLength": 1, "maxLength": 128,
                       "description": "a client-chosen id: retrying with it returns the same reservation"},
        "advance_reservation": {**ID, "description": "reserve inside this advance reservation "
                                "(its ACL users, its systems, inside its window; default end: the AR's)"},
        "purpose": PURPOSE,
        "healthy_within": {**DURATION, "description": "only if the system passed a health check this recently "
                           "(409 otherwise; with wait, it is granted only such a system, a check being run on "
                           "one candidate first when none has one)"},
    },
    "additionalProperties": False,
}
RESERVATION_UPDATE = {
    "type": "object",
    "allOf": [rule("give end, extend_by or heartbeat",
                   anyOf=[{"required": ["end"]}, {"required": ["extend_by"]}, {"required": ["heartbeat"]}]),
              rule("give exactly one of end or extend_by", **{"not": {"required": ["end", "extend_by"]}})],
    "properties": {
        "end": {**TIME, "description": "the new end"},
        "extend_by": {**DURATION, "description": "added to the current end (not to now)"},
        "heartbeat": {"oneOf": [DURATION, {"type": "null"}],
                      "description": "a new heartbeat interval, counted from now; null stops heartbeats"},
    },
    "additionalProperties": False,
}
RESERVATION = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "system": {"type": ["string", "null"], "description": "null while it waits for a system"},
        "user": {"type": "string"},
        "kind": {"enum": ["manual", "recipe"]},
        "start": TIME,
        "end": NULLABLE_TIME,
        "returned_at": NULLABLE_TIME,
        "state": {"enum": ["active", "upcoming", "returned", "expired", "waiting", "cancelled"]},
        "return_loan": {"type": "boolean"},
        "heartbeat": {"type": ["integer", "null"], "description": "seconds"},
        "last_heartbeat": NULLABLE_TIME,
        "due": NULLABLE_TIME,
        "seconds_left": {"type": ["integer", "null"]},
        "request_id": {"type": ["string", "null"]},
        "advance_reservation": {"type": ["integer", "null"], "description": "the advance reservation it is inside"},
        "purpose": {"type": ["string", "null"], "description": "what the holder said it is for"},
        "position": {"type": ["integer", "null"],
                     "description": "while it waits: 1 + the reservations and recipe sets ahead of it in the queue"},
        "estimated_start": {**NULLABLE_TIME, "description": "while it waits: when a system it may get is booked "
                                                            "until (heartbeats and returns can free one sooner)"},
        "wait": {"type": "object", "description": "a reservation asked with wait: its status (waiting, granted, "
                 "cancelled), queued_at, granted_at, duration (seconds from the grant; null: no limit), take_by "
                 "(seconds) and confirmed_at"},
        "waits_for": {"type": "string", "description": "a reservation asked with wait: what it waits (or waited) "
                      "for, in words: `system s1.lab.test`, or its requires and pools (`arch = x86_64 and (pool = "
                      "p1)`)"},
    },
}

SUBJECT_PUT = {
    "type": "object",
    "properties": {"default_duration": DURATION},
    "additionalProperties": False,
}
SUBJECT = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "default_duration": {"type": "string"},
                   "resources": {"type": "object"}},
}
RESOURCE_PUT = {
    "type": "object",
    "required": ["capacity"],
    "properties": {"capacity": COUNT},
    "additionalProperties": False,
}
RESOURCE = {"type": "object", "properties": {"subject": {"type": "string"}, "resource_id": {"type": "string"},
                                              "capacity": {"type": "integer"}}}
SCHEDULE_WINDOW = {"start": TIME, "end": TIME, "duration": DURATION}
SCHEDULE_CREATE = {
    "type": "object",
    "required": ["resource_id"],
    "allOf": [END_OR_DURATION],
    "properties": {
        "resource_id": NAME,
        "resource_spec": {"type": "object", "description": "free-form description of the resource"},
        "user": {**NAME, "description": "book on behalf of this user (admins)"},
        "slice": NAME,
        "quantity": {**COUNT, "default": 1},
        **SCHEDULE_WINDOW,
    },
    "additionalProperties": False,
}
SCHEDULE_UPDATE = {
    "type": "object",
    "allOf": [END_OR_DURATION],
    "properties": {"resource_spec": {"type": "object"}, "slice": NAME, **SCHEDULE_WINDOW},
    "additionalProperties": False,
}
SCHEDULE_BOOKING = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"}, "subject": {"type": "string"}, "resource_id": {"type": "string"},
        "resource_spec": {"type": "object"}, "user": {"type": "string"}, "slice": {"type": ["string", "null"]},
        "start": TIME, "end": NULLABLE_TIME, "quantity": {"type": "integer"},
    },
}
ACTIVITY = {
    "type": "object",
    "properties": {k: {"type": ["string", "null"]} for k in ("at", "user", "object", "id", "action", "field", "old", "new")},
}
ME = {"type": "object", "properties": {"name": {"type": "string"}, "admin": {"type": "boolean"},
                                        "groups": {"type": "array", "items": {"type": "string"}},
                                        "site": {"type": "object", "description": "the site's reservation rules"}}}
CALENDAR = {"type": "object", "required": ["url"], "properties": {
    "url": {"type": ["string", "null"],
            "description": "the caller's iCalendar feed of reservations and loans (its secret is the key); null "
                           "until one is made with POST"}}}
HEALTH = {"type": "object", "properties": {"status": {"const": "ok"}}}
READINESS = {"type": "object", "required": ["status", "checks"],
             "properties": {"status": {"enum": ["ready", "degraded"], "description": "degraded: a lab's agent "
                                       "is silent (checks.labs names it); the rest works"},
                            "checks": {"type": "object", "description": "database, schema, worker, labs: ok or "
                                                                        "why not",
                                       "additionalProperties": {"type": "string"}}}}
FEED_EVENT = {"type": "object", "required": ["cursor", "event", "at", "user", "message"],
              "description": "an event as its webhook's body tells it (its own fields by kind: reservation, system, "
                             "end, reason...), and its cursor", "properties": {
                  "cursor": {"type": "string", "description": "read on after this event with after=<cursor>"},
                  "event": {"type": "string", "description": "the kind: reservation.started, reservation.ending, "
                                                             "reservation.returned, loan.ending, job.finished, recipe.reserved, "
                                                             "system.health_failed, ar.* ..."},
                  "at": TIME, "user": {"type": "string", "description": "whom it concerns"},
                  "message": {"type": "string"}},
              "additionalProperties": True}
EVENT_FEED = {"type": "object", "required": ["events", "cursor"], "properties": {
    "events": {"type": "array", "items": FEED_EVENT},
    "cursor": {"type": "string", "description": "the cursor to read on from (past the events of others too)"}}}
EVENT_STREAM = {"type": "string", "description": "server-sent events: per event `id: <cursor>`, `event: <kind>`, "
                                                 "`data: <the event as JSON>`; comments keep it open"}
PROBLEM = {
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {"type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                   "detail": {"type": "string"}},
}


ARCH_CREATE = {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {"name": {
    **ARCH, "description": "letters, digits and _ . + -, at most 16 (e.g. ia64)"}}}
ARCH_ITEM = {"type": "object", "properties": {
    "name": {"type": "string"},
    "created_at": {**NULLABLE_TIME, "description": "when an administrator added it (null: one lablease starts with)"}}}


def list_of(schema: dict) -> dict:
    return {"type": "array", "items": schema}


PERMISSION = {"enum": ["view", "reserve", "loan_self", "loan_any", "control_system", "edit_system", "edit_policy"]}
LOAN_CREATE = {
    "type": "object",
    "required": ["recipient"],
    "properties": {
        "recipient": {**ENTITY, "description": "user name"},
        "duration": {**DURATION, "description": "limit the loan to this long (no limit by default)"},
        "limited": {"type": "boolean", "description": "limit the loan to the site's default_loan_duration"},
        "comment": {"type": "string", "maxLength": 2000},
        "force": {"type": "boolean", "description": "lend even though other users hold reservations on the "
                                                   "system: they are returned and their holders told (and, for "
                                                   "admins, although it takes a pool below its automation_floor)"},
        "purpose": PURPOSE,
    },
    "additionalProperties": False,
}
LOAN_UPDATE = {
    "type": "object",
    "allOf": [rule("give exactly one of end or extend_by", oneOf=[{"required": ["end"]}, {"required": ["extend_by"]}])],
    "properties": {"end": TIME, "extend_by": {**DURATION, "description": "added to the current end"}},
    "additionalProperties": False,
}
LOAN = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "system": {"type": "string"}, "recipient": {"type": "string"},
                   "lender": {"type": ["string", "null"]}, "start": TIME, "end": NULLABLE_TIME,
                   "comment": {"type": ["string", "null"]}, "returned_at": NULLABLE_TIME,
                   "return_reason": {"type": ["string", "null"]}, "purpose": {"type": ["string", "null"]}},
}
USER_LIST = {"type": "array", "items": ENTITY}
GROUP_CREATE = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": ENTITY, "description": {"type": "string"}, "members": USER_LIST, "owners": USER_LIST},
    "additionalProperties": False,
}
WEBHOOK = {
    # a host, and no user:password@ before it (api/access checks where it points: docs/access.md). No space or
    # control character, spelled as ranges: Python's \s (the server) and ECMA's (clients, the fuzzing) differ on
    # \x1c-\x1f and \x85, so a URL one called valid the other refused.
    "webhook_url": {"type": ["string", "null"], "pattern": "^https?://[^/?#@\\x00-\\x20\\x7f-\\x9f]+"
                                                           "([/?#][^\\x00-\\x20\\x7f-\\x9f]*)?$",
                    "maxLength": 2000,
                    "description": ("an http(s) URL with a host and without credentials (user:password@); "
                                    "notices are POSTed there as JSON")},
    "webhook_secret": {"type": ["string", "null"], "maxLength": 200,
                       "description": "key of the X-Lablease-Signature HMAC-SHA256 header"},
}
GROUP_UPDATE = {"type": "object", "properties": {"description": {"type": ["string", "null"]}, **WEBHOOK},
                "additionalProperties": False}
GROUP = {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": ["string", "null"]},
                                          "owners": USER_LIST, "members": USER_LIST,
                                          "webhook_url": {"type": ["string", "null"],
                                                          "description": "only shown to the group's owners and admins"}}}
MEMBER_ADD = {"type": "object", "required": ["user"], "properties": {"user": ENTITY, "owner": {"type": "boolean"}},
              "additionalProperties": False}
ME_UPDATE = {"type": "object", "properties": {"email": {"type": ["string", "null"], "format": "email",
                                                        "maxLength": 254}, **WEBHOOK},
             "additionalProperties": False}
AUTOMATION_FLOOR = {"type": "integer", "minimum": 0, "maximum": 1000000,
                    "description": "idle Automated systems kept for the scheduler: a manual reservation or loan "
                                   "that would leave fewer is refused (0: no floor)"}
POOL_CREATE = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": ENTITY, "description": {"type": "string"},
                   "owner_group": {**ENTITY, "description": "group whose members manage the pool"},
                   "automation_floor": AUTOMATION_FLOOR},
    "additionalProperties": False,
}
POOL_UPDATE = {"type": "object", "properties": {"description": {"type": ["string", "null"]},
                                                "owner_group": {"type": ["string", "null"]},
                                                "automation_floor": AUTOMATION_FLOOR},
               "additionalProperties": False}
POOL = {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": ["string", "null"]},
                                         "owner_group": {"type": ["string", "null"]},
                                         "automation_floor": {"type": "integer"},
                                         "systems": {"type": "array", "items": {"type": "string"}}}}
# A forced DELETE of a pool or group that others still named: what forcing changed, in words.
FORCED_DELETE = {"type": "object", "properties": {"deleted": {"type": "string"},
                                                  "changed": {"type": "array", "items": {"type": "string"}}}}
POOL_MEMBER = {"type": "object", "required": ["fqdn"], "properties": {"fqdn": FQDN}, "additionalProperties": False}
RULE_CREATE = {
    "type": "object",
    "required": ["permission"],
    "allOf": [rule("name exactly one of user, group or everybody: true",
                   oneOf=[{"required": ["user"]}, {"required": ["group"]}, {"required": ["everybody"]}])],
    "properties": {"permission": PERMISSION, "user": ENTITY, "group": ENTITY, "everybody": {"const": True}},
    "additionalProperties": False,
}
RULE = {"type": "object", "properties": {"id": {"type": "integer"}, "permission": PERMISSION,
                                         "user": {"type": ["string", "null"]}, "group": {"type": ["string", "null"]},
                                         "everybody": {"type": "boolean"}}}
POLICY = {"type": "object", "properties": {"system": {"type": "string"},
                                           "use_pool_policy": {"type": ["string", "null"]},
                                           "rules": {"type": "array", "items": RULE}}}
POLICY_PUT = {
    "type": "object",
    "properties": {"rules": {"type": "array", "items": RULE_CREATE},
                   "use_pool_policy": {"type": ["string", "null"],
                                       "description": "use this pool's policy instead (the system must be in it)"}},
    "additionalProperties": False,
}
POOL_POLICY = {"type": "object", "properties": {"pool": {"type": "string"}, "rules": {"type": "array", "items": RULE}}}


RECIPE_BRIEF = {"type": "object", "properties": {
    "id": {"type": "integer"}, "status": {"type": "string"}, "result": {"enum": ["none", "pass", "warn", "fail"]},
    "system": {"type": ["string", "null"]}, "whiteboard": {"type": "string"}, "started_at": NULLABLE_TIME,
    "finished_at": NULLABLE_TIME, "distro_tree": {"type": ["integer", "null"]},
    "reservation": {"type": ["integer", "null"]}}}
# A guest recipe as its host's harness needs it (docs/jobs.md, "Guest recipes")
GUEST_RECIPE = {"type": "object", "properties": {
    **RECIPE_BRIEF["properties"], "host": {"type": "integer", "description": "the host recipe"},
    "guestname": {"type": ["string", "null"]}, "guestargs": {"type": "string"},
    "mac": {"type": ["string", "null"]}, "address": {"type": ["string", "null"]},
    "installation": {"type": ["object", "null"], "description": "once the host runs", "properties": {
        "id": {"type": "integer"}, "status": {"type": "string"}, "kickstart_url": {"type": "string"},
        "callbacks": {"type": "object", "additionalProperties": {"type": "string"}},
        "tree_url": {"type": ["string", "null"]}, "kernel_url": {"type": "string"}, "initrd_url": {"type": "string"},
        "kernel_options": {"type": "string", "description": "the boot options, inst.ks= included"}}}}}
RECIPE_BRIEF["properties"]["guests"] = {"type": "array", "items": GUEST_RECIPE,
                                        "description": "a host recipe's guest recipes (absent when none)"}
RECIPE_BRIEF["properties"]["host"] = GUEST_RECIPE["properties"]["host"]
# A job, as job XML or as its JSON form (jobxml/schema.py: a component of the description, "Job")
JOB_SUBMISSION = {"application/xml": {"type": "string", "description": "job XML (see docs/jobs.md)"},
                  "application/json": {"$ref": "#/components/schemas/Job"}}
JOB = {"type": "object", "properties": {
    "id": {"type": "integer"}, "owner": {"type": "string"}, "whiteboard": {"type": "string"},
    "status": {"type": "string"}, "result": {"type": "string"}, "submitted_at": TIME, "finished_at": NULLABLE_TIME,
    "request_id": {"type": ["string", "null"]},
    "warnings": {"type": "array", "description": "parts of the job kept with it but not acted on (docs/jobs.md)",
                 "items": {"type": "object", "required": ["path", "message"], "additionalProperties": False,
                           "properties": {"path": {"type": "string", "description": "/job/recipeSet[1]/..."},
                                          "message": {"type": "string"}}}},
    "recipe_sets": {"type": "array", "items": {"type": "object", "properties": {
        "id": {"type": "integer"}, "priority": {"enum": ["Low", "Medium", "Normal", "High", "Urgent"]},
        "status": {"type": "string"}, "result": {"type": "string"}, "ar": {"type": ["integer", "null"]},
        "recipes": {"type": "array", "items": RECIPE_BRIEF}}}}}}
_SECONDS = {c: {"type": "number"} for c in ("recipe", "manual", "idle", "broken")}
UTILISATION_SERIES = {"type": "object", "required": ["buckets", "total", "figures"], "properties": {
    "pool": {"type": ["string", "null"]}, "from": TIME, "until": TIME, "per": {"enum": ["day", "hour"]},
    "aggregated_until": NULLABLE_TIME,
    "buckets": {"type": "array", "items": {"type": "object", "properties": {
        "at": TIME, "systems": {"type": "integer"}, **_SECONDS}}},
    "total": {"type": "object", "properties": _SECONDS},
    "figures": {"type": "object", "properties": {k: {"type": "number"} for k in
                                                 ("busy", "recipe", "broken", "system_hours")}}}}
TIMELINE = {"type": "object", "required": ["start", "end", "systems"], "properties": {
    "start": TIME, "end": TIME, "pool": {"type": "string"}, "page": {"type": "integer"}, "pages": {"type": "integer"},
    "systems": {"type": "array", "items": {"type": "object", "properties": {
        "system": {"type": "string"}, "bookings": {"type": "array", "items": {"type": "object", "properties": {
            "kind": {"enum": ["reservation", "loan", "ar", "recipe"]}, "what": {"type": "string"},
            "start": TIME, "end": NULLABLE_TIME, "link": {"type": ["string", "null"],
                                                          "description": "the web page of what it is"}}}}}}}}}
WAIT_REASON = {"type": "object", "description": "why it waits, in words (docs/scheduling.md)",
               "required": ["category", "sentence", "action"], "properties": {
                   "category": {"enum": ["advance-reservation", "holding", "no-match", "broken", "lent", "live", "busy",
                                         "behind", "peers"]},
                   "sentence": {"type": "string"}, "action": {"type": "string",
                                                              "description": "what its owner can do"}}}
RECIPE = {"type": "object", "properties": {
    **GUEST_RECIPE["properties"], **RECIPE_BRIEF["properties"], "job": {"type": "integer"}, "recipe_set": {"type": "integer"},
    "reservation": {"type": ["integer", "null"]}, "watchdog": NULLABLE_TIME, "spec": {"type": "object"},
    "tasks": {"type": "array"}, "why": {"type": "object", "description": "while waiting: why"}}}
RESULT = {"enum": ["pass", "warn", "fail"]}
QUEUE_ENTRY = {"type": "object", "properties": {
    "recipe": {"type": "integer"}, "job": {"type": "integer"}, "owner": {"type": "string"},
    "priority": {"enum": ["Low", "Medium", "Normal", "High", "Urgent"]}, "status": {"enum": ["queued", "assigned"]},
    "queued_at": TIME, "position": {"type": "integer", "description": "its recipe set's place in the queue, from 1"},
    "waiting": {"type": "integer", "description": "seconds since its recipe set was queued"},
    "wants": {"type": "string", "description": "what it asks for: forced system, host and distro requirements"},
    "why": {"type": "string"}, "reason": WAIT_REASON}}
RECIPE_UPDATE = {
    "type": "object",
    "properties": {
        "status": {"enum": ["completed", "aborted", "cancelled"]},
        "result": RESULT,
        "tasks": {"type": "array", "items": {"type": "object", "required": ["name", "result"],
                                             "properties": {"name": NAME, "result": RESULT,
                                                            "message": {"type": "string", "maxLength": 4000}},
                                             "additionalProperties": False}},
    },
    "additionalProperties": False,
}
DISTRO_CREATE = {
    "type": "object",
    "required": ["name", "arch", "url", "kernel", "initrd"],
    "properties": {
        "name": NAME, "family": {"type": "string"}, "arch": ARCH, "variant": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "url": {"type": "string", "description": "install tree URL"},
        "kernel": {"type": "string", "description": "kernel path, relative to url"},
        "initrd": {"type": "string", "description": "initrd path, relative to url"},
        "ks_meta": {"type": "string"}, "kernel_options": {"type": "string"},
        "labs": {"type": "array", "items": {"type": "string"}, "description": "labs that have it (empty: all)"},
    },
    "additionalProperties": False,
}
DISTRO = {"type": "object", "properties": {
    "id": {"type": "integer"}, **DISTRO_CREATE["properties"], "created_at": TIME,
    **{name: {"type": ["string", "null"]} for name in ("family", "variant", "ks_meta", "kernel_options")}}}

DISTRO_UPDATE = {"type": "object", "properties": {k: v for k, v in DISTRO_CREATE["properties"].items()
                                                   if k not in ("name", "arch", "variant")},
                 "additionalProperties": False}
PROVISION = {
    "type": "object",
    "required": ["distro_tree"],
    "properties": {
        "distro_tree": {"type": ["integer", "string"], "minimum": 1, "maximum": MAX_INT, "description": "a distro tree id, or its name"},
        "arch": {"type": "string", "description": "with a name: the tree's arch (default: the system's)"},
        "variant": {"type": "string", "description": "with a name: the tree's variant, when it has several"},
        "ks_meta": {"type": "string", "maxLength": 4000, "description": "key=value variables for the kickstart"},
        "kernel_options": {"type": "string", "maxLength": 4000, "description": "extra kernel command line"},
        "kernel_options_post": {"type": "string", "maxLength": 4000,
                                "description": "kernel command line of the installed system"},
        "kickstart": {"type": "string", "maxLength": 65536, "description": (
            "a kickstart template of your own, as a job's <kickstart> (where the site allows it: job_kickstarts)")},
    },
    "additionalProperties": False,
}
INSTALLATION = {"type": "object", "properties": {
    "id": {"type": "integer"}, "system": {"type": "string"}, "user": {"type": ["string", "null"]},
    "reservation": {"type": ["integer", "null"]}, "recipe": {"type": ["integer", "null"]},
    "distro_tree": {"type": "object"}, "ks_meta": {"type": "string"}, "kernel_options": {"type": "string"},
    "status": {"enum": ["queued", "installing", "installed", "running", "completed", "failed", "cancelled"]},
    "error": {"type": ["string", "null"]}, "created_at": TIME, "started_at": NULLABLE_TIME,
    "installed_at": NULLABLE_TIME, "finished_at": NULLABLE_TIME,
    "kickstart_url": {"type": "string", "description": "only in the answer to provision: it carries the token"},
    "kickstart": {"type": "string", "description": "to its user, the system's owner and admins; token hidden"}}}
POWER = {"type": "object", "required": ["action"], "properties": {"action": {"enum": ["on", "off", "reboot",
                                                                                  "interrupt"]}},
         "additionalProperties": False}
COMMAND = {"type": "object", "properties": {
    "id": {"type": "integer"}, "system": {"type": "string"},
    "action": {"enum": ["on", "off", "reboot", "interrupt", "netboot_install", "netboot_local", "netboot_clear"]},
    "status": {"enum": ["queued", "running", "completed", "failed", "cancelled"]}, "attempts": {"type": "integer"},
    "user": {"type": ["string", "null"]}, "installation": {"type": ["integer", "null"]},
    "error": {"type": ["string", "null"]}, "created_at": TIME, "started_at": NULLABLE_TIME,
    "finished_at": NULLABLE_TIME,
    "waiting_on": {"type": ["string", "null"], "description": "why an unfinished command of an agent-served lab "
                                                              "does not run: its lab's agent is silent or never "
                                                              "came (docs/lab-agents.md)"}}}

# The lab agent's side of the command queue (api/views/labs.py, docs/lab-agents.md)
AGENT_TAKE = {"type": "object", "additionalProperties": False, "properties": {
    "limit": {"type": "integer", "minimum": 1, "maximum": 64, "description": "at most this many commands (its free "
                                                                             "slots)"},
    "wait": {"type": "integer", "minimum": 0, "maximum": 300, "description": "seconds to wait for one (capped at "
                                                                            "half of agent_silence_limit)"},
    "version": {"type": "string", "maxLength": 64, "description": "the agent's lablease version"}}}
AGENT_COMMAND = {"type": "object", "required": ["id", "attempt", "action", "fqdn"], "properties": {
    "id": {"type": "integer"}, "attempt": {"type": "integer"},
    "action": {"enum": ["on", "off", "reboot", "netboot_install", "netboot_local", "netboot_clear"]},
    "fqdn": {"type": "string"}, "timeout": {"type": "number", "description": "seconds the attempt may take"},
    "power": {"type": ["object", "null"], "description": "the system's power settings, credentials too: only "
                                                       "with a power action"},
    "mac": {"type": ["string", "null"]}, "loaders": {"type": ["array", "null"], "items": {"type": "string"}},
    "boot": {"type": ["object", "null"], "properties": {"kernel_url": {"type": "string"},
                                                        "initrd_url": {"type": "string"},
                                                        "kernel_options": {"type": "string"}}}}}
AGENT_TAKEN = {"type": "object", "required": ["lab", "commands"], "properties": {
    "lab": {"type": "string"}, "commands": {"type": "array", "items": AGENT_COMMAND}}}
AGENT_REPORT = {"type": "object", "required": ["attempt", "outcome"], "additionalProperties": False, "properties": {
    "attempt": {"type": "integer", "minimum": 1, "description": "the attempt the command was taken as"},
    "outcome": {"enum": ["completed", "failed"]},
    "state": {"enum": ["on", "off", "unknown"], "description": "the power state read back after a power action"},
    "error": {"type": "string", "maxLength": 4000, "description": "why the attempt failed"}}}
LAB = {"type": "object", "required": ["name", "agent", "commands"], "properties": {
    "name": {"type": "string"},
    "agent": {"type": "object", "properties": {"version": {"type": ["string", "null"]}, "last_seen": NULLABLE_TIME,
                                               "state": {"enum": ["online", "silent", "never"]}}},
    "commands": {"type": "object", "properties": {"waiting": {"type": "integer"}, "running": {"type": "integer"},
                                                  "oldest": NULLABLE_TIME}}}}

AR_MAIL = {"type": "object", "properties": {
    "events": {"type": "string", "description": "Grid Engine -m: b (begin), e (end), a (error), or n (none)"},
    "to": {"type": "array", "items": {"type": "string", "format": "email"}, "description": "-M addresses"}},
    "additionalProperties": False}
# One ACL entry (domain/advance.check_acl): a name without @, comma or white space (limits.SPACE), after an
# optional @.
ACL_ENTRY_PATTERN = rf"^@?[^@,{SPACE}]+$"
AR_CREATE = {
    "type": "object",
    "allOf": [rule("give an end (qrsub -e) or a duration (qrsub -d): a start alone makes no window",
                   anyOf=[{"required": ["end"]}, {"required": ["duration"]}])],
    "properties": {
        "name": {"type": ["string", "null"], "maxLength": 128}, "account": {"type": ["string", "null"], "maxLength": 128},
        "start": {**TIME, "description": "qrsub -a; default now"}, "end": {**TIME, "description": "qrsub -e"},
        "duration": {**DURATION, "description": "qrsub -d"},
        "hosts": {"type": "array", "items": NAME, "description": "systems by name"},
        "requires": {"type": ["object", "null"], "description": "qrsub -l: a hostRequires filter (job JSON form)"},
        "pools": {"type": "array", "items": NAME, "description": "qrsub -q"},
        "count": {**COUNT, "description": "how many systems (qrsub -pe slots)"},
        # domain/advance.check_acl: one name per entry, each once, at least one
        "acl": {"type": "array", "minItems": 1, "uniqueItems": True,
                "description": "qrsub -u: user names and @groups",
                "items": {"type": "string", "pattern": ACL_ENTRY_PATTERN,
                          "description": "a user name, or @ and a group name"}},
        "mail": AR_MAIL, "error_handling": {"enum": ["hard", "soft", "yes", "no"], "description": "qrsub -he"},
        "validate_only": {"type": "boolean", "description": "qrsub -w v: say whether it could be granted"},
    },
    "additionalProperties": False,
}
AR_UPDATE = {"type": "object", "properties": {**{k: AR_CREATE["properties"][k] for k in
                                                 ("name", "end", "duration", "acl", "mail")},
                                              "release": {"type": "array", "items": NAME, "minItems": 1,
                                                          "description": "give these systems back now, before "
                                                                         "the end (not every one: delete it)"}},
             "additionalProperties": False}
AR = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": ["string", "null"]}, "owner": {"type": "string"},
    "account": {"type": ["string", "null"]}, "state": {"enum": ["w", "r", "x", "d", "E"]}, "start": TIME,
    "end": TIME, "duration": {"type": "integer"}, "systems": {"type": "array", "items": {"type": "string"}},
    "hosts": {"type": "array"}, "requires": {"type": ["object", "null"]}, "pools": {"type": "array"},
    "count": {"type": "integer"}, "acl": {"type": "array"}, "mail": {"type": "object"},
    "error_handling": {"enum": ["hard", "soft"]}, "submitted_at": TIME,
    "error_reasons": {"type": "array", "items": {"type": "string"}},
    "released": {"type": "array", "description": "systems given back before the end, and when",
                 "items": {"type": "object", "properties": {"system": {"type": "string"}, "at": TIME}}},
    "explain": {"type": "array", "items": {"type": "string"}, "description": "with ?explain=true: why it is in error"}}}
AR_VALIDATION = {"type": "object", "required": ["grantable", "systems"], "description": "validate_only: nothing is made",
                 "properties": {"grantable": {"type": "boolean", "description": "whether it could be granted"},
                                "systems": {"type": "array", "items": {"type": "string"},
                                            "description": "the systems it would be granted"}}}
AR_ACCOUNTING = {"type": "object", "properties": {
    "ar": {"type": "integer"}, "account": {"type": ["string", "null"]}, "state": {"enum": ["w", "r", "x", "d", "E"]},
    "reserved_seconds": {"type": "number"}, "used_seconds": {"type": "number"},
    "systems": {"type": "array"}, "jobs": {"type": "array"}, "reservations": {"type": "array"}}}


HEALTH_CHECK_FIELDS = {
    "system": {**FQDN, "description": "the check of this one system"},
    "pool": {**ENTITY, "description": "the check of this pool's systems"},
    "arch": {**ARCH, "description": "the check of this architecture's systems"},
    "job": {"type": ["object", "string"], "description": "the job to run, as POST /jobs takes it: its JSON form, "
            "or job XML as a string; one recipe, placed on the system checked"},
    "every": {**DURATION, "description": "check at most this long after the last check"},
    "after_recipes": {"type": ["integer", "null"], "minimum": 1,
                      "description": "check after this many recipes ran on the system"},
}
HEALTH_CHECK_CREATE = {"type": "object", "required": ["name", "job"],
                       "allOf": [rule("name exactly one of system, pool or arch",
                                      oneOf=[{"required": ["system"]}, {"required": ["pool"]},
                                             {"required": ["arch"]}])],
                       "properties": {"name": ENTITY, **HEALTH_CHECK_FIELDS}, "additionalProperties": False}
HEALTH_CHECK_UPDATE = {"type": "object", "properties": HEALTH_CHECK_FIELDS, "additionalProperties": False,
                       "allOf": [rule("name at most one of system, pool or arch", **{"not": {"anyOf": [
                           {"required": ["system", "pool"]}, {"required": ["system", "arch"]},
                           {"required": ["pool", "arch"]}]}})]}
HEALTH_CHECK = {"type": "object", "properties": {
    "name": {"type": "string"}, "system": {"type": ["string", "null"]}, "pool": {"type": ["string", "null"]},
    "arch": {"type": ["string", "null"]}, "every": {"type": ["integer", "null"], "description": "seconds"},
    "after_recipes": {"type": ["integer", "null"]}, "job": {"type": "object", "description": "the job, normalised"},
    "source": {"type": ["object", "string"], "description": "the job as it was given"},
    "owner": {"type": ["string", "null"]}, "created_at": TIME}}
# POST /batch: several writes in one transaction (api/views/batch.py)
BATCH_REQUEST = {"type": "object", "required": ["method", "path"], "additionalProperties": False, "properties": {
    "method": {"enum": ["POST", "PUT", "PATCH", "DELETE"]},
    "path": {"type": "string", "minLength": 1, "maxLength": 1000,
             "description": "the route's path, e.g. /api/v1/pools/gpus/systems (JSON routes only)"},
    "query": {"type": "object", "additionalProperties": {"type": ["string", "boolean", "integer"]},
              "description": "its query parameters, e.g. {\"force\": true}"},
    "body": {"description": "its JSON body"}}}
BATCH = {"type": "object", "required": ["requests"], "additionalProperties": False, "properties": {
    "requests": {"type": "array", "minItems": 1, "maxItems": 100, "items": BATCH_REQUEST,
                 "description": "applied in order, in one transaction: every one of them, or none"}}}
BATCH_ANSWER = {"type": "object", "required": ["responses"], "properties": {
    "responses": {"type": "array", "description": "each request's answer, in order", "items": {
        "type": "object", "required": ["status"],
        "properties": {"status": {"type": "integer"}, "body": {"description": "its JSON answer (absent for 204)"}}}}}}
