# SPDX-License-Identifier: Apache-2.0
"""
State module for rdmactl: ``rdmactl.converged`` installs a fabric spec and converges the host to it.

.. code-block:: yaml

    rdmactl:
      rdmactl.converged:
        - source: salt://rdmactl/fabric.yaml    # or contents: (a string, or a mapping)
        # - dest: /etc/rdmactl/fabric.yaml      # where the spec is installed (the default)
        # - node: gpu-01                        # default: the minion id's short host name
        # - netns: lab1                         # rdmactl --netns
        # - root: /srv/fixture                  # rdmactl --root

What one run does:

1. The NEW spec (``source`` or ``contents``) is written to a private temporary file, validated
   (``rdmactl validate``) and planned (``rdmactl plan``) from there: nothing on the host and
   nothing in ``dest`` changes before both succeeded. An invalid spec fails the state with
   rdmactl's own ``file:line:column: field: message`` lines, naming the source.
2. ``test=True`` stops here: ``result`` is None when something would change, and ``changes``
   holds the planned changes (and the spec file's diff); nothing is written.
3. Otherwise the spec is installed atomically in ``dest`` (its directory is created; a temporary
   file in the same directory, fsync'd, then renamed), and ``rdmactl apply`` runs only when the
   plan had something to do. If the apply fails and rdmactl rolls the node back, the previous
   ``dest`` is put back (removed if there was none), so that ``rdmactl serve`` watching it does
   not retry the spec that failed.

``changes`` is built from rdmactl's JSON report, keyed by resource and field::

    netdev/ens1f0np0:
      mtu: {old: 1500, new: 9000}
    pci/0000:c1:00.0:
      linkType: {old: ethernet, new: infiniband, requires: reboot}
    /etc/rdmactl/fabric.yaml:
      diff: ...

A firmware change that rdmactl staged for the next cold boot (``linkType``) is reported in the
run that staged it. Once staged, rdmactl's plan keeps listing it with status ``pending-reboot``
until the host is power-cycled: such a change is not applied again and not reported as a change
(the comment says it waits for a reboot), so a highstate on a converged node stays clean.

Without ``source`` and ``contents`` the spec already in ``dest`` is converged.

``contents`` given as a mapping is handed to rdmactl as JSON (JSON is YAML). That document is the
module's, not the user's: its line and column numbers mean nothing to whoever wrote the SLS or the
pillar, so messages about it name the field path (``contents of ID: defaults.interfaces[0].bogus``)
and no line.

The state loads where the execution module loaded, i.e. where the rdmactl binary is (its path is
the ``rdmactl.binary`` option, read with ``config.get``: minion configuration, grains, pillar or
master configuration).
"""

import difflib
import json
import os
import re
import shutil
import tempfile

from salt.exceptions import CommandExecutionError

__virtualname__ = "rdmactl"

DEFAULT_DEST = "/etc/rdmactl/fabric.yaml"
SPEC_MODE = 0o644
DIR_MODE = 0o755

# rdmactl's exit codes for apply: converged, converged except what waits for a reboot.
APPLY_OK = (0, 3)


def __virtual__():
    # As salt/states/lvm.py: (False, reason) when what the state needs is missing. The execution
    # module is in __salt__ only if its own __virtual__ found the binary.
    if "rdmactl.plan" in __salt__:
        return __virtualname__
    return (False, "The rdmactl state module cannot be loaded: the rdmactl execution module is not loaded")


# Helpers start with "_": Salt's loader skips those names (salt/loader/lazy.py,
# LazyLoader._load_module), so `converged` is this module's only state function.


def _spec_text(source, contents, saltenv):
    """The new spec as text, or None when the state manages no file."""
    if contents is not None:
        if isinstance(contents, (dict, list)):
            # A mapping written in the SLS or the pillar: JSON is YAML. Salt's YAML loader gives
            # plain mappings, lists and scalars (salt/utils/yamlloader.py, SaltYamlSafeLoader:
            # timestamps stay strings), which json.dumps writes as they are.
            contents = json.dumps(contents, indent=2)
        text = str(contents)
    elif source:
        text = __salt__["cp.get_file_str"](source, saltenv=saltenv)
        if text is False or text is None:
            raise CommandExecutionError("cannot fetch the spec {}".format(source))
    else:
        return None
    # As file.managed does with contents: a text file ends with a newline.
    return text if text.endswith("\n") else text + "\n"


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def _install(dest, text):
    """Write dest atomically: a temporary file beside it, fsync'd, renamed over it."""
    directory = os.path.dirname(os.path.abspath(dest))
    os.makedirs(directory, mode=DIR_MODE, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(dest) + ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, SPEC_MODE)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _file_change(dest, old, new):
    if old is None:
        return {"diff": "New file"}
    diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True), dest, dest)
    return {"diff": "".join(diff)}


def _field_changes(changes):
    """{resource: {field: {old, new[, requires]}}} from the changes of an rdmactl report."""
    out = {}
    for change in changes:
        entry = {"old": change.get("current"), "new": change.get("desired")}
        if change.get("requires"):
            entry["requires"] = change["requires"]
        out.setdefault(change["resource"], {})[change["field"]] = entry
    return out


def _describe(change):
    return "{} {}: {} -> {}".format(
        change.get("resource"), change.get("field"), json.dumps(change.get("current")), json.dumps(change.get("desired"))
    )


def _key(change):
    return (change.get("resource"), change.get("field"))


def _selftest_line(report):
    selftest = report.get("selftest")
    if not selftest:
        return None
    reason = selftest.get("reason")
    return "self-test {}{}".format(selftest.get("result"), ": " + reason if reason else "")


def converged(
    name,
    source=None,
    contents=None,
    dest=DEFAULT_DEST,
    node=None,
    netns=None,
    root=None,
    lock_timeout=None,
    saltenv=None,
):
    """
    Ensure this host is converged to a fabric spec (see the module's documentation).

    name
        The state's ID; not used otherwise.
    source
        The spec to install: ``salt://...`` (or anything ``cp.get_file_str`` fetches).
    contents
        The spec itself, as text or as a mapping. Exclusive with ``source``.
    dest
        Where the spec is installed (default /etc/rdmactl/fabric.yaml, which ``rdmactl serve``
        and ``rdmactl-apply.service`` read). Without ``source`` and ``contents``, the spec to
        converge.
    node
        The node name for the spec's ``nodes:`` entries (``--node``). Default: the minion id's
        short host name (``gpu-01.cluster.example.com`` -> ``gpu-01``).
    netns
        Work inside this network namespace (``--netns``).
    root
        Resolve sysfs, configfs and /proc/sys under this directory (``--root``).
    lock_timeout
        How long apply waits for another rdmactl writing this host (``--lock-timeout``, e.g. 300s).
    """
    ret = {"name": name, "result": False, "changes": {}, "comment": ""}
    if source and contents is not None:
        ret["comment"] = "source and contents are exclusive: give one"
        return ret
    saltenv = saltenv or globals().get("__env__") or "base"
    where = {"node": node, "netns": netns, "root": root}

    try:
        text = _spec_text(source, contents, saltenv)
    except CommandExecutionError as exc:
        ret["comment"] = str(exc)
        return ret
    if text is None and not os.path.isfile(dest):
        ret["comment"] = "no spec: {} does not exist, and neither source nor contents is given".format(dest)
        return ret
    shown = source or ("contents of " + name if text is not None else dest)

    tmpdir = tempfile.mkdtemp(prefix="rdmactl-salt-")
    try:
        spec = dest
        if text is not None:
            spec = os.path.join(tmpdir, "fabric.yaml")
            with open(spec, "w", encoding="utf-8") as handle:
                handle.write(text)

        structured = isinstance(contents, (dict, list))

        def named(message):
            # rdmactl names the file it read: the temporary copy; name the source instead. For a
            # mapping, drop the :line:column too: they point into the JSON this module wrote.
            if spec == dest:
                return message
            if structured:
                message = re.sub(re.escape(spec) + r"(?::\d+){1,2}", lambda _: shown, message)
            return message.replace(spec, shown)

        # 1. Validate and plan the new spec, from the temporary copy.
        try:
            checked = __salt__["rdmactl.validate"](spec)
        except CommandExecutionError as exc:
            ret["comment"] = named(str(exc))
            return ret
        if not checked.get("valid"):
            ret["comment"] = "The spec is invalid ({}); {} was not changed:\n{}".format(
                shown, dest, named("\n".join(checked.get("messages") or []))
            )
            return ret
        try:
            planned = __salt__["rdmactl.plan"](spec, **where)
        except CommandExecutionError as exc:
            ret["comment"] = "rdmactl cannot plan {}; {} was not changed:\n{}".format(shown, dest, named(str(exc)))
            return ret
        node_name = planned.get("node")
        if planned.get("retcode") not in (0, 2):
            ret["comment"] = "rdmactl cannot plan {} on node {}; {} was not changed:\n{}".format(
                shown, node_name, dest, named(planned.get("comment", ""))
            )
            return ret
        changes = planned.get("changes") or []
        todo = [c for c in changes if c.get("status") == "planned"]
        waiting = [c for c in changes if c.get("status") == "pending-reboot"]
        old_text = _read(dest)
        new_file = text is not None and old_text != text
        waiting_lines = ["waiting for a cold reboot (power cycle), already staged: " + _describe(c) for c in waiting]

        # 2. test=True: the planned changes, nothing written.
        if __opts__.get("test"):
            ret["changes"] = _field_changes(todo)
            if new_file:
                ret["changes"][dest] = _file_change(dest, old_text, text)
            lines = []
            if new_file:
                lines.append("{} would be installed from {}".format(dest, shown))
            if todo:
                lines.append(
                    "rdmactl would make {} change(s) on node {}:\n".format(len(todo), node_name)
                    + "\n".join("  " + _describe(c) for c in todo)
                )
            if not lines:
                lines.append("node {} matches the spec {}".format(node_name, dest))
            ret["comment"] = "\n".join(lines + waiting_lines)
            ret["result"] = None if ret["changes"] else True
            return ret

        # 3. Install the spec, then apply what the plan found.
        lines = []
        if new_file:
            try:
                _install(dest, text)
            except OSError as exc:
                ret["comment"] = "cannot install {}: {}".format(dest, exc)
                return ret
            ret["changes"][dest] = _file_change(dest, old_text, text)
            lines.append("{} installed from {}".format(dest, shown))
        if not todo:
            lines.append("node {} matches the spec {}".format(node_name, dest))
            ret["comment"] = "\n".join(lines + waiting_lines)
            ret["result"] = True
            return ret

        def put_back_spec():
            # The node is back to the old spec (or as far as rdmactl could take it): so is the file,
            # so that `rdmactl serve` watching it does not retry the spec that failed.
            if not new_file:
                return
            try:
                if old_text is None:
                    os.unlink(dest)
                else:
                    _install(dest, old_text)
            except OSError as exc:
                lines.append("cannot put the previous {} back: {}".format(dest, exc))
                return
            ret["changes"].pop(dest, None)
            lines.append("{} put back as it was".format(dest))

        try:
            report = __salt__["rdmactl.apply"](dest, lock_timeout=lock_timeout, **where)
        except CommandExecutionError as exc:
            lines += ["rdmactl apply failed:", str(exc)]
            put_back_spec()
            ret["comment"] = "\n".join(lines)
            return ret
        planned_keys = set(_key(c) for c in todo)
        done = [
            c
            for c in report.get("changes") or []
            if c.get("status") == "applied" or (c.get("status") == "pending-reboot" and _key(c) in planned_keys)
        ]
        ret["changes"].update(_field_changes(done))
        applied = [c for c in done if c.get("status") == "applied"]
        staged = [c for c in done if c.get("status") == "pending-reboot"]
        if applied:
            lines.append(
                "rdmactl applied {} change(s) on node {}:\n".format(len(applied), report.get("node"))
                + "\n".join("  " + _describe(c) for c in applied)
            )
        lines += ["staged for the next cold reboot (power cycle): " + _describe(c) for c in staged]
        still_waiting = [c for c in report.get("changes") or [] if c.get("status") == "pending-reboot" and c not in staged]
        lines += ["waiting for a cold reboot (power cycle), already staged: " + _describe(c) for c in still_waiting]
        if report.get("retcode") in APPLY_OK:
            ret["result"] = True
            selftest = _selftest_line(report)
            if selftest:
                lines.append(selftest)
            lines += report.get("warnings") or []
        else:
            lines.append("rdmactl apply failed on node {} (exit {}):".format(report.get("node"), report.get("retcode")))
            lines.append(report.get("comment", ""))
            if any(c.get("status") in ("failed", "rolled-back") for c in report.get("changes") or []):
                put_back_spec()
        ret["comment"] = "\n".join(lines)
        return ret
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
