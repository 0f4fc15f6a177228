#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GID table of rxe0 port 1, read from sysfs as rdmactl reads it: the IPv4-mapped GID of
# eth0's address must be there, typed "RoCE v2" and bound to eth0. Prints the populated entries.
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
dev=${VM_RXE_DEV:-rxe0}
ndev=${VM_NETDEV:-eth0}
ip=${VM_IPV4:-10.0.2.15}
p=/sys/class/infiniband/$dev/ports/1
want=$(ipv4_gid "$ip")
zero=0000:0000:0000:0000:0000:0000:0000:0000

[ -d "$p/gids" ] || fail "no $p/gids"
# One grep over the whole table: a process per entry would take minutes under TCG.
size=$(find "$p/gids" -mindepth 1 -maxdepth 1 | wc -l)
# Lines "INDEX:GID", in index order.
mapfile -t populated < <(grep -H . "$p"/gids/* | sed "s|^$p/gids/||" | grep -v ":$zero\$" | sort -n)
echo "GID table of $dev/1: ${#populated[@]} of $size entries populated:"
for line in "${populated[@]}"; do
  i=${line%%:*}
  printf '  %3d  %s  %-10s %s\n' "$i" "${line#*:}" "$(cat "$p/gid_attrs/types/$i" 2>/dev/null || echo '?')" \
    "$(cat "$p/gid_attrs/ndevs/$i" 2>/dev/null || echo '?')"
done

idx=$(gid_index "$dev" 1 "$want" "RoCE v2" "$ndev") ||
  fail "no entry with GID $want, type 'RoCE v2', ndev $ndev (IPv4 $ip)"
echo "ok: IPv4 $ip -> GID $want at index $idx, RoCE v2 on $ndev"
# The runner found the same index independently; checks that use VM_GID_INDEX depend on it.
if [ -n "${VM_GID_INDEX:-}" ] && [ "$VM_GID_INDEX" != "$idx" ]; then
  fail "VM_GID_INDEX=$VM_GID_INDEX but the table says $idx"
fi
