"""`lablease-server`: install, migrate, add users and systems, run the server and worker."""
from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..config import Settings, load, load_settings, specs, url_without_password
from ..config.kinds import as_text
from ..config.reference import effective
from ..domain.errors import Conflict, DomainError, Invalid
from ..domain.permissions import Actor
from ..observe import logs
from ..services.provisioning import labs
from ..services.catalog import systems
from ..services.people import users
from ..services.sealing import seal_all
from ..store import migrate
from ..store.backup import NotABackup, Refused
from ..store.outage import reason
from ..store.pgdump import ToolFailed
from ..store.db import Database
from ..store.secrets import SecretBox, private_dir, site_key, use_secrets
from ..store.wakeup import AlreadyRunning
from ..services.handlers import unit_of_work
from ..domain.times import format_when
from ..timeparse import parse_duration
from .output import table, to_json
from .server_data import add_commands as add_data_commands
from .import_refused import ImportRefused

# Administration from the server's own command line acts with full rights.
SERVER = Actor(id=0, name="lablease-server", is_admin=True)


def now() -> datetime:
    return datetime.now(timezone.utc)


# The databases a command opened, closed when main() returns: a command run in-process (lablease-server's
# main() called by a program, as the test suite does) leaves no connection or pool behind it.
_OPENED: list[Database] = []


def _db(settings: Settings, need_schema: bool = True) -> Database:
    db = Database(settings.database)
    _OPENED.append(db)
    use_secrets(db, SecretBox(settings))
    try:
        migrate.check_known(db)  # a newer lablease's schema is refused by every command, with what to do
        if need_schema and migrate.current_revision(db) != migrate.head_revision():
            raise Unusable("the database is not initialised or not migrated; run: lablease-server init")
    except BaseException:
        db.dispose()
        raise
    return db


def cmd_init(settings: Settings, args) -> None:
    private_dir(Path(settings.data_dir))  # the database and the site key live here: the server's user only
    db = _db(settings, need_schema=False)
    try:
        before = migrate.current_revision(db)
        migrate.upgrade(db)
        after = migrate.current_revision(db)
        state = "created" if before is None else ("migrated" if before != after else "up to date")
        print(f"database {state} at revision {after}: {url_without_password(settings.database)}")
        site_key(settings)  # made now, once, rather than by whichever process needs it first
        with unit_of_work(db, settings) as uow:
            users.ensure_arusers(uow, now())
            sealed = seal_all(uow)  # secrets stored in plain text by earlier versions are sealed now
            secret = _first_admin(uow, args.admin)
            uow.commit()
    finally:
        db.dispose()
    if sealed:
        print(f"stored secrets sealed under the site key: {sealed} row(s)")
    if secret:
        print(secret)
        print(f"user {args.admin} created (admin); the token above is shown only once", file=sys.stderr)
    elif args.admin:
        print(f"user {args.admin} exists: no new token (lablease-server token create {args.admin})", file=sys.stderr)
    for directory in (settings.tftp_root_for(None), settings.kickstart_path, settings.power_scripts_path):
        directory.mkdir(parents=True, exist_ok=True)


def _first_admin(uow, name: str | None) -> str | None:
    """`init --admin NAME` (Beaker's beaker-init --user): an administrator made with the database, so a new
    site needs one command; on a database that has the user already, nothing changes and no token is made."""
    if not name:
        return None
    try:
        return users.add_user(uow, now(), name, is_admin=True)[1]
    except Conflict:  # checked before anything is written: the user exists
        return None


def cmd_user_add(settings: Settings, args) -> None:
    with unit_of_work(_db(settings), settings) as uow:
        _, secret = users.add_user(uow, now(), args.name, args.admin, args.group or (), args.email)
        uow.commit()
    print(secret)
    print(f"user {args.name} created{' (admin)' if args.admin else ''}; the token above is shown only once",
          file=sys.stderr)


def read_password(name: str) -> str:
    """From the terminal (asked twice, not echoed), or the first line of standard input (scripts)."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    import getpass

    first = getpass.getpass(f"new password for {name}: ")
    if getpass.getpass("again: ") != first:
        raise SystemExit("the two passwords differ; nothing changed")
    return first


def cmd_user_passwd(settings: Settings, args) -> None:
    from ..services.auth import signin

    password = read_password(args.name)
    with unit_of_work(_db(settings), settings) as uow:
        signin.set_password(uow, now(), args.name, password)
        uow.commit()
    print(f"password of {args.name} set: they can sign in to the web pages", file=sys.stderr)


def cmd_group_add(settings: Settings, args) -> None:
    from ..services.people import groups

    with unit_of_work(_db(settings), settings) as uow:
        group = groups.create(uow, SERVER, now(), args.name, args.description, args.member or [], args.owner or [])
        uow.commit()
    print(f"group {group['name']} created: owners {', '.join(group['owners']) or '-'}; "
          f"members {', '.join(group['members']) or '-'}")


def _done(settings: Settings, use_case, *args):
    """One use case (the API's own, from services/) in one unit of work, committed; what it returned."""
    with unit_of_work(_db(settings), settings) as uow:
        result = use_case(uow, *args)
        uow.commit()
    return result


def _read(settings: Settings, use_case, *args):
    with unit_of_work(_db(settings), settings, write=False) as uow:
        return use_case(uow, *args)


def cmd_group_member_add(settings: Settings, args) -> None:
    from ..services.people import groups

    group = _done(settings, groups.add_member, SERVER, now(), args.group, args.user, args.owner)
    print(f"{args.user} is {'an owner' if args.owner else 'a member'} of {group['name']}: "
          f"owners {', '.join(group['owners']) or '-'}; members {', '.join(group['members'])}")


def cmd_group_member_remove(settings: Settings, args) -> None:
    from ..services.people import groups

    _done(settings, groups.remove_member, SERVER, now(), args.group, args.user)
    print(f"{args.user} is no longer in {args.group}")


def cmd_delete(settings: Settings, args) -> None:
    """`pool delete` and `group delete`: what was deleted, and what forcing it changed besides."""
    from ..services.people import groups
    from ..services.catalog import pools

    changed = _done(settings, {"pool": pools, "group": groups}[args.command].delete, SERVER, now(), args.name,
                    args.force)
    print("\n".join([f"{args.command} {args.name} deleted" + ("; forcing it also:" if changed else ""),
                     *(f"  {change}" for change in changed)]))


def cmd_user_list(settings: Settings, args) -> None:
    found = _read(settings, users.user_list)
    print(to_json(found) if args.json else table(found, [
        ("NAME", lambda u: u["name"]), ("ADMIN", lambda u: u["admin"]),
        ("STATE", lambda u: "disabled" if u["disabled"] else "active"), ("TOKENS", lambda u: u["tokens"]),
        ("GROUPS", lambda u: u["groups"]), ("EMAIL", lambda u: u["email"])]))


def cmd_user_disable(settings: Settings, args, disabled: bool = True) -> None:
    changed = _done(settings, users.set_disabled, now(), args.name, disabled)
    state = "disabled" if disabled else "enabled"
    if not changed:
        print(f"user {args.name} was {state} already")
    elif disabled:
        print(f"user {args.name} disabled: their tokens, web sign-in and calendar feed are refused until "
              "lablease-server user enable; what they hold stays theirs")
    else:
        print(f"user {args.name} enabled: their tokens that are not revoked or expired work again")


def cmd_user_enable(settings: Settings, args) -> None:
    cmd_user_disable(settings, args, disabled=False)


def cmd_arch_add(settings: Settings, args) -> None:
    from ..services.catalog import arches

    arch = _done(settings, arches.add, SERVER, now(), args.name)
    print(f"architecture {arch['name']} added: systems and distro trees may name it")


def cmd_arch_list(settings: Settings, args) -> None:
    from ..services.catalog import arches

    found = _read(settings, arches.every)
    print(to_json(found) if args.json else table(found, [
        ("NAME", lambda a: a["name"]), ("ADDED", lambda a: a["created_at"] or "-")]))


def cmd_token_list(settings: Settings, args) -> None:
    found = _read(settings, users.token_list, now(), args.user)
    print(to_json(found) if args.json else table(found, [
        ("NAME", lambda t: t["name"]), ("STATE", lambda t: t["state"]), ("CREATED", lambda t: t["created"]),
        ("EXPIRES", lambda t: t["expires"]), ("REVOKED", lambda t: t["revoked"])]))


def cmd_system_remove(settings: Settings, args) -> None:
    at = now()
    with unit_of_work(_db(settings), settings) as uow:  # as the API's DELETE /systems/FQDN: one rule of removing
        returned = systems.remove_system(uow, SERVER, at, args.fqdn, args.force)
        uow.commit()
    print(f"{args.fqdn} removed (its history stays)" + (f"; returned {returned} reservation(s)" if returned else ""))


def cmd_system_condition(settings: Settings, args) -> None:
    system = _done(settings, systems.update_system, SERVER, now(), args.fqdn, {"condition": args.condition},
                   args.force)
    print(f"{system['fqdn']} is {system['condition']}")


def lifetime(text: str):
    """--expires: a duration, checked while parsing so a bad one is a usage error (status 2)."""
    try:
        return parse_duration(text, "expires")
    except Invalid as error:
        raise argparse.ArgumentTypeError(error.extra["reason"]) from None


def setting_option(name: str):
    """An option overriding a setting: its value checked as the setting's (a bad one is a usage error)."""
    spec = next(spec for spec in specs() if spec.name == name)

    def read(text: str):
        try:
            return spec.read(text)
        except Invalid as error:
            raise argparse.ArgumentTypeError(error.extra["reason"]) from None

    return read


def user_name(text: str) -> str:
    """A user's name, checked while parsing: a bad one is a usage error, before anything is made."""
    try:
        return users.check_name(text)
    except Invalid as error:
        raise argparse.ArgumentTypeError(error.extra["reason"]) from None


def key_value(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{pair!r} is not KEY=VALUE")
    return key, value


def cmd_token_create(settings: Settings, args) -> None:
    expires = now() + args.expires if args.expires else None
    with unit_of_work(_db(settings), settings) as uow:
        secret = users.create_token(uow, now(), args.user, args.name, expires)
        uow.commit()
    print(secret)
    until = f" until {format_when(expires)}" if expires else ""
    print(f"token {args.name!r} for {args.user} created{until}; it is shown only once", file=sys.stderr)


def cmd_token_revoke(settings: Settings, args) -> None:
    with unit_of_work(_db(settings), settings) as uow:
        count = users.revoke_tokens(uow, now(), args.user, args.name)
        uow.commit()
    print(f"revoked {count} token(s) of {args.user}")


def cmd_lab_add(settings: Settings, args) -> None:
    with unit_of_work(_db(settings), settings) as uow:
        labs.add(uow, now(), args.name)
        uow.commit()
    print(f"lab {args.name} added: its systems' power and netboot commands now wait for its agent "
          f"(lablease-server lab token {args.name})")


def cmd_lab_token(settings: Settings, args) -> None:
    with unit_of_work(_db(settings), settings) as uow:
        secret = labs.new_token(uow, now(), args.name)
        uow.commit()
    print(secret)
    print(f"agent token for lab {args.name} created; it is shown only once (lablease-agent save-token)",
          file=sys.stderr)


def cmd_lab_revoke(settings: Settings, args) -> None:
    with unit_of_work(_db(settings), settings) as uow:
        count = labs.revoke(uow, now(), args.name)
        uow.commit()
    print(f"revoked {count} agent token(s) of lab {args.name}")


def _attributes(pairs: list[tuple[str, str]]) -> dict:
    attributes: dict[str, list[str]] = {}
    for key, value in pairs or ():
        attributes.setdefault(key, []).append(value)
    return attributes


def cmd_system_add(settings: Settings, args) -> None:
    data = {"fqdn": args.fqdn, "arch": args.arch, "condition": args.condition,
            "attributes": _attributes(args.attr)}
    if args.mac is not None:
        data["netboot"] = {"mac": args.mac}
    for key in ("cpus", "memory_mb", "lab", "owner"):
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    with unit_of_work(_db(settings), settings) as uow:
        system = systems.add_system(uow, SERVER, now(), data)
        uow.commit()
    print(f"added {system['fqdn']} ({system['arch']}, {system['condition']})")


def cmd_system_import(settings: Settings, args) -> None:
    from .server_import import import_file  # (the API's input checks: loaded by the commands that need them)

    with open(args.file, encoding="utf-8") as handle:
        text = handle.read()
    with unit_of_work(_db(settings), settings) as uow:
        result = import_file(uow, SERVER, now(), args.file, text, args.force)
        uow.commit()
    print(f"imported {args.file}: {len(result['added'])} added, {len(result['updated'])} updated")


def cmd_import_beaker_csv(settings: Settings, args) -> None:
    from .server_beaker import import_files

    with unit_of_work(_db(settings), settings) as uow:
        result, notes = import_files(uow, SERVER, now(), args.files)
        uow.commit()
    print(f"imported {', '.join(args.files)}: {len(result['added'])} system(s) added, {len(result['updated'])} "
          f"updated; {result['pools']} pool and {result['groups']} group membership(s) changed")
    if notes:
        print(f"not imported ({len(notes)}; lablease keeps no such data):")
        for row, note in notes:
            print(f"  {row.where}: {note}")


def cmd_export_beaker_csv(settings: Settings, args) -> None:
    from ..services.catalog import beaker_csv
    from .server_beaker import write_files

    tables, notes = _read(settings, beaker_csv.export)
    for path, count in write_files(args.directory, tables):
        print(f"wrote {path}: {count} row(s)")
    if notes:
        print(f"not exported ({len(notes)}):")
        for note in notes:
            print(f"  {note}")


def cmd_serve(settings: Settings, args) -> None:
    from .serve import serve

    overrides = {"listen": args.listen, "gunicorn_workers": args.workers, "gunicorn_threads": args.threads}
    try:  # each value was checked as it was parsed; the rules between settings are checked again here
        settings = replace(settings, **{name: value for name, value in overrides.items() if value is not None})
    except Invalid as error:
        raise Unusable(error.detail) from None
    _db(settings).dispose()
    serve(settings, run_worker=not args.no_worker, access_log=args.access_log, config_file=args.config)


def cmd_config_show(settings: Settings, args) -> None:
    """The effective settings and where each came from, secrets masked (docs/configuration.md)."""
    loaded = load(args.config, args.environ)  # as main() did, keeping where each value came from
    rows = effective(loaded)
    if args.json:
        shown = {row["setting"]: {"value": row["value"], "source": row["source"]} for row in rows}
        print(to_json({"config_file": loaded.config_file, "settings": shown}))
        return
    print(f"settings file: {loaded.config_file or '-'}")
    print(table(rows, [("SETTING", lambda r: r["setting"]), ("VALUE", lambda r: as_text(r["value"])),
                       ("SOURCE", lambda r: r["source"])]))


def cmd_worker(settings: Settings, args) -> None:
    from ..observe import metrics
    from ..worker.loop import Worker

    # Under `serve`, the directory serve prepared; run apart, the data dir's (a server there adds it up), from
    # which the files of processes gone are removed as serve does, or each restart would leave some behind.
    if metrics.directory():
        metrics.use(Path(metrics.directory()))
    else:
        metrics.prepare(settings.data_dir)
    worker = Worker(settings, _db(settings), parent_pid=args.parent)
    # What start-up made (modules, mappers, settings) lives as long as the process: out of the collector's
    # way, so a full collection walks only what the passes made (it had cost 55-86 ms inside an event).
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGTERM, lambda *_: worker.stopping.set())
    try:
        worker.run()
    except KeyboardInterrupt:
        pass
    finally:
        metrics.mark_dead(os.getpid())


def cmd_status(settings: Settings, args) -> int:
    """Liveness and readiness as the server answers them, then the queues as the database holds them."""
    from .status import report

    lines, ready = report(settings, args.url or settings.base_url, now())
    print("\n".join(lines))
    return 0 if ready else 3


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="lablease-server", description=__doc__)
    top.add_argument("--config", help="YAML settings file (also LABLEASE_CONFIG)")
    top.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = top.add_subparsers(dest="command", required=True)
    init = sub.add_parser("init", help="create or migrate the database")
    init.add_argument("--admin", metavar="NAME", type=user_name, help="also create this administrator, unless the user exists, "
                      "and print its API token (the last line of the output)")
    init.set_defaults(func=cmd_init)

    user = sub.add_parser("user", help="users").add_subparsers(dest="action", required=True)
    add = user.add_parser("add", help="create a user and print a token")
    add.add_argument("name")
    add.add_argument("--admin", action="store_true")
    add.add_argument("--group", action="append", help="add to this group (repeatable; created if new)")
    add.add_argument("--email")
    add.set_defaults(func=cmd_user_add)
    passwd = user.add_parser("passwd", help="set a user's web sign-in password (stdin when not a terminal)")
    passwd.add_argument("name")
    passwd.set_defaults(func=cmd_user_passwd)
    ulist = user.add_parser("list", help="every user: administrator or not, disabled or not, tokens, groups")
    ulist.add_argument("--json", action="store_true", help="for machines")
    ulist.set_defaults(func=cmd_user_list)
    for action, func, text in (("disable", cmd_user_disable, "refuse a user's tokens, web sign-in and calendar feed"),
                               ("enable", cmd_user_enable, "let a disabled user in again")):
        toggle = user.add_parser(action, help=text)
        toggle.add_argument("name")
        toggle.set_defaults(func=func)

    group = sub.add_parser("group", help="groups").add_subparsers(dest="action", required=True)
    gadd = group.add_parser("add", help="create a group")
    gadd.add_argument("name")
    gadd.add_argument("--description")
    gadd.add_argument("--owner", action="append", help="a user who owns the group (repeatable)")
    gadd.add_argument("--member", action="append", help="a member (repeatable)")
    gadd.set_defaults(func=cmd_group_add)
    member = group.add_parser("add-member", help="add a user to a group (arusers too), or make a member an owner")
    member.add_argument("group")
    member.add_argument("user")
    member.add_argument("--owner", action="store_true", help="as an owner of the group")
    member.set_defaults(func=cmd_group_member_add)
    member = group.add_parser("remove-member", help="take a user out of a group")
    member.add_argument("group")
    member.add_argument("user")
    member.set_defaults(func=cmd_group_member_remove)
    gdelete = group.add_parser("delete", help="delete a group (refused while access rules or pools name it)")
    gdelete.add_argument("name")
    gdelete.add_argument("--force", action="store_true",
                         help="remove the access rules granting to it and leave the pools it owns to administrators")
    gdelete.set_defaults(func=cmd_delete)

    token = sub.add_parser("token", help="API tokens").add_subparsers(dest="action", required=True)
    create = token.add_parser("create", help="print a new token for a user")
    create.add_argument("user")
    create.add_argument("--name", default="token", help="a label for the token")
    create.add_argument("--expires", type=lifetime, help="lifetime, e.g. 30d, 12h or P4W")
    create.set_defaults(func=cmd_token_create)
    revoke = token.add_parser("revoke", help="revoke a user's tokens")
    revoke.add_argument("user")
    revoke.add_argument("--name", help="only tokens with this label")
    revoke.set_defaults(func=cmd_token_revoke)
    tlist = token.add_parser("list", help="a user's tokens: label, state and dates (never the secret)")
    tlist.add_argument("user")
    tlist.add_argument("--json", action="store_true", help="for machines")
    tlist.set_defaults(func=cmd_token_list)

    lab = sub.add_parser("lab", help="labs served by an agent (docs/lab-agents.md)").add_subparsers(
        dest="action", required=True)
    for action, func, text in (("add", cmd_lab_add, "a lab whose commands its agent (lablease-agent) carries out"),
                               ("token", cmd_lab_token, "print a new agent token for the lab"),
                               ("revoke", cmd_lab_revoke, "revoke every agent token of the lab")):
        lab_action = lab.add_parser(action, help=text)
        lab_action.add_argument("name")
        lab_action.set_defaults(func=func)

    system = sub.add_parser("system", help="systems").add_subparsers(dest="action", required=True)
    sadd = system.add_parser("add", help="add one system")
    sadd.add_argument("fqdn")
    sadd.add_argument("--arch", required=True)
    sadd.add_argument("--cpus", type=int)
    sadd.add_argument("--memory-mb", type=int, dest="memory_mb")
    sadd.add_argument("--lab")
    sadd.add_argument("--owner")
    sadd.add_argument("--condition", default="manual", choices=["automated", "manual", "broken", "removed"])
    sadd.add_argument("--attr", type=key_value, action="append", help="KEY=VALUE (repeatable)")
    sadd.add_argument("--mac", help="its netboot MAC address (any spelling; kept as 52:54:00:12:34:56)")
    sadd.set_defaults(func=cmd_system_add)
    simport = system.add_parser("import", help="add or update systems from a YAML file")
    simport.add_argument("file")
    simport.add_argument("--force", action="store_true",
                         help="as the API's force=true: remove held or lent systems (returning their reservations "
                              "and loans) and make changes that put an advance reservation into error")
    simport.set_defaults(func=cmd_system_import)
    sremove = system.add_parser("remove", help="mark a system removed (its history stays)")
    sremove.add_argument("fqdn")
    sremove.add_argument("--force", action="store_true", help="return its reservations first")
    sremove.set_defaults(func=cmd_system_remove)
    scondition = system.add_parser("condition", help="set a system's condition, e.g. repair a broken one")
    scondition.add_argument("fqdn")
    scondition.add_argument("condition", choices=["automated", "manual", "broken"],
                            help="(to take a system out of use for good: system remove)")
    scondition.add_argument("--force", action="store_true", help="even if it breaks an advance reservation")
    scondition.set_defaults(func=cmd_system_condition)

    arch = sub.add_parser("arch", help="architectures").add_subparsers(dest="action", required=True)
    aadd = arch.add_parser("add", help="add an architecture systems and distro trees may name (e.g. ia64)")
    aadd.add_argument("name")
    aadd.set_defaults(func=cmd_arch_add)
    alist = arch.add_parser("list", help="the architectures the site knows")
    alist.add_argument("--json", action="store_true", help="for machines")
    alist.set_defaults(func=cmd_arch_list)

    pool = sub.add_parser("pool", help="pools").add_subparsers(dest="action", required=True)
    pdelete = pool.add_parser("delete", help="delete a pool (refused while a health check or an access policy "
                                             "names it)")
    pdelete.add_argument("name")
    pdelete.add_argument("--force", action="store_true",
                         help="delete its health checks and give systems using its access policy their own rules")
    pdelete.set_defaults(func=cmd_delete)

    load = sub.add_parser("import", help="import another system's data").add_subparsers(dest="format", required=True)
    beaker_in = load.add_parser("beaker-csv", help="the CSV files Beaker's Admin -> Export wrote (systems, power, "
                                                   "key/values, pools, user groups...): all or nothing")
    beaker_in.add_argument("files", nargs="+", metavar="FILE")
    beaker_in.set_defaults(func=cmd_import_beaker_csv)
    save = sub.add_parser("export", help="export data for another system").add_subparsers(dest="format", required=True)
    beaker_out = save.add_parser("beaker-csv", help="write Beaker's CSV files (system, power, keyvalue, "
                                                    "system_pool, user_group) into DIR (mode 0600: power passwords)")
    beaker_out.add_argument("directory", metavar="DIR")
    beaker_out.set_defaults(func=cmd_export_beaker_csv)

    serve = sub.add_parser("serve", help="run the API (gunicorn) and, unless --no-worker, the worker")
    serve.add_argument("--listen", type=setting_option("listen"),
                       help="HOST:PORT (default LABLEASE_LISTEN or 127.0.0.1:8042)")
    serve.add_argument("--workers", type=setting_option("gunicorn_workers"), help="gunicorn worker processes")
    serve.add_argument("--threads", type=setting_option("gunicorn_threads"), help="threads per worker process")
    serve.add_argument("--no-worker", action="store_true", help="run the worker apart (lablease-server worker)")
    serve.add_argument("--access-log", help="file for the access log ('-' for stderr)")
    serve.set_defaults(func=cmd_serve)
    config = sub.add_parser("config", help="settings").add_subparsers(dest="action", required=True)
    show = config.add_parser("show", help="print the effective settings and where each came from")
    show.add_argument("--json", action="store_true", help="for machines")
    show.set_defaults(func=cmd_config_show, database=False)

    status = sub.add_parser("status", help="liveness, readiness, queue depth and the oldest due item "
                                           "(exit 3 when not ready)")
    status.add_argument("--url", help="the server's base URL (default: public_url, or http://<listen>)")
    status.set_defaults(func=cmd_status)

    worker = sub.add_parser("worker", help="run only the background worker")
    worker.add_argument("--parent", type=int, help=argparse.SUPPRESS)  # serve's pid: stop when it is gone
    worker.set_defaults(func=cmd_worker)
    add_data_commands(sub)
    return top


# Exit statuses (docs/cli.md, "The lablease-server command"); 2 is also argparse's own for a bad command line.
REFUSED, USAGE, NOT_READY = 1, 2, 3


class Unusable(Exception):
    """What the command was given cannot be used: its settings, the database they name, or a FILE."""


def configured(args) -> Settings:
    """The settings, checked whole (config/checks.py), and the database they name answering."""
    try:
        settings = load_settings(args.config, args.environ)
    except Invalid as error:
        raise Unusable(error.detail) from None
    logs.configure(settings.log_format, settings.log_level)
    if getattr(args, "database", True):  # every command but `config show` opens it
        reachable(settings)
    return settings


def reachable(settings: Settings) -> None:
    """Connect once before the command does anything: a wrong host, port, role, password or database name is
    then one line naming the database (never its password), not a traceback from wherever it was first used."""
    where = url_without_password(settings.database)
    try:
        db = Database(settings.database)  # SQLite: makes data_dir (0700) and the file (0600), as init would
        try:
            with db.reader.connect():
                pass
        finally:
            db.dispose()
    except DBAPIError as error:
        raise Unusable(f"cannot use the database {where}: {' '.join(str(error.orig or error).split())}") from None
    except OSError as error:
        raise Unusable(f"cannot use the database {where}: {error.strerror or error}: {error.filename}") from None


def main(argv: list[str] | None = None, environ=None) -> int:
    """The command line; `environ` (the process's environment by default) holds the LABLEASE_* settings."""
    args = parser().parse_args(argv)
    args.environ = environ
    logs.configure()
    try:
        code = args.func(configured(args), args)
    except (Unusable, NotABackup) as error:
        return _fail(args, str(error), USAGE)
    except DomainError as error:
        return _fail(args, error.detail.replace("force=true", "--force"), REFUSED)
    # e.g. a second worker on one SQLite database, a newer schema, a refused restore: why, in one line
    except (OSError, AlreadyRunning, migrate.SchemaNewer, migrate.UpgradeRefused, Refused, ToolFailed,
            ImportRefused) as error:
        return _fail(args, str(error), REFUSED)
    except SQLAlchemyError as error:  # the database failed under the command (restarting? disk full?)
        return _fail(args, f"the database failed: {reason(error)}", REFUSED)
    except Exception as error:  # a bug: still one line (its first), the traceback with --debug
        return _fail(args, f"internal error: {type(error).__name__}: {reason(error)}; run again with --debug to "
                           "see where", REFUSED)
    finally:
        while _OPENED:
            _OPENED.pop().dispose()
    return code or 0


def _fail(args, message: str, status: int) -> int:
    if args.debug:
        raise
    print(f"lablease-server: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
