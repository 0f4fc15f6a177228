#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmactl doctor` on Soft-RoCE over eth0 with MTU 1500: exactly one finding, the low RoCE MTU,
# and a note naming the kernel's GID index of the IPv4 address for tests.
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
dev=${VM_RXE_DEV:-rxe0}
ndev=${VM_NETDEV:-eth0}
ip=${VM_IPV4:-10.0.2.15}
: "${RDMACTL:?the batch runner sets RDMACTL to the binary under test}"

[ "$(cat "/sys/class/net/$ndev/mtu")" -lt 4200 ] || skip "$ndev's MTU is not low: nothing to find"
index=$(gid_index "$dev" 1 "$(ipv4_gid "$ip")" "RoCE v2" "$ndev") || fail "sysfs has no RoCE v2 GID for $ip"
rc=0
"$RDMACTL" doctor --format json > "$VM_SCRATCH/doctor.json" || rc=$?
[ "$rc" -eq 2 ] || fail "doctor exited $rc, want 2 (findings): $(cat "$VM_SCRATCH/doctor.json")"
python3 - "$VM_SCRATCH/doctor.json" "$ndev" "$dev" "$index" <<'PY'
import json, sys
path, ndev, dev, index = sys.argv[1:]
report = json.load(open(path))
found = [(f["check"], f["resource"]) for f in report["findings"]]
if found != [("roce-mtu", f"netdev/{ndev}")]:
    print(f"FAIL: findings {found}, want exactly [('roce-mtu', 'netdev/{ndev}')]")
    sys.exit(1)
notes = [n["message"] for n in report["notes"] if n["resource"] == f"rdma/{dev}/1"]
if not any(f"GID index {index} " in n for n in notes):
    print(f"FAIL: no note naming GID index {index}: {notes}")
    sys.exit(1)
print("ok: " + report["findings"][0]["message"])
print("    " + notes[0])
PY
