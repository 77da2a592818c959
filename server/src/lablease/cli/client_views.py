"""How each kind of answer looks: its table columns, its detail block, its XML element names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from . import output
from .output import Column, when

NO_LIMIT = "no limit"


@dataclass(frozen=True)
class Shape:
    tag: str  # XML element of one object
    plural: str  # XML root of a list
    columns: Sequence[Column]  # the table of a list
    details: Callable[[dict], list[tuple[str, object]]]  # the block of one object
    human: Callable[[dict], str] | None = None  # replaces the block when set

    def render(self, data, fmt: str | None) -> str:
        if fmt == "json":
            return output.to_json(data)
        if fmt == "xml":
            return output.to_xml(data, self.tag, self.plural)
        if isinstance(data, list):
            return output.table(data, self.columns)
        return self.human(data) if self.human else output.key_values(self.details(data))


def end_time(value: str | None) -> str:
    return when(value, none=NO_LIMIT)


def _held(system: dict, key: str):
    reservation = system.get("reservation") or {}
    if key == "end":
        return end_time(reservation.get("end")) if reservation else None
    return reservation.get(key)


def _system_details(s: dict) -> list:
    reservation = s.get("reservation") or {}
    return [("fqdn", s.get("fqdn")), ("arch", s.get("arch")), ("lab", s.get("lab")),
            ("condition", s.get("condition")), ("usage", s.get("usage")), ("owner", s.get("owner")),
            ("reserved by", reservation.get("user")), ("until", _held(s, "end")),
            ("purpose", reservation.get("purpose")), *_loan_summary(s.get("loan")),
            *_health_details(s.get("health") or {}), *_inventory_details(s.get("inventory") or {})]


def _health_details(health: dict) -> list:
    """The system's health (docs/health.md): its state since when, the last check's outcome, what is next."""
    if not health:
        return []
    pairs = [("health", f"{health.get('state')} since {when(health.get('since'))}")]
    for key, label in (("result", "last check"), ("passed_at", "last passed"), ("next_check", "next check")):
        if health.get(key):
            pairs.append((label, when(health[key]) if key != "result" else health[key]))
    return pairs


def _loan_summary(loan: dict | None) -> list:
    """A lent system's recipient and purpose, in its details (the holder's purpose shows everywhere)."""
    if not loan:
        return []
    return [("lent to", loan.get("recipient")), *([("loan purpose", loan["purpose"])] if loan.get("purpose") else [])]


def _inventory_details(inv: dict) -> list:
    """The inventory's filled-in fields, one line each (disks and devices summed up)."""
    cpu = inv.get("cpu") or {}
    cpu_text = " ".join(str(cpu[k]) for k in ("vendor", "model_name") if cpu.get(k))
    counts = ", ".join(f"{cpu[k]} {k}" for k in ("processors", "cores", "sockets") if cpu.get(k) is not None)
    pairs = [("vendor", inv.get("vendor")), ("model", inv.get("model")), ("serial", inv.get("serial")),
             ("location", inv.get("location")), ("type", inv.get("system_type")),
             ("hypervisor", inv.get("hypervisor") or ("bare metal" if inv.get("system_type") else None)),
             ("cpu", "; ".join(t for t in (cpu_text, counts) if t) or None),
             ("cpu flags", " ".join(cpu.get("flags") or []) or None), ("numa nodes", inv.get("numa_nodes")),
             ("disks", ", ".join(f"{d.get('model') or 'disk'} {d.get('size')} B" for d in inv.get("disks") or [])
              or None),
             ("devices", len(inv["devices"]) if inv.get("devices") else None),
             ("last inventoried", when(inv["last_inventoried"]) if inv.get("last_inventoried") else None)]
    return [(name, value) for name, value in pairs if value is not None]


SYSTEM = Shape("system", "systems", [
    ("FQDN", lambda s: s.get("fqdn")),
    ("ARCH", lambda s: s.get("arch")),
    ("LAB", lambda s: s.get("lab")),
    ("CONDITION", lambda s: s.get("condition")),
    ("USAGE", lambda s: s.get("usage")),
    ("RESERVED BY", lambda s: _held(s, "user")),
    ("UNTIL", lambda s: _held(s, "end")),
    ("HEALTH", lambda s: (s.get("health") or {}).get("state")),
], _system_details)


def held_system(r: dict) -> str | None:
    """The system a reservation holds, or what a reservation that has none yet waits (or waited) for."""
    if r.get("system") or not r.get("waits_for"):
        return r.get("system")
    return f"(waits for {r['waits_for']})" if r.get("state") == "waiting" else f"(waited for {r['waits_for']})"


def reservation_end(r: dict) -> str:
    """Its end; a reservation not granted yet has none: how long it lasts once granted (or that it never was)."""
    wait = r.get("wait") or {}
    if r.get("system") or not wait:
        return end_time(r.get("end"))
    if wait.get("status") != "waiting":
        return "never granted"
    length = wait.get("duration")
    return (output.format_human(length) if length is not None else NO_LIMIT) + " once granted"


def _reservation_details(r: dict) -> list:
    pairs = [("id", r.get("id")), ("system", held_system(r)), ("user", r.get("user")),
             ("state", r.get("state")), ("start", when(r.get("start"))), ("end", reservation_end(r))]
    if r.get("purpose"):
        pairs.append(("purpose", r["purpose"]))
    if r.get("returned_at"):
        pairs.append(("returned at", when(r["returned_at"])))
    if r.get("heartbeat"):
        pairs += [("heartbeat", output.format_human(r["heartbeat"])), ("due", when(r.get("due")))]
    if r.get("return_loan"):
        pairs.append(("return loan", True))
    if r.get("request_id"):
        pairs.append(("request id", r["request_id"]))
    return pairs


RESERVATION = Shape("reservation", "reservations", [
    ("ID", lambda r: r.get("id")),
    ("SYSTEM", held_system),
    ("USER", lambda r: r.get("user")),
    ("KIND", lambda r: r.get("kind")),
    ("STATE", lambda r: r.get("state")),
    ("START", lambda r: when(r.get("start"))),
    ("END", reservation_end),
], _reservation_details)


def _loan_details(loan: dict) -> list:
    pairs = [("system", loan.get("system")), ("recipient", loan.get("recipient")), ("lender", loan.get("lender")),
             ("start", when(loan.get("start"))), ("end", end_time(loan.get("end"))),
             ("comment", loan.get("comment"))]
    if loan.get("purpose"):
        pairs.append(("purpose", loan["purpose"]))
    if loan.get("returned_at"):
        pairs += [("returned at", when(loan["returned_at"])), ("why", loan.get("return_reason"))]
    return pairs


LOAN = Shape("loan", "loans", [
    ("SYSTEM", lambda loan: loan.get("system")),
    ("RECIPIENT", lambda loan: loan.get("recipient")),
    ("LENDER", lambda loan: loan.get("lender")),
    ("END", lambda loan: end_time(loan.get("end"))),
], _loan_details)


HEALTH_CHECK = Shape("health check", "health checks", [
    ("NAME", lambda h: h.get("name")),
    ("FOR", lambda h: next((f"{k} {h[k]}" for k in ("system", "pool", "arch") if h.get(k)), None)),
    ("EVERY", lambda h: output.format_human(h["every"]) if h.get("every") else None),
    ("AFTER RECIPES", lambda h: h.get("after_recipes")),
    ("OWNER", lambda h: h.get("owner")),
], lambda h: [("name", h.get("name")), ("system", h.get("system")), ("pool", h.get("pool")),
              ("arch", h.get("arch")), ("every", output.format_human(h["every"]) if h.get("every") else None),
              ("after recipes", h.get("after_recipes")), ("owner", h.get("owner"))])


LAB = Shape("lab", "labs", [
    ("NAME", lambda lab: lab.get("name")),
    ("AGENT", lambda lab: lab["agent"].get("state")),
    ("VERSION", lambda lab: lab["agent"].get("version")),
    ("LAST SEEN", lambda lab: when(lab["agent"].get("last_seen"))),
    ("WAITING", lambda lab: lab["commands"].get("waiting")),
    ("RUNNING", lambda lab: lab["commands"].get("running")),
    ("OLDEST", lambda lab: when(lab["commands"].get("oldest"))),
], lambda lab: [("name", lab.get("name")), ("agent", lab["agent"].get("state"))])


POOL = Shape("pool", "pools", [
    ("NAME", lambda p: p.get("name")),
    ("OWNER GROUP", lambda p: p.get("owner_group")),
    ("SYSTEMS", lambda p: p.get("systems")),
    ("DESCRIPTION", lambda p: p.get("description")),
], lambda p: [("name", p.get("name")), ("description", p.get("description")),
              ("owner group", p.get("owner_group")), ("systems", p.get("systems")),
              ("automation floor", p.get("automation_floor"))])


def who(rule: dict) -> str:
    if rule.get("everybody"):
        return "everybody"
    if rule.get("user"):
        return f"user {rule['user']}"
    return f"group {rule.get('group')}"


RULE = Shape("rule", "rules", [
    ("ID", lambda r: r.get("id")),
    ("PERMISSION", lambda r: r.get("permission")),
    ("WHO", who),
], lambda r: [("id", r.get("id")), ("permission", r.get("permission")), ("who", who(r))])


def _policy_human(p: dict) -> str:
    head = output.key_values([("system", p.get("system")), ("use pool policy", p.get("use_pool_policy"))])
    return head + "\n\n" + output.table(p.get("rules") or [], RULE.columns)


POLICY = Shape("access-policy", "access-policies", RULE.columns,
               lambda p: [("system", p.get("system")), ("use pool policy", p.get("use_pool_policy"))],
               _policy_human)

CALENDAR = Shape("calendar", "calendars", [("URL", lambda c: c.get("url"))], lambda c: [("url", c.get("url"))])
USER = Shape("user", "users", [("NAME", lambda u: u.get("name")), ("ADMIN", lambda u: u.get("admin")),
                               ("GROUPS", lambda u: u.get("groups"))],
             lambda u: [("name", u.get("name")), ("admin", u.get("admin")), ("groups", u.get("groups"))])


# --- jobs, recipes, the queue, distro trees ---------------------------------------------------

def job_recipes(job: dict) -> list[dict]:
    """Every recipe of the job (a host's guest recipes right after it), each with its recipe set's id and
    priority (for the table)."""
    return [{**recipe, "recipe_set": recipe_set.get("id"), "priority": recipe_set.get("priority")}
            for recipe_set in job.get("recipe_sets") or [] for host in recipe_set.get("recipes") or []
            for recipe in (host, *(host.get("guests") or []))]


def _guest_details(g: dict) -> list:
    """What a host's harness needs to start a guest (docs/jobs.md, "Guest recipes")."""
    installation = g.get("installation") or {}
    pairs = [("guest recipe", g.get("id")), ("host recipe", g.get("host")), ("status", g.get("status")),
             ("system", g.get("system")), ("guestname", g.get("guestname")), ("guestargs", g.get("guestargs")),
             ("mac", g.get("mac")), ("address", g.get("address")),
             ("kickstart", installation.get("kickstart_url") or "(once its host runs)")]
    if installation:
        pairs += [("tree", installation.get("tree_url")), ("kernel options", installation.get("kernel_options"))]
        pairs += [(event, url) for event, url in (installation.get("callbacks") or {}).items()]
    return pairs


def _guest_blocks(guests: list[dict]) -> str:
    return "".join("\n\n" + output.key_values(_guest_details(g)) for g in guests)


RECIPE_ROWS: Sequence[Column] = [
    ("SET", lambda r: r.get("recipe_set")),
    ("PRIORITY", lambda r: r.get("priority")),
    ("RECIPE", lambda r: r.get("id")),
    ("STATUS", lambda r: r.get("status")),
    ("RESULT", lambda r: r.get("result")),
    ("SYSTEM", lambda r: r.get("system")),
    ("WHITEBOARD", lambda r: r.get("whiteboard")),
]


def _job_details(j: dict) -> list:
    return [("id", j.get("id")), ("owner", j.get("owner")), ("whiteboard", j.get("whiteboard")),
            ("status", j.get("status")), ("result", j.get("result")),
            ("submitted", when(j.get("submitted_at"))), ("finished", when(j.get("finished_at")))]


def _job_human(j: dict) -> str:
    recipes = job_recipes(j)
    warnings = "".join(f"\nwarning: {w['path']}: {w['message']}" for w in j.get("warnings") or [])
    return (output.key_values(_job_details(j)) + "\n\n" + output.table(recipes, RECIPE_ROWS)
            + _guest_blocks([r for r in recipes if r.get("host")]) + warnings)


JOB = Shape("job", "jobs", [
    ("ID", lambda j: j.get("id")),
    ("OWNER", lambda j: j.get("owner")),
    ("STATUS", lambda j: j.get("status")),
    ("RESULT", lambda j: j.get("result")),
    ("RECIPES", lambda j: len(job_recipes(j))),
    ("SYSTEMS", lambda j: [r["system"] for r in job_recipes(j) if r.get("system")]),
    ("SUBMITTED", lambda j: when(j.get("submitted_at"))),
    ("WHITEBOARD", lambda j: j.get("whiteboard")),
], _job_details, _job_human)


def busy_text(busy: dict) -> str:
    until = busy.get("until")
    return f"{busy.get('system')} until {when(until) if until else 'further notice'}"


def _why_details(why: dict) -> list:
    pairs = [("why", why.get("message")), ("reason", why.get("category")), ("in words", why.get("sentence")),
             ("action", why.get("action")), ("systems", why.get("systems")), ("candidates", why.get("candidates"))]
    for reason, count in sorted((why.get("ruled_out") or {}).items(), key=lambda item: -item[1]):
        pairs.append(("ruled out", f"{count} system(s): {reason}"))
    pairs += [("busy", busy_text(b)) for b in why.get("busy") or []]
    return pairs


def _recipe_details(r: dict) -> list:
    spec = r.get("spec") or {}
    pairs = [("id", r.get("id")), ("job", r.get("job")), ("recipe set", r.get("recipe_set")),
             ("status", r.get("status")), ("result", r.get("result")), ("system", r.get("system")),
             ("whiteboard", r.get("whiteboard")), ("distro tree", r.get("distro_tree")),
             ("started", when(r.get("started_at"))), ("finished", when(r.get("finished_at"))),
             ("watchdog", when(r.get("watchdog"))), ("reservation", r.get("reservation")),
             ("tasks", [t.get("name") for t in spec.get("tasks") or []])]
    if r.get("tasks"):
        pairs.append(("task results", [f"{t.get('name')} {t.get('result')}" for t in r["tasks"]]))
    return pairs


def _recipe_human(r: dict) -> str:
    text = output.key_values(_recipe_details(r))
    if r.get("why"):
        text += "\n\n" + output.key_values(_why_details(r["why"]))
    return text + _guest_blocks([r] if r.get("host") else r.get("guests") or [])


RECIPE = Shape("recipe", "recipes", RECIPE_ROWS[2:], _recipe_details, _recipe_human)

QUEUE = Shape("queued-recipe", "queue", [
    ("RECIPE", lambda q: q.get("recipe")),
    ("JOB", lambda q: q.get("job")),
    ("OWNER", lambda q: q.get("owner")),
    ("PRIORITY", lambda q: q.get("priority")),
    ("STATUS", lambda q: q.get("status")),
    ("QUEUED", lambda q: when(q.get("queued_at"))),
    ("#", lambda q: q.get("position")),
    ("REASON", lambda q: (q.get("reason") or {}).get("category")),
    ("WHY", lambda q: q.get("why")),
], lambda q: [(k, q.get(k)) for k in ("recipe", "job", "owner", "priority", "status", "queued_at", "position",
                                      "why")] + [("action", (q.get("reason") or {}).get("action"))])

DISTRO = Shape("distro-tree", "distro-trees", [
    ("ID", lambda d: d.get("id")),
    ("NAME", lambda d: d.get("name")),
    ("FAMILY", lambda d: d.get("family")),
    ("VARIANT", lambda d: d.get("variant")),
    ("ARCH", lambda d: d.get("arch")),
    ("TAGS", lambda d: d.get("tags")),
    ("LABS", lambda d: d.get("labs")),
], lambda d: [(k, d.get(k)) for k in ("id", "name", "family", "variant", "arch", "tags", "labs", "url")])
