#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdma_cm over Soft-RoCE, through rdma_ucm: rping server and client in the guest, connecting by
# IP address (route and GID resolution by rdma_cm, as rdma_cm applications do), 5 ping-pongs,
# each verified by rping's own data check (-V) and printed by the client (-v).
# vm-timeout: 60
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
ip=${VM_IPV4:-10.0.2.15}
port=7174
count=5

rping -s -a "$ip" -p "$port" -C "$count" -V > server.log 2>&1 &
server=$!
# An rdma_cm listener is not a socket; the kernel lists it among the RDMA resources. Connecting
# before it exists is rejected (no such service), and the server would then wait forever.
listening() { rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr $ip:$port"; }
wait_until 20 listening || { rdma resource show cm_id || true; cat server.log; fail "rping server did not listen on $ip:$port"; }

set +e
rping -c -a "$ip" -p "$port" -C "$count" -v -V > client.log 2>&1
client_rc=$?
# A client that never connected leaves the server waiting for one: stop it rather than hang.
[ "$client_rc" -eq 0 ] || kill "$server" 2>/dev/null
wait "$server"
server_rc=$?
set -e
echo "--- client (rping -c -a $ip -p $port -C $count -v -V), exit $client_rc"; cat client.log
echo "--- server, exit $server_rc"; cat server.log
[ "$client_rc" -eq 0 ] || fail "rping client failed"
[ "$server_rc" -eq 0 ] || fail "rping server failed"
pings=$(grep -c '^ping data: ' client.log || true)
[ "$pings" -eq "$count" ] || fail "the client printed $pings ping-pongs, expected $count"
echo "ok: rping: $count verified ping-pongs over rdma_cm to $ip"
