#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl against iproute2 on the same work, in a throwaway network namespace, for several sizes.
# Figures only: nothing here passes or fails on speed, and no test calls it.
#
#   tests/bench/run.sh [RDMACTL]            (as root; RDMACTL defaults to build/rdmactl)
#
# For each N (BENCH_SIZES, default "16 128 1024 4096") it makes a namespace with N veth pairs and
# a spec that sets MTU 9000, up and one IPv4 address on the first netdev of each pair (N netdevs),
# then times, with paired runs in alternating order (BENCH_RUNS pairs, default 5; fewer for the
# largest sizes, whose runs take seconds):
#   plan, no spec cache vs ip -j -d addr show      (the spec's cache emptied before each run)
#   plan            vs  ip -j -d addr show         (the host as created: every change planned)
#   apply           vs  ip -batch (the same changes), the host reset before each run
#   no-op apply     vs  plan                       (the host converged)
# and prints per comparison the medians, min-max and the ratio of the medians, as a table and as
# JSON (BENCH_JSON, default bench.json in the current directory). Then, at N = 128, the agent:
# idle RSS and CPU of `rdmactl serve` over 10 s, and the time from an atomic rename of its spec to
# the host showing the new MTU (median of BENCH_RENAMES, default 5). Last, the fleet plan:
# tests/bench/fleet_bench.sh over BENCH_FLEET_SIZES generated recorded states (default
# "1000 10000 100000"; "" skips it): wall time and maximum RSS (JSON: BENCH_FLEET_JSON, default
# fleet-bench.json).
#
# Everything runs under --root (a temporary directory: its lock, journal and audit log) and inside
# the namespace; the namespace and the temporary files are removed on exit, also on failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
rdmactl=$(realpath "${1:-build/rdmactl}")
sizes=${BENCH_SIZES:-16 128 1024 4096}
runs=${BENCH_RUNS:-5}
renames=${BENCH_RENAMES:-5}
json_out=${BENCH_JSON:-bench.json}
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (network namespaces)" >&2; exit 1; }
[ -x "$rdmactl" ] || { echo "bench: no rdmactl binary at $rdmactl" >&2; exit 1; }

ns=rdmactl-bench-$$
work=$(mktemp -d)
serve_pid=
cleanup() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ns() { date +%s%N; }
# Seconds (decimal) that running "$@" takes, its output discarded; the command must succeed.
timed() {
  local start end rc=0
  start=$(now_ns)
  "$@" > /dev/null 2>&1 || rc=$?
  end=$(now_ns)
  # plan exits 2 when it found drift: that is its normal answer here.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then echo "bench: failed ($rc): $*" >&2; "$@" >&2 || true; exit 1; fi
  awk -v d=$((end - start)) 'BEGIN { printf "%.6f\n", d / 1e9 }'
}

rd() { "$rdmactl" --netns "$ns" --root "$work/root" --node bench "$@"; }
ipn() { ip -n "$ns" "$@"; }

make_host() {  # N
  local n=$1
  ip netns del "$ns" 2>/dev/null || true
  ip netns add "$ns"
  : > "$work/create.batch"
  for ((i = 0; i < n; i++)); do echo "link add b$i type veth peer name p$i" >> "$work/create.batch"; done
  ipn -batch "$work/create.batch"
  # The spec and the same changes for ip -batch, and the batch that undoes them.
  {
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: bench}\ndefaults:\n'
    printf '  selftest: {enabled: false}\n  interfaces:\n'
    for ((i = 0; i < n; i++)); do
      printf '    - {name: b%d, mtu: 9000, state: up, addresses: [10.%d.%d.1/24]}\n' "$i" $((i / 256)) $((i % 256))
    done
  } > "$work/spec.yaml"
  : > "$work/apply.batch"; : > "$work/reset.batch"
  for ((i = 0; i < n; i++)); do
    echo "link set dev b$i mtu 9000 up" >> "$work/apply.batch"
    echo "addr add 10.$((i / 256)).$((i % 256)).1/24 dev b$i" >> "$work/apply.batch"
    echo "addr flush dev b$i" >> "$work/reset.batch"
    echo "link set dev b$i mtu 1500 down" >> "$work/reset.batch"
  done
}
reset_host() { ipn -batch "$work/reset.batch"; }
clear_cache() { rm -rf "$work/root/var/cache/rdmactl"; }

results=()  # "name N a_median a_min a_max b_median b_min b_max" per comparison
# compare NAME N RUNS SETUP CMD-A... -- CMD-B...: paired runs, alternating which goes first; SETUP
# (a function name, or :) runs before each timed command.
compare() {
  local name=$1 n=$2 count=$3 setup=$4; shift 4
  local a=() b=() sep=0
  for arg in "$@"; do
    if [ "$arg" = -- ]; then sep=1; continue; fi
    if [ $sep -eq 0 ]; then a+=("$arg"); else b+=("$arg"); fi
  done
  local ta=() tb=()
  for ((r = 0; r < count; r++)); do
    if ((r % 2 == 0)); then
      $setup; ta+=("$(timed "${a[@]}")"); $setup; tb+=("$(timed "${b[@]}")")
    else
      $setup; tb+=("$(timed "${b[@]}")"); $setup; ta+=("$(timed "${a[@]}")")
    fi
  done
  results+=("$name $n $(printf '%s\n' "${ta[@]}" | sort -g | awk '{v[NR]=$1} END {printf "%s %s %s", v[int((NR+1)/2)], v[1], v[NR]}') $(printf '%s\n' "${tb[@]}" | sort -g | awk '{v[NR]=$1} END {printf "%s %s %s", v[int((NR+1)/2)], v[1], v[NR]}')")
  echo "  $name: done" >&2
}

mkdir -p "$work/root"
for n in $sizes; do
  echo "N=$n: building the namespace" >&2
  make_host "$n"
  count=$runs
  [ "$n" -ge 1024 ] && count=$(( runs < 3 ? runs : 3 ))
  # plan and apply keep the checked spec in --root's /var/cache/rdmactl (agent/cli/spec_cache.h): the
  # cold plan runs without it (emptied before each run), the others after one untimed plan fills it.
  compare cold-plan "$n" "$count" clear_cache rd plan -f "$work/spec.yaml" -- ipn -j -d addr show
  rd plan -f "$work/spec.yaml" > /dev/null 2>&1 || true
  compare plan "$n" "$count" : rd plan -f "$work/spec.yaml" -- ipn -j -d addr show
  compare apply "$n" "$count" reset_host rd apply -f "$work/spec.yaml" -- ipn -batch "$work/apply.batch"
  rd apply -f "$work/spec.yaml" > /dev/null 2>&1
  compare noop-apply "$n" "$count" : rd apply -f "$work/spec.yaml" -- rd plan -f "$work/spec.yaml"
done

# --- the agent at N = 128 ------------------------------------------------------------------------
agent_n=128
echo "agent: N=$agent_n" >&2
make_host "$agent_n"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token"
chmod 600 "$work/token"
mkdir -p "$work/spec"
cp "$work/spec.yaml" "$work/spec/fabric.yaml"
ip netns exec "$ns" ip link set lo up
"$rdmactl" --netns "$ns" --root "$work/root" --node bench serve -f "$work/spec/fabric.yaml" --listen 127.0.0.1:19473 --token-file "$work/token" \
  --interval 1h --no-rdma-responder > "$work/serve.log" 2>&1 &
serve_pid=$!
for ((i = 0; i < 600; i++)); do
  ip netns exec "$ns" bash -c 'exec 3<>/dev/tcp/127.0.0.1/19473 && printf "GET /readyz HTTP/1.0\r\n\r\n" >&3 && head -1 <&3' 2>/dev/null |
    grep -q " 200" && break
  sleep 0.1
done
sleep 3  # let the first reconcile, and the one its own link notifications ask for, finish
ticks() { awk '{print $14 + $15}' "/proc/$serve_pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks); sleep 10; t1=$(ticks)
rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$serve_pid/status")
idle_cpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%.2f", 100 * d / hz / 10 }')
# Rename to converged: a new spec with netdev b0's MTU changed, written beside and renamed over.
lat=()
for ((r = 0; r < renames; r++)); do
  mtu=$((9000 - 1 - r))
  sed "s/{name: b0, mtu: 9000/{name: b0, mtu: $mtu/" "$work/spec.yaml" > "$work/spec/.fabric.yaml.new"
  start=$(now_ns)
  mv "$work/spec/.fabric.yaml.new" "$work/spec/fabric.yaml"
  for ((i = 0; i < 3000; i++)); do
    ipn -o link show dev b0 | grep -q " mtu $mtu " && break
    sleep 0.002
  done
  end=$(now_ns)
  lat+=("$(awk -v d=$((end - start)) 'BEGIN { printf "%.3f", d / 1e6 }')")
done
rename_ms=$(printf '%s\n' "${lat[@]}" | sort -g | awk '{v[NR]=$1} END {printf "%s %s %s", v[int((NR+1)/2)], v[1], v[NR]}')

printf '%s\n' "${results[@]}" | python3 -c '
import json, sys
rows = [l.split() for l in sys.stdin if l.strip()]
agent = {"n": int(sys.argv[1]), "idleRssKiB": int(sys.argv[2]), "idleCpuPercent": float(sys.argv[3]),
         "renameToConvergedMs": dict(zip(("median", "min", "max"), map(float, sys.argv[4].split())))}
labels = {"cold-plan": ("plan, no spec cache", "ip -j -d addr show"), "plan": ("plan", "ip -j -d addr show"), "apply": ("apply", "ip -batch"),
          "noop-apply": ("no-op apply", "plan")}
out = []
print("| comparison | N | rdmactl median (min-max) | baseline median (min-max) | ratio |")
print("|---|---|---|---|---|")
for name, n, am, amin, amax, bm, bmin, bmax in rows:
    a, b = labels[name]
    ratio = float(am) / float(bm) if float(bm) > 0 else float("inf")
    print(f"| {a} / {b} | {n} | {float(am)*1e3:.1f} ms ({float(amin)*1e3:.1f}-{float(amax)*1e3:.1f}) | "
          f"{float(bm)*1e3:.1f} ms ({float(bmin)*1e3:.1f}-{float(bmax)*1e3:.1f}) | {ratio:.1f}x |")
    out.append({"comparison": name, "n": int(n), "rdmactl": {"median": float(am), "min": float(amin), "max": float(amax)},
                "baseline": {"command": b, "median": float(bm), "min": float(bmin), "max": float(bmax)},
                "ratio": ratio})
print()
r = agent["renameToConvergedMs"]
print("agent at N=%d: idle RSS %.1f MiB, idle CPU %.2f %%, spec rename to converged %.0f ms median (%.0f-%.0f)"
      % (agent["n"], agent["idleRssKiB"] / 1024, agent["idleCpuPercent"], r["median"], r["min"], r["max"]))
json.dump({"comparisons": out, "agent": agent}, open(sys.argv[5], "w"), indent=2)
' "$agent_n" "$rss_kib" "$idle_cpu" "$rename_ms" "$json_out"
echo "(JSON: $json_out)"

# --- the fleet plan ------------------------------------------------------------------------------
fleet_sizes=${BENCH_FLEET_SIZES-1000 10000 100000}
if [ -n "$fleet_sizes" ]; then
  echo
  echo "fleet plan (plan --states DIR --format json over generated recorded states):"
  FLEET_SIZES="$fleet_sizes" FLEET_JSON="${BENCH_FLEET_JSON:-fleet-bench.json}" tests/bench/fleet_bench.sh "$rdmactl"
fi
