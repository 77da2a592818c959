"""How each kind of answer looks: its table columns, its detail block, its XML element names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from . import output
from .output import Column, format_time

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
    return format_time(value, none=NO_LIMIT)


def seconds(value: int | None) -> str | None:
    """600 -> '10m', 5400 -> '1h30m'."""
    if not value:
        return None
    parts, rest = [], int(value)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts)


def _held(system: dict, key: str):
    reservation = system.get("reservation") or {}
    if key == "end":
        return end_time(reservation.get("end")) if reservation else None
    return reservation.get(key)


def _system_details(s: dict) -> list:
    reservation = s.get("reservation") or {}
    return [("fqdn", s.get("fqdn")), ("arch", s.get("arch")), ("lab", s.get("lab")),
            ("condition", s.get("condition")), ("usage", s.get("usage")), ("owner", s.get("owner")),
            ("reserved by", reservation.get("user")), ("until", _held(s, "end"))]


SYSTEM = Shape("system", "systems", [
    ("FQDN", lambda s: s.get("fqdn")),
    ("ARCH", lambda s: s.get("arch")),
    ("LAB", lambda s: s.get("lab")),
    ("CONDITION", lambda s: s.get("condition")),
    ("USAGE", lambda s: s.get("usage")),
    ("RESERVED BY", lambda s: _held(s, "user")),
    ("UNTIL", lambda s: _held(s, "end")),
], _system_details)


def _reservation_details(r: dict) -> list:
    pairs = [("id", r.get("id")), ("system", r.get("system")), ("user", r.get("user")),
             ("state", r.get("state")), ("start", format_time(r.get("start"))), ("end", end_time(r.get("end")))]
    if r.get("returned_at"):
        pairs.append(("returned at", format_time(r["returned_at"])))
    if r.get("heartbeat"):
        pairs += [("heartbeat", seconds(r["heartbeat"])), ("due", format_time(r.get("due")))]
    if r.get("return_loan"):
        pairs.append(("return loan", True))
    if r.get("request_id"):
        pairs.append(("request id", r["request_id"]))
    return pairs


RESERVATION = Shape("reservation", "reservations", [
    ("ID", lambda r: r.get("id")),
    ("SYSTEM", lambda r: r.get("system")),
    ("USER", lambda r: r.get("user")),
    ("KIND", lambda r: r.get("kind")),
    ("STATE", lambda r: r.get("state")),
    ("START", lambda r: format_time(r.get("start"))),
    ("END", lambda r: end_time(r.get("end"))),
], _reservation_details)


def _loan_details(loan: dict) -> list:
    pairs = [("system", loan.get("system")), ("recipient", loan.get("recipient")), ("lender", loan.get("lender")),
             ("start", format_time(loan.get("start"))), ("end", end_time(loan.get("end"))),
             ("comment", loan.get("comment"))]
    if loan.get("returned_at"):
        pairs += [("returned at", format_time(loan["returned_at"])), ("why", loan.get("return_reason"))]
    return pairs


LOAN = Shape("loan", "loans", [
    ("SYSTEM", lambda loan: loan.get("system")),
    ("RECIPIENT", lambda loan: loan.get("recipient")),
    ("LENDER", lambda loan: loan.get("lender")),
    ("END", lambda loan: end_time(loan.get("end"))),
], _loan_details)


POOL = Shape("pool", "pools", [
    ("NAME", lambda p: p.get("name")),
    ("OWNER GROUP", lambda p: p.get("owner_group")),
    ("SYSTEMS", lambda p: p.get("systems")),
    ("DESCRIPTION", lambda p: p.get("description")),
], lambda p: [("name", p.get("name")), ("description", p.get("description")),
              ("owner group", p.get("owner_group")), ("systems", p.get("systems"))])


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

USER = Shape("user", "users", [("NAME", lambda u: u.get("name")), ("ADMIN", lambda u: u.get("admin")),
                               ("GROUPS", lambda u: u.get("groups"))],
             lambda u: [("name", u.get("name")), ("admin", u.get("admin")), ("groups", u.get("groups"))])
