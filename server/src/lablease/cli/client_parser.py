"""The `lablease` command line: every command, its options, and the handler it runs.

Global options (--url, --token, --json, --xml, --debug) are accepted both
before and after the command: `lablease --json systems` and `lablease
systems --json` mean the same.
"""
from __future__ import annotations

import argparse
import re
from importlib import metadata

from . import client_advance as ar
from . import client_commands as c
from . import client_health as hc
from . import client_jobs as j
from . import client_provisioning as pv
from . import client_sharing as sh
from .output import typed_time

PERMISSIONS = ("view", "reserve", "loan_self", "loan_any", "control_system", "edit_system", "edit_policy")
CONDITIONS = ("automated", "manual", "broken", "removed")
STATES = ("new", "queued", "assigned", "scheduled", "waiting", "installing", "running", "completed", "cancelled",
          "aborted")
RESULTS = ("pass", "warn", "fail")
POWER_ACTIONS = ("on", "off", "reboot", "interrupt")  # interrupt: an NMI, where the power driver can send one
DEFAULT_INTERVAL = 2.0  # seconds between polls of `job submit --wait` and `job watch`


def global_options(defaults: bool, url: bool = True) -> argparse.ArgumentParser:
    """The options every command takes; subcommands leave them unset unless given after the command.

    url=False leaves --url out, for `distro add`, whose --url is the tree's (the server's goes before the
    command there, or in $LABLEASE_URL).
    """
    keep = None if defaults else argparse.SUPPRESS
    parser = argparse.ArgumentParser(add_help=False)
    if url:
        parser.add_argument("--url", default=keep,
                            help="server URL (default: $LABLEASE_URL, else http://127.0.0.1:8042)")
    parser.add_argument("--token", default=keep, help="API token (default: $LABLEASE_TOKEN)")
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--json", dest="format", action="store_const", const="json", default=keep,
                         help="print the answer as JSON")
    formats.add_argument("--xml", dest="format", action="store_const", const="xml", default=keep,
                         help="print the answer as XML (see docs/cli.md)")
    parser.add_argument("--debug", action="store_true", default=False if defaults else argparse.SUPPRESS,
                        help="log each request and show tracebacks")
    return parser


def installed_version() -> str:
    try:
        return metadata.version("lablease")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lablease", parents=[global_options(True)],
        description="Reserve and lend lab systems through a lablease server.",
        epilog="Exit status: 0 ok, 1 error, 2 usage (also a URL or token that cannot be a lablease server's), "
               "3 not found, 4 forbidden, 5 conflict, 6 invalid input, 7 server unreachable, 8 what --wait waited "
               "for ended or failed, 9 timed out, 10 the reservation was already returned (lost), "
               "25 limit of advance reservations reached, 129 hung up (SIGHUP), 130 interrupted, 143 terminated (SIGTERM); "
               "docs/cli.md lists them.")
    parser.add_argument("--version", action="version", version=f"lablease {installed_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = global_options(False)
    add_system_commands(commands, common)
    add_reservation_commands(commands, common)
    add_loan_commands(commands.add_parser("loan", help="lend systems to users", parents=[common]), common)
    add_pool_commands(commands, common)
    add_policy_commands(commands.add_parser("policy", help="who may do what on a system", parents=[common]),
                        common)
    add_job_commands(commands, common)
    add_provisioning_commands(commands, common)
    hc.add_health_commands(commands, common)
    ar.add_ar_commands(commands, common)
    whoami = commands.add_parser("whoami", help="who the token belongs to", parents=[common])
    whoami.set_defaults(handler=c.whoami)
    calendar = commands.add_parser("calendar-url", help="the address of my iCalendar feed of reservations and loans",
                                   parents=[common])
    calendar.add_argument("--new", action="store_true", help="make a new address; the old one stops working")
    calendar.set_defaults(handler=c.calendar_url)
    events = commands.add_parser("events", help="the events I may see (admins: all): what the webhooks send",
                                 parents=[common])
    events.add_argument("--after", metavar="CURSOR",
                        help="only events after this cursor (an event's, or 'now'); default: from the oldest kept")
    events.add_argument("--follow", action="store_true",
                        help="keep printing events as they come (long polls), until interrupted")
    events.set_defaults(handler=c.events)
    take_request_ids(parser)
    return parser


# The commands that create something over POST (reserve and job submit have their own --request-id, sent as the
# request_id the API has for them): each takes --request-id, sent as the Idempotency-Key of its POSTs (cli/client.py).
CREATES = (sh.loan_grant, sh.pool_create, sh.pool_add, sh.policy_grant, ar.create, hc.check_add, hc.system_check,
           pv.provision, pv.power, pv.distro_add)


def take_request_ids(parser: argparse.ArgumentParser) -> None:
    """--request-id on every command in CREATES, found under `parser` (one place, not each command's)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):  # an alias names the same parser
                if child.get_default("handler") in CREATES:
                    child.add_argument("--request-id", metavar="ID", type=request_id,
                                       help="retrying with the same ID never does it twice (default: a new one, "
                                            "sent again on a lost answer)")
                take_request_ids(child)


def request_id(text: str) -> str:
    """A --request-id the server takes as an Idempotency-Key (later requests of the command add .2, .3 ...)."""
    if not re.fullmatch(r"[!-~]{1,120}", text):  # room for the .2, .3 of a command's further creates
        raise argparse.ArgumentTypeError("an ID is 1 to 120 visible ASCII characters (no space)")
    return text


def add_system_commands(commands, common) -> None:
    p = commands.add_parser("systems", help="list systems", parents=[common])
    p.add_argument("--arch", help="only this architecture")
    p.add_argument("--lab", help="only this lab")
    p.add_argument("--pool", help="only systems in this pool")
    p.add_argument("--condition", choices=CONDITIONS)
    p.add_argument("--free-from", type=typed_time, metavar="TIME",
                   help="only systems free from TIME (RFC 3339, or as shown: 2026-11-24 19:15 UTC) ...")
    p.add_argument("--free-until", type=typed_time, metavar="TIME", help="... until TIME")
    p.add_argument("--mine", action="store_true", help="only systems I hold a reservation on now")
    p.add_argument("--health", choices=("unknown", "good", "bad", "checking"), help="only systems of this health")
    p.set_defaults(handler=c.systems)
    system = commands.add_parser("system", help="one system", parents=[common])
    sub = system.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("show", help="a system with its reservation, loan and inventory", parents=[common])
    p.add_argument("system", metavar="FQDN")
    p.set_defaults(handler=c.system_show)
    hc.add_system_check(sub, common)


def add_reservation_commands(commands, common) -> None:
    p = commands.add_parser("reserve", help="reserve a system", parents=[common])
    p.add_argument("system", metavar="SYSTEM", nargs="?", help="fqdn (with --wait, or give --pool/--requires)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--duration", help="e.g. 4h, PT4H, 1:30:00, or unlimited (default: the site's)")
    length.add_argument("--end", type=typed_time, metavar="TIME",
                        help="the end: RFC 3339, or as shown (2026-11-24 19:15 UTC)")
    p.add_argument("--start", type=typed_time, metavar="TIME",
                   help="the start, to reserve in advance (default: now), in the same forms")
    p.add_argument("--heartbeat", metavar="DURATION", help="return it when no heartbeat came for this long")
    p.add_argument("--return-loan", action="store_true", help="return my loan of the system with it")
    p.add_argument("--request-id", metavar="ID", help="retrying with the same ID never books twice "
                                                      "(default: a new one, sent again on a lost answer)")
    p.add_argument("--advance-reservation", "--ar", metavar="ID", type=int,
                   help="reserve inside this advance reservation (default end: the reservation's)")
    p.add_argument("--healthy-within", metavar="DURATION",
                   help="only if the system passed a health check this recently (refused otherwise; "
                        "with --wait, granted only such a system, one being checked first when none is)")
    p.add_argument("--purpose", metavar="TEXT", help="what it is for, shown with you as its holder "
                                                      "(required where the site sets require_purpose)")
    p.add_argument("--force", action="store_true",
                   help="admins: also when it takes a pool below its automation floor")
    wait = p.add_argument_group("waiting in the queue when it is taken")
    wait.add_argument("--wait", action="store_true",
                      help="join the queue instead of failing; prints the position and estimated start")
    wait.add_argument("--pool", action="append", metavar="POOL", help="with --wait: any system of this pool")
    wait.add_argument("--requires", metavar="JSON", help="with --wait: any system matching this hostRequires "
                                                         "filter (job JSON form)")
    wait.add_argument("--priority", choices=("Low", "Medium", "Normal", "High", "Urgent"),
                      help="with --wait: its place in the queue (default Normal)")
    wait.add_argument("--take-by", metavar="DURATION",
                      help="with --wait: returned unless confirmed (heartbeat) this long after it is granted")
    wait.add_argument("--block", action="store_true", help="stay until it is granted (implies --wait)")
    wait.add_argument("--timeout", metavar="DURATION", type=duration,
                      help="block at most this long (exit 9 then; it stays queued); implies --block")
    add_interval(wait)
    p.set_defaults(handler=c.reserve)

    p = commands.add_parser("extend", help="move a reservation's end", parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    by = p.add_mutually_exclusive_group(required=True)
    by.add_argument("--by", metavar="DURATION", help="add this to the current end")
    by.add_argument("--end", type=typed_time, metavar="TIME",
                    help="set the end (RFC 3339, or as shown: 2026-11-24 19:15 UTC)")
    p.set_defaults(handler=c.extend)

    p = commands.add_parser("return", help="return a reservation now", parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    p.set_defaults(handler=c.give_back)

    p = commands.add_parser("heartbeat", help="renew a heartbeat reservation", parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    p.add_argument("--every", metavar="SECONDS", type=interval,
                   help="keep sending one every SECONDS (until stopped, or until --while-pid's process is gone)")
    p.add_argument("--while-pid", metavar="PID", type=int,
                   help="with --every: stop once this process is gone (a CI job's shell: $$)")
    p.set_defaults(handler=c.heartbeat)

    p = commands.add_parser("reservations", help="list reservations (mine unless --all or --user)",
                            parents=[common])
    p.add_argument("--all", action="store_true", help="everybody's I may see (admins: all)")
    p.add_argument("--user", metavar="USER", help="this user's")
    p.add_argument("--system", metavar="SYSTEM", help="of this system")
    p.add_argument("--active", action="store_true", help="only those not yet returned")
    p.set_defaults(handler=c.reservations)


def add_loan_commands(loan, common) -> None:
    sub = loan.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("grant", help="lend a system to a user", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("recipient", metavar="RECIPIENT")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--duration", help="a limited loan for this long (e.g. 7d)")
    length.add_argument("--limited", action="store_true", help="a limited loan of the site's default length")
    p.add_argument("--comment")
    p.add_argument("--purpose", metavar="TEXT", help="what it is lent for (required where the site sets "
                                                      "require_purpose)")
    p.add_argument("--force", action="store_true",
                   help="also when other users hold reservations on the system: return them (their holders are "
                        "told); admins: also when it takes a pool below its automation floor")
    p.set_defaults(handler=sh.loan_grant)

    p = sub.add_parser("extend", help="move a loan's end", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    by = p.add_mutually_exclusive_group(required=True)
    by.add_argument("--by", metavar="DURATION", help="add this to the current end")
    by.add_argument("--end", type=typed_time, metavar="TIME",
                    help="set the end (RFC 3339, or as shown: 2026-11-24 19:15 UTC)")
    p.set_defaults(handler=sh.loan_extend)

    for name, handler, text in (("return", sh.loan_return, "end the loan now"),
                                ("show", sh.loan_show, "the system's current loan")):
        p = sub.add_parser(name, help=text, parents=[common])
        p.add_argument("system", metavar="SYSTEM")
        p.set_defaults(handler=handler)


def add_pool_commands(commands, common) -> None:
    commands.add_parser("labs", help="the labs lab agents serve: agent state, waiting and running commands",
                        parents=[common]).set_defaults(handler=sh.labs)
    commands.add_parser("pools", help="list pools and their systems", parents=[common]).set_defaults(
        handler=sh.pools)
    pool = commands.add_parser("pool", help="show, create and fill a pool", parents=[common])
    sub = pool.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("show", help="a pool and its systems", parents=[common])
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=sh.pool_show)
    p = sub.add_parser("create", help="create a pool", parents=[common])
    p.add_argument("name", metavar="NAME")
    p.add_argument("--group", metavar="GROUP", help="the group whose members manage it")
    p.add_argument("--description")
    p.add_argument("--automation-floor", type=int, metavar="N",
                   help="keep N idle Automated systems for the scheduler (manual holds leaving fewer are refused)")
    p.set_defaults(handler=sh.pool_create)
    p = sub.add_parser("set", help="change a pool's description or automation floor", parents=[common])
    p.add_argument("name", metavar="NAME")
    p.add_argument("--description")
    p.add_argument("--automation-floor", type=int, metavar="N", help="idle Automated systems kept for the "
                                                                     "scheduler; 0: no floor")
    p.set_defaults(handler=sh.pool_set)
    for name, handler, text in (("add", sh.pool_add, "add systems"), ("remove", sh.pool_remove, "remove systems")):
        p = sub.add_parser(name, help=text, parents=[common])
        p.add_argument("name", metavar="NAME")
        p.add_argument("fqdns", metavar="FQDN", nargs="+")
        p.set_defaults(handler=handler)
    p.add_argument("-f", "--force", action="store_true",
                   help="also when it breaks an advance reservation that asked for the pool (it goes into error)")


def add_policy_commands(policy, common) -> None:
    sub = policy.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("show", help="a system's access policy", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.set_defaults(handler=sh.policy_show)
    p = sub.add_parser("grant", help="add a rule", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("permission", metavar="PERMISSION", choices=PERMISSIONS,
                   help=", ".join(PERMISSIONS))
    whom = p.add_mutually_exclusive_group(required=True)
    whom.add_argument("--user", metavar="USER")
    whom.add_argument("--group", metavar="GROUP")
    whom.add_argument("--everybody", action="store_true")
    p.set_defaults(handler=sh.policy_grant)
    p = sub.add_parser("revoke", help="remove a rule", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("rule_id", metavar="RULE_ID", type=int)
    p.add_argument("-f", "--force", action="store_true",
                   help="also when it locks a user of an advance reservation out (it goes into error)")
    p.set_defaults(handler=sh.policy_revoke)


def duration(value: str) -> float:
    """--timeout: seconds (also a fraction: 0.5), or the durations the server takes (30s, 10m, 1h, PT10M, 1:30:00)."""
    from ..domain.errors import Invalid
    from ..timeparse import NO_FIXED_LENGTH, parse_duration

    try:
        if re.fullmatch(r"\s*[0-9]+(\.[0-9]+)?\s*", value) and float(value) > 0:
            return float(value)
        return parse_duration(value, "timeout").total_seconds()
    except Invalid as error:
        reason = error.extra["reason"]
        if reason != NO_FIXED_LENGTH:
            reason = f"{value!r} is not a duration (try 90, 30s, 10m, 1h or PT10M)"
        raise argparse.ArgumentTypeError(reason) from error


def interval(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds between 0 and 3600")
    return seconds


def add_interval(parser) -> None:
    parser.add_argument("--interval", metavar="SECONDS", type=interval, default=DEFAULT_INTERVAL,
                        help=f"seconds between polls (default {DEFAULT_INTERVAL:g})")


def add_job_commands(commands, common) -> None:
    job = commands.add_parser("job", help="submit, follow and cancel a job", parents=[common])
    sub = job.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("submit", help="submit job XML or its JSON form", parents=[common])
    p.add_argument("file", metavar="FILE", help="a .xml or .json file, or - for stdin (XML if it starts with <)")
    p.add_argument("--ar", metavar="ID", type=int, help="bind every recipe set to this advance reservation")
    p.add_argument("--request-id", metavar="ID", help="retrying with the same ID never submits twice "
                                                      "(default: a new one, sent again on a lost answer)")
    p.add_argument("--wait", action="store_true", help="wait until every recipe is running")
    p.add_argument("--timeout", metavar="DURATION", type=duration,
                   help="wait at most this long (exit 9 then); implies --wait; default: as long as it takes")
    add_interval(p)
    p.set_defaults(handler=j.job_submit)
    for name, handler, text in (("status", j.job_status, "a job, its recipe sets and recipes"),
                                ("cancel", j.job_cancel, "cancel every unfinished recipe"),
                                ("export", j.job_export, "the job as Beaker job XML, to resubmit or edit")):
        p = sub.add_parser(name, help=text, parents=[common])
        p.add_argument("id", metavar="ID", type=int)
        p.set_defaults(handler=handler)
    p = sub.add_parser("watch", help="print each recipe status change until the job is finished",
                       parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    add_interval(p)
    p.set_defaults(handler=j.job_watch)

    p = commands.add_parser("jobs", help="list jobs (mine unless --all)", parents=[common])
    p.add_argument("--all", action="store_true", help="everybody's (admins; for others the same as without)")
    p.add_argument("--status", choices=STATES, help="only jobs with this status")
    p.set_defaults(handler=j.jobs)

    recipe = commands.add_parser("recipe", help="show or finish a recipe", parents=[common])
    sub = recipe.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("show", help="a recipe, and why it waits", parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    p.set_defaults(handler=j.recipe_show)
    p = sub.add_parser("finish", help="complete a running recipe with a result, or abort it", parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--result", choices=RESULTS, help="complete it with this result")
    how.add_argument("--abort", action="store_true", help="abort it")
    p.set_defaults(handler=j.recipe_finish)

    p = commands.add_parser("queue", help="waiting recipes in scheduling order, and why", parents=[common])
    p.set_defaults(handler=j.queue)
    p = commands.add_parser("distros", help="list distro trees", parents=[common])
    for option in ("name", "family", "arch", "variant"):
        p.add_argument(f"--{option}", help=f"only this {option}")
    p.set_defaults(handler=j.distros)


def limit(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= 1000:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number between 1 and 1000")
    return number


def add_wait(parser, until: str) -> None:
    parser.add_argument("--wait", action="store_true", help=f"wait until {until}")
    parser.add_argument("--timeout", metavar="DURATION", type=duration,
                        help="wait at most this long (exit 9 then); implies --wait; default: as long as it takes")
    add_interval(parser)


def add_provisioning_commands(commands, common) -> None:
    p = commands.add_parser("provision", help="install a distro tree on a system you hold", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("distro", metavar="DISTRO", help="a distro tree's name (e.g. Fedora-40) or its id")
    p.add_argument("--arch", help="with a name: the tree's arch (default: the system's)")
    p.add_argument("--variant", help="with a name: the tree's variant, when it has several")
    p.add_argument("--ks-meta", metavar="TEXT", help="key=value variables for the kickstart")
    p.add_argument("--kernel-options", metavar="TEXT", help="extra kernel command line for the installer")
    p.add_argument("--show-url", action="store_true",
                   help="also print the kickstart URL (it carries the installation's secret token)")
    add_wait(p, "the installed system is running")
    p.set_defaults(handler=pv.provision)

    p = commands.add_parser("installations", help="a system's installations, newest first", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("--limit", metavar="N", type=limit, default=20, help="at most N (default 20)")
    p.set_defaults(handler=pv.installations)

    p = commands.add_parser("installation", help="one installation", parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    p.add_argument("--kickstart", action="store_true", help="print its kickstart (the installation token hidden)")
    p.set_defaults(handler=pv.installation)

    p = commands.add_parser("power", help="power a system on or off, or reboot it", parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("action", metavar="ACTION", choices=POWER_ACTIONS, help=", ".join(POWER_ACTIONS))
    add_wait(p, "the command completed")
    p.set_defaults(handler=pv.power)

    p = commands.add_parser("commands", help="a system's power and netboot commands, newest first",
                            parents=[common])
    p.add_argument("system", metavar="SYSTEM")
    p.add_argument("--limit", metavar="N", type=limit, default=50, help="at most N (default 50)")
    p.set_defaults(handler=pv.commands)
    command = commands.add_parser("command", help="act on one command (administrators)", parents=[common])
    sub = command.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("cancel", help="cancel a queued or stuck command; its installation fails",
                       parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    p.set_defaults(handler=pv.command_cancel)

    distro = commands.add_parser("distro", help="register and remove distro trees (administrators)",
                                 parents=[common])
    sub = distro.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("add", help="register a distro tree", parents=[global_options(False, url=False)])
    p.add_argument("name", metavar="NAME")
    p.add_argument("--arch", required=True)
    p.add_argument("--url", dest="tree_url", metavar="URL", required=True,
                   help="the install tree's URL (here --url is not the server's: give that before the command)")
    p.add_argument("--kernel", metavar="PATH", required=True, help="the installer kernel, relative to --url")
    p.add_argument("--initrd", metavar="PATH", required=True, help="the installer initrd, relative to --url")
    p.add_argument("--family", help="e.g. Fedora40")
    p.add_argument("--variant", help="e.g. Server")
    p.add_argument("--ks-meta", metavar="TEXT", help="default kickstart variables (key=value ...)")
    p.add_argument("--kernel-options", metavar="TEXT", help="default installer kernel command line")
    p.add_argument("--tag", dest="tags", metavar="TAG", action="append", help="a tag (repeat for more)")
    p.add_argument("--lab", dest="labs", metavar="LAB", action="append",
                   help="a lab that has it (repeat for more; default: every lab)")
    p.set_defaults(handler=pv.distro_add)
    p = sub.add_parser("remove", help="remove a distro tree (recipes waiting for it are aborted)",
                       parents=[common])
    p.add_argument("id", metavar="ID", type=int)
    p.set_defaults(handler=pv.distro_remove)
