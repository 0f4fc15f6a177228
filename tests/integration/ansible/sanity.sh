#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `ansible-test sanity --test validate-modules` on the rdmactl.fabric collection, with no ignore file,
# where only Debian's package archive is reachable:
#
#   tests/integration/ansible/sanity.sh
#
# ansible-test 2.14 runs validate-modules in a venv it fills with pip (a get-pip script from
# ci-files.testing.ansible.com, then PyPI); sanity_venv.py makes that venv beforehand from Debian's
# python3 and packages (python3-voluptuous, python3-jinja2, python3-yaml, ansible-core) in the place
# ansible-test looks for it, so ansible-test finds it ready and downloads nothing. HOME is a
# temporary directory: nothing is left in the real ~/.ansible.
#
# ansible-test wants the collection at .../ansible_collections/rdmactl/fabric and lists its files
# with git when a .git is above it (then the whole rdmactl tree), else by walking the directory.
# The collection is copied to a temporary ansible_collections/rdmactl/fabric outside any repository:
# exactly its files are tested (untracked ones too), and ansible-test's tests/output/ lands in the
# copy, not in the source tree.
#
# First a negative control: a copy with a broken author line and no GPL header must fail with both
# errors (the harness sees a failing sanity test as a failure). Then the collection itself must pass.
#
# Exit codes: 0 passed, 1 failed, 77 skipped (ansible-test or a Debian package missing). Under CI
# (CI=true) what cannot run is a failure, never a skip.
set -u

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../../.." && pwd)
collection_src="$source_dir/packaging/ansible/ansible_collections/rdmactl/fabric"
module_rel=plugins/modules/rdmactl.py
# Debian's interpreter: ansible-core and the python3-* packages are installed for it; a python3 from
# pyenv or /usr/local first in PATH has none of them.
python=/usr/bin/python3

under_ci() {
  case "${CI:-}" in true | 1 | yes) return 0 ;; esac
  return 1
}

cannot_run() {
  if under_ci; then
    echo "FAIL: cannot run under CI (CI=${CI}): $*" >&2
    exit 1
  fi
  echo "SKIP: $*" >&2
  exit 77
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

command -v ansible-test > /dev/null ||
  cannot_run "ansible-test not found: install Debian's ansible-core (apt-get install --no-install-recommends ansible-core)"
[ -x "$python" ] || cannot_run "$python not found: install Debian's python3"
python_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || fail "$python does not run"

# No ignore file: every finding must be fixed, not waived.
ignores=$(find "$collection_src/tests/sanity" -name 'ignore-*.txt' 2> /dev/null)
[ -z "$ignores" ] || fail "sanity ignore file(s) present, the issue allows none: $ignores"

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-ansible-sanity.XXXXXX")
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

export HOME="$work/home"
mkdir -p "$HOME"
# The machine's or the user's Ansible settings do not reach the test.
unset ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS ANSIBLE_TEST_CONTENT_ROOT
export ANSIBLE_NOCOLOR=1

# Copies the collection to $work/NAME/ansible_collections/rdmactl/fabric; prints that directory.
copy_collection() {
  local dest="$work/$1/ansible_collections/rdmactl/fabric"
  mkdir -p "$(dirname "$dest")"
  cp -a "$collection_src" "$dest" || fail "cannot copy $collection_src"
  find "$dest" -name __pycache__ -prune -exec rm -rf {} +
  rm -rf "$dest/tests/output"
  echo "$dest"
}

# Runs validate-modules in DIR (a collection copy); its output goes to LOG. Returns ansible-test's status.
sanity() {
  local dir=$1 log=$2 venv
  if ! venv=$(cd "$dir" && "$python" "$here/sanity_venv.py" validate-modules 2> "$log.venv"); then
    cat "$log.venv" >&2
    if grep -q "apt-get install" "$log.venv"; then
      cannot_run "a Debian package validate-modules needs is missing (above)"
    fi
    fail "cannot prepare the validate-modules venv from Debian's packages"
  fi
  cat "$log.venv" >&2
  (cd "$dir" && ansible-test sanity --test validate-modules --python "$python_version" \
    --python-interpreter "$python" --color no -v) > "$log" 2>&1
  local status=$?
  # The venv above was used: nothing was installed, nothing downloaded.
  if grep -q -e "Installing requirements" -e "Downloading pip" -e "Created Python .* virtual environment" "$log"; then
    cat "$log" >&2
    fail "ansible-test did not use the prepared venv $venv (it tried to create one and install with pip)"
  fi
  grep -q "^Run command: $venv/bin/python .*validate-modules/validate.py .* $module_rel" "$log" || {
    cat "$log" >&2
    fail "validate-modules did not run on $module_rel with $venv/bin/python"
  }
  return $status
}

echo "negative control: the author line and the GPL header broken on purpose"
broken=$(copy_collection broken)
grep -q '^  - rdmactl maintainers (!UNKNOWN)$' "$broken/$module_rel" || fail "the module's author line moved: update the control"
grep -q '^# GNU General Public License v3.0+' "$broken/$module_rel" || fail "the module's GPL line moved: update the control"
sed -i -e 's/^  - rdmactl maintainers (!UNKNOWN)$/  - rdmactl maintainers/' \
  -e '/^# GNU General Public License v3.0+/d' "$broken/$module_rel"
if sanity "$broken" "$work/broken.log"; then
  cat "$work/broken.log" >&2
  fail "validate-modules passed a module with a broken author and no GPL header"
fi
for expected in \
  "ERROR: $module_rel:0:0: invalid-documentation: DOCUMENTATION.author: Invalid author" \
  "ERROR: $module_rel:0:0: missing-gplv3-license: GPLv3 license header not found"; do
  grep -q -F "$expected" "$work/broken.log" || {
    cat "$work/broken.log" >&2
    fail "the control did not report: $expected"
  }
  echo "  ok   reported: $expected"
done

echo "the collection: validate-modules with no ignore file"
tested=$(copy_collection tested)
if ! sanity "$tested" "$work/tested.log"; then
  cat "$work/tested.log" >&2
  fail "ansible-test sanity --test validate-modules"
fi
grep -E "^(Running sanity test|Read [0-9]+ sanity test ignore)" "$work/tested.log"
grep -q "^Read 0 sanity test ignore line" "$work/tested.log" || fail "ansible-test read ignore lines"
echo "PASSED: ansible-test sanity --test validate-modules (Python $python_version, $python, offline)"
