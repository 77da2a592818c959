"""Handlers of `lablease provision`, `installations`, `installation`, `power`, `commands` and `distro ...`.

`provision --wait` polls `GET /installations/{id}` and `power --wait` polls
`GET /commands/{id}` every `--interval` seconds, printing a line per status
change; everything else is one or two requests. A kickstart URL carries the
installation's secret token, so it is dropped from every answer unless
`--show-url` asks for it.
"""
from __future__ import annotations

import time

from .client_commands import Outcome, body, system_path
from .client_http import Api, ClientError, Terminated, stopped
from .client_jobs import now_text, seconds_text
from .client_status import ExitStatus
from .client_views import DISTRO, Shape
from .output import when

INSTALLED = "running"  # an installation is done once its system booted what was installed
INSTALL_ENDED = ("failed", "cancelled")
COMMAND_DONE = "completed"
COMMAND_ENDED = ("failed", "cancelled")
URL_KEY = "kickstart_url"

sleep = time.sleep  # tests may replace it
monotonic = time.monotonic


# --- how installations, commands and distro trees look ---------------------------------------------

def tree_text(tree: dict | None) -> str | None:
    """`Fedora-40 x86_64 Server (id 3)`: the tree as it was when installed (it may be gone since)."""
    tree = tree or {}
    if not tree.get("name"):
        return None
    words = " ".join(str(tree[k]) for k in ("name", "arch", "variant") if tree.get(k))
    return f"{words} (id {tree['id']})" if tree.get("id") is not None else words


def _installation_details(i: dict) -> list:
    pairs = [("id", i.get("id")), ("system", i.get("system")), ("distro tree", tree_text(i.get("distro_tree"))),
             ("user", i.get("user")), ("reservation", i.get("reservation")), ("recipe", i.get("recipe")),
             ("status", i.get("status")), ("error", i.get("error")), ("ks meta", i.get("ks_meta")),
             ("kernel options", i.get("kernel_options")), ("created", when(i.get("created_at"))),
             ("started", when(i.get("started_at"))), ("installed", when(i.get("installed_at"))),
             ("finished", when(i.get("finished_at")))]
    if i.get(URL_KEY):
        pairs.append(("kickstart url", i[URL_KEY]))
    return pairs


INSTALLATION = Shape("installation", "installations", [
    ("ID", lambda i: i.get("id")),
    ("DISTRO", lambda i: (i.get("distro_tree") or {}).get("name")),
    ("ARCH", lambda i: (i.get("distro_tree") or {}).get("arch")),
    ("VARIANT", lambda i: (i.get("distro_tree") or {}).get("variant")),
    ("USER", lambda i: i.get("user")),
    ("RECIPE", lambda i: i.get("recipe")),
    ("STATUS", lambda i: i.get("status")),
    ("CREATED", lambda i: when(i.get("created_at"))),
    ("FINISHED", lambda i: when(i.get("finished_at"))),
    ("ERROR", lambda i: i.get("error")),
], _installation_details)

COMMAND = Shape("command", "commands", [
    ("ID", lambda c: c.get("id")),
    ("ACTION", lambda c: c.get("action")),
    ("STATUS", lambda c: c.get("status")),
    ("ATTEMPTS", lambda c: c.get("attempts")),
    ("CREATED", lambda c: when(c.get("created_at"))),
    ("FINISHED", lambda c: when(c.get("finished_at"))),
    ("ERROR", lambda c: c.get("error")),
], lambda c: [("id", c.get("id")), ("system", c.get("system")), ("action", c.get("action")),
              ("status", c.get("status")), ("attempts", c.get("attempts")), ("user", c.get("user")),
              ("installation", c.get("installation")), ("error", c.get("error")),
              ("created", when(c.get("created_at"))), ("started", when(c.get("started_at"))),
              ("finished", when(c.get("finished_at")))])

# The listing is `distros`' table; one tree (what `distro add` prints) shows everything it boots.
DISTRO_TREE = Shape(DISTRO.tag, DISTRO.plural, DISTRO.columns, lambda d: [(k.replace("_", " "), d.get(k)) for k in (
    "id", "name", "family", "variant", "arch", "tags", "labs", "url", "kernel", "initrd", "ks_meta",
    "kernel_options")] + [("created", when(d.get("created_at")))])


# --- following a status until it settles ---------------------------------------------------------

class Followed:
    """What `--wait` follows: an installation until it runs, or a command until it completes."""

    def __init__(self, kind: str, path: str, done: str, ended: tuple[str, ...], shape: Shape, name, show):
        self.kind, self.path, self.done, self.ended, self.shape = kind, path, done, ended, shape
        self.name = name  # the thing as named in a reason
        self.show = show  # the answer as printed (a kickstart URL kept or dropped)


def follow(api: Api, args, what: Followed, item: dict) -> Outcome:
    """Print the item and a blank line, then a line per status change; the item once done, else ClientError
    (8 when it ended otherwise, 9 when the time ran out, 130 on Ctrl-C)."""
    stream = args.environment.stdout if args.format is None else None
    if stream is not None:
        print(what.shape.render(what.show(item), None) + "\n", file=stream, flush=True)
    deadline = None if args.timeout is None else monotonic() + args.timeout
    status = item.get("status")
    try:
        while True:
            if item.get("status") != status:
                line = f"{now_text()}  {what.kind} {item['id']}  {status} -> {item.get('status')}"
                status = item.get("status")
                if status == what.done:
                    return Outcome(what.show(item), what.shape, line)
                if stream is not None:
                    print(line, file=stream, flush=True)
            if status == what.done:  # already done when first seen
                return Outcome(what.show(item), what.shape, f"{now_text()}  {what.kind} {item['id']}  {status}")
            if status in what.ended:
                raise ClientError(f"{what.name(item)} {status}: {item.get('error') or 'no reason given'}",
                                  ExitStatus.ENDED, outcome=settled(args, what, item))
            if deadline is not None and monotonic() >= deadline:
                raise ClientError(f"{what.name(item)} is not {what.done} after {seconds_text(args.timeout)}; "
                                  f"it is {status}", ExitStatus.TIMED_OUT, outcome=settled(args, what, item))
            sleep(args.interval if deadline is None else max(0.0, min(args.interval, deadline - monotonic())))
            item = api.get(what.path)
    except (KeyboardInterrupt, Terminated) as stop:
        word, status = stopped(stop)
        raise ClientError(f"{word}; {what.name(item)} goes on ({item.get('status')})", status) from None
    except ClientError as error:  # polling failed: --json still prints the item (its id)
        error.outcome = error.outcome or settled(args, what, item)
        raise


def settled(args, what: Followed, item: dict) -> Outcome | None:
    """On 8 or 9 `--json`/`--xml` still print the item; people have seen it already."""
    return Outcome(what.show(item), what.shape) if args.format is not None else None


def waiting(args) -> bool:
    return bool(args.wait or args.timeout is not None)  # --timeout implies --wait


# --- installations -----------------------------------------------------------------------------

def distro_choice(value: str):
    """A distro tree id when all digits (`12`), else its name (`Fedora-40`)."""
    return int(value) if value.isascii() and value.isdigit() else value


def provision(api: Api, args) -> Outcome:
    installation = api.post(system_path(args.system, "/provision"), body(
        distro_tree=distro_choice(args.distro), arch=args.arch, variant=args.variant, ks_meta=args.ks_meta,
        kernel_options=args.kernel_options))
    url = installation.get(URL_KEY)

    def show(item: dict) -> dict:
        shown = {k: v for k, v in item.items() if k != URL_KEY}
        if args.show_url and url:
            shown[URL_KEY] = url
        return shown

    if waiting(args):
        what = Followed("installation", f"/installations/{installation['id']}", INSTALLED, INSTALL_ENDED,
                        INSTALLATION, lambda i: f"installation {i['id']} of {i.get('system')}", show)
        return follow(api, args, what, installation)
    return Outcome(show(installation), INSTALLATION)


def installations(api: Api, args) -> Outcome:
    return Outcome(api.get(system_path(args.system, "/installations"), {"limit": args.limit}), INSTALLATION)


def installation(api: Api, args) -> Outcome:
    found = api.get(f"/installations/{args.id}")
    if not args.kickstart:
        return Outcome(found, INSTALLATION)
    if "kickstart" not in found:
        raise ClientError(f"installation {args.id}: only its user, the system's owner and administrators may "
                          "read its kickstart", ExitStatus.FORBIDDEN)
    return Outcome(found, INSTALLATION, found["kickstart"].rstrip("\n"))


# --- power and the command queue ---------------------------------------------------------------

def power(api: Api, args) -> Outcome:
    command = api.post(system_path(args.system, "/power"), {"action": args.action})
    if waiting(args):
        what = Followed("command", f"/commands/{command['id']}", COMMAND_DONE, COMMAND_ENDED, COMMAND,
                        lambda c: f"command {c['id']} ({c.get('action')} of {c.get('system')})", dict)
        return follow(api, args, what, command)
    return Outcome(command, COMMAND)


def commands(api: Api, args) -> Outcome:
    return Outcome(api.get(system_path(args.system, "/commands"), {"limit": args.limit}), COMMAND)


def command_cancel(api: Api, args) -> Outcome:
    command = api.delete(f"/commands/{args.id}")
    return Outcome(command, COMMAND, f"cancelled command {command['id']} ({command['action']} of {command['system']})")


# --- distro trees ------------------------------------------------------------------------------

def distro_add(api: Api, args) -> Outcome:
    tree = api.post("/distro-trees", body(
        name=args.name, arch=args.arch, url=args.tree_url, kernel=args.kernel, initrd=args.initrd, family=args.family,
        variant=args.variant, ks_meta=args.ks_meta, kernel_options=args.kernel_options, tags=args.tags or None,
        labs=args.labs or None))
    return Outcome(tree, DISTRO_TREE)


def distro_remove(api: Api, args) -> Outcome:
    tree = api.get(f"/distro-trees/{args.id}")
    api.delete(f"/distro-trees/{args.id}")
    named = " ".join(str(tree[k]) for k in ("name", "arch", "variant") if tree.get(k))
    return Outcome(None, DISTRO_TREE, f"removed distro tree {args.id} ({named})")

