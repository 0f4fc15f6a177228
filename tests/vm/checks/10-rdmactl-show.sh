#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmactl show` on the real RDMA core: rxe0 port 1 is ACTIVE, Ethernet, mapped to eth0, and the
# guest's IPv4 address is a RoCE v2 GID at the index the kernel gave it (read from sysfs here,
# independently of rdmactl).
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
dev=${VM_RXE_DEV:-rxe0}
ndev=${VM_NETDEV:-eth0}
ip=${VM_IPV4:-10.0.2.15}
: "${RDMACTL:?the batch runner sets RDMACTL to the binary under test}"

want_gid=$(ipv4_gid "$ip")
want_index=$(gid_index "$dev" 1 "$want_gid" "RoCE v2" "$ndev") || fail "sysfs has no RoCE v2 GID for $ip"
out=$VM_SCRATCH/show.json
"$RDMACTL" --log-level debug show --format json > "$out" 2> "$VM_SCRATCH/show.log" ||
  fail "rdmactl show exited $?: $(cat "$VM_SCRATCH/show.log")"
# On a live host the device list comes from RDMA netlink, not from listing sysfs.
grep -q "RDMA netlink lists 1 device(s): $dev" "$VM_SCRATCH/show.log" ||
  fail "show did not list devices through RDMA netlink: $(cat "$VM_SCRATCH/show.log")"

python3 - "$out" "$dev" "$ndev" "$ip" "$want_gid" "$want_index" <<'PY'
import json, sys
path, dev, ndev, ip, gid, index = sys.argv[1:]
state = json.load(open(path))
devices = {d["name"]: d for d in state["devices"]}
assert dev in devices, f"{dev} not in show's devices: {sorted(devices)}"
port = {p["port"]: p for p in devices[dev]["ports"]}.get(1)
assert port, f"{dev} has no port 1"
problems = []
for field, want in (("state", "ACTIVE"), ("physState", "LinkUp"), ("linkLayer", "Ethernet"), ("netdev", ndev)):
    if port[field] != want:
        problems.append(f"port 1 {field} is {port[field]!r}, want {want!r}")
match = [g for g in port["gids"] if g["gid"] == gid and g["type"] == "RoCE v2"]
if not match:
    problems.append(f"no RoCE v2 GID {gid} ({ip}) in {port['gids']}")
elif match[0]["index"] != int(index) or match[0]["netdev"] != ndev:
    problems.append(f"GID {gid} reported at index {match[0]['index']} on {match[0]['netdev']!r}, "
                    f"the kernel has it at {index} on {ndev}")
netdevs = {n["name"]: n for n in state["netdevs"]}
if ndev not in netdevs:
    problems.append(f"netdev {ndev} missing")
elif f"{ip}/24" not in netdevs[ndev]["addresses"]:
    problems.append(f"{ndev} addresses {netdevs[ndev]['addresses']} lack {ip}/24")
if problems:
    print("FAIL: " + "; ".join(problems))
    sys.exit(1)
print(f"ok: {dev}/1 ACTIVE LinkUp Ethernet on {ndev}, {ip} is RoCE v2 GID index {index}, "
      f"rate {port['rateGbps']} Gb/s, {len(port['gids'])} GIDs")
PY
