# SPDX-License-Identifier: Apache-2.0
"""
Execution module for rdmactl, the declarative RDMA configuration agent.

Every function runs the rdmactl binary through ``cmd.run_all`` (argv, never a shell string) and
returns what rdmactl printed with ``--format json``: the drift report of ``plan``, the apply report
of ``apply``, the live state of ``show``. Exit codes follow rdmactl's contract: plan 0 no drift,
2 drift, 1 the plan could not be made; apply 0 converged, 3 converged except changes that wait for a
reboot, 1 failed (and rolled back); 65 an invalid spec; 64 a usage error.

Sync it to the minions with ``saltutil.sync_modules`` (it lives in ``_modules/`` of a file root),
then for example:

.. code-block:: bash

    salt 'gpu-*' rdmactl.validate /etc/rdmactl/fabric.yaml
    salt 'gpu-*' rdmactl.plan                       # /etc/rdmactl/fabric.yaml on each node
    salt 'gpu-*' rdmactl.apply
    salt 'gpu-*' rdmactl.show
    salt 'gpu-01.example.com' rdmactl.plan node=gpu-01 netns=lab1

The node name (``--node``, which picks the spec's ``nodes:`` entries) defaults to the short host
name of the minion id: ``grains['id']`` is often an FQDN (``gpu-01.cluster.example.com``) while the
spec's globs (``gpu-0[1-8]``) match short names. ``node=`` overrides it.

Configuration (optional): ``rdmactl.binary``, the binary's path, read with ``config.get``, so it may
be set in the minion configuration, a grain, the pillar or the master configuration (default:
``rdmactl`` on the minion's PATH, else ``/usr/sbin/rdmactl``, where the Debian package installs it).
Without that binary the module does not load: ``salt-call sys.list_functions rdmactl`` is empty and
the loader records why (``__virtual__`` returns ``(False, reason)``).
"""

import ipaddress
import json
import logging
import os
import shutil

from salt.exceptions import CommandExecutionError

log = logging.getLogger(__name__)

__virtualname__ = "rdmactl"

DEFAULT_SPEC = "/etc/rdmactl/fabric.yaml"
DEFAULT_BINARY = "/usr/sbin/rdmactl"

# rdmactl's exit codes (docs/commands.md; `rdmactl COMMAND --help`).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_DRIFT = 2
EXIT_PENDING_REBOOT = 3
EXIT_USAGE = 64
EXIT_INVALID_SPEC = 65


def __virtual__():
    # Load only where the binary is. Salt's loader (salt/loader/lazy.py, LazyLoader._process_virtual)
    # takes a tuple's first item as "load or not" and its second as the reason it records for
    # `sys.list_functions` and the "is not available" error; salt/modules/flatpak.py and
    # salt/states/lvm.py refuse to load without their binary the same way. The loader has packed
    # __salt__ before it calls __virtual__ (LazyLoader._load_module), so config.get works here.
    path, why = _binary()
    if path is None:
        return (False, "The rdmactl execution module cannot be loaded: " + why)
    return __virtualname__


def _binary():
    """(path, None) for the rdmactl binary to run, or (None, why it is missing)."""
    # config.get, not __opts__: salt/modules/config.py `get` looks in the minion configuration, the
    # grains, the pillar and the master configuration, in that order, so the option can be set per
    # node from the pillar as Salt's own modules read theirs.
    configured = __salt__["config.get"]("rdmactl.binary", "")
    if configured:
        path = str(configured)
        if os.sep not in path:
            path = shutil.which(path) or path
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, None
        return None, "rdmactl.binary is {}, which is not an executable file".format(configured)
    path = shutil.which("rdmactl") or DEFAULT_BINARY
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path, None
    return None, "no rdmactl on PATH nor {} (set rdmactl.binary)".format(DEFAULT_BINARY)


# Helpers start with "_": Salt's loader skips those names (salt/loader/lazy.py,
# LazyLoader._load_module: `if attr.startswith("_"): # private functions are skipped`), so only
# validate, plan, apply, show and doctor become `rdmactl.*` functions on the minion.


def _short_node_name(minion_id):
    """
    The node name rdmactl matches against the spec's ``nodes:`` globs: the minion id up to its
    first dot (``gpu-01.cluster.example.com`` -> ``gpu-01``). An id that is an IP address is kept
    whole.
    """
    minion_id = str(minion_id)
    try:
        ipaddress.ip_address(minion_id)
        return minion_id
    except ValueError:
        return minion_id.split(".", 1)[0]


def _node(node=None):
    if node:
        return node
    # The `id` grain (salt/grains/core.py) is the minion id.
    minion_id = __grains__.get("id")
    return _short_node_name(minion_id) if minion_id else None


def _global_args(node, netns, root, with_node=True):
    path, why = _binary()
    if path is None:
        # Loaded, then the binary went away (or rdmactl.binary changed in the pillar).
        raise CommandExecutionError(why)
    argv = [path]
    node = _node(node) if with_node else None
    if node:
        argv += ["--node", node]
    if netns:
        argv += ["--netns", netns]
    if root:
        argv += ["--root", root]
    # Logs go to standard error; keep only warnings and errors, which become the state's comment.
    argv += ["--log-level", "warn"]
    return argv


def _run(argv):
    log.debug("rdmactl: running %s", argv)
    # ignore_retcode: 2 (drift) and 3 (pending reboot) are answers, not failures.
    return __salt__["cmd.run_all"](argv, python_shell=False, ignore_retcode=True, output_loglevel="quiet")


def _stderr_text(result):
    return (result.get("stderr") or "").strip()


def _parse_json(result, what):
    try:
        return json.loads(result.get("stdout") or "")
    except ValueError:
        text = _stderr_text(result) or (result.get("stdout") or "").strip()
        raise CommandExecutionError(
            "rdmactl {} exited {}: {}".format(what, result["retcode"], text or "no output")
        )


def _set_retcode(code):
    # The exit code of `salt`/`salt-call` for this call: data is still returned.
    if code:
        __context__["retcode"] = code


def _failure_text(report, stderr=""):
    """
    rdmactl's own words for what went wrong in a plan or apply report: the errors (with their
    spec file:line), each failed change with its error, the rollback, a failed self-test, and
    the warnings and errors rdmactl logged.
    """
    lines = []
    for error in report.get("errors") or []:
        where = error.get("where")
        message = error.get("message", "")
        lines.append("{}: {}".format(where, message) if where else message)
    for change in report.get("changes") or []:
        if change.get("status") == "failed":
            lines.append(
                "{} {}: {}".format(change.get("resource"), change.get("field"), change.get("error", "failed"))
            )
    rolled_back = [c for c in report.get("changes") or [] if c.get("status") == "rolled-back"]
    if rolled_back:
        lines.append("rolled back: {} change(s)".format(len(rolled_back)))
    selftest = report.get("selftest") or {}
    if selftest.get("result") == "failed":
        lines.append("self-test failed: {}".format(selftest.get("reason") or _selftest_reasons(selftest)))
    for line in (stderr or "").splitlines():
        if line.strip() and line not in lines:
            lines.append(line)
    return "\n".join(lines)


def _selftest_reasons(selftest):
    reasons = [t.get("reason") for t in selftest.get("tests") or [] if t.get("result") == "failed"]
    return "; ".join(r for r in reasons if r) or "see the report's selftest"


def _report(argv, what, ok_codes):
    result = _run(argv)
    code = result["retcode"]
    if code in (EXIT_INVALID_SPEC, EXIT_USAGE) or not (result.get("stdout") or "").strip():
        # Nothing on standard output: the spec is invalid (its file:line:column problems are on
        # standard error), the arguments are wrong, or the host could not be observed.
        raise CommandExecutionError(_stderr_text(result) or "rdmactl {} exited {}".format(what, code))
    report = _parse_json(result, what)
    report["retcode"] = code
    if code not in ok_codes:
        report["comment"] = _failure_text(report, _stderr_text(result))
        _set_retcode(code)
    elif _stderr_text(result):
        report["warnings"] = _stderr_text(result).splitlines()
    return report


def validate(spec=DEFAULT_SPEC):
    """
    Check a spec's structure and meaning (``rdmactl validate``); touches nothing on the host.

    Returns ``{"valid": bool, "file": ..., "problems": [{line, column, path, message}],
    "messages": ["file:line:column: path: message", ...]}``.

    CLI Example:

    .. code-block:: bash

        salt '*' rdmactl.validate /etc/rdmactl/fabric.yaml
    """
    argv = _global_args(None, None, None, with_node=False) + ["validate", "-f", spec, "--format", "json"]
    result = _run(argv)
    if result["retcode"] not in (EXIT_OK, EXIT_INVALID_SPEC):
        raise CommandExecutionError(_stderr_text(result) or "rdmactl validate exited {}".format(result["retcode"]))
    report = _parse_json(result, "validate")
    # The same form as rdmactl's text output (`validate` without --format json).
    report["messages"] = [
        "{}:{}:{}: {}: {}".format(report.get("file"), p.get("line"), p.get("column"), p.get("path"), p.get("message"))
        for p in report.get("problems") or []
    ]
    _set_retcode(EXIT_OK if report.get("valid") else EXIT_INVALID_SPEC)
    return report


def plan(spec=DEFAULT_SPEC, node=None, netns=None, root=None, state=None):
    """
    The drift report (``rdmactl plan --format json``): what apply would change; changes nothing.

    Returns rdmactl's report plus ``retcode`` (0 no drift, 2 drift, 1 the plan could not be made,
    with ``comment`` saying why). Changes whose firmware value is already staged for the next boot
    have ``status: pending-reboot``: they wait for a reboot and are not written again. An invalid
    spec raises an error with rdmactl's file:line:column problems.

    spec
        The spec file on the minion (default /etc/rdmactl/fabric.yaml).
    node
        The node name for the spec's ``nodes:`` entries (default: the minion id's short name).
    netns
        Work inside this network namespace (``--netns``).
    root
        Resolve sysfs, configfs and /proc/sys under this directory (``--root``).
    state
        Plan against a recorded state (``show --format json``) instead of this host.

    CLI Example:

    .. code-block:: bash

        salt '*' rdmactl.plan
        salt '*' rdmactl.plan /srv/fabric.yaml node=gpu-01
    """
    argv = _global_args(node, netns, root) + ["plan", "-f", spec, "--format", "json"]
    if state:
        argv += ["--state", state]
    return _report(argv, "plan", (EXIT_OK, EXIT_DRIFT))


def apply(spec=DEFAULT_SPEC, node=None, netns=None, root=None, check=False, lock_timeout=None):
    """
    Converge this host to the spec (``rdmactl apply --format json``): apply what differs, verify,
    roll back on failure, then run the RDMA self-test unless the spec disables it.

    Returns rdmactl's apply report plus ``retcode`` (0 converged, 3 converged except changes that
    wait for a reboot, 1 failed and rolled back, or the self-test failed, with ``comment`` saying
    why). ``check=True`` only reports (``--check``: exit codes as plan).

    CLI Example:

    .. code-block:: bash

        salt '*' rdmactl.apply
        salt '*' rdmactl.apply check=True
    """
    argv = _global_args(node, netns, root) + ["apply", "-f", spec, "--format", "json"]
    if check:
        argv.append("--check")
    if lock_timeout is not None:
        argv += ["--lock-timeout", str(lock_timeout)]
    ok = (EXIT_OK, EXIT_DRIFT) if check else (EXIT_OK, EXIT_PENDING_REBOOT)
    return _report(argv, "apply", ok)


def show(node=None, netns=None, root=None, spec=None):
    """
    The live state of this host (``rdmactl show --format json``): RDMA devices and ports,
    netdevs, QoS, the subnet manager, sysctl. ``spec`` adds that spec's sysctl keys.

    CLI Example:

    .. code-block:: bash

        salt '*' rdmactl.show
        salt '*' rdmactl.show netns=lab1
    """
    argv = _global_args(node, netns, root) + ["show", "--format", "json"]
    if spec:
        argv += ["-f", spec]
    result = _run(argv)
    if result["retcode"] != EXIT_OK:
        _set_retcode(result["retcode"])
        raise CommandExecutionError(_stderr_text(result) or "rdmactl show exited {}".format(result["retcode"]))
    return _parse_json(result, "show")


def doctor(spec=None, node=None, netns=None, root=None):
    """
    The RDMA health checks of the manual procedure (``rdmactl doctor --format json``), each
    finding with its fix; ``spec`` adds the checks against it (link type, RoCE ToS).

    CLI Example:

    .. code-block:: bash

        salt '*' rdmactl.doctor
    """
    argv = _global_args(node, netns, root) + ["doctor", "--format", "json"]
    if spec:
        argv += ["-f", spec]
    result = _run(argv)
    if result["retcode"] not in (EXIT_OK, EXIT_DRIFT):
        _set_retcode(result["retcode"])
        raise CommandExecutionError(_stderr_text(result) or "rdmactl doctor exited {}".format(result["retcode"]))
    report = _parse_json(result, "doctor")
    if isinstance(report, dict):
        report["retcode"] = result["retcode"]
    return report
