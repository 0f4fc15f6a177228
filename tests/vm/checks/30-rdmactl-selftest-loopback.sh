#!/usr/bin/env bash
# `rdmactl selftest` on Soft-RoCE: the loopback on rxe0/1 passes with a low pass mark (emulated rxe
# moves far less than the 10 Gb/s it reports), over the IPv4 RoCE v2 GID, with bandwidth > 0 and
# latency figures (typical <= p99); an impossible mark fails naming both figures. Prints rdmactl's
# bandwidth beside ib_write_bw's loopback on the same device and GID, and the ratio (print only:
# figures under TCG vary too much between hosts to assert on).
# vm-timeout: 150
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
python3 - selftest.json "$dev" "$idx" "$gid" "$ratio" "${rate%% *}" > figures.txt <<'PY' || { cat figures.txt; exit 1; }
import json, sys
path, dev, idx, gid, ratio, rate = sys.argv[1:]
doc = json.load(open(path))
def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)
if (doc.get("apiVersion"), doc.get("kind")) != ("rdmactl/v1", "SelftestReport"):
    fail(f"apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')}")
st = doc["selftest"]
if st["result"] != "passed":
    fail(f"selftest result {st['result']}: {st['reason']}")
tests = [t for t in st["tests"] if t["test"] == "loopback" and t["device"] == dev and t["port"] == 1]
if len(tests) != 1:
    fail(f"want one loopback test of {dev}/1, got {st['tests']}")
t = tests[0]
if t["result"] != "passed":
    fail(f"{dev}/1: {t['result']}: {t['reason']}")
if t["gidIndex"] != int(idx) or t["gid"] != gid:
    fail(f"GID index {t['gidIndex']} {t['gid']}, want the IPv4 RoCE v2 GID {idx} {gid}")
bw = t["bandwidthGbps"]
if not isinstance(bw, (int, float)) or bw <= 0:
    fail(f"bandwidth {bw}")
want_expected = float(rate) * float(ratio)
if t["expectedGbps"] is None or abs(t["expectedGbps"] - want_expected) > 1e-9 * want_expected:
    fail(f"expectedGbps {t['expectedGbps']}, want {rate} x {ratio} = {want_expected}")
lat = t["latencyUs"]
if not lat or not all(isinstance(lat[k], (int, float)) and lat[k] > 0 for k in ("typical", "average", "p99")):
    fail(f"latency figures missing or not positive: {lat}")
if lat["typical"] > lat["p99"]:
    fail(f"typical latency {lat['typical']} us above p99 {lat['p99']} us")
print(f"{bw:.6f} {lat['typical']:.2f} {lat['average']:.2f} {lat['p99']:.2f}")
PY
read -r bw lat_typical lat_average lat_p99 < figures.txt
echo "ok: rdmactl selftest passed: $dev/1 GID index $idx, $bw Gb/s, latency $lat_typical us typical, $lat_average average, $lat_p99 p99"

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
    - rdmaDevice: mlx5_0
  selftest: {minBandwidthRatio: 0.0002}
YAML
rc=0
"$RDMACTL" selftest -f spec.yaml --format json --duration 0.3 > spec.json 2>&1 || rc=$?
echo "--- rdmactl selftest -f spec.yaml --format json --duration 0.3, exit $rc"; cat spec.json
[ "$rc" -eq 1 ] || fail "a spec naming a missing device exited $rc, want 1 (failed)"
python3 - spec.json "$dev" "$ratio" "${rate%% *}" <<'PY'
import json, sys
path, dev, ratio, rate = sys.argv[1:]
st = json.load(open(path))["selftest"]
got = [(t["device"], t["port"], t["result"]) for t in st["tests"]]
if st["result"] != "failed" or got != [(dev, 1, "passed"), ("mlx5_0", 1, "failed")]:
    sys.exit(f"FAIL: result {st['result']}, tests {got}, want failed with [({dev}, 1, passed), (mlx5_0, 1, failed)]")
want = float(rate) * 0.0002
if abs(st["tests"][0]["expectedGbps"] - want) > 1e-9 * want:
    sys.exit(f"FAIL: expectedGbps {st['tests'][0]['expectedGbps']}, want the spec's ratio: {rate} x 0.0002")
print("ok: the spec selects " + dev + "/1 at its own ratio; mlx5_0: " + st["tests"][1]["reason"])
PY

# perftest on the same device and GID, server and client in this guest (as 03-perftest-loopback).
perftest_pair ib_write_bw 18516 bw "$ip" -d "$dev" -x "$idx" -D 2 -F --report_gbits || fail "ib_write_bw failed"
# Columns: #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]
read -r _ _ _ perftest_bw _ < <(awk '/#bytes/ {getline; print; exit}' bw-client.log) || fail "no result row from ib_write_bw"
python3 -c 'import sys; r, p = map(float, sys.argv[1:]); print(f"rdmactl {r:.4f} Gb/s, ib_write_bw {p:.4f} Gb/s, ratio rdmactl/perftest {r / p:.2f}" if p > 0 else f"rdmactl {r:.4f} Gb/s, ib_write_bw {p} Gb/s")' "$bw" "$perftest_bw"

# ib_write_lat the same way: its t_typical (median) and 99% percentile beside rdmactl's. perftest
# times with the TSC scaled by the CPU frequency it estimates (-F: whatever it finds); under TCG that
# estimate is unstable ("Correlation coefficient r^2 < 0.9"), so its microseconds vary by 100x between
# runs, while rdmactl reads CLOCK_MONOTONIC.
perftest_pair ib_write_lat 18517 lat "$ip" -d "$dev" -x "$idx" -n 1000 -F || fail "ib_write_lat failed"
# Columns: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99%-percentile 99.9%-percentile
read -r _ _ _ _ perftest_typical perftest_avg _ perftest_p99 _ < <(awk '/#bytes/ {getline; print; exit}' lat-client.log) ||
  fail "no result row from ib_write_lat"
echo "latency typical/average/p99 us: rdmactl $lat_typical/$lat_average/$lat_p99, ib_write_lat $perftest_typical/$perftest_avg/$perftest_p99"
