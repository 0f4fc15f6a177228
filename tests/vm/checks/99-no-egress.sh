#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The harness's promise that the guest talks only to itself: after all the checks before this
# one, eth0 has transmitted no packet (RDMA loopback and TCP to 10.0.2.15 never reach the wire).
# Runs last by name; a check that must send on eth0 breaks this promise and has to say why here.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
ndev=${VM_NETDEV:-eth0}
tx=$(cat "/sys/class/net/$ndev/statistics/tx_packets")
ip -s link show "$ndev"
[ "$tx" -eq 0 ] || fail "$ndev transmitted $tx packets"
echo "ok: $ndev transmitted 0 packets"
default=$(ip route show default)
[ -z "$default" ] || fail "a default route exists: $default"
echo "ok: no default route"
