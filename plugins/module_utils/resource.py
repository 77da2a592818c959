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
- ``read()``: the object, or None when it does not exist;
- ``plan(current)``: what to change, falsy when nothing (``current`` None: a new object);
- ``predict(current, plan)``: the object as it would be after the change;
- ``create(plan)``, ``update(current, plan)``: write; return the object after, or None to read it back;
  several writes go as one ``self.client.batch()`` (all or none);
- ``delete(current)``; ``shown(obj)``: what the diff compares.

``extra`` holds further result keys (``added``, ``cancelled``, ...) a module returns in every answer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError, module_client


def fail(module, error, **result):
    """Fail the module with a LableaseError's message, HTTP status and problem document."""
    module.fail_json(msg=error.message, status=error.status, problem=error.problem, **result)


class Resource(object):
    key = "object"
    absent_state = "absent"  # the O(state) that removes the object; None: the object always exists

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check_mode = module.check_mode
        self.extra = {}
        self.validate()
        self.client = module_client(module)

    # -- what a module says --------------------------------------------------------------------
    def validate(self):
        pass

    def read(self):
        raise NotImplementedError

    def plan(self, current):
        raise NotImplementedError

    def predict(self, current, plan):
        raise NotImplementedError

    def create(self, plan):
        raise NotImplementedError

    def update(self, current, plan):
        raise NotImplementedError

    def delete(self, current):
        raise NotImplementedError

    @staticmethod
    def shown(obj):
        return obj

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
