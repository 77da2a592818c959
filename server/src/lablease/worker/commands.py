"""Carrying out queued commands: power through the system's driver, netboot files in the lab's TFTP root.

Commands run in a small thread pool so a slow BMC does not hold up
expiries and other systems; each result is recorded in its own transaction
and wakes the worker, since the system's next command may now run.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Callable

from ..config import Settings
from ..observe import metrics
from ..power import NotApplied, PowerError, PowerTarget, scrub
from ..power import registry
from ..provision import netboot
from ..services.provisioning import commands, installations
from ..services.handlers import unit_of_work
from ..services.catalog.systems import SECRET_KEYS
from ..store.db import Database
from ..store.outage import outage, reason
from ..store.wakeup import Waker
from .isolation import alone, describe, failed

log = logging.getLogger("lablease.worker.commands")


def carry_out(claimed: commands.Claimed, settings: Settings) -> str | None:
    """Do the command; any failure raises (PowerError, OSError or ValueError) with a loggable message.

    A power action returns the power state read back once it took effect ("on", "off", or "unknown"
    when the driver cannot tell); a netboot action returns None.
    """
    tftp_root = settings.tftp_root_for(claimed.lab)
    if claimed.action in commands.POWER_ACTIONS:
        target = PowerTarget(claimed.fqdn, claimed.power, settings.command_timeout.total_seconds(),
                             Path(settings.data_dir), settings.power_scripts_path, tftp_root, claimed.mac)
        driver = registry.driver_for(target)
        deadline = time.monotonic() + target.timeout  # the action and its taking effect, together
        driver.act(claimed.action)
        try:
            if claimed.action not in commands.POWER_STATE_AFTER:  # an interrupt: the state as it is now
                return driver.status()
            return driver.settle(commands.POWER_STATE_AFTER[claimed.action], deadline)
        except NotApplied:
            raise  # a failed attempt: the next one sends the action again
        except PowerError as failure:  # the action worked; only reading the state back did not
            log.info("%s: power state not read back: %s", claimed.fqdn, failure)
            return "unknown"
    if not claimed.mac:
        raise ValueError(f"{claimed.fqdn} has no netboot MAC address")
    if claimed.action == "netboot_install":
        if claimed.boot is None:
            raise ValueError("the installation this netboot config was for is gone")
        netboot.write(tftp_root, claimed.mac, claimed.boot, claimed.loaders or netboot.loaders_for(claimed.boot))
    elif claimed.action == "netboot_local":
        netboot.write(tftp_root, claimed.mac, None, claimed.loaders or netboot.LOADERS)
    elif claimed.action == "netboot_clear":
        netboot.clear(tftp_root, claimed.mac)  # every loader's file, whatever was chosen when it was written
    else:
        raise ValueError(f"unknown command {claimed.action}")


def attempt(claimed: commands.Claimed, settings: Settings) -> tuple[str | None, str | None]:
    """One attempt at the command, never raising: (why it failed, with no secret in it; or None, and the power
    state read back). The worker and a lab agent (agent/) both carry out commands through it."""
    log.info("command %s: %s %s", claimed.id, claimed.action, claimed.fqdn)
    error, state = None, None
    try:
        state = carry_out(claimed, settings)
    except (PowerError, OSError, ValueError) as failure:
        error = str(failure) or type(failure).__name__
    except Exception as failure:  # a driver's bug must not lose the command
        error = f"unexpected {type(failure).__name__}: {failure}"
    driver = claimed.power.get("driver", "-") if claimed.action in commands.POWER_ACTIONS else "netboot"
    metrics.instruments().commands.labels(driver=driver, action=claimed.action,
                                          outcome="failed" if error else "completed").inc()
    if error is not None:
        error = scrub(error, [v for k, v in claimed.power.items() if k.lower() in SECRET_KEYS])
        log.warning("command %s (%s %s) failed: %s", claimed.id, claimed.action, claimed.fqdn, error)
    return error, state


class CommandRunner:
    def __init__(self, settings: Settings, db: Database, clock: Callable[[], datetime]):
        self.settings, self.db, self.clock = settings, db, clock
        self.waker = Waker(db)
        self.pool = ThreadPoolExecutor(max(1, settings.command_workers), thread_name_prefix="lablease-command")
        self.running: set[Future] = set()

    def recover(self, everything: bool) -> None:
        """Commands a stopped worker left running: each retried or failed, on its own."""
        now = self.clock()
        with unit_of_work(self.db, self.settings, write=False) as uow:
            interrupted = commands.interrupted(uow, now, everything)
        for ident in interrupted:
            self._record(ident, lambda uow: commands.record_failure(uow, ident, now, commands.INTERRUPTED))
            log.info("command %s was interrupted by a stop; retried or failed", ident)

    def start_due(self) -> int:
        """Claim what may run now (up to the free threads), each in its own transaction, and start it.

        A command that cannot be prepared fails for good (with its consequences) and the claiming
        goes on with the others. Returns how many started.
        """
        started, unrecorded = 0, set()
        timeout = self.settings.command_timeout
        while len(self.running) < self.settings.command_workers:
            now = self.clock()
            try:
                claimed = alone(self.db, self.settings, lambda uow: commands.claim_next(
                    uow, now, timeout, lambda uow, inst: installations.boot_image(uow, inst)))
            except commands.Unrunnable as bad:
                if bad.command_id in unrecorded:
                    break  # its failure could not be recorded: leave it to the next pass, do not spin
                unrecorded.add(bad.command_id)
                failed(self.db, self.settings, "command", bad.command_id, bad.__cause__ or bad,
                       lambda uow: commands.fail_unrunnable(uow, bad.command_id, now, bad.error),
                       lambda uow: commands.fail_bare(uow, bad.command_id, now, bad.error), waker=self.waker)
                continue
            if claimed is None:
                break
            future = self.pool.submit(self.execute, claimed)
            self.running.add(future)
            future.add_done_callback(self.running.discard)
            started += 1
        return started

    def _record(self, ident: int, record) -> None:
        """Record a command's outcome; when that raises (its system's data is bad), fail the command alone.

        While the database is away the outcome is kept and recording retried, with a doubling pause, for
        as long as the command's lease lasts (after that another worker takes the command back anyway).
        """
        deadline = time.monotonic() + (self.settings.command_timeout + commands.LEASE_MARGIN).total_seconds()
        pause = 0.5
        while True:
            try:
                alone(self.db, self.settings, record, self.waker)
                return
            except Exception as error:
                if outage(error) is None:
                    failed(self.db, self.settings, "command", ident, error,
                           lambda uow: commands.fail_bare(uow, ident, self.clock(), describe(error)),
                           waker=self.waker)
                    return
                if time.monotonic() + pause >= deadline:
                    log.warning("command %s: outcome not recorded (%s); taken back when its lease runs out",
                                ident, reason(error))
                    return
                log.warning("command %s: outcome not recorded yet (%s); retrying in %.1f s", ident,
                            reason(error), pause)
                time.sleep(pause)
                pause = min(pause * 2, 8.0)

    def execute(self, claimed: commands.Claimed) -> None:
        error, state = attempt(claimed, self.settings)
        if error is None:
            self._record(claimed.id, lambda uow: commands.record_success(uow, claimed.id, self.clock(), state))
        else:
            self._record(claimed.id, lambda uow: commands.record_failure(uow, claimed.id, self.clock(), error))

    def stop(self) -> None:
        """Stop taking work; commands still running are recovered when a worker starts again."""
        self.pool.shutdown(wait=False, cancel_futures=True)
