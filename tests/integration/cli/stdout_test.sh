#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Standard output that cannot be written is a failure, against the built binary:
#
#   tests/integration/cli/stdout_test.sh RDMACTL_BINARY
#
#   - every command whose output goes to a full disk (/dev/full: each write fails with ENOSPC)
#     exits non-zero and says "rdmactl: cannot write to standard output: No space left on device":
#     a cut NVUE script or state file must never look like success
#   - a command that already fails keeps its exit code (65 for an invalid spec, 2 for a plan's drift)
#   - with SIGPIPE ignored (as under some CI runners and daemons, `trap '' PIPE`), a reader that
#     went away (EPIPE) is a failure too, naming "Broken pipe"
#   - a command whose output is read to the end still exits 0
#
# Needs no root. Exit codes: 0 passed, 1 failed, 77 skipped (no /dev/full). As root or under CI
# (CI=true) a check that cannot run is a failure, never a skip.
set -u

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 RDMACTL_BINARY (got: ${1:-nothing}, which is not an executable)" >&2
  exit 1
fi
rdmactl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../../.." && pwd)

cannot_run() {
  case "${CI:-}" in true | 1 | yes) echo "FAIL: cannot run under CI: $*" >&2; exit 1 ;; esac
  if [ "$(id -u)" -eq 0 ]; then
    echo "FAIL: cannot run as root: $*" >&2
    exit 1
  fi
  echo "SKIP: $*" >&2
  exit 77
}
[ -c /dev/full ] || cannot_run "/dev/full is not a character device here (a container without it?)"

work=$(mktemp -d /tmp/rdmactl-stdout-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
# show observes the fixture's sysfs under --root; a copy, so that nothing is written into the tree.
cp -a "$source_dir/tests/fixtures/sysfs/cx6dx-roce" "$work/root"
spec=$source_dir/examples/roce-lossless.yaml
state=$source_dir/examples/demo-host.json
printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: bad}\nbogus: 1\n' > "$work/invalid.yaml"

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

# rdmactl ARGS > /dev/full: exit `expected` (or any non-zero when empty), the message on stderr.
check_full() {
  local expected=$1
  shift
  "$rdmactl" --root "$work/root" --node stdout-test "$@" > /dev/full 2> "$work/err"
  local status=$?
  if [ "$status" -eq 0 ]; then
    fail "rdmactl $* > /dev/full: exit 0"
  elif [ -n "$expected" ] && [ "$status" -ne "$expected" ]; then
    fail "rdmactl $* > /dev/full: exit $status, expected $expected"
  elif ! grep -qF "rdmactl: cannot write to standard output: No space left on device" "$work/err"; then
    fail "rdmactl $* > /dev/full: exit $status, stderr does not name standard output: $(cat "$work/err")"
  else
    ok "rdmactl $* > /dev/full: exit $status"
  fi
}
check_full 1 switch-config -f "$spec" --vendor nvue --ports swp1-32
check_full 1 switch-config -f "$spec" --vendor sonic --platform broadcom --cable-length 5m --ports Ethernet0,Ethernet4
check_full 1 switch-config -f "$spec" --vendor eos --platform strata --ports Ethernet1-32
check_full 1 show
check_full 1 show --format json
check_full 1 show --format text
check_full 1 validate -f "$spec"
check_full 1 validate -f "$spec" --format json
check_full 1 completion bash
check_full 1 completion zsh
check_full 1 plan -f "$spec" --state "$state" --format prom
check_full 1 export
check_full 1 --help
check_full 2 plan -f "$spec" --state "$state"
check_full 2 plan -f "$spec" --state "$state" --format json
check_full 65 validate -f "$work/invalid.yaml" --format json

# A reader that is gone, with SIGPIPE ignored: write(2) fails with EPIPE. The reader closes its
# end at once; rdmactl starts half a second later, so that no write can land before.
check_pipe() {
  (
    trap '' PIPE
    { sleep 0.5; exec "$rdmactl" --root "$work/root" --node stdout-test "$@" 2> "$work/err"; } | { exec <&-; }
    exit "${PIPESTATUS[0]}"
  )
  local status=$?
  if [ "$status" -eq 0 ]; then
    fail "rdmactl $* | (closed), SIGPIPE ignored: exit 0"
  elif ! grep -qF "rdmactl: cannot write to standard output: Broken pipe" "$work/err"; then
    fail "rdmactl $* | (closed): exit $status, stderr: $(cat "$work/err")"
  else
    ok "rdmactl $* | (closed), SIGPIPE ignored: exit $status"
  fi
}
check_pipe show
check_pipe completion bash
check_pipe switch-config -f "$spec" --vendor nvue --ports swp1-32

# Output read to the end is a success, and says nothing on stderr.
check_read() {
  "$rdmactl" --root "$work/root" --node stdout-test "$@" > "$work/out" 2> "$work/err"
  local status=$?
  if [ "$status" -ne 0 ] || [ ! -s "$work/out" ] || grep -q "standard output" "$work/err"; then
    fail "rdmactl $* > file: exit $status, $(wc -c < "$work/out") bytes, stderr: $(cat "$work/err")"
  else
    ok "rdmactl $* > file: exit 0"
  fi
}
check_read switch-config -f "$spec" --vendor nvue --ports swp1-32
check_read show
check_read validate -f "$spec"
check_read completion bash

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all passed"
