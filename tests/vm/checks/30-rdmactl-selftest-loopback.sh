#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `rdmactl selftest` on Soft-RoCE: the loopback on rxe0/1 passes with a low pass mark (emulated rxe
# moves far less than the 10 Gb/s it reports), over the IPv4 RoCE v2 GID, with bandwidth > 0 and
# latency figures (typical <= p99); an impossible mark fails naming both figures. Prints rdmactl's
# bandwidth beside ib_write_bw's loopback on the same device and GID, and the ratio (print only:
# figures under TCG vary too much between hosts to assert on). Run again with the sanitizer build
# (vm-sanitize, VM_SANITIZE=1): the self-test parts, not the comparison with perftest.
# vm-timeout: 150
# vm-sanitize: yes
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"
dev=${VM_RXE_DEV:-rxe0}
ndev=${VM_NETDEV:-eth0}
ip=${VM_IPV4:-10.0.2.15}
gid=$(ipv4_gid "$ip")
idx=${VM_GID_INDEX:-$(gid_index "$dev" 1 "$gid" "RoCE v2" "$ndev")} || fail "no IPv4 RoCE v2 GID on $dev"
ratio=0.0001

rc=0
"$RDMACTL" selftest --format json --min-bandwidth-ratio "$ratio" > selftest.json 2> selftest.err || rc=$?
cat selftest.json
if [ -s selftest.err ]; then echo "--- stderr"; cat selftest.err; fi
[ "$rc" -eq 0 ] || fail "rdmactl selftest exited $rc, want 0 (passed)"
rate=$(cat "/sys/class/infiniband/$dev/ports/1/rate")
rate=${rate%% *}
# One line: "FAIL: why" or "bandwidth typical average p99".
jq -r --arg dev "$dev" --argjson idx "$idx" --arg gid "$gid" --argjson ratio "$ratio" --argjson rate "$rate" '
  def pos: type == "number" and . > 0;
  def off($a; $b): ($a - $b) as $d | (if $d < 0 then -$d else $d end) > 1e-9 * $b;
  .selftest as $st
  | [$st.tests[]? | select(.test == "loopback" and .device == $dev and .port == 1)] as $ts
  | $ts[0] as $t
  | ($t.latencyUs // {}) as $lat
  | if [.apiVersion, .kind] != ["rdmactl/v1", "SelftestReport"] then "FAIL: apiVersion/kind \(.apiVersion)/\(.kind)"
    elif $st.result != "passed" then "FAIL: selftest result \($st.result): \($st.reason)"
    elif ($ts | length) != 1 then "FAIL: want one loopback test of \($dev)/1, got \($st.tests)"
    elif $t.result != "passed" then "FAIL: \($dev)/1: \($t.result): \($t.reason)"
    elif $t.gidIndex != $idx or $t.gid != $gid then
      "FAIL: GID index \($t.gidIndex) \($t.gid), want the IPv4 RoCE v2 GID \($idx) \($gid)"
    elif ($t.bandwidthGbps | pos | not) then "FAIL: bandwidth \($t.bandwidthGbps)"
    elif ($t.expectedGbps | type) != "number" or off($t.expectedGbps; $rate * $ratio) then
      "FAIL: expectedGbps \($t.expectedGbps), want \($rate) x \($ratio) = \($rate * $ratio)"
    elif ([$lat.typical, $lat.average, $lat.p99] | all(pos) | not) then
      "FAIL: latency figures missing or not positive: \($lat)"
    elif $lat.typical > $lat.p99 then "FAIL: typical latency \($lat.typical) us above p99 \($lat.p99) us"
    else "\($t.bandwidthGbps) \($lat.typical) \($lat.average) \($lat.p99)"
    end' selftest.json > figures.txt || fail "jq could not read selftest.json"
grep -q '^FAIL' figures.txt && { cat figures.txt; exit 1; }
read -r bw lat_typical lat_average lat_p99 < figures.txt
echo "ok: rdmactl selftest passed: $dev/1 GID index $idx, $bw Gb/s, latency $lat_typical us typical, $lat_average average, $lat_p99 p99"
# No spec: the class is rdma_cm's default ToS (0 on a fresh rxe0), read from configfs.
jq -e '.selftest.tests[0].trafficClass == {"tos": 0, "dscp": 0, "priority": 0, "source": "rdma_cm default", "prioritySource": "none"}' \
  selftest.json > /dev/null || fail "the loopback's traffic class is not rdma_cm's default ToS 0"

# The verdict is not a formality: a mark no device reaches fails, naming both figures (exit 1).
rc=0
"$RDMACTL" selftest --min-bandwidth-ratio 1000 --duration 0.5 > impossible.txt 2>&1 || rc=$?
echo "--- rdmactl selftest --min-bandwidth-ratio 1000 --duration 0.5, exit $rc"; cat impossible.txt
[ "$rc" -eq 1 ] || fail "an impossible pass mark exited $rc, want 1 (failed)"
grep -q "is below the mark: expected >= " impossible.txt || fail "the failure does not give both figures"

# With a spec: the ports its interfaces name (eth0 selects rxe0/1) at its minBandwidthRatio, and an
# RDMA device the spec names but this host lacks fails the run (exit 1) while rxe0/1 still passes.
cat > spec.yaml <<YAML
apiVersion: rdmactl/v1
kind: FabricSpec
metadata: {name: selftest-check}
defaults:
  interfaces:
    - name: $ndev
      roce: {tos: 106}
      qos: {dscpToPriority: {26: 3}}
    - rdmaDevice: mlx5_0
  selftest: {minBandwidthRatio: 0.0002}
YAML
rc=0
"$RDMACTL" selftest -f spec.yaml --format json --duration 0.3 > spec.json 2> spec.err || rc=$?
echo "--- rdmactl selftest -f spec.yaml --format json --duration 0.3, exit $rc"; cat spec.json spec.err
[ "$rc" -eq 1 ] || fail "a spec naming a missing device exited $rc, want 1 (failed)"
jq -r --arg dev "$dev" --argjson rate "$rate" '
  .selftest as $st
  | [$st.tests[]? | [.device, .port, .result]] as $got
  | ($st.tests[0].expectedGbps - $rate * 0.0002) as $d
  | if $st.result != "failed" or $got != [[$dev, 1, "passed"], ["mlx5_0", 1, "failed"]] then
      "FAIL: result \($st.result), tests \($got), want failed with [[\($dev), 1, passed], [mlx5_0, 1, failed]]"
    elif (if $d < 0 then -$d else $d end) > 1e-9 * $rate * 0.0002 then
      "FAIL: expectedGbps \($st.tests[0].expectedGbps), want the spec'"'"'s ratio: \($rate) x 0.0002"
    else "ok: the spec selects \($dev)/1 at its own ratio; mlx5_0: \($st.tests[1].reason)"
    end' spec.json > spec-verdict.txt || fail "jq could not read spec.json"
cat spec-verdict.txt
grep -q '^ok:' spec-verdict.txt || exit 1
# The spec's class: ToS 106 (DSCP 26) on the priority its dscpToPriority gives DSCP 26.
jq -e '.selftest.tests[0].trafficClass == {"tos": 106, "dscp": 26, "priority": 3, "source": "spec roce.tos",
    "prioritySource": "spec qos.dscpToPriority"}' spec.json > /dev/null \
  || fail "the loopback did not run on the spec's class (ToS 106, DSCP 26, priority 3)"
echo "ok: with the spec the loopback ran on ToS 106 (DSCP 26, priority 3)"

# The rest compares with perftest, which has no sanitizer build: the sanitizer run stops here.
if [ -n "${VM_SANITIZE:-}" ]; then
  echo "ok: sanitizer build ($RDMACTL): the self-test runs above, without a sanitizer report"
  exit 0
fi

# perftest on the same device and GID, server and client in this guest (as 03-perftest-loopback).
perftest_pair ib_write_bw 18516 bw "$ip" -d "$dev" -x "$idx" -D 2 -F --report_gbits || fail "ib_write_bw failed"
# Columns: #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]
read -r _ _ _ perftest_bw _ < <(awk '/#bytes/ {getline; print; exit}' bw-client.log) || fail "no result row from ib_write_bw"
awk -v r="$bw" -v p="$perftest_bw" 'BEGIN {
  printf "rdmactl %.4f Gb/s, ib_write_bw %.4f Gb/s", r, p
  if (p > 0) printf ", ratio rdmactl/perftest %.2f", r / p
  printf "\n" }'

# ib_write_lat the same way: its t_typical (median) and 99% percentile beside rdmactl's. perftest
# times with the TSC scaled by the CPU frequency it estimates (-F: whatever it finds); under TCG that
# estimate is unstable ("Correlation coefficient r^2 < 0.9"), so its microseconds vary by 100x between
# runs, while rdmactl reads CLOCK_MONOTONIC.
perftest_pair ib_write_lat 18517 lat "$ip" -d "$dev" -x "$idx" -n 1000 -F || fail "ib_write_lat failed"
# Columns: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99%-percentile 99.9%-percentile
read -r _ _ _ _ perftest_typical perftest_avg _ perftest_p99 _ < <(awk '/#bytes/ {getline; print; exit}' lat-client.log) ||
  fail "no result row from ib_write_lat"
echo "latency typical/average/p99 us: rdmactl $lat_typical/$lat_average/$lat_p99, ib_write_lat $perftest_typical/$perftest_avg/$perftest_p99"
