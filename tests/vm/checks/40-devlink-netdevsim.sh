#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl's devlink client (agent/platform/devlink.cpp, through tests/vm/devlink_probe.cpp) against
# the guest kernel's devlink: the family resolves, an unknown device is not-supported (ENODEV); on a
# netdevsim device, info and reload support read as drivers/net/netdevsim/dev.c (6.1) puts them and
# as iproute2's `devlink -j dev info` shows them, and fw_activate is refused as net/devlink refuses
# an action the driver lacks (netdevsim's reload_actions are driver_reinit only).
# vm-timeout: 90
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"

# CMake builds the probe in the build tree's tests/ directory, beside which rdmactl sits one up.
probe=$(dirname "$RDMACTL")/tests/rdmactl_devlink_probe
[ -x "$probe" ] || skip "no devlink probe at $probe (build target rdmactl_devlink_probe)"
cd "$VM_SCRATCH"

# expect_error FILE KIND ERRNO [TEXT]: the probe's JSON error has this kind and errno (and text).
expect_error() {
  python3 - "$@" <<'PY'
import json, sys
path, kind, err = sys.argv[1:4]
text = sys.argv[4] if len(sys.argv) > 4 else None
e = json.load(open(path))["error"]
assert e["kind"] == kind, f"kind {e['kind']!r}, expected {kind!r}: {e}"
assert e["errno"] == int(err), f"errno {e['errno']}, expected {err}: {e}"
assert text is None or text in e["message"], f"{text!r} not in {e['message']!r}"
print(f"ok: {e['where']}: {kind}, errno {err}: {e['message']}")
PY
}

# 1. The family and an unknown device (devlink_get_from_attrs: ENODEV -> not-supported). Debian's
#    6.1 has CONFIG_NET_DEVLINK=y, so the family must resolve.
rc=0
"$probe" info netdevsim/netdevsim97 > unknown.json 2> unknown.err || rc=$?
cat unknown.json
[ "$rc" -eq 1 ] || fail "info of an unknown device exited $rc, expected 1: $(cat unknown.err)"
expect_error unknown.json not-supported 19 || fail "unknown device: wrong error"
rc=0
"$probe" reload-support netdevsim/netdevsim97 > unknown-reload.json 2> unknown-reload.err || rc=$?
[ "$rc" -eq 1 ] || fail "reload-support of an unknown device exited $rc, expected 1"
expect_error unknown-reload.json not-supported 19 || fail "unknown device (GET): wrong error"

# 2. netdevsim. Debian's config leaves it out; setup.sh builds it from Debian's linux-source of this
#    very kernel version (build-netdevsim.sh) into the module tree's updates/, so it must load.
if ! modprobe netdevsim 2> modprobe.err; then
  fail "modprobe netdevsim failed on $(uname -r): $(tr '\n' ' ' < modprobe.err)(setup.sh builds it" \
    "into /lib/modules/$(uname -r)/updates/: $(find "/lib/modules/$(uname -r)/updates" 2>&1 | tr '\n' ' '))"
fi
id=97
dev=netdevsim$id
cleanup() {
  echo "$id" > /sys/bus/netdevsim/del_device 2>/dev/null || true
  modprobe -r netdevsim 2>/dev/null || true
}
trap cleanup EXIT
# new_device_store (drivers/net/netdevsim/bus.c): "ID PORT_COUNT"; the device is "netdevsimID".
echo "$id 1" > /sys/bus/netdevsim/new_device
wait_until 10 test -e "/sys/bus/netdevsim/devices/$dev" || fail "$dev did not appear"

# nsim_dev_info_get: driver "netdevsim", stored and running fw.mgmt 10.20.30, nothing fixed, no
# serial numbers.
"$probe" info "netdevsim/$dev" > info.json || fail "info netdevsim/$dev: $(cat info.json)"
cat info.json
iproute=none
if command -v devlink > /dev/null; then
  devlink -j dev info "netdevsim/$dev" > iproute.json || fail "devlink dev info failed"
  iproute=iproute.json
fi
python3 - info.json "$iproute" "netdevsim/$dev" <<'PY' || fail "info does not match netdevsim's source or iproute2"
import json, sys
ours = json.load(open(sys.argv[1]))
handle = sys.argv[3]
assert ours["driver"] == "netdevsim", ours
assert ours["versions"] == {"fixed": {}, "running": {"fw.mgmt": "10.20.30"},
                            "stored": {"fw.mgmt": "10.20.30"}}, ours["versions"]
assert ours["serial_number"] == "" and ours["board_serial_number"] == "", ours
assert ours["pending_fw_version"] is None, ours
print("ok: info as nsim_dev_info_get puts it")
if sys.argv[2] != "none":
    theirs = json.load(open(sys.argv[2]))["info"][handle]
    assert theirs["driver"] == ours["driver"], theirs
    versions = theirs.get("versions", {})
    for kind in ("fixed", "running", "stored"):
        assert versions.get(kind, {}) == ours["versions"][kind], (kind, versions)
    print("ok: same as devlink -j dev info")
PY

# nsim_dev_devlink_ops: reload_actions = driver_reinit, no reload_limits.
"$probe" reload-support "netdevsim/$dev" > support.json || fail "reload-support: $(cat support.json)"
cat support.json
python3 - support.json <<'PY' || fail "reload support is not netdevsim's"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["driver_reinit"] is True and s["fw_activate"] is False, s
assert s["fw_activate_no_reset"] is False and s["reload_failed"] is False, s
print("ok: reload support driver_reinit only")
PY

# devlink_nl_cmd_reload: the action is checked before the limit, EOPNOTSUPP with
# "Requested reload action is not supported by the driver" (ext-ack prefix "leftover: " in 6.1).
for extra in "" --no-reset; do
  rc=0
  # shellcheck disable=SC2086
  "$probe" fw-activate "netdevsim/$dev" $extra > activate.json 2> activate.err || rc=$?
  cat activate.json
  [ "$rc" -eq 1 ] || fail "fw-activate $extra exited $rc, expected 1: $(cat activate.err)"
  expect_error activate.json not-supported 95 \
    "Requested reload action is not supported by the driver" || fail "fw-activate $extra"
done
if command -v devlink > /dev/null; then
  rc=0
  devlink dev reload "netdevsim/$dev" action fw_activate > iproute-reload.txt 2>&1 || rc=$?
  cat iproute-reload.txt
  if [ "$rc" -eq 0 ] ||
    ! grep -q "Requested reload action is not supported by the driver" iproute-reload.txt; then
    fail "iproute2's fw_activate on netdevsim did not fail the same way"
  fi
fi
# The refused reload left the instance alone: still registered, not marked failed.
"$probe" reload-support "netdevsim/$dev" > support-after.json || fail "device gone after refusal"
grep -q '"reload_failed": false' support-after.json || fail "reload_failed set: $(cat support-after.json)"
echo "ok: devlink on netdevsim/$dev"
