# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The present/absent engine the resource modules share.

Every module that manages one object on the server does the same steps: read the
object as it is, work out what the options want changed, then report "not changed"
or write it, and show the diff before/after. In check mode the writes are the same
requests, which the server only validates (``?validate_only=true``, client.py): the
task fails where the real run would, and the object reported is the server's answer
(or the prediction, where the write answers nothing). `Resource`
does those steps once; a module subclasses it and says only what is particular to it:

- ``key``: the name of the object in the result (``group``, ``pool``, ...);
- ``validate()``: checks of the options, before any call to the server;
- ``read()``: the object, or None when it does not exist; by default the object the name option names in
  ``collection`` (``/groups``), whose path is then ``self.path``;
- ``plan(current)``: what to change, falsy when nothing (``current`` None: a new object);
- ``predict(current, plan)``: the object as it would be after the change;
- ``create(plan)``, ``update(current, plan)``: write; return the object after, or None to read it back;
  several writes go as one ``self.client.batch()`` (all or none); by default ``update`` PATCHes ``self.path``;
- ``delete(current)``: by default DELETE ``self.path`` (``?force=true`` with the force option);
- ``shown(obj)``: what the diff compares; by default the object's ``shown_keys`` (``fields``), the lists among
  them named in ``sorted_keys`` sorted.

``extra`` holds further result keys (``added``, ``cancelled``, ...) a module returns in every answer.
A module's ``main()`` is ``TheResource.main(argument_spec, **constraints)`` (module.py: ``lablease_module``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError, module_client
from ansible_collections.lablease.lab.plugins.module_utils.module import fail, lablease_module


def fields(obj, keys, sorted_keys=()):
    """What a diff shows of an object: its keys (None where it has not one), the lists named in sorted_keys sorted;
    {} for no object."""
    if not obj:
        return {}
    view = dict((key, obj.get(key)) for key in keys)
    for key in sorted_keys:
        view[key] = sorted(view[key] or [])
    return view


class Resource(object):
    key = "object"
    absent_state = "absent"  # the O(state) that removes the object; None: the object always exists
    collection = None  # where the objects the name option names are (/groups), for the default read()
    shown_keys = sorted_keys = ()  # what the default shown() compares

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check_mode = module.check_mode
        self.extra = {}
        self.validate()
        self.client = module_client(module)

    @classmethod
    def main(cls, argument_spec, **constraints):
        """A module's main(): its AnsibleModule (the connection options and argument_spec), then run()."""
        cls(lablease_module(argument_spec, **constraints)).run()

    # -- what a module says --------------------------------------------------------------------
    def validate(self):
        pass

    def read(self):
        self.path = "%s/%s" % (self.collection, self.client.quote(self.params["name"]))
        return self.client.get_or_none(self.path)

    def plan(self, current):
        raise NotImplementedError

    def predict(self, current, plan):
        raise NotImplementedError

    def create(self, plan):
        raise NotImplementedError

    def update(self, current, plan):
        return self.client.request("PATCH", self.path, plan)[1]

    def delete(self, current):
        self.client.delete_or_none(self.path, {"force": True} if self.params.get("force") else None)

    def shown(self, obj):
        return fields(obj, self.shown_keys, self.sorted_keys)

    # -- the engine ----------------------------------------------------------------------------
    def run(self):
        try:
            current = self.read()
            if self.absent_state is not None and self.params.get("state") == self.absent_state:
                self.absent(current)
            self.present(current)
        except LableaseError as error:
            fail(self.module, error)

    def present(self, current):
        plan = self.plan(current)
        if current is not None and not plan:
            self.done(False, current, current, current)
        predicted = self.predict(current, plan)
        # in check mode the server validates the same writes and keeps nothing (a refusal fails the task)
        after = self.create(plan) if current is None else self.update(current, plan)
        if after is None:
            after = predicted if self.check_mode else self.read()
        elif self.check_mode and current is None and "id" in after:
            after = dict(after, id=None)  # nothing was made: the id the server answered names nothing
        self.done(True, after, current, after)

    def absent(self, current):
        if current is None:
            self.done(False, None, None, None)
        self.delete(current)  # check mode: only validated
        self.done(True, None, current, None)

    def done(self, changed, obj, before, after):
        """Exit with the object under ``key``, the diff of before and after, and ``extra``."""
        result = dict(self.extra)
        result[self.key] = obj
        result["diff"] = {"before": self.shown(before) if before else {},
                          "after": self.shown(after) if after else {}}
        self.module.exit_json(changed=changed, **result)
