#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Ansible integration cases, run by run_test.sh (which owns the namespace and the temporary tree).

Every case runs the real ansible-playbook (connection local) and reads its result from the JSON
stdout callback; the host is checked with `ip -n NS -j` and the file system, never with rdmactl.
"""

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "rdmactl.fabric.rdmactl"
NODE = "ansible-node-1"

# `{{ ... }}` in a comment: a spec is sent as it is, never templated (no Jinja error).
GOOD_SPEC = """\
# Jumbo frames on both ends of the test's veth pair; {{ not a template }}
apiVersion: rdmactl/v1
kind: FabricSpec
metadata:
  name: ansible-test
defaults:
  interfaces:
    - name: ans0
      mtu: 9000
      state: up
    - name: ans1
      mtu: 9000
      state: up
  selftest:
    enabled: false
nodes:
  - match: "ansible-node-*"
    interfaces:
      - name: ans0
        addresses: ["192.0.2.1/24"]
      - name: ans1
        addresses: ["10.200.0.1/24"]
"""

# Line 8 column 12: the MTU; line 9 column 7: the unknown key (rdmactl's own positions).
BAD_SPEC = """\
apiVersion: rdmactl/v1
kind: FabricSpec
metadata:
  name: ansible-test
defaults:
  interfaces:
    - name: ans0
      mtu: 99999
      bogus: 1
"""
BAD_MESSAGES = [
    "bad.yaml:8:12: defaults.interfaces[0].mtu: 99999 is above the maximum 65520",
    'bad.yaml:9:7: defaults.interfaces[0].bogus: unknown key "bogus"',
]

# The ConnectX-7 fixture's port 1 to InfiniBand: a firmware value for the next cold boot.
IB_SPEC = """\
apiVersion: rdmactl/v1
kind: FabricSpec
metadata:
  name: ansible-ib
defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      linkType: infiniband
  selftest:
    enabled: false
"""

# The direct module task: the playbook for the firmware cases (the others use the example playbook).
MODULE_PLAYBOOK = """\
- name: rdmactl module
  hosts: rdma
  gather_facts: false
  tasks:
    - name: Converge
      rdmactl.fabric.rdmactl:
        src: "{{ spec }}"
        dest: "{{ dest }}"
        netns: "{{ netns }}"
        root: "{{ root }}"
        node: ib-node-1
        executable: "{{ rdmactl }}"
"""

failures = []
# Every rdmactl module result the cases saw: case_return_docs checks each key is documented.
seen_results = []

# The field diff of GOOD_SPEC on the fresh namespace: one heading per resource, its fields under it
# in apply order (netdev's mtu and state, then the addresses reconciler's), although rdmactl's
# changes come reconciler by reconciler (ans0, ans1 for netdev, then ans0, ans1 for addresses).
FIELD_DIFF_BEFORE = """\
netdev/ans0:
  mtu: 1500
  state: down
  addresses: []
netdev/ans1:
  mtu: 1500
  state: down
  addresses: []
"""
FIELD_DIFF_AFTER = """\
netdev/ans0:
  mtu: 9000
  state: up
  addresses: ["192.0.2.1/24"]
netdev/ans1:
  mtu: 9000
  state: up
  addresses: ["10.200.0.1/24"]
"""


def check(condition, what, detail=None):
    if condition:
        print("  ok   %s" % what)
    else:
        print("  FAIL %s" % what)
        if detail is not None:
            print("       " + str(detail).replace("\n", "\n       "))
        failures.append(what)
    return condition


class Harness:
    def __init__(self, args):
        self.rdmactl = args.rdmactl
        self.ns = args.netns
        self.work = args.work
        self.source = args.source_dir
        self.inventory = os.path.join(self.work, "inventory.ini")
        with open(self.inventory, "w") as f:
            # become: the example playbook asks for it; the test already runs as root (no sudo here).
            f.write("[rdma]\nlocalhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3 "
                    "ansible_become=false\n")
        config = os.path.join(self.work, "ansible.cfg")
        open(config, "w").close()
        self.env = dict(os.environ)
        self.env.update({
            "ANSIBLE_CONFIG": config,  # no ansible.cfg of the machine or the user
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(self.work, "collections"),
            "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false",
            "ANSIBLE_CALLBACK_PLUGINS": os.path.join(HERE, "callback_plugins"),
            "ANSIBLE_LOCAL_TEMP": os.path.join(self.work, "ansible-local"),
            "ANSIBLE_REMOTE_TEMP": os.path.join(self.work, "ansible-remote"),
            "ANSIBLE_RETRY_FILES_ENABLED": "false",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_DEPRECATION_WARNINGS": "false",
        })
        self.env.pop("RDMACTL_NODE", None)
        self.env.pop("RDMACTL_ROOT", None)
        self.env.pop("RDMACTL_NETNS", None)

    def playbook(self, playbook, extra_vars, flags=(), callback="rdmactl_json", env=None):
        """Runs ansible-playbook; returns (exit code, parsed JSON or None, stdout, stderr)."""
        vars_file = os.path.join(self.work, "extra-vars.json")
        with open(vars_file, "w") as f:
            json.dump(extra_vars, f)
        run_env = dict(self.env, ANSIBLE_STDOUT_CALLBACK=callback)
        run_env.update(env or {})
        argv = ["ansible-playbook", "-i", self.inventory, playbook, "-e", "@" + vars_file] + list(flags)
        proc = subprocess.run(argv, cwd=self.work, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=300)
        parsed = None
        if callback == "rdmactl_json":
            try:
                parsed = json.loads(proc.stdout)
            except ValueError:
                print("ansible-playbook printed no JSON:\n" + proc.stdout + proc.stderr)
        return proc.returncode, parsed, proc.stdout, proc.stderr

    def example(self, spec_path, dest, flags=(), callback="rdmactl_json"):
        """packaging/ansible/rdmactl.yml (the example playbook, through the role) on the namespace."""
        return self.playbook(os.path.join(self.source, "packaging/ansible/rdmactl.yml"), {
            "rdmactl_spec_src": spec_path,
            "rdmactl_dest": dest,
            "rdmactl_netns": self.ns,
            "rdmactl_node": NODE,
            "rdmactl_executable": self.rdmactl,
        }, flags, callback)

    def ip_json(self, *args):
        out = subprocess.run(["ip", "-n", self.ns, "-j"] + list(args), stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        return json.loads(out)

    def snapshot(self):
        """What the specs manage, per link: MTU, administrative state and IPv4 addresses. (Not the
        whole `ip -j addr`: IPv6 link-local addresses and operstate of a link just set up keep
        changing on their own for a few seconds, DAD and carrier.)"""
        return dict((link["ifname"], (link["mtu"], "UP" in link["flags"], addresses(link)))
                    for link in self.ip_json("addr", "show"))

    def link(self, name):
        return self.ip_json("addr", "show", "dev", name)[0]


def module_result(parsed):
    """The rdmactl module's result for localhost (the last task that ran the module)."""
    found = None
    for play in (parsed or {}).get("plays", []):
        for task in play.get("tasks", []):
            result = task.get("hosts", {}).get("localhost")
            if result and result.get("action") in (MODULE, "rdmactl"):
                found = result
                seen_results.append(result)
    return found or {}


def addresses(link):
    return sorted("%s/%d" % (a["local"], a["prefixlen"]) for a in link.get("addr_info", []) if a["family"] == "inet")


def changes_of(result):
    return sorted((c.get("resource"), c.get("field"), json.dumps(c.get("current")), json.dumps(c.get("desired")),
                   c.get("status")) for c in result.get("changes") or [])


def expected_changes(status):
    rows = []
    for netdev, address in (("ans0", "192.0.2.1/24"), ("ans1", "10.200.0.1/24")):
        rows += [("netdev/" + netdev, "mtu", "1500", "9000", status),
                 ("netdev/" + netdev, "state", '"down"', '"up"', status),
                 ("netdev/" + netdev, "addresses", "[]", json.dumps([address]), status)]
    return sorted(rows)


def read(path):
    with open(path) as f:
        return f.read()


def case_namespace(h):
    specs = os.path.join(h.work, "specs")
    os.makedirs(specs)
    good = os.path.join(specs, "fabric.yaml")
    bad = os.path.join(specs, "bad.yaml")
    with open(good, "w") as f:
        f.write(GOOD_SPEC)
    with open(bad, "w") as f:
        f.write(BAD_SPEC)
    etc = os.path.join(h.work, "node", "etc")
    dest = os.path.join(etc, "rdmactl", "fabric.yaml")
    initial = h.snapshot()

    print("check mode on a fresh node (no %s): plans the new spec, writes nothing" % os.path.dirname(dest))
    rc, parsed, out, err = h.example(good, dest, ["--check", "--diff"])
    r = module_result(parsed)
    check(rc == 0, "ansible-playbook --check --diff exits 0", out + err)
    check(r.get("changed") is True, "changed: the spec and the node would change", r)
    check(r.get("spec_changed") is True, "spec_changed: the file would be written")
    check(changes_of(r) == expected_changes("planned"), "changes: each field current -> desired, planned",
          json.dumps(r.get("changes"), indent=1))
    check(r.get("reboot_required") is False and r.get("selftest") is None, "no reboot, no self-test in check mode")
    check(r.get("node") == NODE, "the node name reached rdmactl (--node)", r.get("node"))
    diffs = r.get("diff") or []
    field_diff = [d for d in diffs if "mtu: 1500" in d.get("before", "")]
    check(len(field_diff) == 1 and field_diff[0].get("before") == FIELD_DIFF_BEFORE
          and field_diff[0].get("after") == FIELD_DIFF_AFTER,
          "diff: rdmactl's fields before (current) and after (desired), grouped by resource", diffs)
    check(len(field_diff) == 1 and field_diff[0].get("before_header") == "node %s (netns %s): current (rdmactl plan)"
          % (NODE, h.ns) and field_diff[0].get("after_header") == "node %s (netns %s): desired" % (NODE, h.ns),
          "diff headers name the node and the namespace", field_diff)
    check(any(d.get("after") == GOOD_SPEC for d in diffs), "diff: the spec file's text")
    check(h.snapshot() == initial, "ip -j: the namespace did not change")
    check(not os.path.exists(etc), "nothing was written (no %s)" % etc)

    # The same with the default callback: what a user sees with --diff.
    rc, _, out, err = h.example(good, dest, ["--check", "--diff"], callback="default")
    check(rc == 0 and "-  mtu: 1500" in out and "+  mtu: 9000" in out and "+  state: up" in out,
          "ansible-playbook --check --diff prints each field: -  mtu: 1500 / +  mtu: 9000", out + err)

    print("invalid spec: fails with rdmactl's file:line:column messages, in check mode and apply")
    for flags in (["--check"], []):
        rc, parsed, out, err = h.example(bad, dest, flags)
        r = module_result(parsed)
        msg = r.get("msg", "")
        check(rc != 0 and r.get("failed") is True, "%s fails" % (" ".join(flags) or "apply"), out + err)
        check(all(m in msg for m in BAD_MESSAGES), "msg has rdmactl's file:line:column: field: message", msg)
        check(not msg.lstrip().startswith(("{", "[")) and "template" not in msg.lower()
              and "Traceback" not in msg, "msg is rdmactl's text, not JSON, a Jinja or Python error", msg)
        check(not os.path.exists(etc), "nothing was written")
        check(h.snapshot() == initial, "ip -j: the namespace did not change")

    print("apply on the fresh node: creates the directory, writes the spec, converges")
    rc, parsed, out, err = h.example(good, dest, ["--diff"])
    r = module_result(parsed)
    check(rc == 0 and r.get("changed") is True, "ansible-playbook exits 0, changed", out + err)
    check(changes_of(r) == expected_changes("applied"), "every change applied",
          json.dumps(r.get("changes"), indent=1))
    check(r.get("reboot_required") is False, "no reboot required")
    check(os.path.isfile(dest) and read(dest) == GOOD_SPEC, "%s holds the spec" % dest)
    check(stat.S_IMODE(os.stat(dest).st_mode) == 0o644, "the spec's mode is 0644", oct(os.stat(dest).st_mode))
    check(stat.S_IMODE(os.stat(os.path.dirname(dest)).st_mode) == 0o755, "its directory's mode is 0755")
    check(sorted(os.listdir(os.path.dirname(dest))) == ["fabric.yaml"], "no temporary file left beside it",
          os.listdir(os.path.dirname(dest)))
    for netdev, address in (("ans0", "192.0.2.1/24"), ("ans1", "10.200.0.1/24")):
        link = h.link(netdev)
        check(link["mtu"] == 9000, "ip -j: %s mtu 9000" % netdev, link["mtu"])
        check("UP" in link["flags"], "ip -j: %s up" % netdev, link["flags"])
        check(addresses(link) == [address], "ip -j: %s has exactly %s" % (netdev, address), addresses(link))
    converged = h.snapshot()
    before = os.stat(dest)

    print("rerun: nothing to do, changed=false")
    rc, parsed, out, err = h.example(good, dest)
    r = module_result(parsed)
    check(rc == 0 and r.get("changed") is False, "changed=false", out + err)
    check(r.get("changes") == [] and r.get("spec_changed") is False, "no changes, the spec file is the same", r)
    check((parsed or {}).get("stats", {}).get("localhost", {}).get("changed") == 0, "play recap: changed=0",
          (parsed or {}).get("stats"))
    after = os.stat(dest)
    check((after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "the spec file was not rewritten")
    check(h.snapshot() == converged, "ip -j: the namespace did not change")
    rc, parsed, out, err = h.example(good, dest, ["--check"])
    check(rc == 0 and module_result(parsed).get("changed") is False, "check mode on the converged node: changed=false",
          out + err)
    # A number where the role takes a duration (YAML's `rdmactl_lock_timeout: 0`), as the module's doc allows.
    rc, parsed, out, err = h.example(good, dest, ["-e", '{"rdmactl_lock_timeout": 0}'])
    check(rc == 0 and module_result(parsed).get("changed") is False, "rdmactl_lock_timeout: 0 (a number) is taken",
          out + err)

    print("only the spec's text changed (a comment): the file is written, apply does not run")
    commented = GOOD_SPEC + "# reviewed\n"
    commented_path = os.path.join(os.path.dirname(good), "commented.yaml")
    with open(commented_path, "w") as f:
        f.write(commented)
    rc, parsed, out, err = h.example(commented_path, dest)
    r = module_result(parsed)
    check(rc == 0 and r.get("changed") is True and r.get("spec_changed") is True, "changed: the spec file", out + err)
    check(r.get("changes") == [] and r.get("selftest") is None, "no changes, no apply, no self-test", r)
    check((r.get("report") or {}).get("kind") != "ApplyReport", "the report is the plan's, not an apply's",
          (r.get("report") or {}).get("kind"))
    check(read(dest) == commented, "%s holds the new text" % dest)
    check(h.snapshot() == converged, "ip -j: the namespace did not change")
    rc, parsed, out, err = h.example(good, dest)
    check(rc == 0 and read(dest) == GOOD_SPEC, "the spec put back as it was", out + err)

    print("drift made by hand: converged back")
    subprocess.run(["ip", "-n", h.ns, "link", "set", "ans0", "mtu", "1500"], check=True)
    rc, parsed, out, err = h.example(good, dest)
    r = module_result(parsed)
    check(rc == 0 and r.get("changed") is True, "changed", out + err)
    check(changes_of(r) == [("netdev/ans0", "mtu", "1500", "9000", "applied")], "only the MTU, applied",
          r.get("changes"))
    check(h.link("ans0")["mtu"] == 9000, "ip -j: ans0 mtu 9000 again")
    converged = h.snapshot()

    print("invalid spec over an installed one: the installed spec stays")
    rc, parsed, out, err = h.example(bad, dest)
    check(rc != 0 and read(dest) == GOOD_SPEC, "fails, %s unchanged" % dest, out + err)
    check(h.snapshot() == converged, "ip -j: the namespace did not change")


def make_fixture_root(h, name):
    """The ConnectX-7 fixture under ROOT with the fake mstconfig (and systemctl, sminfo) in
    ROOT/usr/sbin, where --root confines rdmactl's tools; the fakes keep their state in STATE."""
    root = os.path.join(h.work, name, "root")
    state = os.path.join(h.work, name, "state")
    shutil.copytree(os.path.join(h.source, "tests/fixtures/sysfs/cx7-ib"), root, symlinks=True)
    os.makedirs(os.path.join(root, "proc/sys/kernel/random"))
    with open(os.path.join(root, "proc/sys/kernel/random/boot_id"), "w") as f:
        f.write("0b7c1f0e-2f55-4d1e-8a53-3f3f4e0c9a11\n")
    os.makedirs(os.path.join(root, "usr/sbin"))
    for tool in ("mstconfig", "systemctl", "sminfo"):
        os.symlink(os.path.join(h.source, "tests/fake-tools", tool), os.path.join(root, "usr/sbin", tool))
    os.makedirs(state)
    with open(os.path.join(state, "root"), "w") as f:
        f.write(root + "\n")
    env = {"RDMACTL_FAKE_STATE": state}
    subprocess.run([os.path.join(h.source, "tests/fake-tools/fake-firmware"), "add-device", "0000:c1:00.0",
                    "ConnectX7", "LINK_TYPE_P1=ETH(2),ETH(2),ETH(2)", "LINK_TYPE_P2=ETH(2),ETH(2),ETH(2)"],
                   env=dict(os.environ, **env), check=True)
    return root, state, env


def firmware_sets(state):
    log = os.path.join(state, "calls.log")
    if not os.path.exists(log):
        return 0
    return sum(1 for line in read(log).splitlines() if " set " in line)


def case_pending_reboot(h):
    print("firmware link type (fixture root): staged once is changed, already staged is not")
    root, state, env = make_fixture_root(h, "ib")
    spec = os.path.join(h.work, "ib", "infiniband.yaml")
    with open(spec, "w") as f:
        f.write(IB_SPEC)
    dest = os.path.join(h.work, "ib", "etc", "rdmactl", "fabric.yaml")
    playbook = os.path.join(h.work, "module.yml")
    with open(playbook, "w") as f:
        f.write(MODULE_PLAYBOOK)
    extra = {"spec": spec, "dest": dest, "netns": h.ns, "root": root, "rdmactl": h.rdmactl}

    def run(flags=()):
        rc, parsed, out, err = h.playbook(playbook, extra, flags, env=env)
        return rc, module_result(parsed), out + err

    rc, r, log = run(["--check"])
    check(rc == 0 and r.get("changed") is True, "check mode: changed (the link type would be staged)", log)
    check([(c["field"], c["status"], c["requires"]) for c in r.get("changes", [])] == [("linkType", "planned", "reboot")],
          "check mode: linkType planned, requires reboot", r.get("changes"))
    check(r.get("reboot_required") is True, "check mode: reboot_required")
    check(firmware_sets(state) == 0 and not os.path.exists(dest), "check mode: no mstconfig set, no spec written")

    # The same spec already installed (as the old playbook's copy left it): `changed` must come
    # from the staging itself, not from the file.
    os.makedirs(os.path.dirname(dest))
    with open(dest, "w") as f:
        f.write(IB_SPEC)
    rc, r, log = run()
    check(rc == 0 and r.get("changed") is True and r.get("spec_changed") is False,
          "first apply over the same spec file: changed (staged in firmware)", log)
    check([(c["field"], c["status"]) for c in r.get("changes", [])] == [("linkType", "pending-reboot")],
          "first apply: linkType pending-reboot", r.get("changes"))
    check(r.get("reboot_required") is True, "first apply: reboot_required")
    check(firmware_sets(state) == 1, "first apply: one mstconfig set", read(os.path.join(state, "calls.log")))

    for flags in ([], ["--check"]):
        what = "rerun" + (" in check mode" if flags else "")
        rc, r, log = run(flags)
        check(rc == 0 and r.get("changed") is False, "%s: not changed while the reboot is pending" % what, log)
        check(r.get("reboot_required") is True, "%s: still reboot_required" % what, r)
        check([(c["field"], c["status"]) for c in r.get("changes", [])] == [("linkType", "pending-reboot")],
              "%s: reported as pending-reboot" % what, r.get("changes"))
        check(firmware_sets(state) == 1, "%s: no second mstconfig set" % what)


def case_failed_apply(h):
    print("a failed apply: rdmactl's error, and the previous spec file put back")
    root, state, env = make_fixture_root(h, "fail")
    subprocess.run([os.path.join(h.source, "tests/fake-tools/fake-firmware"), "fail-set", "0000:c1:00.0",
                    "-E- Failed to set configuration: device busy"], env=dict(os.environ, **env), check=True)
    spec = os.path.join(h.work, "fail", "infiniband.yaml")
    with open(spec, "w") as f:
        f.write(IB_SPEC)
    dest = os.path.join(h.work, "fail", "etc", "rdmactl", "fabric.yaml")
    playbook = os.path.join(h.work, "module.yml")
    rc, parsed, out, err = h.playbook(playbook, {"spec": spec, "dest": dest, "netns": h.ns, "root": root,
                                                 "rdmactl": h.rdmactl}, env=env)
    r = module_result(parsed)
    check(rc != 0 and r.get("failed") is True, "the task fails", out + err)
    check("device busy" in r.get("msg", "") and "linkType" in r.get("msg", ""),
          "msg carries rdmactl's error for the change", r.get("msg"))
    check([(c["field"], c["status"]) for c in r.get("changes", [])] == [("linkType", "failed")],
          "changes: linkType failed", r.get("changes"))
    check(not os.path.exists(dest), "the new spec was not left in place (there was none before)",
          os.listdir(os.path.dirname(dest)) if os.path.isdir(os.path.dirname(dest)) else None)

    print("rdmactl missing on the node: the task fails with rdmactl's absence, and the full result")
    missing = os.path.join(h.work, "no-such-dir", "rdmactl")
    rc, parsed, out, err = h.playbook(playbook, {"spec": spec, "dest": dest, "netns": h.ns, "root": root,
                                                 "rdmactl": missing}, env=env)
    r = module_result(parsed)
    check(rc != 0 and r.get("failed") is True and r.get("msg", "").startswith("rdmactl not found at %s" % missing),
          "fails: rdmactl not found at %s" % missing, out + err)
    check(r.get("changed") is False and r.get("changes") == [] and r.get("rdmactl_rc") is None
          and r.get("dest") == dest and r.get("spec_changed") is False, "nothing ran, nothing changed", r)


def case_docs(h):
    print("ansible-doc renders the module's documentation")
    proc = subprocess.run(["ansible-doc", MODULE], env=h.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    out = proc.stdout
    check(proc.returncode == 0 and "OPTIONS" in out and "EXAMPLES" in out and "RETURN VALUES" in out,
          "ansible-doc %s" % MODULE, proc.stdout + proc.stderr)
    for option in ("content", "src", "dest", "node", "executable", "netns", "root", "reboot_required", "selftest"):
        check("- %s" % option in out, "documents %s" % option)


# Keys Ansible itself adds to every result (not the module's), and the test callback's `action`.
ANSIBLE_KEYS = ("invocation", "failed", "skipped", "action", "_ansible_no_log", "warnings", "deprecations")


def case_return_docs(h):
    print("every key the module returned in the cases above is documented (ansible-doc RETURN)")
    proc = subprocess.run(["ansible-doc", "--json", MODULE], env=h.env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if not check(proc.returncode == 0, "ansible-doc --json %s" % MODULE, proc.stderr):
        return
    returns = json.loads(proc.stdout)[MODULE]["return"]

    def contains(key):
        return set((returns.get(key) or {}).get("contains") or {})

    check(len(seen_results) >= 10, "the cases ran the module (%d results)" % len(seen_results))
    top, change_keys, report_keys, selftest_keys = set(), set(), set(), set()
    for result in seen_results:
        top |= set(k for k in result if k not in ANSIBLE_KEYS and not k.startswith("_ansible"))
        for change in result.get("changes") or []:
            change_keys |= set(change)
        report_keys |= set(result.get("report") or {})
        selftest_keys |= set(result.get("selftest") or {})
    for what, keys, documented in (("result", top, set(returns)), ("changes[]", change_keys, contains("changes")),
                                   ("report", report_keys, contains("report")),
                                   ("selftest", selftest_keys, contains("selftest"))):
        check(keys <= documented, "%s: every returned key documented (%s)" % (what, ", ".join(sorted(keys))),
              "undocumented: %s" % sorted(keys - documented))
    # The keys every path returns, failures included (RETURN says `always`).
    always = set(k for k, v in returns.items() if v.get("returned") == "always")
    missing = [(sorted(always - set(r)), r.get("msg")) for r in seen_results if not always <= set(r)]
    check(not missing, "the `returned: always` keys are in every result, failures included", missing)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rdmactl", required=True)
    parser.add_argument("--netns", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--source-dir", required=True)
    h = Harness(parser.parse_args())
    for case in (case_docs, case_namespace, case_pending_reboot, case_failed_apply, case_return_docs):
        try:
            case(h)
        except Exception as e:  # a case that breaks is a failure; the others still run
            check(False, "%s ran to the end" % case.__name__, repr(e))
    if failures:
        print("FAILED: %d check(s):\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
