"""`lablease ar ...`: Grid Engine 6.2-style advance reservations (qrsub, qrstat, qrdel, qralter).

    lablease ar create -a 202611221400 -d 4:00:00 -l arch=x86_64,memory>=2048 -pe smp 2 -N perf
    lablease ar list -u '*'                 lablease ar show 7 --explain --xml
    lablease ar modify 7 -e 202611221900    lablease ar delete 7 perf --force
    lablease ar accounting 7

Grid Engine's names are accepted where they read naturally: the subcommands
`qrsub`, `qrstat`, `qrdel` and `qralter`, and qrsub's single-dash options
(`-a -e -d -N -A -l -q -pe -u -m -M -he -w`). Its time form
`[[CC]YY]MMDDhhmm[.SS]` (UTC) and durations in `h:m:s` or seconds are
converted here; RFC 3339 times and lablease's durations (`4h`, `PT4H`) go
to the server as typed, which names the field when it cannot read them.

`--xml` of `list`, `show`, `create` and `modify` is qrstat's layout
(`<qrstat><ar_summary>...`), described by qrstat.xsd next to this module;
`--json` is the server's answer unchanged. A refusal for the limit of
active reservations (HTTP 429) exits 25, as qrsub does (ExitStatus.LIMIT).
"""
from __future__ import annotations

import argparse
import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from importlib import resources

from ..scheduler.filters import describe_tree
from . import output
from .client_commands import Outcome, body, forced, in_cli_terms
from .client_http import Api, ClientError, segment
from .client_status import ExitStatus
from .client_views import Shape
from .output import rfc3339, when

PATH = "/advance-reservations"
SCHEMA = "qrstat.xsd"  # in this package: resources.files("lablease.cli") / SCHEMA
STATES = {"w": "waiting", "r": "running", "x": "exited", "d": "deleted", "E": "error"}
MAIL_EVENTS = {"b": "begin", "e": "end", "a": "error"}  # a: also when satisfied again
LIMITED = 429  # max_advance_reservations reached (or 0: reservations are off)


def clock() -> datetime:
    """Now, for the Grid Engine time forms that leave out the year or the century (tests may replace it)."""
    return datetime.now(timezone.utc)


# --- Grid Engine's time and duration forms ----------------------------------------------------------

GE_TIME = re.compile(r"^(?:\d{8}|\d{10}|\d{12})(?:\.\d{2})?$")  # [[CC]YY]MMDDhhmm[.SS]


def ar_time(text: str, now: datetime | None = None) -> str:
    """-a/-e: Grid Engine's `[[CC]YY]MMDDhhmm[.SS]` (UTC; lablease.timeparse.parse_ge_time) as RFC 3339;
    anything else as typed (RFC 3339, or something the server refuses naming the field)."""
    value = text.strip()
    if not (value.isascii() and GE_TIME.match(value)):
        return output.typed_time(value)
    from ..domain.errors import Invalid
    from ..domain.times import format_time
    from ..timeparse import parse_ge_time  # imported late, like client_parser.duration: the CLI starts light

    try:
        return format_time(parse_ge_time(value, now or clock()))
    except Invalid as error:
        raise argparse.ArgumentTypeError(error.extra.get("reason") or str(error)) from None


def ar_duration(text: str) -> str:
    """-d: `h:m:s` (also `m:s`) and plain seconds become a number of seconds; `4h`, `PT4H` stay as typed."""
    from ..domain.errors import Invalid
    from ..timeparse import GE_HMS, parse_ge_duration

    value = text.strip()
    if not value.isascii() or not (value.isdigit() or GE_HMS.fullmatch(value)):
        return value
    try:
        return str(int(parse_ge_duration(value).total_seconds()))
    except Invalid:  # 0, or past the calendar: sent as typed, for the server to refuse naming the field
        return value


# --- -l: requirements --------------------------------------------------------------------------------

FIELDS = {  # names in -l key=value -> the job filter's field; any other name is a key_value attribute
    "hostname": "hostname", "h": "hostname", "arch": "arch", "lab": "lab", "pool": "pool",
    "memory": "memory", "mem_total": "memory", "cpu_count": "cpu_count", "num_proc": "cpu_count",
}
NUMERIC = ("memory", "cpu_count")
MEMORY_UNITS = {"": 1, "m": 1, "g": 1024, "t": 1024 * 1024}  # memory is in MiB
LEAF = re.compile(r"^\s*(?P<name>[A-Za-z_][\w.\-/]*)(?:\[(?P<key>[^\]]+)\])?\s*"
                  r"(?P<op>==|!=|>=|<=|=|>|<)\s*(?P<value>.*?)\s*$")


def requirement(text: str) -> dict:
    """One -l: a filter tree as JSON (`{"field": "arch", ...}`), or `name OP value[,name OP value...]`
    (OP one of = != > >= < <=), each a leaf, several joined with and."""
    if text.lstrip().startswith("{"):
        try:
            tree = json.loads(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"-l: not JSON: {error}") from None
        if not isinstance(tree, dict):
            raise argparse.ArgumentTypeError("-l: the JSON must be a filter object")
        return tree
    leaves = [_leaf(part) for part in text.split(",") if part.strip()]
    if not leaves:
        raise argparse.ArgumentTypeError("-l: empty requirement")
    return leaves[0] if len(leaves) == 1 else {"and": leaves}


def _leaf(text: str) -> dict:
    match = LEAF.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"-l: {text.strip()!r} is not NAME=VALUE (or != > >= < <=)")
    name, key, op, value = match.group("name", "key", "op", "value")
    op = "=" if op == "==" else op
    if name == "key_value":
        if not key:
            raise argparse.ArgumentTypeError(f"-l: {text.strip()!r}: key_value needs a key, key_value[KEY]=VALUE")
        return {"field": "key_value", "key": key, "op": op, "value": value}
    if key:
        raise argparse.ArgumentTypeError(f"-l: {text.strip()!r}: only key_value takes a [KEY]")
    field = FIELDS.get(name)
    if field is None:
        return {"field": "key_value", "key": name, "op": op, "value": value}
    if field in NUMERIC:
        return {"field": field, "op": op, "value": _number(field, value, text)}
    return {"field": field, "op": op, "value": value}


def _number(field: str, value: str, text: str) -> int:
    match = re.fullmatch(r"(\d+)([mMgGtT]?)", value)
    if not match or (match[2] and field != "memory"):
        unit = " (MiB, or with M, G or T)" if field == "memory" else ""
        raise argparse.ArgumentTypeError(f"-l: {text.strip()!r}: {field} takes a whole number{unit}")
    return int(match[1]) * MEMORY_UNITS[match[2].lower()]


def combine(trees: list[dict] | None) -> dict | None:
    """Every -l together: one tree, several joined with and (nested top-level ands flattened)."""
    if not trees:
        return None
    parts = [part for tree in trees for part in (tree["and"] if set(tree) == {"and"} else [tree])]
    return parts[0] if len(parts) == 1 else {"and": parts}


def describe(tree) -> str | None:
    """A filter tree as one line: `arch = x86_64 and (memory >= 2048 or key_value[GPU] = yes)`."""
    return describe_tree(tree)


# --- other option values ------------------------------------------------------------------------------

def names(text: str) -> list[str]:
    """A comma list (`alice,@qe`); the option repeats too."""
    return [part.strip() for part in text.split(",") if part.strip()]


def mail_events(text: str) -> str:
    """-m: `n`, or any of b (begin), e (end), a (error, and satisfied again), e.g. `bea` or `b,e`."""
    flags = text.replace(",", "").strip()
    if flags == "n":
        return "n"
    if not flags or set(flags) - set(MAIL_EVENTS):
        raise argparse.ArgumentTypeError(f"{text!r}: -m takes n, or any of b, e and a (e.g. bea)")
    return "".join(flag for flag in MAIL_EVENTS if flag in flags)


def error_handling(text: str) -> str:
    """-he yes|no (Grid Engine) or --error-handling hard|soft."""
    value = text.strip().lower()
    if value in ("yes", "y", "hard"):
        return "hard"
    if value in ("no", "n", "soft"):
        return "soft"
    raise argparse.ArgumentTypeError(f"{text!r}: -he takes yes or no (--error-handling: hard or soft)")


def positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of systems, 1 or more")
    return number


class ParallelEnvironment(argparse.Action):
    """-pe NAME N: Grid Engine's parallel environment; lablease has none, so NAME is ignored and N systems
    are reserved."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, positive(values[1]))
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentError(self, str(error)) from None


# --- how reservations look ----------------------------------------------------------------------------

hms = output.format_hms  # qrstat's duration: 5400 -> `01:30:00` (hours go past 24)


def duration_of(ar: dict):
    if ar.get("duration") is not None:
        return ar["duration"]
    from ..domain.errors import Invalid
    from ..timeparse import parse_time

    try:
        start, end = (parse_time(ar[k], k) for k in ("start", "end"))
    except (KeyError, Invalid):
        return None
    return (end - start).total_seconds()


def state_text(state: str | None) -> str | None:
    return f"{state} ({STATES[state]})" if state in STATES else state


def mail_text(mail: dict | None) -> str | None:
    events = (mail or {}).get("events")
    if not events or events == "n":
        return "none"
    return f"{events} (" + ", ".join(MAIL_EVENTS.get(flag, flag) for flag in events) + ")"


def _details(ar: dict) -> list:
    mail = ar.get("mail") or {}
    pairs = [("id", ar.get("id")), ("name", ar.get("name")), ("owner", ar.get("owner")),
             ("account", ar.get("account")), ("state", state_text(ar.get("state"))),
             ("submitted", when(ar.get("submitted_at"))), ("start", when(ar.get("start"))),
             ("end", when(ar.get("end"))), ("duration", hms(duration_of(ar))),
             ("systems", ar.get("systems")), ("hosts", ar.get("hosts")), ("requires", describe(ar.get("requires"))),
             ("pools", ar.get("pools")), ("count", ar.get("count")), ("acl", ar.get("acl")),
             ("mail", mail_text(mail)), ("mail to", mail.get("to")), ("error handling", ar.get("error_handling"))]
    pairs += [("released", f"{gone.get('system')} at {when(gone.get('at'))}") for gone in ar.get("released") or []]
    pairs += [("error", reason) for reason in ar.get("error_reasons") or []]
    if "explain" in ar:
        pairs += [("explain", why) for why in ar.get("explain") or ["-"]]
    return pairs


class QrstatShape(Shape):
    """Tables and blocks as every Shape; --xml in qrstat's layout (a listing: the summary of each)."""

    def render(self, data, fmt: str | None) -> str:
        if fmt == "xml":
            return qrstat_xml(data if isinstance(data, list) else [data], detailed=not isinstance(data, list))
        return super().render(data, fmt)


AR = QrstatShape("ar_summary", "qrstat", [
    ("AR-ID", lambda a: a.get("id")),
    ("NAME", lambda a: a.get("name")),
    ("OWNER", lambda a: a.get("owner")),
    ("STATE", lambda a: a.get("state")),
    ("START", lambda a: when(a.get("start"))),
    ("END", lambda a: when(a.get("end"))),
    ("DURATION", lambda a: hms(duration_of(a))),
], _details)


def _busy_text(busy: dict) -> str:
    since = f" from {when(busy['from'])}" if busy.get("from") else ""
    until = when(busy["until"]) if busy.get("until") else "further notice"
    return f"{busy.get('system')}{since} until {until}"


def _reasons_details(problem: dict) -> list:
    reasons = problem.get("reasons") or {}
    pairs = [("ruled out", f"{count} system(s): {why}")
             for why, count in sorted((reasons.get("ruled_out") or {}).items(), key=lambda item: -item[1])]
    return pairs + [("busy", _busy_text(b)) for b in reasons.get("busy") or []]


REFUSAL = Shape("refusal", "refusals", [], _reasons_details)

VALIDATION = Shape("validation", "validations", [], lambda v: [("grantable", v.get("grantable")),
                                                              ("systems", v.get("systems"))])


def _share(used, reserved) -> str | None:
    if not reserved:
        return None
    return f"{round(100 * float(used or 0) / float(reserved), 1):g}%"


def _accounting_human(a: dict) -> str:
    rows = list(a.get("systems") or [])
    rows.append({"system": "total", "reserved_seconds": a.get("reserved_seconds"),
                 "used_seconds": a.get("used_seconds")})
    text = output.table(rows, [
        ("SYSTEM", lambda r: r.get("system")),
        ("RESERVED", lambda r: hms(r.get("reserved_seconds"))),
        ("USED", lambda r: hms(r.get("used_seconds") or 0)),
        ("USED%", lambda r: _share(r.get("used_seconds"), r.get("reserved_seconds"))),
    ])
    if a.get("jobs"):
        text += "\n\n" + output.table(a["jobs"], [
            ("JOB", lambda r: r.get("job")), ("RECIPE", lambda r: r.get("recipe")),
            ("SYSTEM", lambda r: r.get("system")), ("USED", lambda r: hms(r.get("seconds")))])
    if a.get("reservations"):
        text += "\n\n" + output.table(a["reservations"], [
            ("RESERVATION", lambda r: r.get("reservation")), ("USER", lambda r: r.get("user")),
            ("SYSTEM", lambda r: r.get("system")), ("USED", lambda r: hms(r.get("seconds")))])
    return text


ACCOUNTING = Shape("ar-accounting", "ar-accountings", [], lambda a: [], _accounting_human)


# --- qrstat's XML ---------------------------------------------------------------------------------------

def qrstat_xml(ars: list[dict], detailed: bool) -> str:
    """`<qrstat>` with one `<ar_summary>` per reservation (qrstat.xsd); `detailed` adds what `qrstat -ar`
    shows. Null fields are left out, except name, which is empty as in qrstat."""
    root = ET.Element("qrstat")
    for ar in ars:
        summary = ET.SubElement(root, "ar_summary")
        _text(summary, "id", ar.get("id"))
        _text(summary, "name", ar.get("name") or "")
        _text(summary, "owner", ar.get("owner"))
        _text(summary, "state", ar.get("state"))
        _text(summary, "start_time", ar.get("start") and rfc3339(ar["start"]))
        _text(summary, "end_time", ar.get("end") and rfc3339(ar["end"]))
        _text(summary, "duration", hms(duration_of(ar)))
        if detailed:
            _details_xml(summary, ar)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _details_xml(summary: ET.Element, ar: dict) -> None:
    _text(summary, "submission_time", ar.get("submitted_at") and rfc3339(ar["submitted_at"]))
    _text(summary, "account", ar.get("account"))
    if ar.get("requires"):
        resources_list = ET.SubElement(summary, "resource_list")
        tree = ar["requires"]
        for part in tree["and"] if set(tree) == {"and"} else [tree]:
            _filter_xml(resources_list, part)
    _items(summary, "hosts", "host", ar.get("hosts"))
    _items(summary, "pools", "pool", ar.get("pools"))
    _text(summary, "count", ar.get("count"))
    if ar.get("systems") is not None:
        granted = ET.SubElement(summary, "granted_slots_list")
        for system in ar["systems"]:
            ET.SubElement(granted, "granted_slots", queue_instance=str(system), slots="1")
    mail = ar.get("mail")
    if mail is not None:
        _text(summary, "mail_options", mail.get("events") or "")
        mail_list = ET.SubElement(summary, "mail_list")
        for address in mail.get("to") or []:
            user, at, host = str(address).rpartition("@")
            ET.SubElement(mail_list, "mail", {"user": user, "host": host} if at else {"user": str(address)})
    if ar.get("acl") is not None:
        acl = ET.SubElement(summary, "acl_list")
        for entry in ar["acl"]:
            ET.SubElement(acl, "acl", user=str(entry))
    _text(summary, "error_handling", ar.get("error_handling"))
    _items(summary, "error_reasons", "message", ar.get("error_reasons"))
    if "explain" in ar:
        _items(summary, "explain", "message", ar.get("explain") or [])


def _text(parent: ET.Element, tag: str, value) -> None:
    if value is not None:
        ET.SubElement(parent, tag).text = str(value)


def _items(parent: ET.Element, tag: str, item: str, values) -> None:
    if values is not None:
        element = ET.SubElement(parent, tag)
        for value in values:
            ET.SubElement(element, item).text = str(value)


def _filter_xml(parent: ET.Element, tree: dict) -> None:
    for branch in ("and", "or"):
        if branch in tree:
            element = ET.SubElement(parent, branch)
            for part in tree[branch]:
                _filter_xml(element, part)
            return
    if "not" in tree:
        _filter_xml(ET.SubElement(parent, "not"), tree["not"])
        return
    attributes = {"name": str(tree.get("field")), "op": str(tree.get("op", "="))}
    if tree.get("key"):
        attributes["key"] = str(tree["key"])
    value = tree.get("value")
    attributes["value"] = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    ET.SubElement(parent, "resource", attributes)


def schema_path():
    """qrstat.xsd, the schema of `--xml` (a Traversable; `.read_bytes()` for lxml)."""
    return resources.files(__package__) / SCHEMA


# --- handlers -------------------------------------------------------------------------------------------

def ar_path(ref, rest: str = "") -> str:
    return f"{PATH}/{segment(ref)}{rest}"


def numeric_id(api: Api, ref: str) -> str:
    """An id as typed, or the id of the reservation of that name (PATCH and accounting take ids)."""
    if ref.isascii() and ref.isdigit():
        return ref
    return str(api.get(ar_path(ref))["id"])


def create_body(args) -> dict:
    count = args.count
    if args.pe_count is not None:
        if count is not None and count != args.pe_count:
            raise ClientError(f"--count {count} and -pe ... {args.pe_count} disagree; give one", ExitStatus.USAGE)
        count = args.pe_count
    mail = body(events=args.mail, to=args.mail_to)
    return body(name=args.name, account=args.account, start=args.start, end=args.end, duration=args.duration,
                hosts=args.hosts or None, requires=combine(args.requires), pools=args.pools or None, count=count,
                acl=args.acl or None, mail=mail or None, error_handling=args.error_handling,
                validate_only=bool(args.validate or args.verify == "v"))


def refused(error: ClientError) -> ClientError:
    """429 exits 25 (as qrsub); a 409 with reasons shows them on stdout (the problem itself with --json)."""
    if error.problem.get("status") == LIMITED:
        error.status = ExitStatus.LIMIT
    elif error.status == ExitStatus.CONFLICT and error.problem.get("reasons"):
        error.outcome = Outcome(error.problem, REFUSAL, output.key_values(_reasons_details(error.problem)) or None)
    return error


def create(api: Api, args) -> Outcome:
    request = create_body(args)
    try:
        answer = api.post(PATH, request)
    except ClientError as error:
        raise refused(error) from None
    if request.get("validate_only"):
        return validated(answer)
    return Outcome(answer, AR, f"Your advance reservation {answer.get('id')} has been granted\n"
                               + AR.render(answer, None))


def validated(answer: dict) -> Outcome:
    systems = answer.get("systems") or []
    if not answer.get("grantable", True):
        problem = {**answer, "status": 409}
        raise refused(ClientError(answer.get("detail") or "the advance reservation could not be granted",
                                  ExitStatus.CONFLICT, problem))
    where = ", ".join(systems) if systems else "no system named"
    return Outcome(answer, VALIDATION,
                   f"Your advance reservation could be granted on {where} (-w v: nothing was created)")


def listing(api: Api, args) -> Outcome:
    if args.ar_id is not None:
        args.ref = args.ar_id
        return show(api, args)
    return Outcome(api.get_all(PATH, {"user": args.user}), AR)


def show(api: Api, args) -> Outcome:
    return Outcome(api.get(ar_path(args.ref), {"explain": "true" if args.explain else None}), AR)


def delete(api: Api, args) -> Outcome:
    """One request per reservation, in order; the first refusal stops (those before it stay deleted)."""
    done: list[str] = []
    for ref in args.refs:
        try:
            api.delete(ar_path(ref), forced(args))
        except ClientError as error:
            in_cli_terms(error, args, "--force aborts its work first")
            if done:
                error.outcome = Outcome(None, AR, "\n".join(done))
            raise
        done.append(f"deleted advance reservation {ref}")
    return Outcome(None, AR, "\n".join(done))


def modify(api: Api, args) -> Outcome:
    change = body(end=args.end, duration=args.duration, acl=args.acl or None, name=args.name,
                  mail=body(events=args.mail, to=args.mail_to) or None, release=args.release or None)
    if not change:
        raise ClientError("nothing to change: give -e, -d, -u, -N, -m, -M or --release", ExitStatus.USAGE)
    try:
        ar = api.patch(ar_path(numeric_id(api, args.ref)), change)
    except ClientError as error:
        raise refused(error) from None
    return Outcome(ar, AR)


def accounting(api: Api, args) -> Outcome:
    return Outcome(api.get(ar_path(numeric_id(api, args.ref), "/accounting")), ACCOUNTING)


# --- the command line -------------------------------------------------------------------------------------

def add_ar_commands(commands, common) -> None:
    ar = commands.add_parser("ar", help="advance reservations: book systems for a future window (Grid Engine's "
                                        "qrsub, qrstat, qrdel, qralter)", parents=[common])
    sub = ar.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = sub.add_parser("create", aliases=["qrsub"], parents=[common],
                       help="reserve systems for a window, all or nothing (qrsub)")
    p.add_argument("-a", "--start", type=ar_time, metavar="TIME",
                   help="start: RFC 3339 or [[CC]YY]MMDDhhmm[.SS] in UTC (default: now)")
    p.add_argument("-e", "--end", type=ar_time, metavar="TIME", help="end, in the same forms")
    p.add_argument("-d", "--duration", type=ar_duration, metavar="DURATION",
                   help="h:m:s, seconds, or 4h, PT4H (any two of start, end, duration; three must agree)")
    p.add_argument("-N", "--name", help="a name, usable instead of the id")
    p.add_argument("-A", "--account", help="the account the time is charged to")
    p.add_argument("-l", "--requires", type=requirement, action="append", metavar="FILTER",
                   help="what the systems must be: NAME=VALUE[,...] (also != > >= < <=) or a JSON filter "
                        "tree as in hostRequires (repeat: all must hold)")
    p.add_argument("-q", "--pool", dest="pools", type=names, action="extend", metavar="POOL",
                   help="only systems of these pools (comma list, or repeat)")
    p.add_argument("--count", type=positive, metavar="N", help="how many systems (default 1)")
    p.add_argument("-pe", dest="pe_count", nargs=2, metavar=("NAME", "N"), action=ParallelEnvironment,
                   help="Grid Engine's form of --count: NAME is ignored, N systems")
    p.add_argument("--host", dest="hosts", type=names, action="extend", metavar="FQDN",
                   help="these systems by name (comma list, or repeat)")
    add_changeable(p)
    p.add_argument("-he", "--error-handling", type=error_handling, metavar="yes|no",
                   help="yes (hard): no work is dispatched into it while a system is broken; "
                        "no (soft, the default): the others stay usable")
    p.add_argument("-w", dest="verify", choices=("e", "v", "n"),
                   help="v: only say whether it could be granted, and where (e, n: reserve)")
    p.add_argument("--validate", action="store_true", help="the same as -w v")
    p.set_defaults(handler=create)

    p = sub.add_parser("list", aliases=["qrstat"], parents=[common],
                       help="advance reservations: yours, a user's or everybody's (qrstat)")
    p.add_argument("-u", "--user", metavar="USER", help="this user's, or '*' for everybody's (default: mine)")
    p.add_argument("-ar", dest="ar_id", metavar="ID", help="one reservation in full, as `ar show ID` (qrstat -ar)")
    add_explain(p)
    p.set_defaults(handler=listing)

    p = sub.add_parser("show", parents=[common], help="one advance reservation in full (qrstat -ar)")
    p.add_argument("ref", metavar="ID|NAME")
    add_explain(p)
    p.set_defaults(handler=show)

    p = sub.add_parser("delete", aliases=["qrdel"], parents=[common], help="delete advance reservations (qrdel)")
    p.add_argument("refs", metavar="ID|NAME", nargs="+")
    p.add_argument("-f", "--force", action="store_true", help="also when work is bound to it: abort that first")
    p.set_defaults(handler=delete)

    p = sub.add_parser("modify", aliases=["qralter"], parents=[common],
                       help="change the end, duration, ACL, name or mail of one (qralter)")
    p.add_argument("ref", metavar="ID|NAME")
    p.add_argument("-e", "--end", type=ar_time, metavar="TIME", help="a new end (RFC 3339 or [[CC]YY]MMDDhhmm[.SS])")
    p.add_argument("-d", "--duration", type=ar_duration, metavar="DURATION", help="a new duration from its start")
    p.add_argument("-N", "--name", help="a new name")
    p.add_argument("--release", type=names, action="extend", metavar="FQDNS",
                   help="give these systems back now, before the end (comma list, or repeat)")
    add_changeable(p)
    p.set_defaults(handler=modify)

    p = sub.add_parser("accounting", parents=[common],
                       help="reserved system time against what its work used, per system")
    p.add_argument("ref", metavar="ID|NAME")
    p.set_defaults(handler=accounting)


def add_changeable(p) -> None:
    """What both qrsub and qralter set: the ACL and the mail."""
    p.add_argument("-u", "--acl", type=names, action="extend", metavar="USERS",
                   help="who may use it: user,@group (comma list, or repeat; default: only you)")
    p.add_argument("-m", "--mail", type=mail_events, metavar="b|e|a|n",
                   help="mail at b(egin), e(nd), a (error and back), or n(ever); combine: bea")
    p.add_argument("-M", "--mail-to", type=names, action="extend", metavar="ADDRESSES",
                   help="also mail these addresses (comma list, or repeat)")


def add_explain(p) -> None:
    p.add_argument("--explain", "-explain", action="store_true", help="why it is in error (qrstat -explain)")
    p.add_argument("-xml", dest="format", action="store_const", const="xml", default=argparse.SUPPRESS,
                   help="the same as --xml (qrstat -xml)")
