"""Labs served by an agent (`lablease-agent`): their tokens, and the agent's side of the command queue.

An agent takes its lab's commands from the same queue the worker takes the others from
(services/provisioning/commands.py `claim` with its lab), under the same rules: ordered per system, one at a
time per power address, leased until a deadline (a dead agent's command is taken back by the
worker's recovery step and retried), retried with backoff, failed for good with the same
consequences. An agent token acts for its one lab: it cannot take, report or read anything else.
"""
from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import func, select

from ...domain.errors import Conflict, NotFound, Unauthenticated
from ...domain.labs import agent_state
from ...domain.paging import Page, PageRequest
from ...domain.times import format_time
from ...store import paging
from ...store.feed_signal import POLL as FEED_POLL
from ...store.lab_tables import Lab, LabToken
from ...store.paging import Order
from ...store.provision_tables import Command, Installation
from ...store.tables import System
from ..people.users import check_name, hash_token
from . import commands, installations

# A lab agent's installer proxy names itself by its agent token in this header (agent/proxy.py).
AGENT_HEADER = "X-Lablease-Agent"
POLL = FEED_POLL  # seconds between a waiting take's probes, as the event feed's long poll (store/feed_signal.py)
AGENT_TOKEN_PREFIX = "lla_"  # told apart from API tokens (llt_) at a glance, in a log or a leak report


def add(uow, now: datetime, name: str) -> dict:
    """A lab whose commands from now on wait for its agent (the worker no longer runs them)."""
    check_name(name, "lab")
    if uow.session.execute(select(Lab.id).where(Lab.name == name)).first():
        raise Conflict(f"lab {name} already exists")
    lab = Lab(name=name, created_at=now)
    uow.session.add(lab)
    uow.session.flush()
    return {"name": name, "created": format_time(now)}


def find(uow, name: str) -> Lab:
    lab = uow.session.execute(select(Lab).where(Lab.name == name)).scalar_one_or_none()
    if lab is None:
        raise NotFound(f"no lab named {name} (lablease-server lab add {name})")
    return lab


def new_token(uow, now: datetime, name: str) -> str:
    """A new agent token for the lab (its secret, shown once; only its hash is kept)."""
    lab = find(uow, name)
    secret = AGENT_TOKEN_PREFIX + secrets.token_urlsafe(32)
    uow.session.add(LabToken(lab_id=lab.id, token_hash=hash_token(secret), created_at=now))
    uow.session.flush()
    return secret


def revoke(uow, now: datetime, name: str) -> int:
    """Revoke every token of the lab's agents; how many."""
    lab = find(uow, name)
    tokens = list(uow.session.execute(select(LabToken).where(LabToken.lab_id == lab.id,
                                                             LabToken.revoked_at.is_(None))).scalars())
    for token in tokens:
        token.revoked_at = now
    return len(tokens)


def agent_of(uow, header: str | None) -> Lab:
    """The lab whose agent sent this `Authorization: Bearer <agent token>`, or Unauthenticated."""
    scheme, _, secret = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Unauthenticated("this request needs the lab's agent token: send Authorization: Bearer <token>")
    row = uow.session.execute(select(Lab, LabToken.revoked_at).join(LabToken, LabToken.lab_id == Lab.id)
                          .where(LabToken.token_hash == hash_token(secret.strip()))).first()
    if row is None:
        raise Unauthenticated("the agent token is not known")
    if row[1] is not None:
        raise Unauthenticated("the agent token was revoked")
    return row[0]


def seen(uow, lab: Lab, now: datetime, version: str | None) -> None:
    lab.agent_seen_at = now
    if version:
        lab.agent_version = version[:64]


def take(uow, lab: Lab, now: datetime, limit: int) -> list[dict]:
    """Claim up to `limit` of the lab's runnable commands for its agent, as it needs them to run each."""
    settings = uow.settings
    claimed = commands.claim(uow, now, limit, settings.command_timeout,
                             lambda uow, inst: installations.boot_image(uow, inst), lab.name)
    if claimed:
        uow.wake_worker()  # its recovery step takes each back when its lease runs out: a new deadline
    return [_wire(c, settings.command_timeout) for c in claimed]


def _wire(claimed: commands.Claimed, timeout: timedelta) -> dict:
    """What the agent gets for one command: the power settings (credentials too) only with a power action."""
    power = claimed.action in commands.POWER_ACTIONS
    boot = claimed.boot
    return {"id": claimed.id, "attempt": claimed.attempt, "action": claimed.action, "fqdn": claimed.fqdn,
            "timeout": timeout.total_seconds(), "power": claimed.power if power else None,
            "mac": claimed.mac, "loaders": list(claimed.loaders) if claimed.loaders else None,
            "boot": {"kernel_url": boot.kernel_url, "initrd_url": boot.initrd_url,
                     "kernel_options": boot.kernel_options} if boot is not None else None}


def report(uow, lab: Lab, now: datetime, command_id: int, attempt: int, outcome: str, state: str | None,
           error: str | None) -> dict:
    """The agent's outcome of one attempt, recorded as the worker records its own.

    Only the attempt the agent was given counts: one whose lease ran out and was taken again (or
    cancelled) is answered 409, and nothing is recorded twice.
    """
    command = uow.session.execute(select(Command).join(System, System.id == Command.system_id)
                              .where(Command.id == command_id, System.lab == lab.name)).unique().scalar_one_or_none()
    if command is None:  # another lab's command is not there for this agent
        raise NotFound(f"no command {command_id} in lab {lab.name}")
    if command.status != "running" or command.attempts != attempt:
        raise Conflict(f"command {command_id} attempt {attempt} is no longer this agent's (it is {command.status}, "
                       f"attempt {command.attempts}): its outcome is not recorded")
    if outcome == "completed":
        commands.record_success(uow, command_id, now, state)
    else:
        commands.record_failure(uow, command_id, now, error or "failed")
    return commands.as_dict(command)


def waiting(uow, lab: str, now: datetime) -> bool:
    """Whether a command of the lab may be taken now (the long poll's probe: reads only)."""
    return commands.runnable_in_lab(uow, lab, now)


def listing(uow, now: datetime, silence: timedelta, page: PageRequest) -> Page:
    """The labs agents serve, by name: each agent (version, last seen, online or silent) and the lab's commands."""
    found = paging.fetch(uow, "labs", select(Lab), [Order(Lab.name)], page)
    names = [lab.name for lab in found.items]
    counts: dict[tuple[str, str], tuple[int, datetime | None]] = {}
    for name, status, count, oldest in uow.session.execute(
            select(System.lab, Command.status, func.count(), func.min(Command.created_at))
            .join(System, System.id == Command.system_id)
            .where(Command.status.in_(("queued", "running")), System.lab.in_(names))
            .group_by(System.lab, Command.status)):
        counts[(name, status)] = (count, oldest)
    labs = []
    for lab in found.items:
        queued, oldest_queued = counts.get((lab.name, "queued"), (0, None))
        running, oldest_running = counts.get((lab.name, "running"), (0, None))
        oldest = min((t for t in (oldest_queued, oldest_running) if t is not None), default=None)
        labs.append({"name": lab.name, "agent": {
            "version": lab.agent_version, "last_seen": format_time(lab.agent_seen_at),
            "state": agent_state(lab.agent_seen_at, now, silence)},
            "commands": {"waiting": queued, "running": running, "oldest": format_time(oldest)}})
    return Page(labs, found.next_after)


def silent(uow, now: datetime, silence: timedelta) -> list[str]:
    """The labs whose agent is silent or never came (readiness: degraded, naming them)."""
    return [name for name, seen_at in uow.session.execute(select(Lab.name, Lab.agent_seen_at).order_by(Lab.name))
            if agent_state(seen_at, now, silence) != "online"]


def names(uow, configured) -> list[str]:
    """Every lab lablease knows, by name: those with an agent, those the settings configure (`labs:`), and those
    its systems name (bkr labcontroller-list: Beaker's lab controllers are lablease's labs)."""
    session = uow.session
    found = set(configured) | set(session.scalars(select(Lab.name)))
    found |= {lab for lab in session.scalars(select(System.lab).distinct()) if lab}
    return sorted(found)


def proxied_for(uow, agent_token: str | None, installation_id: int) -> None:
    """A kickstart or callback passed on by a lab agent's proxy (its token in AGENT_HEADER) reaches only its own
    lab's installations: another lab's is 404, as if it did not exist, whatever installation token came with it.
    Without the header (an installer talking to the server itself) nothing changes: the installation's token
    authorises."""
    if agent_token is None:
        return
    lab = agent_of(uow, f"Bearer {agent_token}")
    system_lab = uow.session.scalar(select(System.lab).join(Installation, Installation.system_id == System.id)
                                .where(Installation.id == installation_id))
    if system_lab != lab.name:
        raise NotFound(f"no installation {installation_id}")
