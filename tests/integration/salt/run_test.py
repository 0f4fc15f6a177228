#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The Salt state and execution modules (packaging/salt/_states/rdmactl.py, _modules/rdmactl.py)
against the REAL rdmactl binary, in throwaway network namespaces.

    tests/integration/salt/run_test.py RDMACTL-BINARY [unittest options]

What this is, honestly: Salt itself is NOT run. Salt's loader is not available where this project
builds and tests: Debian 12 has no salt package (apt-cache has no salt-minion, salt-common or
python3-salt; open-vm-tools-salt-minion only ships a script that downloads Salt from
repo.saltproject.io), PyPI is unreachable (pip: "Name or service not known"), and npm's `salt` is
an unrelated JavaScript library. A real-loader test needs the salt wheel and its dependencies
(salt 3006+ wants looseversion, packaging, distro, jinja2, msgpack, pyyaml, psutil, pyzmq,
pycryptodomex, requests, tornado or its vendored copy, ...) brought to the machine, which CI cannot
do. So the modules are loaded as plain Python modules and given, in their globals, what Salt's
loader packs (__salt__, __opts__, __grains__, __pillar__, __context__), and the state function is
called as the state compiler calls it. These stand-ins are kept to what the modules use:
  - config.get: the order of salt/modules/config.py `get`: minion options, grains, pillar, the
    pillar's `master` (the master configuration), else the default.
  - cmd.run_all: runs the argv with subprocess and returns Salt's {pid, retcode, stdout, stderr}
    (salt/modules/cmdmod.py: _run with rstrip=True strips trailing whitespace of both streams);
    it refuses a shell string, which the modules must never pass.
  - cp.get_file_str: salt://PATH read from a local file root, False when the file is missing (as
    salt/modules/cp.py get_file_str returns cache_file's False); nothing else.
  - salt.exceptions.CommandExecutionError: the real class when Salt is importable, else one with
    the same constructor (message, info) and attributes (error, info).
  - Which functions a module exposes, and whether it loads: the loader's own rules, applied here
    (salt/loader/lazy.py, LazyLoader._load_module and _process_virtual): __virtual__ is called
    first and a False or (False, reason) result keeps the module out; then every name of dir(mod)
    that does not start with "_", is a function and was defined in the module becomes
    `rdmactl.NAME`. ModuleConventions checks that those are exactly the documented functions, each
    with a docstring and (execution module) a `CLI Example:` as Salt's own docstring check
    requires (tools/precommit/docstrings.py), that __virtual__ refuses to load without the binary,
    that configuration is read with config.get (the pillar alone is enough, and __opts__ is read
    for nothing but `test`), and that a spec given as a mapping reaches rdmactl as that mapping's
    JSON with no line numbers in what the state says.
init.sls is rendered as Salt renders an SLS, Jinja then YAML (Debian's python3-jinja2 and
python3-yaml, without Salt's own filters), and its options are given to the state function.
What this cannot show: Salt's loader itself (module import under salt.loaded.ext, NamedLoaderContext
dunders), its extra Jinja filters, the highstate outputter, and state ordering and requisites.

Each test creates its own network namespace (rdmactl-salt-<pid>-<n>) with a veth pair inside it,
runs rdmactl there (--netns), checks the result with `ip -n NS -j` (never with rdmactl itself), and
deletes the namespace, also on failure, SIGTERM (ctest's timeout), SIGINT and SIGHUP. The spec is
installed under a temporary directory (dest=...), never /etc. The pending-reboot test uses the
ConnectX-7 fixture under --root with the fake mstconfig (tests/fake-tools), as
tests/netns/infiniband_e2e_test.cpp does.

Needs root (network namespaces). Without root it exits 77 (ctest: skipped) with the reason, except
under CI=true, where it fails: CI must not pass without these tests having run.
"""

import ast
import atexit
import importlib.util
import inspect
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import types
import unittest

# No __pycache__ beside the modules in the source tree.
sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SALT_DIR = os.path.join(SOURCE_DIR, "packaging", "salt")
FAKE_TOOLS = os.path.join(SOURCE_DIR, "tests", "fake-tools")
CX7_FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "cx7-ib")
SKIP = 77
RDMACTL = None  # set in main()
COMMAND_TIMEOUT = 120  # seconds per rdmactl run; the ctest TIMEOUT bounds the whole script


def under_ci():
    return os.environ.get("CI", "") in ("true", "1", "yes")


# --- namespaces and temporary trees: always removed --------------------------------------------

NS_PREFIX = "rdmactl-salt-{}-".format(os.getpid())
_namespaces = []
_tmpdirs = []
_counter = [0]


def ip(*args, check=True):
    result = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError("`ip {}` exited {}: {}".format(" ".join(args), result.returncode, result.stderr.strip()))
    return result


def ip_json(ns, *args):
    return json.loads(ip("-n", ns, "-j", *args).stdout)


def new_namespace():
    _counter[0] += 1
    name = NS_PREFIX + str(_counter[0])
    ip("netns", "add", name)
    _namespaces.append(name)
    return name


def delete_namespace(name):
    if name in _namespaces:
        ip("netns", "delete", name, check=False)
        _namespaces.remove(name)


def new_tmpdir():
    path = tempfile.mkdtemp(prefix="rdmactl-salttest-")
    _tmpdirs.append(path)
    return path


def cleanup():
    for name in list(_namespaces):
        delete_namespace(name)
    for path in list(_tmpdirs):
        shutil.rmtree(path, ignore_errors=True)
        _tmpdirs.remove(path)


def remove_orphans():
    """rdmactl-salt-<pid>-* namespaces whose process is gone: what a killed run left behind."""
    try:
        names = os.listdir("/run/netns")
    except FileNotFoundError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) != 4 or parts[:2] != ["rdmactl", "salt"] or not parts[2].isdigit():
            continue
        try:
            os.kill(int(parts[2]), 0)
        except ProcessLookupError:
            ip("netns", "delete", name, check=False)
        except PermissionError:
            pass


def _on_signal(signum, _frame):
    cleanup()
    os._exit(128 + signum)


# --- the stand-ins for Salt's loader -----------------------------------------------------------


def salt_exceptions():
    try:
        import salt.exceptions  # noqa: F401  (the real one, where Salt is installed)

        return sys.modules["salt.exceptions"]
    except ImportError:
        pass
    module = types.ModuleType("salt.exceptions")

    class CommandExecutionError(Exception):
        # salt/exceptions.py: CommandExecutionError(message="", info=None), .error and .info.
        def __init__(self, message="", info=None):
            super().__init__(message)
            self.error = message
            self.info = info

    module.CommandExecutionError = CommandExecutionError
    package = types.ModuleType("salt")
    package.exceptions = module
    sys.modules["salt"] = package
    sys.modules["salt.exceptions"] = module
    return module


class RecordingOpts(dict):
    """__opts__, remembering which keys the modules read: configuration must come from config.get."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


# What the loader exposes, by its rules (salt/loader/lazy.py, LazyLoader._load_module): names of
# dir(mod) not starting with "_", functions, defined in the module itself (not imported).
def loader_functions(module):
    names = []
    for attr in dir(module):
        if attr.startswith("_"):
            continue
        func = getattr(module, attr)
        if inspect.isfunction(func) and func.__module__ == module.__name__:
            names.append(attr)
    return sorted(names)


EXECUTION_FUNCTIONS = ["apply", "doctor", "plan", "show", "validate"]  # docs/automation.md, "Salt"
STATE_FUNCTIONS = ["converged"]


class Minion:
    """One minion: the dunders Salt's loader would give the two modules, and the state call."""

    def __init__(self, minion_id, file_root=None, binary_in="opts", binary=None):
        self.calls = []  # every argv cmd.run_all ran
        self.spec_files = []  # (path, text) of every -f file rdmactl was given, read before it ran
        self.file_root = file_root
        self.opts = RecordingOpts({"id": minion_id, "test": False})
        self.grains = {"id": minion_id}
        self.pillar = {}
        binary = RDMACTL if binary is None else binary
        if binary_in == "opts":
            self.opts["rdmactl.binary"] = binary
        elif binary_in == "pillar":
            self.pillar["rdmactl.binary"] = binary
        elif binary_in == "master":
            self.pillar["master"] = {"rdmactl.binary": binary}
        self.opts.read.clear()
        self.context = {}
        self.salt = {
            "cmd.run_all": self._cmd_run_all,
            "cp.get_file_str": self._cp_get_file_str,
            "config.get": self._config_get,
        }
        self.execution = self._load("_modules", "rdmactl_execution_module")
        self.execution_virtual = self.execution.__virtual__()
        if self.execution_virtual == "rdmactl":
            for function in loader_functions(self.execution):
                self.salt["rdmactl." + function] = getattr(self.execution, function)
        self.state = self._load("_states", "rdmactl_state_module")
        self.state_virtual = self.state.__virtual__()

    def _load(self, directory, module_name):
        spec = importlib.util.spec_from_file_location(module_name, os.path.join(SALT_DIR, directory, "rdmactl.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        # Salt's loader puts these in the module's globals; so does this.
        module.__salt__ = self.salt
        module.__opts__ = self.opts
        module.__grains__ = self.grains
        module.__pillar__ = self.pillar
        module.__context__ = self.context
        return module

    def _config_get(self, key, default=""):
        # salt/modules/config.py get: minion options, grains, pillar, master configuration.
        for source in (dict(self.opts), self.grains, self.pillar, self.pillar.get("master", {})):
            if key in source:
                return source[key]
        return default

    def _cmd_run_all(self, cmd, python_shell=None, ignore_retcode=False, output_loglevel="debug", **kwargs):
        if not isinstance(cmd, list) or python_shell:
            raise AssertionError("the modules must pass an argv list with python_shell=False: {!r}".format(cmd))
        self.calls.append(cmd)
        if "-f" in cmd:
            path = cmd[cmd.index("-f") + 1]
            with open(path, encoding="utf-8") as handle:
                self.spec_files.append((path, handle.read()))
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        return {"pid": 0, "retcode": result.returncode, "stdout": result.stdout.rstrip(), "stderr": result.stderr.rstrip()}

    def _cp_get_file_str(self, path, saltenv="base"):
        prefix = "salt://"
        if not path.startswith(prefix) or self.file_root is None:
            raise AssertionError("the stand-in fetches only salt:// from the test's file root: " + path)
        local = os.path.join(self.file_root, path[len(prefix):])
        if not os.path.isfile(local):
            return False
        with open(local, encoding="utf-8") as handle:
            return handle.read()

    def converged(self, test=False, **kwargs):
        assert self.state_virtual == "rdmactl", self.state_virtual
        self.opts["test"] = test
        ret = self.state.converged(kwargs.pop("name", "rdmactl"), **kwargs)
        self.opts["test"] = False
        # The four keys every Salt state returns, and nothing Salt would reject.
        assert set(ret) == {"name", "result", "changes", "comment"}, ret
        assert isinstance(ret["changes"], dict) and isinstance(ret["comment"], str), ret
        return ret

    def ran(self, subcommand):
        return [argv for argv in self.calls if subcommand in argv]


# --- specs --------------------------------------------------------------------------------------


def spec_text(ifname, mtu=1400, node_glob="gpu-0[1-2]", address="192.0.2.1/24", extra=""):
    return (
        "apiVersion: rdmactl/v1\n"
        "kind: FabricSpec\n"
        "metadata: {name: salt-test}\n"
        "defaults:\n"
        "  interfaces:\n"
        "    - name: " + ifname + "\n"
        "      mtu: " + str(mtu) + "\n"
        "  selftest: {enabled: false}\n" + extra + "nodes:\n"
        '  - match: "' + node_glob + '"\n'
        "    interfaces:\n"
        "      - name: " + ifname + "\n"
        "        state: up\n"
        '        addresses: ["' + address + '"]\n'
    )


def expected_changes(ifname, mtu=1400):
    return {
        "netdev/" + ifname: {
            "mtu": {"old": 1500, "new": mtu},
            "state": {"old": "down", "new": "up"},
            "addresses": {"old": [], "new": ["192.0.2.1/24"]},
        }
    }


def audit_lines_about(resource):
    try:
        with open("/var/log/rdmactl/audit.jsonl", encoding="utf-8", errors="replace") as handle:
            return [line for line in handle if '"' + resource + '"' in line]
    except FileNotFoundError:
        return []


# --- the tests ----------------------------------------------------------------------------------


class VethTest(unittest.TestCase):
    """A fresh namespace with a veth pair (IFNAME in it, its peer), and a temporary dest."""

    def setUp(self):
        self.ns = new_namespace()
        # Unique names (pid and counter), so the audit log's lines about them are this run's.
        self.ifname = "rs{}n{}".format(os.getpid() % 100000, _counter[0])[:15]
        ip("-n", self.ns, "link", "add", self.ifname, "type", "veth", "peer", "name", self.ifname + "p")
        self.tmp = new_tmpdir()
        self.dest = os.path.join(self.tmp, "etc", "rdmactl", "fabric.yaml")

    def tearDown(self):
        delete_namespace(self.ns)

    def link(self):
        return ip_json(self.ns, "link", "show", "dev", self.ifname)[0]

    def addresses(self):
        info = ip_json(self.ns, "addr", "show", "dev", self.ifname)[0].get("addr_info", [])
        return ["{}/{}".format(a["local"], a["prefixlen"]) for a in info if a["family"] == "inet"]

    def assert_host_untouched(self):
        link = self.link()
        self.assertEqual(link["mtu"], 1500)
        self.assertNotIn("UP", link["flags"])
        self.assertEqual(self.addresses(), [])
        self.assertEqual(audit_lines_about("netdev/" + self.ifname), [], "rdmactl wrote to the host")

    def assert_converged(self, mtu=1400):
        link = self.link()
        self.assertEqual(link["mtu"], mtu)
        self.assertIn("UP", link["flags"])
        self.assertEqual(self.addresses(), ["192.0.2.1/24"])

    def write_dest(self, text):
        os.makedirs(os.path.dirname(self.dest), exist_ok=True)
        with open(self.dest, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.utime(self.dest, (1000000000, 1000000000))

    def assert_dest(self, text):
        with open(self.dest, encoding="utf-8") as handle:
            self.assertEqual(handle.read(), text)


class ConvergedState(VethTest):
    def test_test_mode_plans_the_new_spec_and_writes_nothing(self):
        minion = Minion("gpu-01")
        spec = spec_text(self.ifname)
        ret = minion.converged(test=True, contents=spec, dest=self.dest, netns=self.ns)
        self.assertIsNone(ret["result"], ret)
        want = expected_changes(self.ifname)
        want[self.dest] = {"diff": "New file"}
        self.assertEqual(ret["changes"], want)
        self.assertIn("would make 3 change(s) on node gpu-01", ret["comment"])
        self.assertFalse(os.path.exists(os.path.dirname(self.dest)), "test=True created the spec's directory")
        self.assertEqual(minion.ran("apply"), [])
        self.assert_host_untouched()

        # With an older spec in dest (one the host already matches), the NEW spec is planned and
        # dest keeps its bytes and mtime.
        old = spec_text(self.ifname, mtu=1500, node_glob="nomatch-*")
        self.write_dest(old)
        ret = minion.converged(test=True, contents=spec, dest=self.dest, netns=self.ns)
        self.assertIsNone(ret["result"], ret)
        self.assertEqual(ret["changes"]["netdev/" + self.ifname], expected_changes(self.ifname)["netdev/" + self.ifname])
        self.assertIn("-      mtu: 1500\n+      mtu: 1400\n", ret["changes"][self.dest]["diff"])
        self.assert_dest(old)
        self.assertEqual(os.stat(self.dest).st_mtime, 1000000000)
        self.assert_host_untouched()

    def test_apply_converges_and_a_rerun_changes_nothing(self):
        minion = Minion("gpu-01")
        spec = spec_text(self.ifname)
        ret = minion.converged(contents=spec, dest=self.dest, netns=self.ns)
        self.assertTrue(ret["result"], ret)
        want = expected_changes(self.ifname)
        want[self.dest] = {"diff": "New file"}
        self.assertEqual(ret["changes"], want)
        self.assert_converged()
        self.assert_dest(spec)
        self.assertEqual(stat.S_IMODE(os.stat(self.dest).st_mode), 0o644)
        self.assertEqual(os.listdir(os.path.dirname(self.dest)), ["fabric.yaml"], "a temporary file was left")
        self.assertEqual(len(minion.ran("apply")), 1)
        # apply ran on the installed spec, not on the temporary copy.
        self.assertEqual(minion.ran("apply")[0][minion.ran("apply")[0].index("-f") + 1], self.dest)

        for test in (False, True):
            ret = minion.converged(test=test, contents=spec, dest=self.dest, netns=self.ns)
            self.assertIs(ret["result"], True, ret)
            self.assertEqual(ret["changes"], {}, ret)
            self.assertIn("matches the spec", ret["comment"])
        self.assertEqual(len(minion.ran("apply")), 1, "a converged host was applied again")

        # Without source or contents, the spec in dest is converged.
        ret = minion.converged(dest=self.dest, netns=self.ns)
        self.assertEqual((ret["result"], ret["changes"]), (True, {}), ret)

        # A new spec: only the field that differs, and the file's diff.
        new = spec_text(self.ifname, mtu=1300)
        ret = minion.converged(contents=new, dest=self.dest, netns=self.ns)
        self.assertTrue(ret["result"], ret)
        self.assertEqual(ret["changes"]["netdev/" + self.ifname], {"mtu": {"old": 1400, "new": 1300}})
        self.assertIn("-      mtu: 1400\n+      mtu: 1300\n", ret["changes"][self.dest]["diff"])
        self.assert_converged(mtu=1300)
        self.assert_dest(new)

    def test_an_invalid_spec_fails_with_rdmactl_file_line_and_changes_nothing(self):
        file_root = new_tmpdir()
        os.makedirs(os.path.join(file_root, "rdmactl"))
        # Line 8, column 7: the unknown key.
        bad = spec_text(self.ifname).replace("      mtu: 1400\n", "      mtu: 1400\n      bogus: 1\n", 1)
        self.assertEqual(bad.splitlines()[7], "      bogus: 1")
        with open(os.path.join(file_root, "rdmactl", "fabric.yaml"), "w", encoding="utf-8") as handle:
            handle.write(bad)
        minion = Minion("gpu-01", file_root=file_root)
        old = spec_text(self.ifname, mtu=1500, node_glob="nomatch-*")
        self.write_dest(old)
        for test in (True, False):
            ret = minion.converged(test=test, source="salt://rdmactl/fabric.yaml", dest=self.dest, netns=self.ns)
            self.assertIs(ret["result"], False, ret)
            self.assertEqual(ret["changes"], {})
            self.assertIn(
                'salt://rdmactl/fabric.yaml:8:7: defaults.interfaces[0].bogus: unknown key "bogus"', ret["comment"]
            )
            self.assertNotIn("/rdmactl-salt-", ret["comment"], "the temporary copy's path leaked into the message")
            ret = minion.converged(test=test, name="fabric", contents=bad, dest=self.dest, netns=self.ns)
            self.assertIs(ret["result"], False, ret)
            self.assertIn("contents of fabric:8:7: defaults.interfaces[0].bogus", ret["comment"])
        self.assert_dest(old)
        self.assertEqual(os.stat(self.dest).st_mtime, 1000000000)
        self.assertEqual(minion.ran("plan"), [], "an invalid spec was planned")
        self.assert_host_untouched()

        ret = minion.converged(source="salt://rdmactl/missing.yaml", dest=self.dest, netns=self.ns)
        self.assertIs(ret["result"], False, ret)
        self.assertIn("cannot fetch the spec salt://rdmactl/missing.yaml", ret["comment"])

    def test_a_spec_this_host_cannot_resolve_fails_before_anything_is_written(self):
        minion = Minion("gpu-01")
        spec = spec_text(self.ifname).replace("name: " + self.ifname, "name: nosuch0", 1)
        ret = minion.converged(contents=spec, dest=self.dest, netns=self.ns)
        self.assertIs(ret["result"], False, ret)
        self.assertIn("contents of rdmactl:6:7 defaults.interfaces[0] (netdev nosuch0): no netdev named nosuch0", ret["comment"])
        self.assertFalse(os.path.exists(self.dest))
        self.assert_host_untouched()

    def test_a_failed_apply_is_rolled_back_and_fails_the_state(self):
        minion = Minion("gpu-01")
        # The kernel refuses the value (proc_dointvec): apply fails and rolls the MTU back.
        spec = spec_text(self.ifname, extra='  sysctl:\n    net.ipv4.tcp_ecn: "banana"\n')
        ret = minion.converged(contents=spec, dest=self.dest, netns=self.ns)
        self.assertIs(ret["result"], False, ret)
        self.assertIn('sysctl/net.ipv4.tcp_ecn value: /proc/sys/net/ipv4/tcp_ecn: cannot write "banana"', ret["comment"])
        self.assertIn("rolled back: ", ret["comment"])
        # The node was rolled back, and so is the file (there was none): `rdmactl serve` watching
        # it must not retry the spec that failed. Nothing on the host changed.
        self.assertIn(self.dest + " put back as it was", ret["comment"])
        self.assertEqual(ret["changes"], {})
        self.assertFalse(os.path.exists(self.dest))
        link = self.link()
        self.assertEqual(link["mtu"], 1500)
        self.assertEqual(self.addresses(), [])

        # Over an installed spec: the installed one is put back, as it was.
        installed = spec_text(self.ifname, mtu=1500)
        os.makedirs(os.path.dirname(self.dest), exist_ok=True)
        with open(self.dest, "w", encoding="utf-8") as handle:
            handle.write(installed)
        ret = minion.converged(contents=spec, dest=self.dest, netns=self.ns)
        self.assertIs(ret["result"], False, ret)
        self.assertEqual(ret["changes"], {})
        self.assert_dest(installed)
        self.assertEqual(self.link()["mtu"], 1500)

    def test_an_fqdn_minion_id_is_matched_by_its_short_name(self):
        minion = Minion("gpu-02.cluster.example.com")
        ret = minion.converged(contents=spec_text(self.ifname), dest=self.dest, netns=self.ns)
        self.assertTrue(ret["result"], ret)
        self.assertEqual(ret["changes"]["netdev/" + self.ifname], expected_changes(self.ifname)["netdev/" + self.ifname])
        self.assert_converged()
        for argv in minion.ran("plan") + minion.ran("apply"):
            self.assertEqual(argv[argv.index("--node") + 1], "gpu-02")

        # node= overrides it: login-01 gets only the defaults (the MTU), not gpu-0[1-2]'s entry.
        other = VethNamespace()
        try:
            minion = Minion("gpu-02.cluster.example.com")
            ret = minion.converged(
                test=True, node="login-01", contents=spec_text(other.ifname), dest=self.dest, netns=other.ns
            )
            self.assertEqual(ret["changes"]["netdev/" + other.ifname], {"mtu": {"old": 1500, "new": 1400}}, ret)
            self.assertIn("on node login-01", ret["comment"])
        finally:
            other.delete()


class VethNamespace:
    """A second namespace inside one test."""

    def __init__(self):
        self.ns = new_namespace()
        self.ifname = "rs{}n{}".format(os.getpid() % 100000, _counter[0])[:15]
        ip("-n", self.ns, "link", "add", self.ifname, "type", "veth", "peer", "name", self.ifname + "p")

    def delete(self):
        delete_namespace(self.ns)


class ExecutionModule(VethTest):
    def test_functions_return_rdmactl_reports(self):
        minion = Minion("gpu-01.example.com")
        spec = os.path.join(self.tmp, "fabric.yaml")
        with open(spec, "w", encoding="utf-8") as handle:
            handle.write(spec_text(self.ifname))
        ex = minion.execution

        self.assertEqual(ex._short_node_name("gpu-01.cluster.example.com"), "gpu-01")
        self.assertEqual(ex._short_node_name("10.0.0.5"), "10.0.0.5")
        self.assertEqual(ex.validate(spec)["valid"], True)

        plan = ex.plan(spec, netns=self.ns)
        self.assertEqual((plan["kind"], plan["retcode"], plan["node"]), ("Plan", 2, "gpu-01"))
        self.assertEqual(len(plan["changes"]), 3)
        check = ex.apply(spec, netns=self.ns, check=True)
        self.assertEqual(check["retcode"], 2)
        self.assert_host_untouched()

        state = ex.show(netns=self.ns)
        self.assertIn(self.ifname, [n["name"] for n in state["netdevs"]])

        applied = ex.apply(spec, netns=self.ns)
        self.assertEqual((applied["kind"], applied["retcode"], applied["summary"]["applied"]), ("ApplyReport", 0, 3))
        self.assert_converged()
        self.assertEqual(ex.plan(spec, netns=self.ns)["retcode"], 0)

        with open(spec, "a", encoding="utf-8") as handle:
            handle.write("bogus: 1\n")
        where = "{}:{}:1: bogus: unknown key".format(spec, len(spec_text(self.ifname).splitlines()) + 1)
        invalid = ex.validate(spec)
        self.assertFalse(invalid["valid"])
        self.assertEqual(minion.context.get("retcode"), 65)
        self.assertTrue(invalid["messages"][0].startswith(where), invalid)
        # The same line as rdmactl's own text output.
        text = subprocess.run([RDMACTL, "validate", "-f", spec], capture_output=True, text=True, timeout=60)
        self.assertEqual(text.returncode, 65)
        self.assertEqual(invalid["messages"], text.stderr.splitlines()[: len(invalid["messages"])])
        exc = minion.state.CommandExecutionError
        with self.assertRaises(exc) as raised:
            ex.plan(spec, netns=self.ns)
        self.assertIn(where, str(raised.exception))
        # The binary configured after the module loaded is gone: an error naming it.
        missing = os.path.join(self.tmp, "no-rdmactl")
        minion.opts["rdmactl.binary"] = missing
        with self.assertRaises(exc) as raised:
            ex.plan(spec)
        self.assertEqual(str(raised.exception), "rdmactl.binary is {}, which is not an executable file".format(missing))
        # Every argv ran the configured binary, with no shell.
        self.assertTrue(minion.calls)
        self.assertEqual({argv[0] for argv in minion.calls}, {RDMACTL})


class ModuleConventions(unittest.TestCase):
    """Salt's conventions for loader modules, checked on the modules themselves."""

    def test_only_the_documented_functions_are_exposed(self):
        minion = Minion("gpu-01")
        self.assertEqual(loader_functions(minion.execution), EXECUTION_FUNCTIONS)
        self.assertEqual(loader_functions(minion.state), STATE_FUNCTIONS)
        self.assertEqual(sorted(k for k in minion.salt if k.startswith("rdmactl.")), ["rdmactl." + f for f in EXECUTION_FUNCTIONS])
        # A helper without "_" would be exposed: the loader's rule catches it (this guards the
        # rule above against passing everything).
        probe = types.ModuleType(minion.execution.__name__)
        exec("def helper():\n    pass\n\ndef _private():\n    pass\n\nfrom os.path import join\n", probe.__dict__)
        self.assertEqual(loader_functions(probe), ["helper"])

    def test_every_public_function_has_a_docstring_and_a_cli_example(self):
        # tools/precommit/docstrings.py: every public function of a loader module has a docstring;
        # those of salt/modules also a "CLI Example:" section, whose proper format it gives as
        # "CLI Example:\n\n.. code-block:: bash\n\n    salt '*' <insert example here>".
        for directory, functions in (("_modules", EXECUTION_FUNCTIONS), ("_states", STATE_FUNCTIONS)):
            with open(os.path.join(SALT_DIR, directory, "rdmactl.py"), encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            public = {}
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                    public[node.name] = ast.get_docstring(node, clean=True)
            self.assertEqual(sorted(public), functions, directory)
            for name, docstring in public.items():
                self.assertTrue(docstring, "{}/{} has no docstring".format(directory, name))
                if directory == "_modules":
                    example = r"CLI Examples?:\n\n\.\. code-block:: bash\n\n    salt '\*' rdmactl\.{}\b".format(name)
                    self.assertRegex(docstring, example, "{}/{}".format(directory, name))

    def test_the_files_carry_the_apache_licence(self):
        for path in ("_modules/rdmactl.py", "_states/rdmactl.py", "rdmactl/init.sls"):
            with open(os.path.join(SALT_DIR, path), encoding="utf-8") as handle:
                self.assertEqual(handle.readline(), "# SPDX-License-Identifier: Apache-2.0\n", path)

    def test_virtual_refuses_to_load_without_the_binary(self):
        missing = os.path.join(new_tmpdir(), "no-rdmactl")
        minion = Minion("gpu-01", binary=missing)
        self.assertEqual(
            minion.execution_virtual,
            (False, "The rdmactl execution module cannot be loaded: rdmactl.binary is {}, which is not an executable file".format(missing)),
        )
        self.assertNotIn("rdmactl.plan", minion.salt)
        self.assertEqual(
            minion.state_virtual,
            (False, "The rdmactl state module cannot be loaded: the rdmactl execution module is not loaded"),
        )
        # A directory is not the binary either.
        minion = Minion("gpu-01", binary=os.path.dirname(missing))
        self.assertIs(minion.execution_virtual[0], False)

        # Nothing configured: rdmactl on PATH, else /usr/sbin/rdmactl.
        saved = os.environ["PATH"]
        try:
            os.environ["PATH"] = os.path.dirname(missing)
            minion = Minion("gpu-01", binary_in=None)
            if os.access("/usr/sbin/rdmactl", os.X_OK):
                self.assertEqual(minion.execution_virtual, "rdmactl")
            else:
                self.assertEqual(
                    minion.execution_virtual,
                    (False, "The rdmactl execution module cannot be loaded: no rdmactl on PATH nor /usr/sbin/rdmactl (set rdmactl.binary)"),
                )
            os.environ["PATH"] = os.path.dirname(RDMACTL) + os.pathsep + saved
            minion = Minion("gpu-01", binary_in=None)
            self.assertEqual(minion.execution_virtual, "rdmactl")
        finally:
            os.environ["PATH"] = saved

    def test_configuration_is_read_with_config_get(self):
        # The binary set only in the pillar, or only in the master configuration: both are found,
        # which only config.get does; and __opts__ is read for nothing but `test`.
        spec = os.path.join(new_tmpdir(), "fabric.yaml")
        with open(spec, "w", encoding="utf-8") as handle:
            handle.write(spec_text("eth0"))
        for where in ("pillar", "master"):
            minion = Minion("gpu-01", binary_in=where)
            self.assertEqual((minion.execution_virtual, minion.state_virtual), ("rdmactl", "rdmactl"), where)
            self.assertTrue(minion.execution.validate(spec)["valid"])
            self.assertEqual(minion.calls[-1][0], RDMACTL)
            ret = minion.converged(test=True, contents=spec_text("eth0").replace("mtu: 1400", "bogus: 1"), dest=spec + ".dest")
            self.assertIs(ret["result"], False, ret)
            self.assertLessEqual(minion.opts.read, {"test"}, where)


class StructuredContents(VethTest):
    """contents: given as a mapping (from the SLS or the pillar), not as text."""

    def mapping(self, **interface):
        entry = {"name": self.ifname, "mtu": 1400}
        entry.update(interface)
        return {
            "apiVersion": "rdmactl/v1",
            "kind": "FabricSpec",
            "metadata": {"name": "salt-test"},
            "defaults": {"interfaces": [entry], "selftest": {"enabled": False}},
        }

    def test_a_mapping_reaches_rdmactl_as_its_json_and_messages_carry_no_line_numbers(self):
        minion = Minion("gpu-01")
        good = self.mapping()
        ret = minion.converged(test=True, name="fabric", contents=good, dest=self.dest, netns=self.ns)
        self.assertIsNone(ret["result"], ret)
        self.assertEqual(ret["changes"]["netdev/" + self.ifname], {"mtu": {"old": 1500, "new": 1400}})
        # What rdmactl read (validate, then plan): the mapping's JSON, nothing added to it.
        self.assertEqual([json.loads(text) for _, text in minion.spec_files], [good, good])
        self.assert_host_untouched()

        bad = self.mapping(bogus=1)
        minion.spec_files.clear()
        ret = minion.converged(test=True, name="fabric", contents=bad, dest=self.dest, netns=self.ns)
        self.assertIs(ret["result"], False, ret)
        self.assertEqual([json.loads(text) for _, text in minion.spec_files], [bad])
        first, second = ret["comment"].split("\n")
        self.assertEqual(first, "The spec is invalid (contents of fabric); {} was not changed:".format(self.dest))
        # rdmactl's own message, with the file:line:column of the JSON it read replaced by the name.
        self.assertRegex(second, r'^contents of fabric: defaults\.interfaces\[0\]\.bogus: unknown key "bogus"( \(expected one of: [a-zA-Z, ]+\))?$')

        missing = self.mapping()
        missing["defaults"]["interfaces"][0]["name"] = "nosuch0"
        ret = minion.converged(name="fabric", contents=missing, dest=self.dest, netns=self.ns)
        self.assertIs(ret["result"], False, ret)
        self.assertIn("contents of fabric defaults.interfaces[0] (netdev nosuch0): no netdev named nosuch0", ret["comment"])
        self.assertIsNone(re.search(r"contents of fabric:\d", ret["comment"]), ret["comment"])
        self.assertNotIn("/rdmactl-salt-", ret["comment"])
        self.assertFalse(os.path.exists(self.dest))
        self.assert_host_untouched()


class PendingReboot(unittest.TestCase):
    """
    The ConnectX-7 fixture under --root, its netdev ib0 a veth in the namespace, the fake
    mstconfig in ROOT/usr/sbin (where --root confines rdmactl's tools) playing the firmware before
    its conversion (LINK_TYPE_P1 ETH), as tests/netns/infiniband_e2e_test.cpp sets them up.
    """

    SPEC = (
        "apiVersion: rdmactl/v1\n"
        "kind: FabricSpec\n"
        "metadata: {name: salt-ib}\n"
        "defaults:\n"
        "  interfaces:\n"
        "    - rdmaDevice: mlx5_0\n"
        "      linkType: infiniband\n"
        "      mtu: 2044\n"
        "  selftest: {enabled: false}\n"
    )

    def setUp(self):
        self.ns = new_namespace()
        ip("-n", self.ns, "link", "add", "ib0", "type", "veth", "peer", "name", "ib0peer")
        self.root = new_tmpdir()
        shutil.copytree(CX7_FIXTURE, self.root, symlinks=True, dirs_exist_ok=True)
        os.makedirs(os.path.join(self.root, "proc/sys/kernel/random"))
        with open(os.path.join(self.root, "proc/sys/kernel/random/boot_id"), "w") as handle:
            handle.write("0b7c1f0e-2f55-4d1e-8a53-3f3f4e0c9a11\n")
        os.makedirs(os.path.join(self.root, "usr/sbin"))
        os.symlink(os.path.join(FAKE_TOOLS, "mstconfig"), os.path.join(self.root, "usr/sbin/mstconfig"))
        self.fake_state = new_tmpdir()
        self.saved_env = os.environ.get("RDMACTL_FAKE_STATE")
        os.environ["RDMACTL_FAKE_STATE"] = self.fake_state
        self.fake_firmware(
            "add-device", "0000:c1:00.0", "ConnectX7", "LINK_TYPE_P1=ETH(2),ETH(2),ETH(2)", "LINK_TYPE_P2=ETH(2),ETH(2),ETH(2)"
        )
        self.dest = os.path.join(new_tmpdir(), "fabric.yaml")

    def tearDown(self):
        if self.saved_env is None:
            os.environ.pop("RDMACTL_FAKE_STATE", None)
        else:
            os.environ["RDMACTL_FAKE_STATE"] = self.saved_env
        delete_namespace(self.ns)

    def fake_firmware(self, *args):
        subprocess.run([os.path.join(FAKE_TOOLS, "fake-firmware")] + list(args), check=True, timeout=30)

    def firmware_sets(self):
        with open(os.path.join(self.fake_state, "calls.log")) as handle:
            return [line for line in handle if " set " in line]

    def test_a_staged_firmware_change_is_reported_once_not_on_every_run(self):
        minion = Minion("gpu-01.example.com")
        run = dict(contents=self.SPEC, dest=self.dest, netns=self.ns, root=self.root)
        ret = minion.converged(**run)
        self.assertTrue(ret["result"], ret)
        self.assertEqual(
            ret["changes"]["pci/0000:c1:00.0"],
            {"linkType": {"old": "ethernet", "new": "infiniband", "requires": "reboot"}},
        )
        self.assertEqual(ret["changes"]["netdev/ib0"], {"mtu": {"old": 1500, "new": 2044}})
        self.assertIn("staged for the next cold reboot (power cycle): pci/0000:c1:00.0 linkType", ret["comment"])
        self.assertEqual(len(self.firmware_sets()), 1)
        self.assertEqual(ip_json(self.ns, "link", "show", "dev", "ib0")[0]["mtu"], 2044)

        # Staged: rdmactl's plan still lists it (pending-reboot, exit 2) until a power cycle; the
        # state neither applies again nor reports a change, in test mode or not.
        for test in (False, True, False):
            ret = minion.converged(test=test, **run)
            self.assertIs(ret["result"], True, ret)
            self.assertEqual(ret["changes"], {}, ret)
            self.assertIn("waiting for a cold reboot (power cycle), already staged: pci/0000:c1:00.0 linkType", ret["comment"])
        self.assertEqual(len(minion.ran("apply")), 1)
        self.assertEqual(len(self.firmware_sets()), 1)

        # The power cycle loads it: nothing left to wait for.
        self.fake_firmware("reboot", "cold", self.root)
        ret = minion.converged(**run)
        self.assertEqual((ret["result"], ret["changes"]), (True, {}), ret)
        self.assertNotIn("reboot", ret["comment"])


class ExampleSls(VethTest):
    def test_the_example_sls_renders_and_its_state_runs(self):
        # Salt renders an SLS with Jinja, then YAML (salt/renderers/jinja.py, yaml.py); so does this,
        # with the same Debian libraries (python3-jinja2, python3-yaml) and no Salt filters.
        try:
            import jinja2
            import yaml
        except ImportError as exc:
            self.fail("rendering init.sls needs python3-jinja2 and python3-yaml: {}".format(exc))
        with open(os.path.join(SALT_DIR, "rdmactl", "init.sls"), encoding="utf-8") as handle:
            rendered = yaml.safe_load(jinja2.Template(handle.read()).render(grains={"id": "gpu-01"}, pillar={}))
        self.assertEqual(list(rendered), ["rdmactl"])
        self.assertEqual(list(rendered["rdmactl"]), ["rdmactl.converged"])
        options = {}
        for option in rendered["rdmactl"]["rdmactl.converged"]:
            options.update(option)
        self.assertEqual(options, {"source": "salt://rdmactl/fabric.yaml"})

        # The state with the SLS's options (dest and netns pointed at the test's), in test mode.
        file_root = new_tmpdir()
        os.makedirs(os.path.join(file_root, "rdmactl"))
        with open(os.path.join(file_root, "rdmactl", "fabric.yaml"), "w", encoding="utf-8") as handle:
            handle.write(spec_text(self.ifname))
        minion = Minion("gpu-01.example.com", file_root=file_root)
        ret = minion.converged(test=True, name="rdmactl", dest=self.dest, netns=self.ns, **options)
        self.assertIsNone(ret["result"], ret)
        self.assertEqual(ret["changes"]["netdev/" + self.ifname], expected_changes(self.ifname)["netdev/" + self.ifname])
        self.assert_host_untouched()


def main():
    global RDMACTL
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print("usage: {} RDMACTL-BINARY [unittest options]".format(sys.argv[0]), file=sys.stderr)
        return 64
    RDMACTL = os.path.abspath(sys.argv[1])
    if not os.access(RDMACTL, os.X_OK):
        print("salt tests: {} is not an executable rdmactl".format(RDMACTL), file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        message = "salt tests: need root for network namespaces (euid {})".format(os.geteuid())
        if under_ci():
            print(message + "; CI=true: failing instead of skipping", file=sys.stderr)
            return 1
        print(message + "; skipped", file=sys.stderr)
        return SKIP
    if shutil.which("ip") is None:
        print("salt tests: `ip` (iproute2) not found", file=sys.stderr)
        return 1
    salt_exceptions()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_signal)
    atexit.register(cleanup)
    remove_orphans()
    # Every temporary file of the run (the state's private spec copies too) below one directory,
    # which cleanup removes even when a signal stops a state half-way.
    tempfile.tempdir = new_tmpdir()
    try:
        program = unittest.main(argv=[sys.argv[0]] + sys.argv[2:], exit=False, verbosity=2)
        result = program.result
        if result.skipped and under_ci():
            print("salt tests: {} skipped under CI=true".format(len(result.skipped)), file=sys.stderr)
            return 1
        return 0 if result.wasSuccessful() and result.testsRun > 0 else 1
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
