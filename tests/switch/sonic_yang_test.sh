#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl's SONiC output judged by SONiC's own YANG models (issue 27): every table the output writes
# is converted as sonic-yang-mgmt does and validated by yanglint (sonic_yang_check.py).
#   a) the harness against SONiC's own data: sample_config_db.json must pass, and each case of
#      sonic-yang-models' tests for these tables must pass or fail as SONiC's tests say;
#   b) the real binary: `rdmactl switch-config --vendor sonic` on examples/roce-lossless.yaml;
#   c) cases/base.json must pass and each case of cases/negative.json must fail, for its reason.
# Usage: sonic_yang_test.sh RDMACTL SOURCE_DIR. Needs python3 and yanglint (libyang2-tools); a
# missing tool fails the test: it is never skipped.
set -u
rdmactl=$1
src=$2
here=$src/tests/switch
check=$here/sonic_yang_check.py
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for tool in python3 yanglint; do
  command -v "$tool" > /dev/null || { echo "FAIL: $tool not installed (packaging/install-deps.sh --tests)"; exit 1; }
done
echo "yanglint: $(yanglint -v)"
work=$(mktemp -d "${TMPDIR:-/tmp}/sonic-yang-test.XXXXXX")

echo "== a) SONiC's own data"
python3 "$here/sonic_yang_upstream.py" "$work/upstream" || fail "the harness disagrees with SONiC's own test data"

echo "== b) rdmactl switch-config --vendor sonic"
# Running configs for the outputs that need one (lossless priorities outside 3-4): the SKU templates
# rendered as sonic-cfggen does (tests/switch/sonic_template_check.py).
python3 "$here/sonic_template_check.py" --sku Arista-7060CX-32S-C32 --asic-type broadcom --emit-running "$work/running-bcm.json" ||
  fail "cannot render the Broadcom SKU's running config"
python3 "$here/sonic_template_check.py" --sku ACS-MSN2700 --asic-type mellanox --buffer-model dynamic \
  --emit-running "$work/running-mlnx.json" || fail "cannot render the Mellanox SKU's running config"
spec=$src/examples/roce-lossless.yaml
run_rdmactl() {  # NAME ARGS...: the output must be valid and bind the example's PFC priority 3 on each port
  local name=$1; shift
  if ! "$rdmactl" switch-config -f "$spec" --vendor sonic --platform mellanox --cable-length 5m "$@" > "$work/$name.json" 2> "$work/$name.err"; then
    fail "rdmactl switch-config $*: exit $?: $(cat "$work/$name.err")"
    return
  fi
  python3 "$check" --workdir "$work/$name" "$work/$name.json" || fail "rdmactl's output ($*) is not valid by SONiC's YANG models: $work/$name.json"
  # Not the printer's exact text: only what the example spec decides (pfc: [3], dscp 26 -> 3).
  python3 - "$work/$name.json" Ethernet0 Ethernet4 <<'PY' || fail "rdmactl's output ($*) lacks the example's PFC binding"
import json, sys
db = json.load(open(sys.argv[1]))
for port in sys.argv[2:]:
    row = db.get("PORT_QOS_MAP", {}).get(port, {})
    assert row.get("pfc_enable") == "3", f"PORT_QOS_MAP[{port}].pfc_enable is {row.get('pfc_enable')!r}, not '3'"
    name = row.get("dscp_to_tc_map")
    assert db.get("DSCP_TO_TC_MAP", {}).get(name, {}).get("26") == "3", f"PORT_QOS_MAP[{port}] maps DSCP 26 to no TC 3"
PY
}
run_rdmactl rdmactl --ports Ethernet0,Ethernet4
run_rdmactl rdmactl-uplinks --ports Ethernet0,Ethernet4 --uplinks Ethernet48,Ethernet52 --uplink-cable-length 300m
# Every other form of the output: each must load into the models (their values are the unit tests').
for args in "lossless-3-4.yaml --platform broadcom --pfc-watchdog --pfc-watchdog-detect 400 --pfc-watchdog-action notify" \
  "lossless-3-4.yaml --platform mellanox --buffer-model dynamic --uplink-cable-length 100m --no-pfc-watchdog" \
  "lossy.yaml --platform broadcom --lossless-bandwidth 70" \
  "lossless-priority-5.yaml --platform broadcom --running-config $work/running-bcm.json" \
  "lossless-3-5.yaml --platform mellanox --buffer-model dynamic --running-config $work/running-mlnx.json"; do
  set -- $args
  name=variant-${1%.yaml}-$3
  variant=$here/specs/$1; shift
  if ! "$rdmactl" switch-config -f "$variant" --vendor sonic --cable-length 5m --ports Ethernet0 --uplinks Ethernet124 "$@" > "$work/$name.json" 2> "$work/$name.err"; then
    fail "rdmactl switch-config -f $variant $*: exit $?: $(cat "$work/$name.err")"
    continue
  fi
  python3 "$check" --workdir "$work/$name" "$work/$name.json" || fail "rdmactl's output for $variant ($*) is not valid by SONiC's YANG models: $work/$name.json"
done

# What SONiC's templates cannot hold is refused (65), not printed: PFC on priority group 0 (the
# lossy traffic's), and PCP trust beside the stock DSCP map.
for refused in lossless-priority-0.yaml pcp.yaml; do
  "$rdmactl" switch-config -f "$here/specs/$refused" --vendor sonic --platform broadcom --cable-length 5m --ports Ethernet0 \
    > "$work/refused.json" 2> "$work/refused.err"
  rc=$?
  [ $rc -eq 65 ] || fail "$refused: exit $rc, not 65 (refused): $(cat "$work/refused.err")"
done

echo "== c) a valid fragment, and fragments the models must reject"
python3 "$check" --workdir "$work/base" "$here/cases/base.json" || fail "cases/base.json must pass"
python3 - "$here/cases/base.json" "$here/cases/negative.json" "$work" <<'PY'
import json, os, sys
base = json.load(open(sys.argv[1]))
def merge(into, patch):
    for k, v in patch.items():
        if v is None:
            into.pop(k, None)
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v
for case in json.load(open(sys.argv[2]))["cases"]:
    data = json.loads(json.dumps(base))
    merge(data, case["patch"])
    with open(os.path.join(sys.argv[3], "neg." + case["name"] + ".json"), "w") as f:
        json.dump(data, f, indent=2)
    with open(os.path.join(sys.argv[3], "neg." + case["name"] + ".expect"), "w") as f:
        f.write(case["expect"])
PY
for f in "$work"/neg.*.json; do
  name=$(basename "$f" .json)
  out=$(python3 "$check" --workdir "$work/$name" "$f" 2>&1)
  rc=$?
  expect=$(cat "$work/$name.expect")
  if [ $rc -eq 0 ]; then
    fail "$name: accepted; SONiC's models must reject it"
  elif [[ "$out" != *"$expect"* ]]; then
    fail "$name: rejected, but not for \"$expect\":"; echo "$out"
  else
    reason=$(grep -m1 'libyang err' <<< "$out" || grep -m1 'ERROR' <<< "$out")
    echo "${name#neg.}: rejected: ${reason:0:220}"
  fi
done

if [ $failures -ne 0 ]; then
  echo "switch_sonic_yang: $failures failure(s); files kept in $work"
  exit 1
fi
rm -rf "$work"
echo "switch_sonic_yang: all checks passed"
