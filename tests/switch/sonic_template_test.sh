#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl's SONiC output judged by the platform's own templates (issue 42): for a Broadcom
# Tomahawk SKU (Arista-7060CX-32S-C32) and a Mellanox Spectrum SKU (ACS-MSN2700), the SKU's
# qos.json.j2 and buffers(_dynamic).json.j2 are rendered as sonic-cfggen does, rdmactl's fragment
# is loaded over them as `config load` does, and sonic_template_check.py checks the result.
#   a) the real binary, for each (SKU, asic_type, buffer model, topology, cable lengths, watchdog);
#   b) hand-made fragments the check must reject, each for its reason;
#   c) rdmactl's refusals agree with the templates.
# Usage: sonic_template_test.sh RDMACTL SOURCE_DIR. Needs python3 with jinja2 (python3-jinja2); a
# missing one fails the test: it is never skipped.
set -u
rdmactl=$1
src=$2
here=$src/tests/switch
check=$here/sonic_template_check.py
templates=$here/sonic-templates
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

command -v python3 > /dev/null || { echo "FAIL: python3 not installed"; exit 1; }
python3 -c 'import jinja2' 2> /dev/null || { echo "FAIL: python3 jinja2 not installed (python3-jinja2; packaging/install-deps.sh --tests)"; exit 1; }
echo "jinja2: $(python3 -c 'import jinja2; print(jinja2.__version__)')"
work=$(mktemp -d "${TMPDIR:-/tmp}/sonic-template-test.XXXXXX")

bcm=Arista-7060CX-32S-C32
mlnx=ACS-MSN2700
ports=Ethernet0,Ethernet4
uplinks=Ethernet48,Ethernet52
n=0
# pass SKU ASIC MODEL TYPE SPEC UPLINK_LEN WATCHDOG [RDMACTL ARGS...]: rdmactl's output must pass.
pass() {
  local sku=$1 asic=$2 model=$3 type=$4 spec=$5 up=$6 wd=$7; shift 7
  local previous=() running=yes
  if [ "${1:-}" = --previous ]; then previous=(--previous "$2"); shift 2; fi
  if [ "${1:-}" = --no-running ]; then running=no; shift; fi
  n=$((n + 1))
  local out=$work/pass.$n.json wdarg=() runarg=()
  case $wd in on) wdarg=(--pfc-watchdog) ;; off) wdarg=(--no-pfc-watchdog) ;; esac
  if [ $running = yes ]; then
    # The switch the output is made for: its running CONFIG_DB (the templates, buffermgrd's PGs,
    # an earlier run), as rdmactl's --running-config takes it.
    python3 "$check" --templates "$templates" --sku "$sku" --asic-type "$asic" --buffer-model "$model" --type "$type" \
      "${previous[@]}" --emit-running "$work/pass.$n.running.json" || { fail "cannot emit $sku's running config"; return; }
    runarg=(--running-config "$work/pass.$n.running.json")
  fi
  local args=(switch-config -f "$spec" --vendor sonic --platform "$asic" --buffer-model "$model" --ports "$ports"
    --uplinks "$uplinks" --cable-length 5m --uplink-cable-length "$up" "${wdarg[@]}" "${runarg[@]}" "$@")
  "$rdmactl" "${args[@]}" > "$out" 2> "$work/pass.$n.err"
  local rc=$?
  if [ $rc -ne 0 ]; then
    fail "rdmactl ${args[*]}: exit $rc: $(cat "$work/pass.$n.err")"
    return
  fi
  local cables=()
  for p in ${ports//,/ }; do cables+=(--cable "$p=5m"); done
  for p in ${uplinks//,/ }; do cables+=(--cable "$p=$up"); done
  python3 "$check" --templates "$templates" --sku "$sku" --asic-type "$asic" --buffer-model "$model" --type "$type" \
    --watchdog "$wd" "${cables[@]}" "${previous[@]}" --dump "$work/pass.$n.merged.json" "$out" ||
    fail "rdmactl ${args[*]}: the output does not hold against $sku's templates ($out)"
}

echo "== a) rdmactl switch-config --vendor sonic, loaded over the SKU's rendered templates"
example=$src/examples/roce-lossless.yaml
lossy=$here/specs/lossy.yaml
# Without the running config (lossless 3: the templates' queues stay, the PGs of 1-7 but |3 deleted).
pass $bcm broadcom traditional ToRRouter "$example" 300m default --no-running
pass $mlnx mellanox traditional ToRRouter "$example" 300m default --no-running
pass $mlnx mellanox dynamic LeafRouter "$example" 40m default --no-running
for type in ToRRouter LeafRouter; do
  for up in 300m 40m; do
    pass $bcm broadcom traditional $type "$example" $up default
    pass $mlnx mellanox traditional $type "$example" $up default
    pass $mlnx mellanox dynamic $type "$example" $up default
  done
done
for wd in on off; do
  pass $bcm broadcom traditional ToRRouter "$example" 300m $wd
  pass $mlnx mellanox traditional ToRRouter "$example" 300m $wd
  pass $mlnx mellanox dynamic LeafRouter "$example" 300m $wd
done
pass $mlnx mellanox dynamic LeafRouter "$example" 300m on --pfc-watchdog-action notify --pfc-watchdog-detect 400
# tests/switch/specs: lossy.yaml applies (no PFC), and so do lossless priorities outside the
# templates' 3-4 (the queues' partition rewritten) and two of them; pcp.yaml is refused (c).
for model in traditional dynamic; do pass $mlnx mellanox $model ToRRouter "$lossy" 300m default; done
pass $bcm broadcom traditional LeafRouter "$lossy" 40m off
for spec in lossless-priority-5.yaml lossless-3-4.yaml lossless-3-5.yaml; do
  pass $bcm broadcom traditional ToRRouter "$here/specs/$spec" 300m default
  pass $mlnx mellanox traditional LeafRouter "$here/specs/$spec" 40m default
  pass $mlnx mellanox dynamic ToRRouter "$here/specs/$spec" 300m default
done
# A second run over the first, loaded, saved and reloaded: the first run's PG and queue keys
# (buffermgrd's from its pfc_enable, its queue partition) must not outlive or overlap the second's.
for first in lossless-priority-5.yaml lossless-3-4.yaml lossless-3-5.yaml; do
  for second in "$example" "$here/specs/lossless-priority-5.yaml"; do
    for model in traditional dynamic; do
      [ "$model" = dynamic ] && { sku=$mlnx; asic=mellanox; } || { sku=$bcm; asic=broadcom; }
      python3 "$check" --templates "$templates" --sku $sku --asic-type $asic --buffer-model $model \
        --emit-running "$work/first.running.json" || fail "cannot emit $sku's running config"
      "$rdmactl" switch-config -f "$here/specs/$first" --vendor sonic --platform $asic --buffer-model $model \
        --ports "$ports" --uplinks "$uplinks" --cable-length 5m --uplink-cable-length 300m \
        --running-config "$work/first.running.json" > "$work/first.json" || fail "rdmactl (first run, $first): exit $?"
      pass $sku $asic $model ToRRouter "$second" 300m default --previous "$work/first.json"
    done
  done
done
# A length pg_profile_lookup.ini lacks is refused in the traditional model (c) but is the dynamic model's own to size.
pass $mlnx mellanox dynamic ToRRouter "$example" 150m default

echo "== b) fragments the check must reject"
"$rdmactl" switch-config -f "$example" --vendor sonic --platform broadcom --ports Ethernet0 --uplinks Ethernet48 \
  --cable-length 5m --uplink-cable-length 300m > "$work/bcm.json" || fail "rdmactl (broadcom base for b): exit $?"
"$rdmactl" switch-config -f "$example" --vendor sonic --platform mellanox --buffer-model dynamic --ports Ethernet0 \
  --uplinks Ethernet48 --cable-length 5m --uplink-cable-length 300m > "$work/mlnx.json" || fail "rdmactl (mellanox base for b): exit $?"
# NAME BASE SKU ASIC MODEL EXPECT PATCH: the base output with PATCH merged in (null deletes) must be
# rejected with a message containing EXPECT.
reject() {
  local name=$1 base=$2 sku=$3 asic=$4 model=$5 expect=$6 patch=$7
  python3 - "$base" "$patch" > "$work/neg.$name.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
def merge(into, patch):
    for k, v in patch.items():
        if v is None:
            into[k] = None
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v
merge(data, json.loads(sys.argv[2]))
print(json.dumps(data, indent=2))
PY
  local out rc
  out=$(python3 "$check" --templates "$templates" --sku "$sku" --asic-type "$asic" --buffer-model "$model" "$work/neg.$name.json" 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then
    fail "$name: accepted; the templates must reject it"
  elif [ $rc -ne 1 ] || [[ "$out" != *"$expect"* ]]; then
    fail "$name: exit $rc, not rejected for \"$expect\":"; echo "$out"
  else
    echo "$name: rejected: $(grep -m1 -F -- "$expect" <<< "$out" | cut -c1-260)"
  fi
}
reject pfc-to-pg-on-broadcom "$work/bcm.json" $bcm broadcom traditional \
  "field pfc_to_pg_map = 'RDMACTL' on asic_type broadcom: qos_config.j2 binds it only on pfc_to_pg_map_supported_asics ['mellanox', 'barefoot']" \
  '{"PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {"RDMACTL": {"3": "3"}}, "PORT_QOS_MAP": {"Ethernet0": {"pfc_to_pg_map": "RDMACTL"}}}'
reject cable-not-in-ini "$work/bcm.json" $bcm broadcom traditional \
  "CABLE_LENGTH|AZURE|Ethernet0 = 7m at PORT|Ethernet0 speed 100000: Arista-7060CX-32S-C32/pg_profile_lookup.ini has no such (speed, cable) row" \
  '{"CABLE_LENGTH": {"AZURE": {"Ethernet0": "7m"}}}'
reject pfc-enable-5 "$work/bcm.json" $bcm broadcom traditional \
  "pfc_enable priority 5 (queue 5): no BUFFER_QUEUE key of Ethernet0 gives queue 5 a lossless egress profile" \
  '{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "5", "pfcwd_sw_enable": "5"}}}'
reject pfc-enable-5-mellanox "$work/mlnx.json" $mlnx mellanox dynamic \
  "pfc_enable priority 5 has no lossless BUFFER_PG key (dynamic model: none cover it)" \
  '{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "5", "pfcwd_sw_enable": "5"}}}'
reject dynamic-pg-deleted "$work/mlnx.json" $mlnx mellanox dynamic \
  "pfc_enable priority 3 has no lossless BUFFER_PG key" '{"BUFFER_PG": {"Ethernet0|3": null}}'
reject stale-boot-pg "$work/bcm.json" $bcm broadcom traditional \
  "BUFFER_PG|Ethernet0|3-4 (buffermgrd's at boot, from the template's pfc_enable) is still there" \
  '{"BUFFER_PG": {"Ethernet0|3-4": {"profile": "pg_lossless_100000_5m_profile"}}}'
reject lossy-profile-replaced "$work/mlnx.json" $mlnx mellanox dynamic \
  "BUFFER_QUEUE of Ethernet0: queue 0 had 'q_lossy_profile' (the SKU's) and has 'egress_lossy_profile' after the load" \
  '{"BUFFER_QUEUE": {"Ethernet0|0-2": {"profile": "egress_lossy_profile"}}}'
reject queue-5-lossy "$work/bcm.json" $bcm broadcom traditional \
  "pfc_enable priority 5 (queue 5): no BUFFER_QUEUE key of Ethernet0 gives queue 5 a lossless egress profile" \
  '{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "5", "pfcwd_sw_enable": "5"}}}'
reject pg-0-lossless "$work/bcm.json" $bcm broadcom traditional \
  "BUFFER_PG: Ethernet0|0 and Ethernet0|0 (buffermgrd's, from pfc_enable) overlap" \
  '{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "0,3", "pfcwd_sw_enable": "0,3"}}}'
reject queue-overlap "$work/mlnx.json" $mlnx mellanox dynamic \
  "BUFFER_QUEUE: Ethernet0|3 and Ethernet0|3-4 overlap" '{"BUFFER_QUEUE": {"Ethernet0|3": {"profile": "egress_lossless_profile"}}}'
reject missing-map "$work/bcm.json" $bcm broadcom traditional \
  "PORT_QOS_MAP|Ethernet0: field dscp_to_tc_map = 'NOPE': no DSCP_TO_TC_MAP|NOPE in the merged CONFIG_DB" \
  '{"PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "NOPE"}}}'
reject unknown-field "$work/bcm.json" $bcm broadcom traditional \
  "PORT_QOS_MAP|Ethernet0: field dot1p_to_tc_map: Arista-7060CX-32S-C32/qos.json.j2 rendered for broadcom writes no such field" \
  '{"DOT1P_TO_TC_MAP": {"RDMACTL": {"3": "3"}}, "PORT_QOS_MAP": {"Ethernet0": {"dot1p_to_tc_map": "RDMACTL"}}}'
reject cable-table-deleted "$work/mlnx.json" $mlnx mellanox dynamic \
  "CABLE_LENGTH|AZURE|Ethernet8: None after the merge, not the template's '5m'" '{"CABLE_LENGTH": {"AZURE": null}}'
reject watchdog-mismatch "$work/bcm.json" $bcm broadcom traditional \
  "PORT_QOS_MAP|Ethernet0: pfcwd_sw_enable = '3,4' after the merge, pfc_enable = '3'" \
  '{"PORT_QOS_MAP": {"Ethernet0": {"pfcwd_sw_enable": "3,4"}}}'

echo "== c) rdmactl's refusals agree with the templates"
# expect_exit CODE WHY ARGS...: rdmactl must exit CODE.
expect_exit() {
  local code=$1 why=$2; shift 2
  "$rdmactl" switch-config --vendor sonic --ports Ethernet0 --uplinks Ethernet48 "$@" > /dev/null 2> "$work/refusal.err"
  local rc=$?
  if [ $rc -ne "$code" ]; then
    fail "rdmactl switch-config $*: exit $rc, not $code ($why)"
  else
    echo "refused ($rc): $why: $(head -c 160 "$work/refusal.err")"
  fi
}
# The Broadcom SKU has no buffers_dynamic.json.j2 (the Mellanox one has): no dynamic model to load over.
[ -e "$templates/$bcm/buffers_dynamic.json.j2" ] && fail "$bcm has a buffers_dynamic.json.j2: rdmactl's refusal below is wrong"
[ -e "$templates/$mlnx/buffers_dynamic.json.j2" ] || fail "$mlnx lacks buffers_dynamic.json.j2"
expect_exit 64 "no dynamic buffer model on broadcom" -f "$example" --platform broadcom --buffer-model dynamic --cable-length 5m
# PG 0 is the templates' lossy PG (BUFFER_PG|port|0 ingress_lossy_profile): PFC on it is refused.
expect_exit 65 "pfc: [0]: PG 0 is the lossy traffic's" -f "$here/specs/lossless-priority-0.yaml" --platform broadcom --cable-length 5m
# A length the SKU's pg_profile_lookup.ini lacks: refused when the file is given (7m is in neither
# SKU's; cable-not-in-ini above is rejected for it), taken when it is listed.
for sku in $bcm $mlnx; do
  grep -Eq '^[[:space:]]*[0-9]+[[:space:]]+7m[[:space:]]' "$templates/$sku/pg_profile_lookup.ini" && fail "$sku's ini lists 7m: the refusal below is wrong"
  expect_exit 64 "7m is not in $sku's pg_profile_lookup.ini" -f "$example" --platform broadcom --cable-length 7m \
    --pg-profile-lookup "$templates/$sku/pg_profile_lookup.ini"
  expect_exit 0 "5m and 300m are in $sku's pg_profile_lookup.ini" -f "$example" --platform broadcom --cable-length 5m \
    --uplink-cable-length 300m --pg-profile-lookup "$templates/$sku/pg_profile_lookup.ini"
done
# The templates bind dscp_to_tc_map on every port and no dot1p_to_tc_map (unknown-field above is rejected for it).
expect_exit 65 "trust pcp beside the templates' dscp_to_tc_map" -f "$here/specs/pcp.yaml" --platform mellanox --cable-length 5m --tagged-uplinks

if [ $failures -ne 0 ]; then
  echo "switch_sonic_template: $failures failure(s); files kept in $work"
  exit 1
fi
rm -rf "$work"
echo "switch_sonic_template: all checks passed"
