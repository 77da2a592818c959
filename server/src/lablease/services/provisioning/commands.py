"""The durable command queue: power and netboot actions the worker carries out.

queued -> running -> completed | failed. A system's commands run one at a
time in the order they were queued (netboot is configured before the
reboot that needs it); commands for one power address never run at once
(several systems may share a BMC or a PDU). A failed attempt is retried with
doubling delays; the last failure marks an Automated system broken, fails
its installation (aborting the recipe) and tells the holder. A command left
running by a worker that died is retried or failed once its lease runs out.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, bindparam, exists, select, text
from sqlalchemy.orm import aliased

from ...domain import commands as rules
from ...domain.commands import UNFINISHED
from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.events import InstallationCommandFailed, SystemChanged
from ...domain.labs import agent_state, silent_agent_note
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, Permission, decide
from ...domain.times import format_time
from ...power import registry as power_registry
from ...store import paging
from ...store.lab_tables import Lab
from ...store.paging import Order
from ...store.provision_tables import Command, Installation
from ...store.tables import System
from ..catalog.systems import access_of, active_loan, current_reservations, find
from ..messages import notices
from ..records import activity, due, usage

POWER_ACTIONS = ("on", "off", "reboot", "interrupt")  # power/__init__.py ACTIONS: what drivers do
# What a completed action says about the power state (an interrupt leaves it as it was: it is read once).
POWER_STATE_AFTER = {"on": "on", "reboot": "on", "off": "off"}
LEASE_MARGIN = timedelta(seconds=15)  # beyond the command timeout, before a running command counts as abandoned


def _move(command: Command, status: str) -> None:
    rules.check_transition(command.status, status)
    command.status = status


def as_dict(command: Command) -> dict:
    return {"id": command.id, "system": command.system.fqdn, "action": command.action, "status": command.status,
            "attempts": command.attempts, "user": command.user.name if command.user else None,
            "installation": command.installation_id, "error": command.error,
            "created_at": format_time(command.created_at), "started_at": format_time(command.started_at),
            "finished_at": format_time(command.finished_at)}


def power_key(system: System) -> str | None:
    power = system.power or {}
    if not power.get("driver"):
        return None
    return f"{power['driver']}:{power.get('address') or power.get('url') or system.fqdn}"


def enqueue(uow, system: System, action: str, now: datetime, user_id: int | None = None,
            installation_id: int | None = None) -> Command:
    session = uow.session
    command = Command(system_id=system.id, action=action, status="queued", user_id=user_id,
                      installation_id=installation_id, attempts=0, due_at=now, created_at=now,
                      power_key=power_key(system) if action in POWER_ACTIONS else None)
    session.add(command)
    session.flush()
    uow.wake_worker()
    return command


def has_power(system: System) -> bool:
    return bool((system.power or {}).get("driver"))


def request_power(uow, actor: Actor, now: datetime, fqdn: str, action: str, actions=POWER_ACTIONS,
                  only_if_holder: bool = False) -> dict:
    """POST /systems/{fqdn}/power: control_system on the system, or being its current holder. `actions` are
    those the caller's protocol offers (Beaker's hub also clears the netboot files: netboot_clear);
    `only_if_holder` refuses while somebody else holds the system (Beaker's power without --force)."""
    system = find(uow, fqdn, actor)
    if action not in actions:
        raise Invalid("action", f"must be one of {', '.join(actions)}")
    holder = current_reservations(uow, [system.id], now).get(system.id)
    if not (holder is not None and holder.user_id == actor.id):
        decision = decide(actor, Permission.CONTROL_SYSTEM, access_of(system, active_loan(uow, system)))
        if not decision:
            raise Forbidden(f"controlling the power of {system.fqdn} needs control_system or reserving it")
        if only_if_holder and holder is not None:
            raise Conflict(f"{system.fqdn} is in use by {holder.user.name}: force the action to do it anyway")
    if action in POWER_ACTIONS and not has_power(system):
        raise Conflict(f"{system.fqdn} has no power driver configured")
    refusal = power_registry.refuses(system.power, action) if action in POWER_ACTIONS else None
    if refusal:
        raise Conflict(f"{system.fqdn}: {refusal}")
    command = enqueue(uow, system, action, now, actor.id)
    activity.record(uow, actor, now, "system", system.fqdn, "power", "action", None, action)
    return as_dict(command)


def listing(uow, actor: Actor, fqdn: str, page: PageRequest, now: datetime, silence: timedelta) -> Page:
    system = find(uow, fqdn, actor)
    found = paging.fetch(uow, "commands", select(Command).where(Command.system_id == system.id),
                         [Order(Command.id, descending=True)], page)
    note = _agent_note(uow, system, now, silence)
    return Page([_as_seen(c, note) for c in found.items], found.next_after)


def get(uow, actor: Actor, command_id: int, now: datetime, silence: timedelta) -> dict:
    command = uow.session.get(Command, command_id)
    if command is None:
        raise NotFound(f"no command {command_id}")
    find(uow, command.system.fqdn, actor)  # 404 unless the caller may see the system
    return _as_seen(command, _agent_note(uow, command.system, now, silence))


def _as_seen(command: Command, note: str | None) -> dict:
    """A command as people read it: an unfinished one of a lab whose agent is away says so (`waiting_on`)."""
    return {**as_dict(command), "waiting_on": note if command.status in UNFINISHED else None}


def _agent_note(uow, system: System, now: datetime, silence: timedelta) -> str | None:
    lab = uow.session.scalar(select(Lab).where(Lab.name == system.lab)) if system.lab else None
    if lab is None:  # served by the worker
        return None
    return silent_agent_note(lab.name, agent_state(lab.agent_seen_at, now, silence), lab.agent_seen_at)


def cancel(uow, actor: Actor, now: datetime, command_id: int) -> dict:
    """DELETE /commands/{id}: an administrator ends a queued or stuck (running) command as cancelled.

    The other unfinished commands of its installation are cancelled too, and the installation fails
    with that reason (its recipe aborted, its holder told, its netboot files cleared). A worker still
    running it finds it cancelled when it finishes and records nothing.
    """
    session = uow.session
    command = session.get(Command, command_id)
    if command is None:
        raise NotFound(f"no command {command_id}")
    find(uow, command.system.fqdn, actor)  # 404 unless the caller may see the system
    if not actor.is_admin:
        raise Forbidden("only administrators may cancel commands")
    if command.status not in UNFINISHED:
        raise Conflict(f"command {command_id} is already {command.status}; only a queued or running one can be "
                       "cancelled")
    _cancel(command, now, f"cancelled by {actor.name}")
    activity.record(uow, actor, now, "system", command.system.fqdn, "command_cancelled", "command", None,
                    f"{command.id} ({command.action})")
    installation = session.get(Installation, command.installation_id) if command.installation_id else None
    if installation is not None:
        for other in session.execute(select(Command).where(
                Command.installation_id == installation.id, Command.status.in_(UNFINISHED))).unique().scalars():
            _cancel(other, now, f"not run: command {command.id} was cancelled")
        uow.emit(InstallationCommandFailed(command.system_id, now, f"{command.action} command {command.id} "
                                                f"cancelled by {actor.name}", installation.id))
    uow.wake_worker()  # the system's next command may run now
    return as_dict(command)


def _cancel(command: Command, now: datetime, why: str) -> None:
    _move(command, "cancelled")
    command.finished_at, command.lease_until, command.error = now, None, why


# --- the worker's side ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Claimed:
    """What a worker thread needs to carry out a command, read in the claiming transaction."""

    id: int
    action: str
    fqdn: str
    lab: str | None
    power: dict
    mac: str | None
    boot: object | None  # provision.netboot.BootImage for netboot_install
    loaders: tuple[str, ...] | None = None  # the system's netboot.loaders; None: every loader that can
    attempt: int = 0  # which attempt this is: a lab agent's report names it (services/provisioning/labs.py)


def _agent_served():
    """The command's system is in a lab an agent serves (store/lab_tables.py): the worker leaves it alone."""
    return exists().where(System.id == Command.system_id, Lab.name == System.lab)


def _of_lab():
    """The command's system is in the lab bound as `lab` (the agent asking)."""
    return exists().where(System.id == Command.system_id, System.lab == bindparam("lab"))


def _runnable_query(served):
    earlier, running = aliased(Command), aliased(Command)
    blocked_by_system = exists().where(earlier.system_id == Command.system_id, earlier.id < Command.id,
                                       earlier.status.in_(UNFINISHED))
    blocked_by_address = exists().where(running.status == "running", running.power_key == Command.power_key)
    return (select(Command).where(Command.status == "queued", Command.due_at <= bindparam("now"), served,
                                  ~blocked_by_system, ~and_(Command.power_key.is_not(None), blocked_by_address))
            .order_by(Command.id).limit(1))


# The first runnable command (`now` bound at execution): built once, as the worker asks at every pass. The
# worker's leaves out the labs agents serve; a lab agent's takes only its lab's (`lab` bound too). The rules
# (order per system, one at a time per power address) are the same query for both.
_RUNNABLE = _runnable_query(~_agent_served())
_RUNNABLE_IN_LAB = _runnable_query(_of_lab())


def runnable_in_lab(uow, lab: str, now: datetime) -> bool:
    """Whether the lab's agent could take a command now (read only: a waiting agent's probe)."""
    return uow.session.execute(_RUNNABLE_IN_LAB, {"now": now, "lab": lab}).first() is not None


class Unrunnable(Exception):
    """A command that cannot even be prepared (e.g. its installation's boot line is refused by the writer)."""

    def __init__(self, command_id: int, error: str):
        super().__init__(f"command {command_id}: {error}")
        self.command_id, self.error = command_id, error


def claim_next(uow, now: datetime, timeout: timedelta, boot_image, lab: str | None = None) -> Claimed | None:
    """Mark the first runnable command running and return what is needed to run it (None: nothing to run).

    The worker claims each command in a transaction of its own. One that cannot be prepared raises
    Unrunnable naming it (this transaction is then rolled back); the worker fails it in another
    (fail_unrunnable), so it never stands in the way of the others. On PostgreSQL an advisory lock
    serialises claiming between workers, so the "nothing else running for this address" check cannot race.
    `lab`: claim for that lab's agent (only its commands); None: for the worker (every lab no agent serves).
    """
    session = uow.session
    if uow.is_postgresql:
        session.execute(text("SELECT pg_advisory_xact_lock(4242001)"))
    if lab is None:
        command = session.execute(_RUNNABLE, {"now": now}).unique().scalar_one_or_none()
    else:
        command = session.execute(_RUNNABLE_IN_LAB, {"now": now, "lab": lab}).unique().scalar_one_or_none()
    if command is None:
        return None
    ident = command.id
    try:
        return _start(uow, command, now, timeout, boot_image)
    except Exception as error:  # bad data of this command's: it must not stop the claiming of others
        raise Unrunnable(ident, str(error) or type(error).__name__) from error


def _start(uow, command: Command, now: datetime, timeout: timedelta, boot_image) -> Claimed:
    session = uow.session
    _move(command, "running")
    command.started_at = now
    command.attempts += 1
    command.lease_until = now + timeout + LEASE_MARGIN
    system = command.system
    installation = session.get(Installation, command.installation_id) if command.installation_id else None
    boot = boot_image(uow, installation) if command.action == "netboot_install" and installation else None
    netboot = system.netboot or {}
    loaders = tuple(netboot["loaders"]) if netboot.get("loaders") else None
    session.flush()  # running now: the next claim sees its system and power address busy
    return Claimed(command.id, command.action, system.fqdn, system.lab, dict(system.power or {}),
                   netboot.get("mac"), boot, loaders, command.attempts)


def claim(uow, now: datetime, limit: int, timeout: timedelta, boot_image, lab: str | None = None) -> list[Claimed]:
    """Up to `limit` commands claimed in this one transaction (claim_next, repeated)."""
    claimed = []
    while len(claimed) < limit and (command := claim_next(uow, now, timeout, boot_image, lab)) is not None:
        claimed.append(command)
    return claimed


def record_success(uow, command_id: int, now: datetime, state: str | None = None) -> None:
    """The command worked; `state` is the power state the driver read back afterwards, if it could."""
    command = uow.session.get(Command, command_id)
    if command is None or command.status != "running":
        return  # recovered meanwhile as interrupted; the retry will tell
    _move(command, "completed")
    command.finished_at, command.error, command.lease_until = now, None, None
    if state in ("on", "off"):
        command.system.power_state = state
    elif command.action in POWER_STATE_AFTER:  # not read back: what the action leads to (an interrupt: unknown)
        command.system.power_state = POWER_STATE_AFTER[command.action]
    uow.wake_worker()  # the system's next command may run now


def record_failure(uow, command_id: int, now: datetime, error: str) -> bool:
    """One attempt failed: retry later, or fail for good (True) with what follows from it."""
    settings = uow.settings
    command = uow.session.get(Command, command_id)
    if command is None or command.status != "running":
        return False
    command.error, command.lease_until = error, None
    uow.wake_worker()
    delay = rules.retry_delay(command.attempts, settings.command_max_attempts,
                              settings.command_retry_delay)
    if delay is not None:
        _move(command, "queued")
        command.due_at = now + delay
        return False
    _move(command, "failed")
    command.finished_at = now
    _failed_for_good(uow, command, now)
    return True


def _failed_for_good(uow, command: Command, now: datetime) -> None:
    system = command.system
    why = f"{command.action} failed after {command.attempts} attempt(s): {command.error}"
    activity.record(uow, None, now, "system", system.fqdn, "command_failed", "command", None, why)
    for later in uow.session.execute(select(Command).where(Command.system_id == system.id, Command.status == "queued",
                                                       Command.id > command.id)).unique().scalars():
        _move(later, "failed")
        later.finished_at, later.error = now, f"not run: command {command.id} failed"
    uow.emit(InstallationCommandFailed(system.id, now, why))  # what it was installing fails
    if system.condition == "automated":
        old, system.condition = system.condition, "broken"
        usage.record_condition(uow, system, old, now)
        activity.record(uow, None, now, "system", system.fqdn, "broken", "condition", old, "broken")
        uow.emit(SystemChanged(system.id, now))  # e.g. an advance reservation holding it
    holder = current_reservations(uow, [system.id], now).get(system.id)
    if holder is not None:
        notices.command_failed(uow, holder.user, system.fqdn, command.id, why, now)


INTERRUPTED = "interrupted: the worker running it stopped"


def fail_unrunnable(uow, command_id: int, now: datetime, error: str) -> None:
    """A command that could not be prepared fails for good at once (trying again would fail the same
    way), with the usual consequences for its system and installation."""
    command = uow.session.get(Command, command_id)
    if command is None or command.status not in UNFINISHED:
        return
    command.attempts += 1
    command.error, command.lease_until = f"cannot run: {error}"[:4000], None
    _move(command, "failed")
    command.finished_at = now
    uow.wake_worker()
    _failed_for_good(uow, command, now)


def fail_bare(uow, command_id: int, now: datetime, error: str) -> None:
    """The last resort when even failing a command with its consequences raised: only the command
    itself is marked failed, so it never blocks its system or power address again."""
    command = uow.session.get(Command, command_id)
    if command is None or command.status not in UNFINISHED:
        return
    command.status, command.finished_at, command.lease_until = "failed", now, None
    command.error = f"failed: {error}"[:4000]
    uow.wake_worker()


def interrupted(uow, now: datetime, everything: bool = False) -> list[int]:
    """Commands left running by a worker that stopped (record_failure each: retried or failed).

    `everything`: at the start of the only worker (SQLite), every running
    command it runs was interrupted (a lab agent's still runs: its lease tells);
    otherwise only those whose lease ran out.
    """
    query = select(Command.id).where(Command.status == "running")
    if everything:
        query = query.where((Command.lease_until < now) | ~_agent_served())
    else:
        query = query.where(Command.lease_until < now)
    return list(uow.session.execute(query.order_by(Command.id)).scalars())


def _recover(uow, command: Command, now: datetime) -> None:
    record_failure(uow, command.id, now, INTERRUPTED)


# Running commands whose lease ran out (their worker died): retried or failed.
RECOVERY = due.Step("command_recovery", "recovered abandoned command", Command, Command.lease_until,
                    Command.status == "running", _recover, on_error=fail_bare)


def next_due(uow, now: datetime) -> datetime | None:
    """The next retry or lease expiry; commands runnable now are claimed in this pass."""
    session = uow.session
    retry = session.execute(select(Command.due_at).where(Command.status == "queued", Command.due_at > now)
                            .order_by(Command.due_at).limit(1)).scalar_one_or_none()
    lease = session.execute(select(Command.lease_until).where(Command.status == "running")
                            .order_by(Command.lease_until).limit(1)).scalar_one_or_none()
    return min((t for t in (retry, lease) if t is not None), default=None)
