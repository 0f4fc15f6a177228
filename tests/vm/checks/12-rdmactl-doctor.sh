#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmactl doctor` on Soft-RoCE over eth0 with MTU 1500: the low RoCE MTU, and a note naming the
# kernel's GID index of the IPv4 address for tests. On the real kernel and the host's own files:
# /dev/infiniband/uverbs0 and rdma_cm as uverbs_main.c and ucma.c make them (0666: no
# device-access finding), the RDMA netns mode through RDMA_NLDEV_CMD_SYS_GET (a note), and the
# memlock finding exactly when the root's limits.conf and limits.d give all users no unlimited
# soft and hard memlock (a stock Debian 12 gives none).
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
import glob, re
def memlock_unlimited():
    soft = hard = None
    for f in ["/etc/security/limits.conf"] + sorted(glob.glob("/etc/security/limits.d/*.conf")):
        try:
            lines = open(f).read().splitlines()
        except OSError:
            continue
        for line in lines:
            w = line.split("#")[0].lower().split()
            if len(w) >= 4 and w[0] == "*" and w[2] == "memlock":
                if w[1] in ("soft", "-"): soft = w[3]
                if w[1] in ("hard", "-"): hard = w[3]
    return all(v in ("unlimited", "infinity", "-1") for v in (soft, hard))
want = [("roce-mtu", f"netdev/{ndev}")]
if not memlock_unlimited():
    want.append(("memlock", "host/pam_limits"))
found = [(f["check"], f["resource"]) for f in report["findings"]]
if found != want:
    print(f"FAIL: findings {found}, want exactly {want}")
    sys.exit(1)
if not any(re.search(r"RDMA netns mode is (shared|exclusive)", n["message"]) for n in report["notes"]):
    print(f"FAIL: no note of the RDMA netns mode: {report['notes']}")
    sys.exit(1)
notes = [n["message"] for n in report["notes"] if n["resource"] == f"rdma/{dev}/1"]
if not any(f"GID index {index} " in n for n in notes):
    print(f"FAIL: no note naming GID index {index}: {notes}")
    sys.exit(1)
print("ok: " + report["findings"][0]["message"])
print("    " + notes[0])
PY
