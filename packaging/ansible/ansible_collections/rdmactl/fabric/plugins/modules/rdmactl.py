#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The rdmactl module: installs a fabric spec on an RDMA node and converges the node to it with the
# node's own rdmactl binary. All the RDMA logic stays in rdmactl; this file only maps Ansible's
# conventions (check mode, diff mode, changed, failed) onto rdmactl's plan and apply reports.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdmactl
short_description: Converge an RDMA node to an rdmactl fabric spec
version_added: "0.1.0"
description:
  - Installs an rdmactl fabric spec (C(apiVersion) C(rdmactl/v1)) on the node and converges the node
    to it with C(rdmactl apply) (firmware link type, MTU and link state, addresses, QoS, ECN, RoCE,
    IPoIB, the subnet manager and sysctl).
  - The new spec is checked first; an invalid spec fails the task with rdmactl's own messages
    (C(file:line:column) C(field) C(problem)) and nothing is written.
  - In check mode the node is planned against the new spec (C(rdmactl plan)), not the one already
    installed; nothing is written. With C(--diff) the spec file's text diff and every field rdmactl
    would change (current -> desired, per resource) are shown.
  - The spec is written atomically (temporary file, then rename) with mode 0644; the directory is
    created when missing. Then C(rdmactl apply) runs, but only when the plan has something to do, so
    a converged node is not touched and its RDMA self-test is not rerun.
  - If the apply fails and rdmactl rolls the node back, the previous spec file is put back too, so
    that C(rdmactl serve) watching it does not retry the failed spec. A failed self-test keeps both
    (rdmactl keeps the settings).
  - Firmware changes (C(linkType)) wait for a cold reboot. Staging one counts as a change once;
    a change that is already staged is reported with status C(pending-reboot) and
    C(reboot_required), but is not C(changed) on later runs.
  - When C(src) names a file on the controller (the default), the collection's action plugin reads it
    there and sends its content; it is never templated.
author:
  # validate-modules' author_line: "Name (@github-id)", or "Name (!UNKNOWN)" without a GitHub account.
  - rdmactl maintainers (!UNKNOWN)
requirements:
  - rdmactl on the managed node (the C(rdmactl) package)
  - root on the managed node (C(become)) for anything but a fixture tree under C(root)
options:
  content:
    description:
      - The spec itself, as YAML text.
      - Exactly one of C(content) and C(src) is required.
    type: str
  src:
    description:
      - Path of the spec file. Relative paths are searched like M(ansible.builtin.copy)'s (the
        role's C(files/), the playbook's directory) on the controller.
      - With C(remote_src=true), a path on the managed node.
    type: path
  spec_name:
    description:
      - The file name rdmactl's messages give the spec (C(fabric.yaml:8:12) in C(fabric.yaml:8:12 ...)); a plain name, no
        directory.
      - Default is the base name of C(src), or of C(dest) with C(content). When C(src) is a
        controller file, the action plugin sets it to that file's name.
    type: str
  remote_src:
    description:
      - Read C(src) on the managed node instead of the controller.
    type: bool
    default: false
  dest:
    description:
      - Where the spec is installed on the node; C(rdmactl apply) and C(rdmactl serve) read it there.
    type: path
    default: /etc/rdmactl/fabric.yaml
  node:
    description:
      - The node's name for the spec's C(nodes:) entries (rdmactl's C(--node)).
      - Default is rdmactl's, the node's host name. The role passes C(inventory_hostname_short).
    type: str
  executable:
    description:
      - Path of the rdmactl binary on the node. Default is C(rdmactl) from C(PATH), C(/usr/sbin) or
        C(/usr/local/sbin).
    type: path
    aliases: [rdmactl_path]
  netns:
    description:
      - Work inside this named network namespace (rdmactl's C(--netns)).
    type: str
  root:
    description:
      - Resolve sysfs, configfs, /proc/sys and external tools under this directory (rdmactl's
        C(--root)); for tests and demos on fixture trees.
    type: path
  lock_timeout:
    description:
      - How long C(rdmactl apply) waits for another rdmactl writing this host, e.g. C(120s) or
        C(0) (rdmactl's C(--lock-timeout)). Default is rdmactl's (120s).
    type: str
notes:
  - Supports check mode and diff mode. Check mode runs C(rdmactl plan) only, which reads the host
    and writes nothing.
  - Exit codes of rdmactl are mapped as follows. C(plan) 0 and 2 (drift), and C(apply) 0 and 3
    (waiting for a reboot) succeed; 65 (invalid spec), 1 (plan or apply failed, rolled back, or the
    self-test failed) and anything else fail the task with rdmactl's messages in C(msg).
"""

EXAMPLES = r"""
- name: Converge the RDMA fabric (spec file next to the playbook)
  rdmactl.fabric.rdmactl:
    src: fabric.yaml
    node: "{{ inventory_hostname_short }}"
  register: fabric

- name: Say when staged firmware changes wait for a cold reboot
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }} needs a power cycle: {{ fabric.changes | selectattr('status', 'eq', 'pending-reboot') | map(attribute='resource') | list }}"
  when: fabric.reboot_required

- name: Jumbo frames from an inline spec, in a test namespace
  rdmactl.fabric.rdmactl:
    netns: lab0
    dest: /tmp/lab/fabric.yaml
    content: |
      apiVersion: rdmactl/v1
      kind: FabricSpec
      metadata: {name: lab}
      defaults:
        interfaces:
          - name: ens1f0np0
            mtu: 9000
            state: up

# ansible-playbook site.yml --check --diff   previews every field rdmactl would change
"""

RETURN = r"""
changed:
  description:
    - True when the spec file was written, or rdmactl changed the node (including staging a firmware
      value for the next boot). In check mode, when either would happen.
    - A change that is already staged and only waits for a reboot does not count.
  returned: always
  type: bool
msg:
  description: What happened, or on failure rdmactl's own error text.
  returned: always
  type: str
  sample: 6 change(s) applied
dest:
  description: Where the spec is installed on the node.
  returned: always
  type: str
  sample: /etc/rdmactl/fabric.yaml
spec_changed:
  description: The spec file at C(dest) differs (differed) from the new spec.
  returned: always
  type: bool
uid:
  description: The spec file's owner's uid. Ansible adds this and the file keys below to any result
    with C(dest) (AnsibleModule's C(add_path_info)), from the file as it is when the task ends.
  returned: when C(dest) exists
  type: int
  sample: 0
gid:
  description: The spec file's group id.
  returned: when C(dest) exists
  type: int
  sample: 0
owner:
  description: The spec file's owner.
  returned: when C(dest) exists
  type: str
  sample: root
group:
  description: The spec file's group.
  returned: when C(dest) exists
  type: str
  sample: root
mode:
  description: The spec file's permissions, octal.
  returned: when C(dest) exists
  type: str
  sample: "0644"
state:
  description: What C(dest) is, C(file) (or C(link), C(directory), C(hard)).
  returned: when C(dest) exists
  type: str
  sample: file
size:
  description: The spec file's size in bytes.
  returned: when C(dest) exists
  type: int
secontext:
  description: The spec file's SELinux context.
  returned: when C(dest) exists and SELinux is enabled
  type: str
changes:
  description:
    - rdmactl's changes, as in its JSON report (C(rdmactl plan --format json)), in apply order. After
      an apply, the apply report's (statuses C(applied), C(failed), C(rolled-back),
      C(pending-reboot)); otherwise the plan's (C(planned), C(pending-reboot)).
    - Empty when nothing differs, or when rdmactl did not get as far as a plan.
  returned: always
  type: list
  elements: dict
  sample:
    - resource: netdev/ens1f0np0
      field: mtu
      current: 1500
      desired: 9000
      status: applied
      reconciler: netdev
      disruptive: true
      requires: null
  contains:
    resource:
      description: C(netdev/<name>), C(rdma/<dev>/<port>), C(pci/<bdf>), C(sysctl/<key>) or C(subnet-manager).
      type: str
      returned: always
    field:
      description: The spec's path below the interface, e.g. C(mtu), C(qos.pfc), C(linkType); C(value) for a sysctl.
      type: str
      returned: always
    current:
      description: The value on the node before, in the spec's form; null when the node has none.
      type: raw
      returned: always
    desired:
      description: The spec's value.
      type: raw
      returned: always
    status:
      description: C(planned), C(applied), C(failed), C(rolled-back) or C(pending-reboot).
      type: str
      returned: always
    reconciler:
      description: The rdmactl reconciler that owns the field (C(netdev), C(addresses), C(qos), C(link_type), ...).
      type: str
      returned: always
    disruptive:
      description: Applying it may interrupt traffic (e.g. an MTU or link type change).
      type: bool
      returned: always
    requires:
      description: C(reboot) for firmware values that take effect at the next cold boot, else null.
      type: str
      returned: always
    via:
      description: How the node's driver takes the value where drivers differ (dcbnl, a sysfs or debugfs
        file, or an mstconfig parameter).
      type: str
      returned: when rdmactl names it
    note:
      description: What the change does beyond its field, e.g. the priorities that lose DCQCN.
      type: str
      returned: when rdmactl has one
    error:
      description: Why this change failed, or could not be rolled back.
      type: str
      returned: on failure
reboot_required:
  description: A firmware change is staged and waits for a cold reboot (power cycle). In check mode,
    when the plan has one.
  returned: always
  type: bool
selftest:
  description:
    - The RDMA self-test's result from C(rdmactl apply); null in check mode, when nothing was applied,
      or when it did not run (an apply that failed before it, or C(selftest.enabled) false in the spec).
  returned: always
  type: dict
  contains:
    result:
      description: C(passed), C(failed) or C(skipped) (nothing to test, e.g. no ACTIVE port; never a pass).
      type: str
    reason:
      description: Why it failed or was skipped.
      type: str
    tests:
      description: One entry per test, with C(test) (C(loopback) or C(peer)), C(device), C(port),
        C(gidIndex), C(gid), C(peer), C(bandwidthGbps), C(expectedGbps), C(latencyUs), C(roundTripUs),
        C(trafficClass), C(result) and C(reason), as in rdmactl's report schema
        (C(schemas/report.schema.json)).
      type: list
      elements: dict
errors:
  description:
    - rdmactl's messages, one per problem (C(file:line:column) C(field) C(message) for an invalid
      spec, C(resource field) and its error for a failed change). Empty on success.
  returned: always
  type: list
  elements: str
  sample:
    - "fabric.yaml:8:12: defaults.interfaces[0].mtu: 99999 is above the maximum 65520"
rdmactl_rc:
  description:
    - The exit code of the last rdmactl command (C(plan) 0 no drift, 2 drift; C(apply) 0, 3 waiting
      for a reboot; 1 failed; 64 usage; 65 invalid spec); null when rdmactl did not run. Not C(rc),
      which Ansible takes for failure when not 0.
  returned: always
  type: int
node:
  description: The node name rdmactl matched the spec's C(nodes:) entries against.
  returned: when rdmactl produced a report
  type: str
report:
  description:
    - rdmactl's whole JSON report of the last command that ran (the plan, or the apply report),
      as in C(schemas/report.schema.json).
    - Left out on failure, where C(changes) and C(errors) say what happened.
  returned: success
  type: dict
  contains:
    apiVersion:
      description: C(rdmactl/v1).
      type: str
    kind:
      description: C(Plan) or C(ApplyReport).
      type: str
    node:
      description: The node name the spec was merged for.
      type: str
    spec:
      description: The spec rdmactl read, C(file) (its name) and C(sha256).
      type: dict
    changes:
      description: The same list as the top-level C(changes).
      type: list
      elements: dict
    pendingReboot:
      description: A firmware change is staged for the next cold boot.
      type: bool
    selftest:
      description: The same as the top-level C(selftest).
      type: dict
    summary:
      description: Counts of the changes, C(changes), C(applied), C(failed), and in an apply report
        C(rolledBack) and C(pendingReboot).
      type: dict
    sideEffects:
      description: Apply only; what changed on the touched netdevs that no applied change explains.
      type: list
      elements: str
    recovery:
      description: Apply only, when it found the journal of an interrupted apply; what it did about it
        (C(interrupted), C(outcome), C(reason), C(spec), C(changes), C(notes)).
      type: dict
    errors:
      description: Parts of the spec that could not be planned or applied on this node, each with
        C(kind), C(message) and, where known, C(where) (C(file:line:column)).
      type: list
      elements: dict
diff:
  description:
    - With C(--diff), what C(--diff) prints; up to two entries, each with C(before_header),
      C(after_header), C(before) and C(after). The spec file's text, when it changes; then every
      field rdmactl would change, grouped by resource (one heading per resource, such as
      C(netdev/ens1f0np0), with each of its fields under it), the current values before and the
      desired ones after.
  returned: in diff mode (empty when nothing would change)
  type: list
  elements: dict
"""

import json
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

# rdmactl's exit codes (docs/commands.md in the rdmactl repository).
PLAN_OK = (0, 2)          # no drift, drift
APPLY_OK = (0, 3)         # converged, converged except changes waiting for a reboot
EXIT_INVALID_SPEC = 65
EXIT_USAGE = 64

# Statuses that mean rdmactl wrote something to the node in this run.
WRITTEN = ("applied",)
# Statuses that mean the node was put back (or failed to be) after a failed apply.
UNDONE = ("failed", "rolled-back")


def find_rdmactl(module, result):
    path = module.params["executable"]
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            fail(module, result, "rdmactl not found at %s (executable): install the rdmactl package "
                                 "or point executable at the binary" % path)
        return path
    found = module.get_bin_path("rdmactl", opt_dirs=["/usr/sbin", "/usr/local/sbin", "/sbin"])
    if not found:
        fail(module, result, "rdmactl is not installed on this node (not in PATH, /usr/sbin or "
                             "/usr/local/sbin): install the rdmactl package or set executable")
    return found


def global_args(module, binary):
    argv = [binary]
    for option, flag in (("node", "--node"), ("root", "--root"), ("netns", "--netns")):
        if module.params[option]:
            argv += [flag, module.params[option]]
    return argv


def stderr_messages(stderr):
    """rdmactl's error and warning lines (its info, debug and trace logs left out)."""
    lines = []
    for line in (stderr or "").splitlines():
        line = line.rstrip()
        if not line or line.startswith(("info: ", "debug: ", "trace: ")):
            continue
        lines.append(line)
    return lines


def parse_report(stdout):
    try:
        report = json.loads(stdout)
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


def report_errors(report):
    """The error texts inside a report: plan errors (with their spec location), failed changes,
    and a failed self-test."""
    if not report:
        return []
    errors = []
    for error in report.get("errors") or []:
        where = error.get("where")
        errors.append("%s: %s" % (where, error.get("message")) if where else str(error.get("message")))
    for change in report.get("changes") or []:
        if change.get("error"):
            errors.append("%s %s: %s" % (change.get("resource"), change.get("field"), change["error"]))
    selftest = report.get("selftest")
    if isinstance(selftest, dict) and selftest.get("result") == "failed":
        reasons = [t.get("reason") for t in selftest.get("tests") or [] if t.get("reason")]
        errors.append("self-test failed" + (": " + "; ".join(reasons) if reasons else ""))
    return errors


def is_actionable(change):
    """A change apply would write now; a firmware value already staged only waits for a reboot."""
    return change.get("status") != "pending-reboot"


def field_lines(changes, side):
    """The diff's text for one side: per resource, `field: value` (values in JSON, as rdmactl
    prints them), so that a unified diff shows each field's current -> desired.

    The changes come in apply order, reconciler by reconciler (netdev's mtu and state, then the
    addresses, ...), so one netdev's fields are spread over several runs of the list. They are
    grouped here under one heading per resource, resources in the order they first appear and each
    resource's fields in apply order."""
    by_resource = {}
    for change in changes:
        by_resource.setdefault(change.get("resource"), []).append(change)
    lines = []
    for resource, resource_changes in by_resource.items():
        lines.append("%s:" % resource)
        for change in resource_changes:
            lines.append(field_line(change, side))
    return "\n".join(lines) + ("\n" if lines else "")


def field_line(change, side):
    """One field of one side of the diff: `  field: value`, with a note on the desired side for a
    firmware value."""
    value = change.get(side)
    # Strings as rdmactl's text plan prints them (down, not "down"); the rest as JSON.
    value = value if isinstance(value, str) and value and value.strip() == value else json.dumps(value, sort_keys=True)
    note = ""
    if side == "desired" and change.get("status") == "pending-reboot":
        note = "  # staged in firmware, waits for a cold reboot"
    elif side == "desired" and change.get("requires") == "reboot":
        note = "  # takes effect after a cold reboot"
    return "  %s: %s%s" % (change.get("field"), value, note)


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except (IOError, OSError):
        return None


def write_atomically(module, result, dest, data):
    """Temporary file in the destination directory, fsync, rename: readers (rdmactl serve) see the
    old spec or the new one, never half of one."""
    directory = os.path.dirname(dest)
    if not os.path.isdir(directory):
        try:
            os.makedirs(directory, 0o755)
        except OSError as e:
            fail(module, result, "cannot create %s: %s" % (directory, to_native(e)))
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(dest), dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        module.atomic_move(tmp, dest)
        os.chmod(dest, 0o644)
    except (IOError, OSError) as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fail(module, result, "cannot write %s: %s" % (dest, to_native(e)))


def restore(module, result, dest, previous):
    if previous is None:
        try:
            os.unlink(dest)
        except OSError:
            pass
    else:
        write_atomically(module, result, dest, previous)


def fail(module, result, msg):
    result["msg"] = msg
    module.fail_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            content=dict(type="str"),
            src=dict(type="path"),
            remote_src=dict(type="bool", default=False),
            dest=dict(type="path", default="/etc/rdmactl/fabric.yaml"),
            node=dict(type="str"),
            executable=dict(type="path", aliases=["rdmactl_path"]),
            netns=dict(type="str"),
            root=dict(type="path"),
            lock_timeout=dict(type="str"),
            spec_name=dict(type="str"),
        ),
        mutually_exclusive=[("content", "src")],
        required_one_of=[("content", "src")],
        supports_check_mode=True,
    )
    params = module.params
    dest = params["dest"]
    # Every key RETURN documents as `always` is in the result from here on, failures included.
    result = dict(changed=False, changes=[], reboot_required=False, selftest=None, spec_changed=False,
                  dest=dest, errors=[], msg="", rdmactl_rc=None)
    if not os.path.isabs(dest):
        fail(module, result, "dest must be an absolute path, not %s" % dest)

    if params["content"] is not None:
        new_spec = to_bytes(params["content"], errors="surrogate_or_strict")
        spec_name = params["spec_name"] or os.path.basename(dest)
    else:
        new_spec = read_file(params["src"])
        if new_spec is None:
            fail(module, result, "cannot read the spec %s on the node" % params["src"])
        spec_name = params["spec_name"] or os.path.basename(params["src"])
    # rdmactl reads the spec under this name in a private directory: a plain file name only.
    if spec_name in ("", ".", "..") or os.path.basename(spec_name) != spec_name:
        fail(module, result, "spec_name must be a file name without a directory, not %r" % spec_name)

    binary = find_rdmactl(module, result)
    argv = global_args(module, binary)

    # The new spec goes to a private directory under its own name; rdmactl runs there with that
    # relative name, so its messages say "fabric.yaml:8:12: ..." rather than a temporary path.
    workdir = tempfile.mkdtemp(prefix="rdmactl-", dir=module.tmpdir)
    try:
        with open(os.path.join(workdir, spec_name), "wb") as f:
            f.write(new_spec)

        # Plan the NEW spec: it validates (65 with file:line:column messages), resolves the spec
        # on this host (1 when e.g. a selector matches nothing) and says what apply would do.
        rc, out, err = module.run_command(argv + ["plan", "-f", spec_name, "--format", "json"], cwd=workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    plan = parse_report(out)
    result["rdmactl_rc"] = rc
    if rc not in PLAN_OK or plan is None:
        messages = report_errors(plan) or stderr_messages(err)
        if not messages:
            messages = ["rdmactl plan exited %d with no message" % rc]
        result["errors"] = messages
        if plan is not None:
            result["node"] = plan.get("node")
            result["changes"] = plan.get("changes") or []
        if rc == EXIT_INVALID_SPEC:
            head = "invalid spec %s" % (params["src"] or spec_name)
        elif rc == EXIT_USAGE:
            head = "rdmactl refused the arguments (is it too old for this module?)"
        else:
            head = "rdmactl plan failed"
        fail(module, result, "%s:\n%s" % (head, "\n".join(messages)))

    planned = plan.get("changes") or []
    actionable = [c for c in planned if is_actionable(c)]
    previous = read_file(dest)
    spec_changed = previous != new_spec
    result.update(changes=planned, spec_changed=spec_changed, node=plan.get("node"), report=plan,
                  reboot_required=bool(plan.get("pendingReboot")) or any(
                      c.get("requires") == "reboot" for c in planned))

    if module._diff:
        diffs = []
        if spec_changed:
            diffs.append(dict(before_header=dest if previous is not None else "%s (absent)" % dest,
                              after_header="%s (new spec)" % dest,
                              before=to_native(previous or b""), after=to_native(new_spec)))
        if planned:
            host = "node %s" % plan.get("node")
            if params["netns"]:
                host += " (netns %s)" % params["netns"]
            diffs.append(dict(before_header="%s: current (rdmactl plan)" % host,
                              after_header="%s: desired" % host,
                              before=field_lines(planned, "current"),
                              after=field_lines(planned, "desired")))
        result["diff"] = diffs

    if module.check_mode:
        result["changed"] = spec_changed or bool(actionable)
        result["msg"] = "%d change(s) planned%s" % (
            len(actionable), ", the spec file would be written" if spec_changed else "")
        module.exit_json(**result)

    if spec_changed:
        write_atomically(module, result, dest, new_spec)

    # The plan was made with the new spec: with nothing to do, apply would write nothing, and
    # would only rerun the self-test; a spec that changed (a comment, a reordering) is written
    # above and is the only change.
    if not actionable:
        result["changed"] = spec_changed
        result["msg"] = ("converged" + (", the spec file written" if spec_changed else "") +
                         (" (a firmware change waits for a cold reboot)" if result["reboot_required"] else ""))
        module.exit_json(**result)

    apply_argv = argv + ["apply", "-f", dest, "--format", "json"]
    if params["lock_timeout"]:
        apply_argv += ["--lock-timeout", params["lock_timeout"]]
    rc, out, err = module.run_command(apply_argv)
    report = parse_report(out)
    result["rdmactl_rc"] = rc
    wrote = False
    if report is not None:
        applied = report.get("changes") or []
        # Staging a firmware value counts as a write only if the plan had it still to do.
        was_planned = set((c.get("resource"), c.get("field")) for c in actionable)
        wrote = any(c.get("status") in WRITTEN or (
            c.get("status") == "pending-reboot" and (c.get("resource"), c.get("field")) in was_planned)
            for c in applied)
        result.update(changes=applied, report=report, selftest=report.get("selftest"),
                      node=report.get("node"), reboot_required=bool(report.get("pendingReboot")),
                      changed=spec_changed or wrote)
    else:
        result["changed"] = spec_changed

    if rc in APPLY_OK and report is not None:
        result["msg"] = "%d change(s) applied%s" % (
            report.get("summary", {}).get("applied", 0),
            "; a firmware change waits for a cold reboot" if result["reboot_required"] else "")
        module.exit_json(**result)

    messages = report_errors(report) or stderr_messages(err) or ["rdmactl apply exited %d with no message" % rc]
    result["errors"] = messages
    result.pop("report", None)  # the changes (with their errors) say it; keep the failure readable
    undone = report is None or any(c.get("status") in UNDONE for c in report.get("changes") or [])
    if spec_changed and undone:
        # The node is back to the old spec (or as far as rdmactl could take it): so is the file.
        restore(module, result, dest, previous)
        result["spec_changed"] = False
        result["changed"] = wrote
        messages = messages + ["%s was restored to the previous spec" % dest]
    fail(module, result, "rdmactl apply failed (exit %d):\n%s" % (rc, "\n".join(messages)))


if __name__ == "__main__":
    main()
