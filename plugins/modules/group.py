#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: group
short_description: Create, change or delete a group of lablease users
version_added: 1.0.0
description:
  - Makes sure a group exists with the given description, members, owners and webhook, or does not exist.
  - Any user may create a group and then owns it; only owners (and administrators) change or delete it.
  - Only the options given are compared and changed.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  diff_mode:
    details: Shows the description, members, owners and webhook URL before and after.
options:
  name:
    description:
      - The group's name.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the group; V(absent) deletes it. Deleting is refused while an access rule
        grants to the group or it owns a pool (the error names each), unless O(force=true).
    type: str
    choices: [present, absent]
    default: present
  description:
    description:
      - What the group is for.
    type: str
  members:
    description:
      - Members (user names), handled as O(members_mode) says. Owners are members too and need not be listed here.
      - Not given - the members are left alone.
    type: list
    elements: str
  owners:
    description:
      - Owners (user names), handled as O(members_mode) says. An owner who is not wanted any more stays a
        plain member (unless O(members) removes them too).
      - Not given - the owners are left alone.
    type: list
    elements: str
  members_mode:
    description:
      - For O(members) and O(owners). V(exact) makes each list the whole set (V([]) empties it); V(add) adds
        the users listed; V(remove) removes them (from O(owners) - demotes them to members).
      - The caller's own membership and ownership are never removed in V(exact) mode, so a play cannot lock itself
        out of a group it manages (remove yourself with V(remove)).
    type: str
    choices: [exact, add, remove]
    default: exact
  webhook_url:
    description:
      - Where notices for the group are POSTed as JSON (C(http://) or C(https://)). Use V('') to remove it.
    type: str
  webhook_secret:
    description:
      - Key of the C(X-Lablease-Signature) HMAC-SHA256 header of the webhook's requests. The server never shows it
        back, so it is sent when the group is created, or on every run with O(update_secret=always).
    type: str
  update_secret:
    description:
      - V(on_create) sends O(webhook_secret) only when creating the group; V(always) on every run (the task then
        always reports C(changed)).
    type: str
    choices: [always, on_create]
    default: on_create
  force:
    description:
      - With O(state=absent), delete the group although access rules grant to it or it owns pools - those rules are
        removed and those pools are left without an owning group (administrators manage them).
    type: bool
    default: false
seealso:
  - module: lablease.lab.pool
  - module: lablease.lab.access_policy
"""

EXAMPLES = r"""
- name: A team with two members and a second owner
  lablease.lab.group:
    name: gpu-team
    description: people who look after the GPU systems
    members: [bob]
    owners: [alice, carol]
    webhook_url: https://chat.example.com/hooks/gpu-team
    webhook_secret: "{{ gpu_team_webhook_secret | default('s3cret') }}"

- name: Add dave, leaving the others
  lablease.lab.group:
    name: gpu-team
    members: [dave]
    members_mode: add

- name: Delete the group (force - the access rules that still grant to it are removed with it)
  lablease.lab.group:
    name: gpu-team
    state: absent
    force: true
"""

RETURN = r"""
group:
  description: The group after the task (in check mode, as it would be); null when it does not exist.
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
      sample: gpu-team
    description:
      description: Its description.
      type: str
    members:
      description: Every member, owners included.
      type: list
      elements: str
    owners:
      description: The owners.
      type: list
      elements: str
    webhook_url:
      description: The webhook URL, or null (the secret is never shown).
      type: str
"""

from ansible_collections.lablease.lab.plugins.module_utils.client import list_plan
from ansible_collections.lablease.lab.plugins.module_utils.module import list_mode, options
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource


def membership_plan(current, params, me):
    """{user: 'owner' | 'member' | None} - what each user's membership should become (only changes)."""
    members = list(current.get("members") or [])
    owners = list(current.get("owners") or [])
    mode = params["members_mode"]
    wanted = dict((user, "owner" if user in owners else "member") for user in members)
    owner_adds, owner_removes = list_plan(owners, params["owners"], mode)
    member_adds, member_removes = list_plan(members, params["members"], mode)
    if mode == "exact":  # owners are members: the members list need not name them
        staying = params["owners"] if params["owners"] is not None else owners
        member_removes = [u for u in member_removes if u not in staying]
    for user in owner_removes:
        if not (mode == "exact" and user == me):
            wanted[user] = "member"
    for user in member_removes:
        if not (mode == "exact" and user == me):
            wanted[user] = None
    for user in member_adds:
        wanted.setdefault(user, "member")
    for user in owner_adds:
        wanted[user] = "owner"
    changes = {}
    for user, role in wanted.items():
        was = "owner" if user in owners else ("member" if user in members else None)
        if role != was:
            changes[user] = role
    return changes


class Group(Resource):
    key = "group"
    collection = "/groups"
    shown_keys = ("description", "members", "owners", "webhook_url")
    sorted_keys = ("members", "owners")

    def plan(self, current):
        params = self.params
        me = self.me = self.client.me()["name"]
        base = current or {"name": params["name"], "description": None, "members": [], "owners": [], "webhook_url": None}
        if current is None and me:
            base = dict(base, members=[me], owners=[me])  # the server makes the creator an owner
        self.base = base
        fields = {}
        if params["description"] is not None and (base.get("description") or "") != params["description"]:
            fields["description"] = params["description"]
        if params["webhook_url"] is not None and (base.get("webhook_url") or "") != params["webhook_url"]:
            fields["webhook_url"] = params["webhook_url"] or None
        if params["webhook_secret"] is not None and (current is None or params["update_secret"] == "always"):
            fields["webhook_secret"] = params["webhook_secret"]
        changes = membership_plan(base, params, me)
        return dict((k, v) for k, v in (("fields", fields), ("changes", changes)) if v)

    def predict(self, current, plan):
        base, changes = self.base, plan.get("changes", {})
        predicted = dict(base, **dict((k, v) for k, v in plan.get("fields", {}).items() if k != "webhook_secret"))
        members = [u for u in base["members"] if changes.get(u, "keep") is not None]
        members += [u for u, role in changes.items() if role and u not in members]
        owners = [u for u in members if changes.get(u, "owner" if u in base["owners"] else "member") == "owner"]
        predicted.update(members=members, owners=owners)
        return predicted

    def create(self, plan):
        fields = dict(plan.get("fields", {}))
        body = {"name": self.params["name"]}
        if fields.get("description") is not None:
            body["description"] = fields.pop("description")
        return self.update(None, dict(plan, fields=fields), self.client.batch().add("POST", self.collection, body))

    def update(self, current, plan, batch=None):
        """The group's changes and its members' as one batch: an unknown user changes nothing."""
        batch = batch or self.client.batch()
        if plan.get("fields"):
            batch.add("PATCH", self.path, plan["fields"])
        # the caller's own membership changes go last, so the caller stays an owner while it works
        for user, role in sorted(plan.get("changes", {}).items(), key=lambda item: item[0] == self.me):
            if role is None:
                batch.add("DELETE", "%s/members/%s" % (self.path, self.client.quote(user)))
            else:
                batch.add("POST", self.path + "/members", {"user": user, "owner": role == "owner"})
        batch.send()
        return None


def main():
    Group.main(options(
        "name", "state", "force",
        description=dict(type="str"),
        members=dict(type="list", elements="str"),
        owners=dict(type="list", elements="str"),
        members_mode=list_mode(),
        webhook_url=dict(type="str"),
        webhook_secret=dict(type="str", no_log=True),
        update_secret=dict(type="str", default="on_create", choices=["always", "on_create"], no_log=False),
    ))


if __name__ == "__main__":
    main()
