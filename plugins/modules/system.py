#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: system
short_description: Add, change or remove a lab system (administrators)
version_added: 1.0.0
description:
  - Makes sure a system exists on a lablease server with the given settings, or is removed.
  - Only the options given are compared and changed; the others keep their value on the server.
  - Adding systems needs an administrator's token; changing one needs the C(edit_system) permission on it.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
options:
  fqdn:
    description:
      - Fully qualified name of the system.
    type: str
    required: true
    aliases: [name, system]
  state:
    description:
      - V(present) adds or updates the system; V(absent) marks it C(removed) (its history stays).
    type: str
    choices: [present, absent]
    default: present
  arch:
    description:
      - Architecture, for example V(x86_64), V(aarch64), V(ppc64le) or V(s390x). Required to add a system.
    type: str
  cpus:
    description:
      - Number of CPUs.
    type: int
  memory_mb:
    description:
      - Memory in MiB.
    type: int
  lab:
    description:
      - The lab (location) the system is in.
    type: str
  owner:
    description:
      - User name of the system's owner.
    type: str
  condition:
    description:
      - V(manual) systems are reserved by people; V(automated) ones are handed out by the scheduler;
        V(broken) ones are out of service. Use O(state=absent) to remove a system.
      - New systems are V(manual) unless set.
    type: str
    choices: [automated, manual, broken]
  attributes:
    description:
      - "Key -> value, or key -> list of values, for example V({gpu: [a100], numa: 2}). Values are kept as strings."
      - The whole set is replaced (keys not listed are removed). Use V({}) to clear them.
    type: dict
  power:
    description:
      - "Power settings as the server accepts them, for example V({driver: ipmitool, address: bmc1.lab.test, user: admin})."
      - Keys are compared one by one; keys not given keep their value. Put secrets in O(power_password).
    type: dict
  power_password:
    description:
      - The power driver's password, stored as C(power.password). The server never shows it back, so it is sent
        only when the system is added or when O(update_password=always).
    type: str
  update_password:
    description:
      - V(on_create) sends O(power_password) only when adding the system; V(always) sends it on every run
        (the task then always reports C(changed)).
    type: str
    choices: [always, on_create]
    default: on_create
  netboot:
    description:
      - "Netboot settings as the server accepts them, for example V({mac: 52:54:00:12:34:56, loader: grub2})."
      - Keys are compared one by one; keys not given keep their value.
      - "The MAC may be written V(52:54:00:12:34:56), V(52-54-00-12-34-56), V(525400123456) or V(5254.0012.3456),
        in either case; the server keeps it as V(52:54:00:12:34:56), so another spelling of the stored MAC is no change.
        A MAC another system already has is refused, naming that system."
    type: dict
  inventory:
    description:
      - "Beaker's inventory of the system, as the server accepts it (see the server's docs/api.md, System inventory):
        V(vendor), V(model), V(serial), V(location), V(lender), V(system_type) (V(Machine), V(Prototype), V(Laptop),
        V(Resource)), V(hypervisor) (V(null) for bare metal), V(numa_nodes), V(last_inventoried) (RFC 3339, for
        example V(2026-01-10T08:00:00Z)), V(cpu) (V(vendor), V(model_name), V(family), V(model), V(stepping), V(speed)
        in MHz, V(processors), V(cores), V(sockets), V(hyper), V(flags)), V(disks) (a list of V(size),
        V(sector_size), V(phys_sector_size) in bytes and V(model)) and V(devices) (a list of V(bus), V(type),
        V(vendor_id), V(device_id), V(subsys_vendor_id), V(subsys_device_id), V(driver), V(description))."
      - Only the keys given are compared and changed; V(cpu), V(disks) and V(devices) are each replaced whole.
      - Job C(hostRequires) filters select systems by it.
    type: dict
  force:
    description:
      - With O(state=absent), remove the system even while it is reserved or lent; its reservations (a recipe on one
        is aborted) and its loan are returned, and their holders told. Without it, such a system is not removed and
        the task fails naming the reservations and the loan.
    type: bool
    default: false
seealso:
  - module: lablease.lab.system_info
"""

EXAMPLES = r"""
- name: Add a system
  lablease.lab.system:
    fqdn: s3.lab.test
    arch: x86_64
    cpus: 16
    memory_mb: 65536
    lab: lab-a
    condition: manual
    attributes:
      gpu: [a100]
      rack: r12
    power:
      driver: ipmitool
      address: bmc-s3.lab.test
      user: admin
    power_password: "{{ bmc_password | default('changeme') }}"

- name: Set its netboot settings (the stored BMC password is kept)
  lablease.lab.system:
    fqdn: s3.lab.test
    netboot:
      mac: "52:54:00:12:34:56"
      loaders: [ipxe, grub2]

- name: Record its inventory, for jobs that ask for a CPU flag, a disk or a device
  lablease.lab.system:
    fqdn: s3.lab.test
    inventory:
      vendor: Dell Inc.
      model: PowerEdge R740
      system_type: Machine
      hypervisor: null
      numa_nodes: 2
      last_inventoried: "2026-01-10T08:00:00Z"
      cpu:
        vendor: GenuineIntel
        model_name: Intel(R) Xeon(R) Gold 6130
        processors: 16  # the same as cpus above: processors is cpus
        cores: 8
        sockets: 2
        flags: [vmx, avx2]
      disks:
        - {size: 480000000000, sector_size: 512, model: SSD 480}
      devices:
        - {bus: pci, type: NIC, vendor_id: "8086", device_id: "1572", driver: i40e}

- name: Take it out of service
  lablease.lab.system:
    fqdn: s3.lab.test
    condition: broken

- name: Remove it, returning its reservations
  lablease.lab.system:
    fqdn: s3.lab.test
    state: absent
    force: true
"""

RETURN = r"""
system:
  description: The system as the server shows it after the change (in check mode, as it would be); null when it does not exist.
  returned: always
  type: dict
  contains:
    fqdn:
      description: Its name.
      type: str
      sample: s3.lab.test
    arch:
      description: Architecture.
      type: str
      sample: x86_64
    cpus:
      description: CPUs.
      type: int
    memory_mb:
      description: Memory in MiB.
      type: int
    lab:
      description: Lab.
      type: str
    owner:
      description: Owner's user name.
      type: str
    condition:
      description: V(automated), V(manual), V(broken) or V(removed).
      type: str
    usage:
      description: V(idle), V(scheduled), V(waiting), V(installing), V(running) or V(pending).
      type: str
    attributes:
      description: Key -> list of values.
      type: dict
      sample: {"gpu": ["a100"], "rack": ["r12"]}
    power:
      description: Power settings without secrets.
      type: dict
    netboot:
      description: Netboot settings without secrets.
      type: dict
    reservation:
      description: The current reservation (C(id), C(user), C(start), C(end)), or null.
      type: dict
    inventory:
      description: The inventory (vendor, model, type, hypervisor, CPU, disks, devices...); V(cpu.processors) is O(cpus).
      type: dict
      sample: {"vendor": "Dell Inc.", "system_type": "Machine", "hypervisor": null, "cpu": {"flags": ["vmx"]}}
    health:
      description: Its health apart from its condition (C(state), C(since), C(result), C(last_check), C(passed_at),
        C(check), C(recipe), C(next_check)).
      type: dict
    installation:
      description: The latest installation (C(id), C(status)), or null.
      type: dict
    loan:
      description: The active loan (C(recipient), C(lender), C(start), C(end), C(purpose)...), or null.
      type: dict
    pools:
      description: The pools it is in.
      type: list
      elements: str
    policy_pool:
      description: The pool whose access policy it uses, or null.
      type: str
    power_state:
      description: V(on), V(off) or V(unknown) - the last known, from its completed power commands.
      type: str
    release_action:
      description: What happens when a reservation of it ends - V(power_off), V(leave_on) or V(reprovision).
      type: str
    reprovision_distro_tree:
      description: The distro tree id the V(reprovision) release action installs, or null.
      type: int
    advance_reservations:
      description: The active advance reservations holding it.
      type: list
      elements: dict
    guest:
      description: Whether it is a guest recipe's virtual machine.
      type: bool
    created_at:
      description: When it was added.
      type: str
"""

import re

from ansible_collections.lablease.lab.plugins.module_utils.module import options
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource

SCALARS = ("arch", "cpus", "memory_mb", "lab", "owner", "condition")
SECRET_KEYS = ("password", "pass", "secret", "token", "credentials", "key")
# The spellings the server takes (its provision/netboot.py normalise_mac), kept as lower-case colon form.
MAC_SPELLINGS = re.compile(r"[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}|[0-9a-f]{12}|[0-9a-f]{4}(\.[0-9a-f]{4}){2}")


def normal_mac(mac):
    """The MAC as the server keeps it; anything that is not a MAC is sent as given, for the server to refuse."""
    text = mac.strip().lower() if isinstance(mac, str) else None
    if text is None or not MAC_SPELLINGS.fullmatch(text):
        return mac
    digits = re.sub(r"[:.-]", "", text)
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def normal_attributes(attributes):
    """As the server keeps them: key -> list of strings."""
    out = {}
    for key, value in (attributes or {}).items():
        values = value if isinstance(value, list) else [value]
        out[str(key)] = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
    return out


def wanted_changes(params, current):
    """The fields to send: those given that differ from the server's (current None: a new system)."""
    changes = {}
    for key in SCALARS:
        if params[key] is not None and (current is None or current.get(key) != params[key]):
            changes[key] = params[key]
    if params["attributes"] is not None:
        attributes = normal_attributes(params["attributes"])
        if current is None or (current.get("attributes") or {}) != attributes:
            changes["attributes"] = attributes
    inventory = inventory_changes(params["inventory"], current)
    if inventory:
        changes["inventory"] = inventory
    for key in ("power", "netboot"):
        given = dict(params[key] or {})
        if key == "netboot" and "mac" in given:
            given["mac"] = normal_mac(given["mac"])
        if key == "power" and params["power_password"] is not None and (
                current is None or params["update_password"] == "always"):
            given["password"] = params["power_password"]
        if not given:
            continue
        have = dict((current or {}).get(key) or {})
        merged = dict(have)
        merged.update(given)
        visible = dict((k, v) for k, v in given.items() if k.lower() not in SECRET_KEYS)
        secret = len(visible) != len(given)
        if current is None or secret or any(have.get(k) != v for k, v in visible.items()):
            changes[key] = merged
    return changes


def _without_none(value):
    return dict((k, v) for k, v in value.items() if v is not None) if isinstance(value, dict) else value


def inventory_changes(given, current):
    """The inventory keys given that differ from the server's; the cpu is compared as the server keeps it
    (unset keys dropped, processors being cpus: compared only when given)."""
    if not given:
        return {}
    have = (current or {}).get("inventory") or {}
    changes = {}
    for key, value in given.items():
        now = have.get(key)
        if key == "cpu" and isinstance(value, dict):
            value, now = _without_none(value), _without_none(now or {})
            if "processors" not in value:
                now.pop("processors", None)
        if current is None or now != value:
            changes[key] = given[key]
    return changes


class System(Resource):
    key = "system"
    shown_keys = SCALARS + ("attributes", "power", "netboot", "inventory")

    def read(self):
        self.fqdn = self.params["fqdn"].strip().lower()
        self.path = "/systems/%s" % self.client.quote(self.fqdn)
        return self.client.get_or_none(self.path)

    def absent(self, current):
        """Removing a system keeps its record with condition removed (its history stays)."""
        if current is None or current.get("condition") == "removed":
            self.done(False, current, current, current)
        after = dict(current, condition="removed")
        self.client.request("DELETE", self.path, query={"force": True} if self.params["force"] else None)
        if not self.check_mode:  # in check mode the server only validated it
            after = self.client.get(self.path)
        self.done(True, after, current, after)

    def plan(self, current):
        if current is None and not self.params["arch"]:
            self.module.fail_json(msg="%s does not exist; arch is required to add it" % self.fqdn)
        changes = wanted_changes(self.params, current)
        if current is not None and current.get("condition") == "removed" and self.params["condition"] is None:
            changes["condition"] = "manual"  # present brings a removed system back
        return changes

    def predict(self, current, plan):
        predicted = dict(current or {"fqdn": self.fqdn, "condition": "manual", "attributes": {}, "power": {}, "netboot": {}})
        predicted.update(plan)
        if "inventory" in plan:  # the keys given replace the server's
            predicted["inventory"] = dict((current or {}).get("inventory") or {}, **plan["inventory"])
        for key in ("power", "netboot"):
            if key in predicted:
                predicted[key] = dict((k, v) for k, v in (predicted[key] or {}).items() if k.lower() not in SECRET_KEYS)
        return predicted

    def create(self, plan):
        return self.client.request("POST", "/systems", dict(plan, fqdn=self.fqdn))[1]


def main():
    System.main(options(
        "state", "force",
        fqdn=dict(type="str", required=True, aliases=["name", "system"]),
        arch=dict(type="str"),
        cpus=dict(type="int"),
        memory_mb=dict(type="int"),
        lab=dict(type="str"),
        owner=dict(type="str"),
        condition=dict(type="str", choices=["automated", "manual", "broken"]),
        attributes=dict(type="dict"),
        power=dict(type="dict"),
        power_password=dict(type="str", no_log=True),
        update_password=dict(type="str", default="on_create", choices=["always", "on_create"], no_log=False),
        netboot=dict(type="dict"),
        inventory=dict(type="dict"),
    ))


if __name__ == "__main__":
    main()
