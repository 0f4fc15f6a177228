# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Action plugin for the rdmactl module: a spec given as `src` is a file on the controller (as for
# ansible.builtin.copy) unless remote_src is true. It is read here, never templated, and sent to
# the module as `content` with its file name (the module's documented `spec_name`, unless the task
# sets one), so that rdmactl's messages name that file.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleError, AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

MODULE = "rdmactl.fabric.rdmactl"


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset()  # the module checks its own arguments

    def run(self, tmp=None, task_vars=None):
        self._supports_check_mode = True
        self._supports_async = False
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp

        args = self._task.args.copy()
        try:
            src = args.get("src")
            if src is not None and not boolean(args.get("remote_src", False), strict=False):
                if args.get("content") is not None:
                    raise AnsibleActionFail("parameters are mutually exclusive: content|src")
                args["content"], name = self._read_spec(src)
                if args.get("spec_name") is None:
                    args["spec_name"] = name
                del args["src"]
                args.pop("remote_src", None)
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        except AnsibleActionFail as e:
            result.update(e.result)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _read_spec(self, src):
        """The controller's spec text and file name; a vaulted file is decrypted, nothing is templated."""
        try:
            path = self._find_needle("files", src)
            real = self._loader.get_real_file(path, decrypt=True)
            try:
                with open(real, "rb") as f:
                    data = f.read()
            finally:
                self._loader.cleanup_tmp_file(real)
        except (AnsibleError, IOError, OSError) as e:
            raise AnsibleActionFail("cannot read the spec %s on the controller: %s" % (src, to_native(e)))
        try:
            return to_text(data, errors="strict"), os.path.basename(path)
        except UnicodeError:
            raise AnsibleActionFail("the spec %s is not UTF-8 text" % src)
