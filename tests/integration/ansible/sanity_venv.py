#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Prepares the virtual environment `ansible-test sanity --test TEST` would otherwise create with pip,
from Debian's packages, so that the sanity test runs with no network but the package registries.

    HOME=DIR sanity_venv.py TEST     (run from the collection's directory, by the python ansible-test uses)

ansible-test 2.14 runs a single-version sanity test (validate-modules) in its own venv,
~/.ansible/test/venv/sanity.TEST/PYTHON/HASH, and reuses one that has marker.txt
(commands/sanity/__init__.py: create_sanity_virtualenv). It creates a missing one by bootstrapping
pip from https://ci-files.testing.ansible.com/ansible-test/get-pip-*.py
(_util/target/setup/requirements.py: bootstrap) and then pip-installing
_data/requirements/sanity.TEST.txt from PyPI: neither is reachable here, and no option skips it
(ansible/ansible#77304). HASH is of those pip commands (hash_pip_commands), so this computes it with
ansible-test's own functions, exactly as create_sanity_virtualenv does, and makes the venv there with
Debian's python3 and --system-site-packages: Debian's python3-voluptuous, python3-jinja2,
python3-yaml and ansible-core stand in for the pinned wheels. Then it writes what ansible-test writes
after a pip install: meta.install.json, meta.yaml.json (does PyYAML have libyaml: yamlcheck) and
marker.txt.

Prints the venv's directory. Exits 1, saying why, when a requirement is not importable (the Debian
package is missing) or when ansible-test's internals are not the ones this was written against.
"""

import importlib.metadata
import json
import os
import re
import subprocess
import sys

# What sanity.validate-modules.txt pins and the module that provides it.
IMPORT_NAMES = {"jinja2": "jinja2", "markupsafe": "markupsafe", "pyyaml": "yaml", "voluptuous": "voluptuous"}
DEBIAN_PACKAGES = {"jinja2": "python3-jinja2", "markupsafe": "python3-markupsafe", "pyyaml": "python3-yaml",
                   "voluptuous": "python3-voluptuous"}


def die(message):
    print("sanity_venv: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        die("usage: sanity_venv.py TEST")
    test = sys.argv[1]
    try:
        # ansible-test 2.14's internals (Debian 12's ansible-core): the same calls
        # create_sanity_virtualenv makes, so the directory is the one it looks for.
        from ansible_test._internal.commands.sanity import hash_pip_commands
        from ansible_test._internal.util import ANSIBLE_TEST_DATA_ROOT
        from ansible_test._internal.host_configs import NativePythonConfig
        from ansible_test._internal.python_requirements import PipInstall, collect_requirements
    except ImportError as e:
        die("ansible-test's internals moved (%s): this helper follows ansible-core 2.14" % e)

    version = "%d.%d" % sys.version_info[:2]
    python = NativePythonConfig(version=version, path=sys.executable)
    commands = collect_requirements(python=python, controller=True, virtualenv=False, command=None, ansible=False,
                                    cryptography=False, coverage=False, minimize=False, sanity=test)
    label = "sanity.%s" % test if commands else "sanity"
    venv = os.path.join(os.path.expanduser("~/.ansible/test/venv"), label, version, hash_pip_commands(commands))

    requirements = os.path.join(ANSIBLE_TEST_DATA_ROOT, "requirements", "sanity.%s.txt" % test)
    pinned = {}
    with open(requirements) as f:
        for line in f:
            match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
            if match:
                pinned[match.group(1).lower()] = match.group(2)
    installs = [c for c in commands if isinstance(c, PipInstall)]
    if commands and not pinned:
        die("%s lists no pinned requirement: not the file this helper knows" % requirements)

    for name, version_wanted in sorted(pinned.items()):
        module = IMPORT_NAMES.get(name)
        if module is None:
            die("%s needs %s, which this helper does not map to a Debian package" % (requirements, name))
        try:
            __import__(module)
        except ImportError:
            die("%s needs %s: apt-get install %s" % (requirements, name, DEBIAN_PACKAGES[name]))
        have = importlib.metadata.version(name)
        if have != version_wanted:
            # Debian 12 has voluptuous 0.12.2 where ansible-test pins 0.13.1; the sanity test is what
            # decides whether that matters, and it runs below.
            print("sanity_venv: %s %s from Debian (ansible-test pins %s)" % (name, have, version_wanted),
                  file=sys.stderr)

    if not os.path.exists(os.path.join(venv, "marker.txt")):
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], check=True)
        with open(os.path.join(venv, "meta.install.json"), "w") as f:
            json.dump([c.serialize() for c in commands], f, indent=4)
        import yaml
        with open(os.path.join(venv, "meta.yaml.json"), "w") as f:
            # ansible-test's yamlcheck: does PyYAML have libyaml (None: no PyYAML install asked for).
            json.dump(bool(getattr(yaml, "__with_libyaml__", False)) if installs else None, f)
        open(os.path.join(venv, "marker.txt"), "w").close()
    print(venv)


if __name__ == "__main__":
    main()
