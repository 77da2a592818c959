#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: distro_tree
short_description: Register, change or remove an installable distro tree on a lablease server
version_added: 1.0.0
description:
  - Makes sure a distro tree - an installer tree with its kernel and initrd that systems can be provisioned
    with (M(lablease.lab.provision)) and that jobs' C(distro_requires) match - is registered
    (O(state=present)) or not (O(state=absent)).
  - A tree is identified by O(name), O(arch) and O(variant) (no O(variant) means the tree without a variant).
    An existing tree is changed only in the options given that differ from the server's (C(PATCH) with those
    fields only); nothing differs - not changed.
  - Only administrators may add, change or remove distro trees.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  diff_mode:
    details: Shows the tree (name, arch, variant, family, url, kernel, initrd, ks_meta, kernel_options, tags, labs)
      before and after.
options:
  name:
    description:
      - The tree's name, for example V(Fedora-40). With O(arch) and O(variant) it identifies the tree.
    type: str
    required: true
  arch:
    description:
      - The tree's architecture, for example V(x86_64).
    type: str
    required: true
  variant:
    description:
      - The tree's variant, for example V(Server). Not given - the tree without a variant.
    type: str
  state:
    description:
      - V(present) adds the tree (O(tree_url), O(kernel) and O(initrd) are then needed) or changes the options given
        that differ.
      - V(absent) removes it; not changed when there is no such tree. Recipes waiting for it are aborted by
        the server.
    type: str
    choices: [present, absent]
    default: present
  family:
    description:
      - The distro family, for example V(Fedora40); jobs match it with C(distro_family).
    type: str
  tree_url:
    description:
      - The installer tree's URL (the installation source; the tree's C(url) on the server), for example
        V(http://mirror.lab.test/fedora/40/x86_64/os/).
      - Needed to add a tree.
      - Not called C(url), which is the lablease server's URL (O(url)).
    type: str
  kernel:
    description:
      - The installer kernel's path relative to O(tree_url), for example V(images/pxeboot/vmlinuz).
      - Needed to add a tree.
    type: str
  initrd:
    description:
      - The installer initrd's path relative to O(tree_url), for example V(images/pxeboot/initrd.img).
      - Needed to add a tree.
    type: str
  ks_meta:
    description:
      - Kickstart metadata every installation of this tree gets (V(key=value key2) ...). An empty string clears it.
    type: str
  kernel_options:
    description:
      - Installer kernel options every installation of this tree gets. An empty string clears them.
    type: str
  tags:
    description:
      - The tree's tags (jobs match them with C(distro_tag)). The whole set, in any order; V([]) removes every tag.
        Not given - left alone.
    type: list
    elements: str
  labs:
    description:
      - The labs whose systems can install this tree. The whole set, in any order; V([]) removes every lab.
        Not given - left alone.
    type: list
    elements: str
seealso:
  - module: lablease.lab.provision
  - module: lablease.lab.job
"""

EXAMPLES = r"""
- name: Register Fedora 40 Server for x86_64
  lablease.lab.distro_tree:
    name: Fedora-40
    arch: x86_64
    variant: Server
    family: Fedora40
    tree_url: http://mirror.lab.test/fedora/40/Server/x86_64/os/
    kernel: images/pxeboot/vmlinuz
    initrd: images/pxeboot/initrd.img
    kernel_options: inst.text
    tags: [RELEASED]
    labs: [lab1]

- name: Tag it as well tested (the other settings are left alone)
  lablease.lab.distro_tree:
    name: Fedora-40
    arch: x86_64
    variant: Server
    tags: [RELEASED, STABLE]

- name: Remove it
  lablease.lab.distro_tree:
    name: Fedora-40
    arch: x86_64
    variant: Server
    state: absent
"""

RETURN = r"""
distro_tree:
  description: The tree after the task (in check mode, as it would be); null when it does not exist.
  returned: always
  type: dict
  contains:
    id:
      description: The tree's id (null in check mode for a tree that would be added).
      type: int
      sample: 3
    name:
      description: Its name.
      type: str
      sample: Fedora-40
    arch:
      description: Its architecture.
      type: str
      sample: x86_64
    variant:
      description: Its variant, or null.
      type: str
      sample: Server
    family:
      description: Its family, or null.
      type: str
      sample: Fedora40
    url:
      description: The installer tree's URL.
      type: str
    kernel:
      description: The installer kernel.
      type: str
    initrd:
      description: The installer initrd.
      type: str
    ks_meta:
      description: Kickstart metadata of the tree, or null.
      type: str
    kernel_options:
      description: Installer kernel options of the tree, or null.
      type: str
    tags:
      description: Its tags.
      type: list
      elements: str
      sample: [RELEASED]
    labs:
      description: The labs that can install it.
      type: list
      elements: str
      sample: [lab1]
    created_at:
      description: When it was registered.
      type: str
"""

from ansible_collections.lablease.lab.plugins.module_utils.module import options
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource

TEXTS = ("family", "url", "kernel", "initrd", "ks_meta", "kernel_options")
LISTS = ("tags", "labs")
SHOWN = ("name", "arch", "variant") + TEXTS + LISTS
OPTION = {"url": "tree_url"}  # the tree's field -> the module's option (url is the server's)


def differs(key, current, wanted):
    if key in LISTS:
        return sorted(set(current or [])) != sorted(set(wanted))
    return (current or "") != wanted  # null and "" are the same for the optional texts


class DistroTree(Resource):
    key = "distro_tree"
    shown_keys, sorted_keys = SHOWN, LISTS

    def validate(self):
        params = self.params
        self.name, self.arch = params["name"].strip(), params["arch"].strip()
        self.variant = (params["variant"] or "").strip() or None
        if not self.name or not self.arch:
            self.module.fail_json(msg="name and arch must not be empty")

    def read(self):
        """The tree with exactly this name, arch and variant (None: the tree without a variant), or None."""
        found = [t for t in self.client.get_all("/distro-trees", {"name": self.name, "arch": self.arch, "variant": self.variant})
                 if t.get("name") == self.name and t.get("arch") == self.arch and (t.get("variant") or None) == self.variant]
        if not found:
            return None
        self.path = "/distro-trees/%d" % found[0]["id"]  # what update() and delete() change
        return found[0]

    def plan(self, current):
        params = self.params
        given = dict((k, params[OPTION.get(k, k)]) for k in TEXTS + LISTS if params[OPTION.get(k, k)] is not None)
        if current is not None:
            return dict((k, v) for k, v in given.items() if differs(k, current.get(k), v))
        missing = [OPTION.get(k, k) for k in ("url", "kernel", "initrd") if not given.get(k)]
        if missing:
            self.module.fail_json(msg="%s: needed to add distro tree %s %s%s" % (
                ", ".join(missing), self.name, self.arch, " " + self.variant if self.variant else ""))
        body = dict(given, name=self.name, arch=self.arch)
        if self.variant is not None:
            body["variant"] = self.variant
        return body

    def predict(self, current, plan):
        if current is not None:
            return dict(current, **plan)
        predicted = dict((k, None) for k in SHOWN)
        predicted.update(id=None, created_at=None, tags=[], labs=[])
        predicted.update(plan)
        return predicted

    def create(self, plan):
        return self.client.request("POST", "/distro-trees", plan)[1]


def main():
    DistroTree.main(options(
        "name", "state",
        arch=dict(type="str", required=True),
        variant=dict(type="str"),
        family=dict(type="str"),
        tree_url=dict(type="str"),
        kernel=dict(type="str"),
        initrd=dict(type="str"),
        ks_meta=dict(type="str"),
        kernel_options=dict(type="str"),
        tags=dict(type="list", elements="str"),
        labs=dict(type="list", elements="str"),
    ))


if __name__ == "__main__":
    main()
