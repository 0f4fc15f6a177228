#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# RDMA traffic end to end over Soft-RoCE: ib_write_bw server and client in the guest, both on
# rxe0 with the IPv4 RoCE v2 GID, the client connecting to the guest's own address 10.0.2.15
# (out-of-band exchange over TCP, RDMA writes through rxe's loopback). Prints the bandwidth.
# vm-timeout: 90
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
dev=${VM_RXE_DEV:-rxe0}
ip=${VM_IPV4:-10.0.2.15}
idx=${VM_GID_INDEX:-$(gid_index "$dev" 1 "$(ipv4_gid "$ip")" "RoCE v2" "${VM_NETDEV:-eth0}")} ||
  fail "no IPv4 RoCE v2 GID on $dev"
# -D 2: two seconds of writes (not a fixed count: under TCG the rate varies a lot between hosts).
# -F: no failure over CPU-frequency detection, which means nothing in a VM.
perftest_pair ib_write_bw 18515 bw "$ip" -d "$dev" -x "$idx" -D 2 -F || fail "ib_write_bw failed"
# The result row follows the "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] ..." header.
read -r bytes iters peak avg _ < <(awk '/#bytes/ {getline; print; exit}' bw-client.log) ||
  fail "no result row in the client's output"
if ! [[ $iters =~ ^[0-9]+$ ]] || [ "$iters" -eq 0 ]; then
  fail "no iterations completed (row: $bytes $iters $peak $avg)"
fi
echo "ok: ib_write_bw over $dev (GID index $idx): $iters x $bytes B writes, average $avg MB/s"
