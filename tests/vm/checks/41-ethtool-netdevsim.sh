#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ethtool reconciler against the guest kernel's ethtool netlink family on a netdevsim netdev
# (drivers/net/netdevsim/ethtool.c, 6.1): rdmactl plan/apply of rings and pause, a second plan
# with nothing to do, a rollback that restores the rings; rdmactl's plan errors for what the
# kernel would refuse (pause autoneg: nsim_set_pauseparam's EINVAL; a ring above 4096:
# ethnl_set_rings' "requested ring size exceeds maximum"), each refusal also checked against the
# kernel itself. The kernel's values are read with a small generic netlink client in Python
# (below), never with rdmactl: the guest has no ethtool program.
# vm-timeout: 120
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"
cd "$VM_SCRATCH"

if ! modprobe netdevsim 2> modprobe.err; then
  fail "modprobe netdevsim failed on $(uname -r): $(tr '\n' ' ' < modprobe.err)"
fi
id=41
ecn_before=$(cat /proc/sys/net/ipv4/tcp_ecn)
cleanup() {
  echo "$ecn_before" > /proc/sys/net/ipv4/tcp_ecn 2>/dev/null || true
  echo "$id" > /sys/bus/netdevsim/del_device 2>/dev/null || true
  modprobe -r netdevsim 2>/dev/null || true
}
trap cleanup EXIT
# new_device_store (drivers/net/netdevsim/bus.c): "ID PORT_COUNT NUM_QUEUES".
echo "$id 1 4" > /sys/bus/netdevsim/new_device
wait_until 10 sh -c "ls /sys/bus/netdevsim/devices/netdevsim$id/net/ 2>/dev/null | grep -q ." ||
  fail "netdevsim$id has no netdev"
nd=$(ls "/sys/bus/netdevsim/devices/netdevsim$id/net/")
echo "netdevsim$id's netdev: $nd (driver $(basename "$(readlink "/sys/class/net/$nd/device/driver")"))"

# ethnl.py GET|SET-RINGS|SET-PAUSE NETDEV [ATTR=VALUE...]: the kernel's answer as JSON
# ({"rx": .., "rxMax": ..} / {"autoneg": .., "rx": .., "tx": ..} / {"errno": N, "extack": "..."}).
cat > ethnl.py <<'PY'
import json, os, socket, struct, sys
NLM_F_REQUEST, NLM_F_ACK, NLMSG_ERROR, GENL_ID_CTRL = 1, 4, 2, 0x10
CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 3, 1, 2
NETLINK_EXT_ACK, NLMSGERR_ATTR_MSG = 11, 1
# include/uapi/linux/ethtool_netlink.h (6.1)
RINGS_GET, RINGS_SET, PAUSE_GET, PAUSE_SET = 15, 16, 21, 22
RINGS = {"rxMax": 2, "rxMiniMax": 3, "rxJumboMax": 4, "txMax": 5, "rx": 6, "rxMini": 7, "rxJumbo": 8, "tx": 9}
PAUSE = {"autoneg": 2, "rx": 3, "tx": 4}
HEADER_DEV_NAME = 2

def attr(t, payload):
    n = 4 + len(payload)
    return struct.pack("HH", n, t) + payload + b"\0" * ((4 - n % 4) % 4)

def attrs(data):
    out = {}
    while len(data) >= 4:
        n, t = struct.unpack("HH", data[:4])
        out[t & 0x3fff] = data[4:n]
        data = data[(n + 3) & ~3:]
    return out

s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)  # NETLINK_GENERIC
s.setsockopt(270, NETLINK_EXT_ACK, 1)  # SOL_NETLINK
s.setsockopt(270, 10, 1)  # NETLINK_CAP_ACK: the ack echoes only the request header
s.bind((0, 0))
seq = [0]

def talk(family, cmd, payload):
    seq[0] += 1
    body = struct.pack("BBH", cmd, 1, 0) + payload
    s.send(struct.pack("IHHII", 16 + len(body), family, NLM_F_REQUEST | NLM_F_ACK, seq[0], 0) + body)
    replies = []
    while True:
        data = s.recv(65536)
        while data:
            n, t, flags, _, _ = struct.unpack("IHHII", data[:16])
            msg = data[16:n]
            data = data[(n + 3) & ~3:]
            if t == NLMSG_ERROR:
                err = -struct.unpack("i", msg[:4])[0]
                extack = ""
                if err and flags & 0x200:  # NLM_F_ACK_TLVS after the capped request header
                    a = attrs(msg[4 + 16:])
                    extack = a.get(NLMSGERR_ATTR_MSG, b"").rstrip(b"\0").decode()
                return err, extack, replies
            replies.append(attrs(msg[4:]))

err, _, r = talk(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, attr(CTRL_ATTR_FAMILY_NAME, b"ethtool\0"))
assert err == 0, f"CTRL_CMD_GETFAMILY ethtool: errno {err}"
family = struct.unpack("H", r[0][CTRL_ATTR_FAMILY_ID][:2])[0]
what, dev = sys.argv[1], sys.argv[2]
header = attr(1 | 0x8000, attr(HEADER_DEV_NAME, dev.encode() + b"\0"))
sets = dict(kv.split("=") for kv in sys.argv[3:])
if what == "rings":
    err, extack, r = talk(family, RINGS_GET, header)
    out = {k: struct.unpack("I", r[0][t][:4])[0] for k, t in RINGS.items() if r and t in r[0]}
elif what == "pause":
    err, extack, r = talk(family, PAUSE_GET, header)
    out = {k: bool(r[0][t][0]) for k, t in PAUSE.items() if r and t in r[0]}
elif what == "set-rings":
    err, extack, r = talk(family, RINGS_SET, header + b"".join(attr(RINGS[k], struct.pack("I", int(v))) for k, v in sets.items()))
    out = {}
else:
    err, extack, r = talk(family, PAUSE_SET, header + b"".join(attr(PAUSE[k], struct.pack("B", int(v))) for k, v in sets.items()))
    out = {}
if err:
    out = {"errno": err, "extack": extack}
print(json.dumps(out, sort_keys=True))
PY

# nsim_ethtool_ring_init: every ring's maximum 4096, its size 0; pause off, autoneg off.
[ "$(python3 ethnl.py rings "$nd")" = '{"rx": 0, "rxJumbo": 0, "rxJumboMax": 4096, "rxMax": 4096, "rxMini": 0, "rxMiniMax": 4096, "tx": 0, "txMax": 4096}' ] ||
  fail "netdevsim's rings read $(python3 ethnl.py rings "$nd"), not as nsim_ethtool_ring_init sets them"
[ "$(python3 ethnl.py pause "$nd")" = '{"autoneg": false, "rx": false, "tx": false}' ] ||
  fail "netdevsim's pause reads $(python3 ethnl.py pause "$nd")"
echo "ok: the kernel reports netdevsim's rings (max 4096, size 0) and pause (off)"

write_spec() {  # FILE ETHTOOL-YAML-LINES [EXTRA-YAML]
  {
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: ethtool-check\n'
    printf 'defaults:\n  interfaces:\n    - name: %s\n      ethtool:\n' "$nd"
    printf '%s' "$2"
    printf '%s' "${3:-}"
    printf '  selftest: {enabled: false}\n'
  } > "$1"
}
changes() { jq -c '[.changes[] | [.field, .current, .desired, .status]]' "$1"; }

spec=$VM_SCRATCH/ethtool.yaml
write_spec "$spec" $'        rings: {rx: 1024, tx: 2048}\n        pause: {autoneg: false, rx: true, tx: true}\n'
rc=0
"$RDMACTL" plan -f "$spec" --format json > plan.json || rc=$?
[ "$rc" -eq 2 ] || { cat plan.json; fail "plan exited $rc, want 2 (drift)"; }
[ "$(changes plan.json)" = '[["ethtool.rings.rx",0,1024,"planned"],["ethtool.rings.tx",0,2048,"planned"],["ethtool.pause.rx",false,true,"planned"],["ethtool.pause.tx",false,true,"planned"]]' ] ||
  { cat plan.json; fail "plan: $(changes plan.json)"; }
echo "ok: plan reads rings 0/0 and pause off from the kernel and plans exactly the four fields"

rc=0
"$RDMACTL" apply -f "$spec" --format json > apply.json || rc=$?
[ "$rc" -eq 0 ] || { cat apply.json; fail "apply exited $rc, want 0"; }
rings=$(python3 ethnl.py rings "$nd")
[ "$(jq -c '[.rx, .tx, .rxMini]' <<<"$rings")" = '[1024,2048,0]' ] || fail "after apply the kernel's rings are $rings"
[ "$(python3 ethnl.py pause "$nd")" = '{"autoneg": false, "rx": true, "tx": true}' ] ||
  fail "after apply the kernel's pause is $(python3 ethnl.py pause "$nd")"
rc=0
"$RDMACTL" plan -f "$spec" --format json > again.json || rc=$?
[ "$rc" -eq 0 ] || { cat again.json; fail "plan after apply exited $rc, want 0"; }
[ "$(jq '.changes | length' again.json)" = 0 ] || { cat again.json; fail "a second plan has changes"; }
echo "ok: apply set rings 1024/2048 and pause rx/tx on; a second plan is empty"

# A rollback: the rings change applies, then the kernel refuses tcp_ecn 3
# (proc_dou8vec_minmax, extra2 SYSCTL_TWO), and the rings go back to 1024/2048.
write_spec "$spec" $'        rings: {rx: 512, tx: 2048}\n' $'  sysctl:\n    net.ipv4.tcp_ecn: "3"\n'
rc=0
"$RDMACTL" apply -f "$spec" --format json > refused.json || rc=$?
[ "$rc" -eq 1 ] || { cat refused.json; fail "apply with a refused sysctl exited $rc, want 1"; }
[ "$(jq -r '.changes[] | select(.field == "ethtool.rings.rx") | .status' refused.json)" = rolled-back ] ||
  { cat refused.json; fail "the rings change was not rolled back"; }
[ "$(python3 ethnl.py rings "$nd" | jq -c '[.rx, .tx]')" = '[1024,2048]' ] ||
  fail "after the rollback the kernel's rings are $(python3 ethnl.py rings "$nd")"
echo "ok: a failed apply rolled the rx ring back to 1024"

# What the kernel refuses is a plan error naming netdevsim, never a change.
write_spec "$spec" $'        rings: {rx: 8192}\n        pause: {autoneg: true}\n'
rc=0
"$RDMACTL" plan -f "$spec" --format json > errors.json || rc=$?
[ "$rc" -eq 1 ] || { cat errors.json; fail "plan of refused values exited $rc, want 1"; }
[ "$(jq '.changes | length' errors.json)" = 0 ] || { cat errors.json; fail "refused values were planned"; }
jq -r '.errors[].message' errors.json | grep -q "8192 is above the maximum of netdevsim on $nd: 4096" ||
  { cat errors.json; fail "no plan error giving the ring maximum 4096"; }
jq -r '.errors[].message' errors.json | grep -q "netdevsim refuses pause autonegotiation" ||
  { cat errors.json; fail "no plan error for pause autoneg on netdevsim"; }
# ... and the kernel's own answers, which those plan errors stand for.
got=$(python3 ethnl.py set-rings "$nd" rx=8192)
[ "$got" = '{"errno": 22, "extack": "requested ring size exceeds maximum"}' ] ||
  fail "the kernel answered a ring of 8192 with $got (ethnl_set_rings: EINVAL and its ext-ack)"
got=$(python3 ethnl.py set-pause "$nd" autoneg=1)
[ "$(jq .errno <<<"$got")" = 22 ] || fail "the kernel answered pause autoneg with $got (nsim_set_pauseparam: EINVAL)"
echo "ok: plan refuses ring 8192 (max 4096) and pause autoneg on netdevsim; the kernel refuses both with EINVAL ($got)"
