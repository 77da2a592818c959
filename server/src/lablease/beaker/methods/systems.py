"""systems.* and /systems/...: reserve, release, status, power, provision, loans (bkr system-*, loan-*).

Each goes through the use case /api/v1 uses for the same action, so the same rules decide.
"""
from __future__ import annotations

from ...domain.errors import Conflict, Invalid
from ...domain.loans import LoanRequest
from ...domain.reserve import ReserveRequest
from ...services.provisioning import commands, installations
from ...services.lifecycle import lease, loans
from ...services.booking import reserve
from ...services.catalog import systems
from ..call import Call
from ..registry import NotSupported, rest, xmlrpc

# Beaker's names of lablease's system conditions
CONDITIONS = {"automated": "Automated", "manual": "Manual", "broken": "Broken", "removed": "Removed"}
# bkr system-power --action: reboot comes as off then on; interrupt is an NMI (refused for a driver without)
POWER = {"on": "on", "off": "off", "reboot": "reboot", "interrupt": "interrupt", "clear_netboot": "netboot_clear"}


@xmlrpc("systems.reserve", writes=True)
def reserve_system(call: Call, fqdn):
    """A manual reservation for the site's default duration (Beaker's lasts until released)."""
    reserve.reserve(call.uow, call.user, call.now, call.settings.reservation_policy, ReserveRequest(str(fqdn)))
    return None


def current_reservation(call: Call, fqdn: str) -> dict:
    found = systems.get_system(call.uow, call.user, call.now, fqdn)
    if found["reservation"] is None:
        raise Conflict(f"{found['fqdn']} is not reserved")
    return found["reservation"]


@xmlrpc("systems.release", writes=True)
def release_system(call: Call, fqdn):
    lease.give_back(call.uow, call.user, call.now, current_reservation(call, str(fqdn))["id"])
    return None


@rest("PATCH", "/systems/<fqdn>/reservations/+current", fields={"finish_time": str})
def release(call: Call, fqdn: str):
    if (call.body or {}).get("finish_time") != "now":
        raise Invalid("finish_time", 'a current reservation is changed only to end it: {"finish_time": "now"}')
    answer = lease.give_back(call.uow, call.user, call.now, current_reservation(call, fqdn)["id"])
    return {"id": answer["id"], "user": {"user_name": answer["user"]}, "start_time": answer["start"],
            "finish_time": answer.get("returned_at") or answer.get("end")}


@rest("GET", "/systems/<fqdn>/status")
def status(call: Call, fqdn: str):
    found = systems.get_system(call.uow, call.user, call.now, fqdn)
    held, lent = found["reservation"], found["loan"]
    return {"condition": CONDITIONS.get(found["condition"], found["condition"]),
            "current_reservation": {"user_name": held["user"], "start_time": held["start"], "recipe_id": None}
            if held else None,
            "current_loan": {"recipient": lent["recipient"], "comment": loans.show(call.uow, call.user, fqdn)["comment"]}
            if lent else None}


@rest("POST", "/systems/<fqdn>/commands",
      fields={"action": str, "only_if_current_user_matches": bool})
def power(call: Call, fqdn: str):
    body = call.body or {}
    action = body.get("action")
    if action not in POWER:
        raise Invalid("action", f"must be one of {', '.join(POWER)}")
    return commands.request_power(call.uow, call.user, call.now, fqdn, POWER[action], tuple(POWER.values()),
                                  only_if_holder=bool(body.get("only_if_current_user_matches")))


@xmlrpc("systems.power", writes=True)
def power_rpc(call: Call, action, fqdn, clear_netboot=False, force=False, delay=0):
    """The older XML-RPC form of bkr system-power."""
    for each in (["clear_netboot"] if clear_netboot else []) + [action]:
        call.body = {"action": each, "only_if_current_user_matches": not force}
        power(call, str(fqdn))
    return fqdn


@xmlrpc("systems.provision", writes=True)
def provision(call: Call, fqdn, distro_tree_id, ks_meta=None, kernel_options=None, kernel_options_post=None,
              kickstart=None, reboot=True):
    if not reboot:
        raise NotSupported("--no-reboot is not supported: lablease reboots the system into the installer")
    tree = int(distro_tree_id) if str(distro_tree_id).isdigit() else str(distro_tree_id)
    body = {"distro_tree": tree, "ks_meta": ks_meta or "", "kernel_options": kernel_options or "",
            "kernel_options_post": kernel_options_post or "", "kickstart": kickstart or None}
    installations.provision(call.uow, call.user, call.now, str(fqdn), body)
    return None


@rest("POST", "/systems/<fqdn>/loans", fields={"recipient": str, "comment": str})
def loan_grant(call: Call, fqdn: str):
    body = call.body or {}
    recipient = body.get("recipient") or call.user.name  # Beaker lends to the caller when nobody is named
    loan = loans.grant(call.uow, call.user, call.now, LoanRequest(fqdn, recipient, comment=body.get("comment")))
    return loan_document(loan)


@rest("PATCH", "/systems/<fqdn>/loans/+current", fields={"finish": str})
def loan_return(call: Call, fqdn: str):
    if (call.body or {}).get("finish") != "now":
        raise Invalid("finish", 'a current loan is changed only to end it: {"finish": "now"}')
    loans.give_back(call.uow, call.user, call.now, fqdn)
    return None


def loan_document(loan: dict) -> dict:
    return {"id": loan["id"], "recipient": loan["recipient"], "recipient_user": {"user_name": loan["recipient"]},
            "comment": loan["comment"], "start": loan["start"], "finish": loan["end"]}
