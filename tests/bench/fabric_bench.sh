#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fabric_bench.sh BINARY [LEAVES HCAS-PER-LEAF SPINES [RUNS]] - how long `rdmactl fabric` takes on a
# large simulated subnet, against the diags that do the same work: ibnetdiscover (topology) and
# ibqueryerrors (topology again, then every port's PortCounters). Prints figures; never passes or
# fails on speed (a benchmark, not a test).
#
# The subnet: a 2-level fat tree of 36-port switches, by default 36 leaves with 32 HCAs and 4
# uplinks each, 4 spines (each spine port to one leaf): 1152 HCAs + 40 switches = 1192 nodes,
# 1296 links, every link 12x HDR. ibsim 0.10's limits (ibsim/sim.h, raised with -N/-S/-P):
# MAXNETNODES 2048, MAXNETSWITCHS 256, MAXNETPORTS 256*36 + 2048*2 = 13312, LIDs below
# MAXLINEARCAP 30*1024; and 10 clients at a time (IBSIM_MAX_CLIENTS): the SM and one tool here.
#
# BINARY is an rdmactl with the `fabric` command.
# Needs ibsim-utils, libumad2sim0, opensm, infiniband-diags. Everything lives in a temporary
# directory; only the processes started here are stopped.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
F=$HERE/../ibsim/ibsim-fabric.sh
[ $# -ge 1 ] || { sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
BIN=$(realpath "$1")
LEAVES=${2:-36}; PER_LEAF=${3:-32}; SPINES=${4:-4}; RUNS=${5:-3}
[ $((PER_LEAF + SPINES)) -le 36 ] || { echo "fabric_bench: HCAS-PER-LEAF + SPINES must fit 36 ports" >&2; exit 2; }
[ "$LEAVES" -le 36 ] || { echo "fabric_bench: at most 36 leaves (one spine port each)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-fabric-bench.XXXXXX")
FAB=$WORK/fabric
cleanup() { [ -d "$FAB" ] && "$F" stop "$FAB" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
cd "$WORK"

# --- the netfile --------------------------------------------------------------------------------
net=$WORK/fattree.net
{
  echo "# fabric_bench: $LEAVES leaves x $PER_LEAF HCAs, $SPINES spines, 36-port switches, 12x HDR"
  printf 'speed=7\nextspeed=4\nwidth=8\n\n'
  for ((s = 1; s <= SPINES; s++)); do
    printf 'Switch 36 "spine%02d"\n' "$s"
    for ((l = 1; l <= LEAVES; l++)); do printf '[%d]\t"leaf%02d"[%d]\n' "$l" "$l" $((PER_LEAF + s)); done
    echo
  done
  for ((l = 1; l <= LEAVES; l++)); do
    printf 'Switch 36 "leaf%02d"\n' "$l"
    for ((p = 1; p <= PER_LEAF; p++)); do printf '[%d]\t"h%04d"[1]\n' "$p" $(((l - 1) * PER_LEAF + p)); done
    for ((s = 1; s <= SPINES; s++)); do printf '[%d]\t"spine%02d"[%d]\n' $((PER_LEAF + s)) "$s" "$l"; done
    echo
  done
  for ((l = 1; l <= LEAVES; l++)); do
    for ((p = 1; p <= PER_LEAF; p++)); do
      h=$(printf 'h%04d' $(((l - 1) * PER_LEAF + p)))
      printf 'Ca 1 "%s"\t# "%s mlx5_0"\n[1]\t"leaf%02d"[%d]\n\n' "$h" "$h" "$l" "$p"
    done
  done
} >"$net"
hcas=$((LEAVES * PER_LEAF)); switches=$((LEAVES + SPINES)); links=$((hcas + LEAVES * SPINES))
echo "subnet: $((hcas + switches)) nodes ($switches switches, $hcas HCAs), $links links"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}'; }

t=$(now); "$F" start "$FAB" "$net" >/dev/null; echo "ibsim started: $(elapsed "$t") s"
t=$(now); "$F" sm "$FAB" h0001 15 >/dev/null; "$F" wait-master "$FAB" h0001 600 >/dev/null
echo "OpenSM master, every port Active: $(elapsed "$t") s"

viewer=$(printf 'h%04d' "$hcas")  # the last HCA, as far from the SM as any
run_timed() {  # LABEL OUT COMMAND...: prints seconds; the exit code of a diag is not a failure here
  local label=$1 out=$2 t rc=0; shift 2
  t=$(now)
  timeout 600 "$F" run "$FAB" "$viewer" -- "$@" >"$out" 2>"$out.err" || rc=$?
  [ "$rc" -ne 124 ] || { echo "$label timed out" >&2; exit 1; }
  elapsed "$t"
}

declare -A sum
for ((r = 1; r <= RUNS; r++)); do
  a=$(run_timed "rdmactl fabric" fabric.json "$BIN" fabric --format json)
  b=$(run_timed ibnetdiscover ibnetdiscover.txt ibnetdiscover)
  c=$(run_timed ibqueryerrors ibqueryerrors.txt ibqueryerrors)
  echo "run $r: rdmactl fabric --format json $a s; ibnetdiscover $b s; ibqueryerrors $c s"
  sum[a]=$(awk -v s="${sum[a]:-0}" -v x="$a" 'BEGIN{print s+x}')
  sum[b]=$(awk -v s="${sum[b]:-0}" -v x="$b" 'BEGIN{print s+x}')
  sum[c]=$(awk -v s="${sum[c]:-0}" -v x="$c" 'BEGIN{print s+x}')
done
python3 - fabric.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print("rdmactl saw: %d switches, %d CAs, %d links, %d SMs, %d findings, %d MADs by libibnetdisc, "
      "counters unread on %d ports" % (s["switches"], s["cas"], s["links"], s["subnetManagers"], s["findings"],
                                        s["mads"], s["countersFailed"]))
EOF
echo "ibnetdiscover saw: $(grep -c '^Switch' ibnetdiscover.txt) switches, $(grep -c '^Ca' ibnetdiscover.txt) CAs"
echo "ibqueryerrors: $(grep '## Summary' -A1 ibqueryerrors.txt | tr -s ' ' | tr '\n' ' ')"
awk -v a="${sum[a]}" -v b="${sum[b]}" -v c="${sum[c]}" -v n="$RUNS" 'BEGIN{
  printf "mean of %d runs: rdmactl fabric %.3f s; ibnetdiscover %.3f s; ibqueryerrors %.3f s\n", n, a/n, b/n, c/n
  printf "ratio: rdmactl fabric / (ibnetdiscover + ibqueryerrors) = %.2f; rdmactl fabric / ibqueryerrors = %.2f\n", a/(b+c), a/c
}'
