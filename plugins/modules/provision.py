#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: provision
short_description: Install a distro tree on a reserved lab system and wait until it runs
version_added: 1.0.0
description:
  - Asks the lablease server to install the distro tree O(distro) on O(system) - the server writes the netboot
    configuration and kickstart, power-cycles the system and follows the installer - and, with O(wait), waits
    until the installed system has booted (installation status C(running)).
  - Only the system's current holder (the user whose reservation holds it) may provision it; anybody else's
    task fails, in check mode too, even when the latest installation asked for the same.
  - B(Idempotency.) When the system's latest installation was made during the caller's B(current) reservation
    of the system and asked for the same tree (O(distro), and O(arch) and O(variant) when given), the same
    O(ks_meta) and the same O(kernel_options), and it has not failed nor been cancelled, nothing is installed
    again (not changed; with O(wait) the module waits for that installation). O(force=true) installs anyway.
    A new reservation of the system always installs again.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  check_mode:
    details:
      - Nothing is installed. The server is asked whether it would start the installation (V(validate_only)), so
        the task fails where the real run would (not the holder, no power driver, no such distro tree) and
        otherwise reports C(changed) with the installation it would start. It does not wait.
  diff_mode:
    details: Shows the system's latest installation (id, distro, arch, variant, ks_meta, kernel_options)
      before and after.
options:
  system:
    description:
      - Fully qualified name of the system. The caller must hold it (a reservation, or a job's recipe).
    type: str
    required: true
    aliases: [fqdn]
  distro:
    description:
      - The name of the distro tree to install, for example V(Fedora-40) (see M(lablease.lab.distro_tree)).
    type: str
    required: true
  arch:
    description:
      - The tree's architecture. Not given - the server picks the tree for the system's architecture.
    type: str
  variant:
    description:
      - The tree's variant, for example V(Server). Not given - the server picks a tree of that name.
    type: str
  ks_meta:
    description:
      - Kickstart metadata for this installation (V(key=value key2) ...). Compared with the latest installation's
        word by word (runs of white space do not matter).
    type: str
    default: ""
  kernel_options:
    description:
      - Installer kernel options for this installation. Compared like O(ks_meta).
    type: str
    default: ""
  force:
    description:
      - Install even when the current reservation's latest installation already asked for the same.
    type: bool
    default: false
  wait:
    description:
      - Wait until the installation is C(running) (installed, and the system reported its first boot).
        An installation that fails or is cancelled fails the task with the server's error.
      - While it waits, when the caller's current reservation of the system was made with a heartbeat
        (M(lablease.lab.reservation) O(lablease.lab.reservation#module:heartbeat)), the module sends that
        reservation's heartbeat on each look at the installation, and looks at least every third of the
        heartbeat interval (less than O(poll_interval) apart when needed), so that the server does not return
        the reservation - and cancel the installation - because no heartbeat came while the system installed.
        A heartbeat the server refuses (for example because the reservation was returned meanwhile) fails the
        task.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait with O(wait). On timeout the task fails, saying the installation's last status (the
        installation goes on on the server).
    type: int
    default: 3600
  poll_interval:
    description:
      - Seconds between two looks at the installation while waiting (at most a third of the reservation's
        heartbeat interval, see O(wait)).
    type: int
    default: 5
    aliases: [wait_sleep]
seealso:
  - module: lablease.lab.distro_tree
  - module: lablease.lab.power
  - module: lablease.lab.reservation
"""

EXAMPLES = r"""
- name: Hold s1.lab.test for four hours
  lablease.lab.reservation:
    system: s1.lab.test
    duration: 4h

- name: Install Fedora 40 Server on it and wait until it has booted
  lablease.lab.provision:
    system: s1.lab.test
    distro: Fedora-40
    variant: Server
    ks_meta: harness=restraint
    kernel_options: console=ttyS0,115200
    wait_timeout: 2700
  register: installed

- name: Show how long the installation took
  ansible.builtin.debug:
    msg: "installed from {{ installed.installation.started_at }} to {{ installed.installation.installed_at }}"

- name: Start a reinstallation without waiting for it
  lablease.lab.provision:
    system: s1.lab.test
    distro: Fedora-40
    variant: Server
    force: true
    wait: false
"""

RETURN = r"""
installation:
  description:
    - The installation after the task - the one started, or the matching one that was kept. In check mode,
      for an installation that would be started, the request as it would be made (C(id) null).
  returned: always
  type: dict
  contains:
    id:
      description: The installation's id.
      type: int
      sample: 12
    system:
      description: The system.
      type: str
      sample: s1.lab.test
    user:
      description: Who asked for it.
      type: str
      sample: alice
    reservation:
      description: The id of the reservation that held the system, or null.
      type: int
    recipe:
      description: The id of the job recipe it belongs to, or null.
      type: int
    distro_tree:
      description: The tree installed (C(id), C(name), C(arch), C(variant)).
      type: dict
      sample: {id: 3, name: Fedora-40, arch: x86_64, variant: Server}
    ks_meta:
      description: The kickstart metadata asked for.
      type: str
    kernel_options:
      description: The kernel options asked for.
      type: str
    status:
      description: V(queued), V(installing), V(installed), V(running), V(failed) or V(cancelled).
      type: str
      sample: running
    error:
      description: Why it failed, or null.
      type: str
    created_at:
      description: When it was asked for.
      type: str
    started_at:
      description: When the installer started.
      type: str
    installed_at:
      description: When the installer finished.
      type: str
    finished_at:
      description: When the installed system reported its first boot (or the installation failed).
      type: str
"""

from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError, wait_until
from ansible_collections.lablease.lab.plugins.module_utils.module import (
    check_waits,
    lablease_module,
    options,
    run,
    wait_options,
)

BAD = ("failed", "cancelled")
READY = "running"
# What RETURN documents of an installation. The server's answer holds more - the rendered kickstart (which can
# carry passwords and keys) and, once, the kickstart URL with the installation's secret token - and a task's
# result lands in logs: only these are returned.
RETURNED = ("id", "system", "user", "reservation", "recipe", "distro_tree", "ks_meta", "kernel_options", "status",
            "error", "created_at", "started_at", "installed_at", "finished_at")


def documented(installation):
    """The installation as RETURN documents it, nothing more."""
    return dict((key, installation.get(key)) for key in RETURNED) if installation else installation


def words(text):
    return " ".join((text or "").split())


def shown(installation):
    if not installation:
        return {}
    tree = installation.get("distro_tree") or {}
    return {"id": installation.get("id"), "distro": tree.get("name"), "arch": tree.get("arch"),
            "variant": tree.get("variant"), "ks_meta": installation.get("ks_meta"),
            "kernel_options": installation.get("kernel_options")}


def same_request(installation, params):
    """Whether an installation asked for what the options ask for (arch/variant only when given)."""
    tree = installation.get("distro_tree") or {}
    return (tree.get("name") == params["distro"]
            and params["arch"] in (None, tree.get("arch"))
            and params["variant"] in (None, tree.get("variant"))
            and words(installation.get("ks_meta")) == words(params["ks_meta"])
            and words(installation.get("kernel_options")) == words(params["kernel_options"]))


def holds(client, system):
    """Whether the caller is the system's current holder (whose reservation holds it)."""
    reservation = system.get("reservation") or {}
    return bool(reservation.get("id")) and reservation.get("user") == client.me().get("name")


def kept(client, system, latest, params):
    """The latest installation when it is the caller's current reservation's, asked for the same and is not
    failed/cancelled."""
    reservation = system.get("reservation") or {}
    if not latest or not reservation.get("id") or latest.get("reservation") != reservation["id"]:
        return None
    if not holds(client, system):
        return None  # somebody else's: provisioning fails as the server says (not the holder)
    if latest.get("status") in BAD or not same_request(latest, params):
        return None
    return latest


def described(installation):
    tree = installation.get("distro_tree") or {}
    return " ".join(str(part) for part in (tree.get("name"), tree.get("arch"), tree.get("variant")) if part)


def heartbeat_of(client, installation):
    """The caller's reservation the installation was made in, when it has a heartbeat; otherwise None."""
    reservation_id = installation.get("reservation")
    if not reservation_id:
        return None
    reservation = client.get_or_none("/reservations/%d" % reservation_id)
    if not reservation or not reservation.get("heartbeat") or reservation.get("returned_at"):
        return None
    if reservation.get("user") != client.me().get("name"):
        return None  # never keep somebody else's reservation alive
    return reservation


def wait_for(module, client, installation, changed):
    """Poll until the installation runs; fail when it fails, is cancelled, or on timeout. While polling, keep
    the caller's reservation alive when it has a heartbeat."""
    params = module.params
    path = "/installations/%d" % installation["id"]
    state = {"installation": installation}
    reservation = heartbeat_of(client, installation)
    interval = params["poll_interval"]
    if reservation:
        interval = min(interval, reservation["heartbeat"] / 3.0)

    def place(current):
        system = current.get("system") or params["system"]
        return "%s: installation %d of %s" % (system, current["id"], described(current))

    def check():
        state["installation"] = current = client.get(path)
        if current.get("status") in BAD + (READY,):
            return current
        if reservation:
            try:
                client.request("POST", "/reservations/%d/heartbeat" % reservation["id"], idempotent=True)
            except LableaseError as error:
                module.fail_json(msg="%s is still %s, but the heartbeat of reservation %d failed: %s" % (
                    place(current), current.get("status"), reservation["id"], error.message),
                    status=error.status, changed=changed, installation=documented(current))
        return None

    done, timed_out = wait_until(check, params["wait_timeout"], interval)
    current = state["installation"]
    where = place(current)
    if timed_out:
        module.fail_json(msg="%s is still %s after waiting %d s" % (where, current.get("status"), params["wait_timeout"]),
                         changed=changed, installation=documented(current))
    if current.get("status") in BAD:
        module.fail_json(msg="%s %s: %s" % (where, current["status"], current.get("error") or "no error given"),
                         changed=changed, installation=documented(current))
    return current


def latest_of(client, system):
    """The system's latest installation in full, or None (also when it is somebody else's: the server shows
    an installation only to its requester, the holder of its reservation, the system's owner and admins)."""
    latest = system.get("installation")
    if latest and latest.get("id") is not None:
        return client.get_or_none("/installations/%d" % latest["id"])
    return None


def start(module, client, fqdn):
    """Ask the server to install; with wait, wait until the installed system runs."""
    params = module.params
    body = {"distro_tree": params["distro"]}
    for key in ("arch", "variant", "ks_meta", "kernel_options"):
        if params[key]:
            body[key] = params[key]
    # check mode: the server only validates it (not the holder, no power, no such tree ... fail as they would)
    installation = client.request("POST", "/systems/%s/provision" % client.quote(fqdn), body)[1]
    if isinstance(installation.get("installation"), dict):  # {installation, kickstart_url}
        installation = installation["installation"]
    if module.check_mode:
        return dict(installation, id=None)  # nothing was made: the id the server answered names nothing
    if params["wait"]:
        try:
            installation = wait_for(module, client, installation, True)
        except LableaseError as error:
            module.fail_json(msg=error.message, status=error.status, changed=True,
                             installation=documented(installation))
    return installation


def provision(module, client):
    """Keep the current reservation's matching installation (waiting for it with wait), or start one."""
    params = module.params
    fqdn = params["system"].strip().lower()
    system = client.get("/systems/%s" % client.quote(fqdn))
    latest = latest_of(client, system)
    before = shown(latest)
    found = None if params["force"] else kept(client, system, latest, params)
    if found is not None:
        if params["wait"] and not module.check_mode and found.get("status") != READY:
            found = wait_for(module, client, found, False)
        module.exit_json(changed=False, installation=documented(found), diff={"before": before, "after": before})
    after = start(module, client, fqdn)
    module.exit_json(changed=True, installation=documented(after), diff={"before": before, "after": shown(after)})


def main():
    module = lablease_module(options(
        "system", "force",
        distro=dict(type="str", required=True),
        arch=dict(type="str"),
        variant=dict(type="str"),
        ks_meta=dict(type="str", default=""),
        kernel_options=dict(type="str", default=""),
        **wait_options(timeout=3600, interval=5)
    ))
    params = module.params
    params["distro"] = params["distro"].strip()
    if not params["distro"]:
        module.fail_json(msg="distro: give the name of a distro tree")
    check_waits(module)
    run(module, provision)


if __name__ == "__main__":
    main()
