#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How long `rdmactl plan --states DIR` takes over many recorded nodes, and how much memory it
# holds. Figures only: nothing here passes or fails on speed or size, and no test calls it.
#
#   tests/bench/fleet_bench.sh [RDMACTL]        (RDMACTL defaults to build/rdmactl)
#
# For each N of FLEET_SIZES (default "1000 10000 100000") it writes N recorded states generated
# from examples/fleet/states/gpu-01.json (node gpu-NNNNNN, each port with an address of its own:
# 10.x.y.z and 11.x.y.z) and a spec with the fleet example's defaults (two rails, MTU 9000, the
# lossless profile) and one nodes: entry matching every node, then runs
#   rdmactl plan -f spec.yaml --states DIR --format json > /dev/null
# FLEET_RUNS times (default 3; 1 at 100000) and prints the median wall time, the largest maximum
# resident set (GNU time's %M) and the per-node figures, as a table and as JSON (FLEET_JSON,
# default fleet-bench.json). The states live in a temporary directory (about 9.5 KB each: 950 MB
# at 100000), removed on exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
rdmactl=$(realpath "${1:-$src/build/rdmactl}")
sizes=${FLEET_SIZES:-1000 10000 100000}
json_out=${FLEET_JSON:-fleet-bench.json}
[ -x "$rdmactl" ] || { echo "fleet_bench: $rdmactl is not an executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "fleet_bench: needs GNU time (apt-get install time)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-fleet-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

cat > "$work/spec.yaml" <<'EOF'
apiVersion: rdmactl/v1
kind: FabricSpec
metadata:
  name: fleet-bench
defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      rail: rail0
      mtu: 9000
      state: up
      qos: {profile: roce-lossless}
    - rdmaDevice: mlx5_1
      rail: rail1
      mtu: 9000
      state: up
      qos: {profile: roce-lossless}
nodes:
  - match: "gpu-*"
    sysctl: {net.ipv4.tcp_ecn: "1"}
EOF

# generate N DIR: the states, one file per node (written once per N, reused by every run).
generate() {
  python3 - "$1" "$2" "$src/examples/fleet/states/gpu-01.json" <<'EOF'
import sys
count, out, template = int(sys.argv[1]), sys.argv[2], open(sys.argv[3]).read()
assert '"node": "gpu-01"' in template and "192.168.100.11/24" in template
for i in range(1, count + 1):
    a, b, c = i >> 16, (i >> 8) & 255, i & 255
    text = (template.replace('"node": "gpu-01"', '"node": "gpu-%06d"' % i)
            .replace("192.168.100.11/24", "10.%d.%d.%d/8" % (a, b, c))
            .replace("192.168.101.11/24", "11.%d.%d.%d/8" % (a, b, c)))
    with open("%s/gpu-%06d.json" % (out, i), "w") as f:
        f.write(text)
EOF
}

results=()
printf '%-8s %-6s %-22s %-14s %-14s %s\n' nodes runs "wall median (min-max)" "max RSS" "per node" "exit"
for n in $sizes; do
  dir=$work/states-$n
  mkdir -p "$dir"
  generate "$n" "$dir"
  runs=${FLEET_RUNS:-3}
  [ "$n" -ge 100000 ] && runs=${FLEET_RUNS_LARGE:-1}
  walls=(); rss=0; code=0
  for ((r = 0; r < runs; r++)); do
    set +e
    /usr/bin/time -f '%e %M' -o "$work/time" "$rdmactl" plan -f "$work/spec.yaml" --states "$dir" --format json > /dev/null 2> "$work/err"
    code=$?
    set -e
    if [ "$code" -ne 0 ] && [ "$code" -ne 2 ]; then
      echo "fleet_bench: plan over $n states: exit $code: $(tail -n 3 "$work/err")" >&2
      exit 1
    fi
    read -r wall kib < <(tail -n 1 "$work/time")
    walls+=("$wall")
    [ "$kib" -gt "$rss" ] && rss=$kib
  done
  median=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
  low=$(printf '%s\n' "${walls[@]}" | sort -g | head -n 1)
  high=$(printf '%s\n' "${walls[@]}" | sort -g | tail -n 1)
  per_node=$(awk -v m="$median" -v n="$n" -v k="$rss" 'BEGIN {printf "%.3f ms, %.1f KiB", m * 1000 / n, k / n}')
  printf '%-8s %-6s %-22s %-14s %-14s %s\n' "$n" "$runs" "${median} s (${low}-${high})" "$((rss / 1024)) MiB" "$per_node" "$code"
  results+=("{\"nodes\": $n, \"runs\": $runs, \"wallMedianSeconds\": $median, \"wallMinSeconds\": $low, \"wallMaxSeconds\": $high, \"maxRssKiB\": $rss, \"exit\": $code}")
  rm -rf "$dir"
done
{
  printf '[\n'
  for ((i = 0; i < ${#results[@]}; i++)); do printf '  %s%s\n' "${results[i]}" "$([ $((i + 1)) -lt ${#results[@]} ] && echo ,)"; done
  printf ']\n'
} > "$json_out"
echo "written: $json_out"
