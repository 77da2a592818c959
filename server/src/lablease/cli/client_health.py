"""Handlers of `lablease health-check ...` and `lablease system check`: system health (docs/health.md)."""
from __future__ import annotations

import json

from .client_commands import Outcome, body, system_path
from .client_http import Api, segment
from .client_jobs import read_job
from .client_views import HEALTH_CHECK, SYSTEM


def _job(args):
    """The check's job as the API takes it: the JSON form, or job XML as a string."""
    if args.job is None:
        return None
    data, content_type = read_job(args.job, args.environment.stdin)
    return json.loads(data) if content_type == "application/json" else data.decode("utf-8")


def _fields(args) -> dict:
    return body(system=args.system, pool=args.pool, arch=args.arch, job=_job(args), every=args.every,
                after_recipes=args.after_recipes)


def check_add(api: Api, args) -> Outcome:
    return Outcome(api.post("/health-checks", {"name": args.name, **_fields(args)}), HEALTH_CHECK)


def check_change(api: Api, args) -> Outcome:
    return Outcome(api.patch(f"/health-checks/{segment(args.name)}", _fields(args)), HEALTH_CHECK)


def check_list(api: Api, args) -> Outcome:
    return Outcome(api.get_all("/health-checks"), HEALTH_CHECK)


def check_show(api: Api, args) -> Outcome:
    return Outcome(api.get(f"/health-checks/{segment(args.name)}"), HEALTH_CHECK)


def check_delete(api: Api, args) -> Outcome:
    api.delete(f"/health-checks/{segment(args.name)}")
    return Outcome(None, HEALTH_CHECK, f"deleted health check {args.name}")


def system_check(api: Api, args) -> Outcome:
    """Ask for a check of the system now; shows the system with its health."""
    api.post(system_path(args.system, "/health-check"))
    return Outcome(api.get(system_path(args.system)), SYSTEM)


def add_health_commands(commands, common) -> None:
    checks = commands.add_parser("health-check", help="health checks run on systems (admins define them)",
                                 parents=[common])
    sub = checks.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, handler, text in (("add", check_add, "define a health check"),
                                ("change", check_change, "change a health check")):
        p = sub.add_parser(name, help=text, parents=[common])
        p.add_argument("name", metavar="NAME")
        scope = p.add_mutually_exclusive_group(required=name == "add")
        scope.add_argument("--system", metavar="FQDN", help="the check of this system")
        scope.add_argument("--pool", help="the check of this pool's systems")
        scope.add_argument("--arch", help="the check of this architecture's systems")
        p.add_argument("--job", metavar="FILE", required=name == "add",
                       help="the job to run (XML or JSON, '-' for standard input): one recipe")
        p.add_argument("--every", metavar="DURATION", help="check at most this long after the last check")
        p.add_argument("--after-recipes", metavar="N", type=int, help="check after N recipes ran on the system")
        p.set_defaults(handler=handler)
    sub.add_parser("list", help="the health checks", parents=[common]).set_defaults(handler=check_list)
    for name, handler, text in (("show", check_show, "one health check"),
                                ("delete", check_delete, "delete a health check")):
        p = sub.add_parser(name, help=text, parents=[common])
        p.add_argument("name", metavar="NAME")
        p.set_defaults(handler=handler)


def add_system_check(sub, common) -> None:
    p = sub.add_parser("check", help="check the system's health as soon as it is free", parents=[common])
    p.add_argument("system", metavar="FQDN")
    p.set_defaults(handler=system_check)
