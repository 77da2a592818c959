"""Test helper: write every task result to the JSON-lines file named by $LABLEASE_TEST_RECORD."""
from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "record"
    CALLBACK_NEEDS_ENABLED = True

    def _record(self, result, status):
        path = os.environ.get("LABLEASE_TEST_RECORD")
        if not path:
            return
        entry = {"task": result.task_name, "host": result.host.get_name(), "status": status,
                 "result": json.loads(json.dumps(self._dump_results(result._result, serialize=False), default=str))}
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")
