#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmactl export` then `rdmactl plan` of the exported spec on the same guest: no drift (exit 0).
# Then a real change (eth0's MTU) must show up as drift (exit 2), and is put back.
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
ndev=${VM_NETDEV:-eth0}
: "${RDMACTL:?the batch runner sets RDMACTL to the binary under test}"

spec=$VM_SCRATCH/exported.yaml
"$RDMACTL" export -o "$spec" || fail "rdmactl export exited $?"
grep -q "rdmaDevice: ${VM_RXE_DEV:-rxe0}" "$spec" || fail "export does not select ${VM_RXE_DEV:-rxe0}: $(cat "$spec")"
rc=0
"$RDMACTL" plan -f "$spec" || rc=$?
[ "$rc" -eq 0 ] || fail "plan of the export exited $rc, want 0 (no drift)"

mtu=$(cat "/sys/class/net/$ndev/mtu")
ip link set "$ndev" mtu 1400
rc=0
"$RDMACTL" plan -f "$spec" --format json > "$VM_SCRATCH/plan.json" || rc=$?
ip link set "$ndev" mtu "$mtu"
[ "$rc" -eq 2 ] || fail "plan after an MTU change exited $rc, want 2 (drift)"
grep -q '"field": "mtu"' "$VM_SCRATCH/plan.json" || fail "the drift is not the MTU: $(cat "$VM_SCRATCH/plan.json")"
echo "ok: export -> plan shows no drift; an MTU change shows as drift"
