# SPDX-License-Identifier: Apache-2.0
# -*- coding: utf-8 -*-
# A stdout callback for the Ansible integration test: the whole run as one JSON document, in the
# shape of ansible.posix.json ({"plays": [{"play": {...}, "tasks": [{"task": {...}, "hosts":
# {host: result}}]}], "stats": {...}}), so run_test.py reads either. ansible.posix.json ships only
# in Debian's `ansible` package (259 MB of collections); ansible-core (8 MB) is all the test needs
# with this file. Results are recorded unabridged: the module's `diff` is kept.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rdmactl_json
type: stdout
short_description: The run as one JSON document (the shape of ansible.posix.json)
description:
  - Prints every task result of every host, then the stats, as one JSON object.
"""

import json

from ansible.parsing.ajson import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "rdmactl_json"

    def __init__(self, display=None):
        super(CallbackModule, self).__init__(display)
        self.plays = []

    def v2_playbook_on_play_start(self, play):
        self.plays.append({"play": {"name": play.get_name()}, "tasks": []})

    def _task_entry(self, task):
        tasks = self.plays[-1]["tasks"]
        if not tasks or tasks[-1]["task"]["id"] != str(task._uuid):
            tasks.append({"task": {"name": task.get_name(), "id": str(task._uuid)}, "hosts": {}})
        return tasks[-1]

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_entry(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._task_entry(task)

    def _record(self, result, **flags):
        copy = result._result.copy()
        copy.update(flags)
        copy["action"] = result._task.action
        self._task_entry(result._task)["hosts"][result._host.get_name()] = copy

    def v2_runner_on_ok(self, result, **kwargs):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._record(result, failed=True)

    def v2_runner_on_skipped(self, result, **kwargs):
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._record(result, unreachable=True)

    def v2_playbook_on_stats(self, stats):
        summary = dict((h, stats.summarize(h)) for h in sorted(stats.processed.keys()))
        self._display.display(json.dumps({"plays": self.plays, "stats": summary}, cls=AnsibleJSONEncoder,
                                         indent=2, sort_keys=True))
