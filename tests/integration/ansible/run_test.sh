#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The rdmactl.fabric Ansible collection against the real kernel, with the real ansible-playbook:
#
#   tests/integration/ansible/run_test.sh RDMACTL_BINARY
#
# Builds the collection with ansible-galaxy and installs it (offline) into a temporary
# ANSIBLE_COLLECTIONS_PATH, creates its own network namespace (rdmactl-ansible-<pid>) with a veth
# pair, and runs cases.py: packaging/ansible/rdmactl.yml (the example playbook and its role) and
# direct module tasks, connection local, against that namespace (--netns) and, for firmware, the
# ConnectX-7 fixture with the fake mstconfig under --root. The namespace and the temporary tree
# are removed on exit, whatever happens. Nothing leaves the namespace; no registry is contacted.
#
# Exit codes: 0 passed, 1 failed, 77 skipped (not root, or ansible-playbook missing). Under CI
# (CI=true) a case that cannot run is a failure, never a skip.
set -u

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../../.." && pwd)

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 RDMACTL_BINARY (got: ${1:-nothing}, which is not an executable)" >&2
  exit 1
fi
rdmactl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

under_ci() {
  case "${CI:-}" in true | 1 | yes) return 0 ;; esac
  return 1
}

# Skips with the reason, or under CI fails with it.
cannot_run() {
  if under_ci; then
    echo "FAIL: cannot run under CI (CI=${CI}): $*" >&2
    exit 1
  fi
  echo "SKIP: $*" >&2
  exit 77
}

[ "$(id -u)" -eq 0 ] || cannot_run "needs root for network namespaces (euid $(id -u))"
for tool in ansible-playbook ansible-galaxy ansible-doc; do
  command -v "$tool" > /dev/null ||
    cannot_run "$tool not found: install Debian's ansible-core (apt-get install --no-install-recommends ansible-core)"
done
if ! command -v ip > /dev/null; then
  echo "FAIL: ip not found: install iproute2" >&2
  exit 1
fi

prefix="rdmactl-ansible-"
ns="$prefix$$"
work=$(mktemp -d /tmp/rdmactl-ansible-test.XXXXXX)

cases_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [ -n "$cases_pid" ]; then
    # The cases and the ansible-playbook they run are one process group (setsid below).
    kill -TERM -- "-$cases_pid" 2> /dev/null
    for _ in $(seq 50); do
      kill -0 -- "-$cases_pid" 2> /dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$cases_pid" 2> /dev/null
  fi
  ip netns delete "$ns" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Namespaces a killed run left behind (its pid is gone) are removed; a live run's are left alone.
for old in $(ip netns list 2> /dev/null | awk '{print $1}' | grep "^${prefix}[0-9]*$"); do
  pid=${old#"$prefix"}
  kill -0 "$pid" 2> /dev/null || ip netns delete "$old" 2> /dev/null
done

# As root, a namespace or veth that cannot be made is a failure (the kernel lacks what rdmactl's
# users have), not a skip.
if ! ip netns add "$ns" || ! ip -n "$ns" link set lo up; then
  echo "FAIL: cannot create the network namespace $ns" >&2
  exit 1
fi
# Both ends inside the namespace, left down with the kernel's MTU (1500), as the cases expect.
if ! ip -n "$ns" link add ans0 type veth peer name ans1; then
  echo "FAIL: cannot create a veth pair in $ns" >&2
  exit 1
fi

# The collection as users get it: built from galaxy.yml, installed from the tarball, offline.
collection_src="$source_dir/packaging/ansible/ansible_collections/rdmactl/fabric"
mkdir -p "$work/collections" "$work/build"
if ! ansible-galaxy collection build --force --output-path "$work/build" "$collection_src" > "$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  echo "FAIL: ansible-galaxy collection build" >&2
  exit 1
fi
if ! ansible-galaxy collection install --offline -p "$work/collections" "$work"/build/rdmactl-fabric-*.tar.gz > "$work/install.log" 2>&1; then
  cat "$work/install.log" >&2
  echo "FAIL: ansible-galaxy collection install" >&2
  exit 1
fi

# In the background (its own process group) and waited for, so that a signal runs the traps at
# once (bash delays traps until a foreground child ends); cleanup stops the whole group first.
setsid /usr/bin/python3 "$here/cases.py" --rdmactl "$rdmactl" --netns "$ns" --work "$work" --source-dir "$source_dir" &
cases_pid=$!
wait "$cases_pid"
status=$?
cases_pid=
exit "$status"
