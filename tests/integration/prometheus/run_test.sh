#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The alerting rules (packaging/prometheus/), their PrometheusRule (packaging/kubernetes/) and the
# Grafana dashboard (packaging/grafana/) against the real promtool and real scrapes of rdmactl:
#
#   tests/integration/prometheus/run_test.sh RDMACTL_BINARY SELFTEST_PROM_BINARY
#
#   1. promtool check rules and promtool test rules (rdmactl-alerts.test.yml: each alert firing and
#      not firing; rdmactl-alerts-days.test.yml: a target down for days); controls: mutants of the
#      rules must fail those tests (the symbol-error alert on the counter's total instead of its
#      rate, the firmware alert without its sample-count guard, the link alert without
#      severity="error", the rate-drop alert per series, the target-down alert without its ALERTS).
#   2. packaging/kubernetes/prometheusrule.yaml is `render.sh --prometheusrule`, byte for byte, and
#      its spec is the rules file's groups; render.sh --runbook-base rebases every runbook_url.
#   3. Real scrapes of this binary: `plan --format prom` of every example against the recorded demo
#      host, serve's /metrics (--dry-run under --root with the ConnectX-6 Dx sysfs fixture), `apply
#      --format prom` on a copy of that fixture (its self-test, skipped there, gives
#      rdmactl_selftest_success), `fabric --format prom` where no fabric answers, and `fabric
#      --format prom` on a simulated InfiniBand fabric (ibsim with the real OpenSM, a link cut to
#      one lane: findings of both severities), and rdmactl_selftest_prom (selftest_prom.cpp:
#      apply's render_prom for a self-test that ran loopback and peer tests, which no machine
#      here can run).
#   4. Every metric name in the rules' and the dashboard's expressions is in those scrapes (names
#      that need a managed subnet manager are listed below with the reason and the test that
#      scrapes them, and must be families the source declares); every dashboard query, its Grafana
#      variables replaced, parses (promtool check rules over them as recording rules); every label
#      matcher (=, !=, =~, !~; in name{...} and {__name__=...}) names a label of the metric's
#      scraped series and its value, or each alternative of its regex, matches one scraped (or one
#      listed below and found in the source); label matchers on a family no scrape has fail unless
#      the family is listed with its reason. Controls: a misspelt metric in a copy of the dashboard
#      and of the rules, misspelt label values (=, !=, !~, in '' and ``, a regex with a $, an
#      alternative in a group, a bare {__name__=...} selector) and label name, matchers on a family
#      not listed, and a query with a syntax error, must fail.
#   5. The dashboard's shape: Grafana's classic JSON model, a Prometheus datasource variable,
#      node/device/port query variables, every panel on it with a gridPos inside the 24 columns.
#
# Needs no root and no RDMA hardware. Exit codes: 0 passed, 1 failed, 77 skipped (a tool missing,
# not root). As root or under CI (CI=true) a case that cannot run is a failure, never a skip.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: $0 RDMACTL_BINARY SELFTEST_PROM_BINARY (got: ${1:-nothing} ${2:-nothing}; both must be executables)" >&2
  exit 1
fi
rdmactl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
selftest_prom=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
rules=$src/packaging/prometheus/rdmactl-alerts.yml
rules_test=$src/packaging/prometheus/rdmactl-alerts.test.yml
rules_test_days=$src/packaging/prometheus/rdmactl-alerts-days.test.yml
render=$src/packaging/prometheus/render.sh
operator_rule=$src/packaging/kubernetes/prometheusrule.yaml
dashboard=$src/packaging/grafana/rdmactl.json
ibsim_fabric=$src/tests/ibsim/ibsim-fabric.sh

# under_ci, cannot_run: a missing tool skips (77) only when not root and not CI.
. "$(dirname "$0")/../lib.sh"
command -v promtool > /dev/null ||
  cannot_run "promtool not found: apt-get install --no-install-recommends prometheus"
command -v curl > /dev/null || cannot_run "curl not found: apt-get install --no-install-recommends curl"
python3 -c 'import yaml' 2> /dev/null || cannot_run "python3 with yaml not found: apt-get install python3-yaml"
for tool in ibsim opensm ibportstate; do
  command -v "$tool" > /dev/null || cannot_run "$tool not found (apt-get install ibsim-utils libumad2sim0 opensm infiniband-diags)"
done
ls /usr/lib/*/umad2sim/libumad2sim.so > /dev/null 2>&1 || [ -n "${UMAD2SIM:-}" ] ||
  cannot_run "libumad2sim.so not found (apt-get install libumad2sim0)"

work=$(mktemp -d /tmp/rdmactl-prometheus-test.XXXXXX)
serve_pid=
fabric_dir=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [ -n "$serve_pid" ]; then
    kill -TERM "$serve_pid" 2> /dev/null
    wait "$serve_pid" 2> /dev/null
  fi
  # Only what ibsim-fabric.sh started in this directory (its PID files).
  [ -n "$fabric_dir" ] && "$ibsim_fabric" stop "$fabric_dir" > /dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

passed=0
failed=0
ok() {
  passed=$((passed + 1))
  echo "ok   - $*"
}
fail() {
  failed=$((failed + 1))
  echo "FAIL - $*"
}
# check DESCRIPTION COMMAND...: the command's output is shown when it fails.
check() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then ok "$what"; else
    fail "$what"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
}
# refuses DESCRIPTION COMMAND...: a control, the command must fail.
refuses() {
  local what=$1
  shift
  if "$@" > "$work/control.out" 2>&1; then
    fail "control: $what was accepted: the check is blind"
  else
    ok "control: $what is refused"
  fi
}

# --- 1. the rules ---------------------------------------------------------------------------------
check "promtool check rules rdmactl-alerts.yml" promtool check rules "$rules"
check "promtool test rules rdmactl-alerts.test.yml (every alert firing and not firing)" \
  promtool test rules "$rules_test"
check "promtool test rules rdmactl-alerts-days.test.yml (a target down for 8 days)" \
  promtool test rules "$rules_test_days"
# The tests see the difference between a rate and a total: on the total, the flat counters fire.
mkdir -p "$work/mutant"
sed 's/rate(rdmactl_infiniband_symbol_error_total\[30m\]) > 0/rdmactl_infiniband_symbol_error_total > 0/' "$rules" > "$work/mutant/rdmactl-alerts.yml"
cp "$rules_test" "$rules_test_days" "$work/mutant/"
if cmp -s "$rules" "$work/mutant/rdmactl-alerts.yml"; then
  fail "control: the symbol-error rule was not found to mutate"
else
  refuses "the symbol-error alert on the counter's total (not its rate) under promtool test rules" \
    promtool test rules "$work/mutant/rdmactl-alerts.test.yml" "$work/mutant/rdmactl-alerts-days.test.yml"
fi
# mutant DESCRIPTION PYTHON-REPLACE-OLD PYTHON-REPLACE-NEW: the rules with OLD replaced by NEW must
# fail promtool test rules (OLD must be in the rules).
mutant() {
  python3 -c '
import sys
s = open(sys.argv[1]).read()
if sys.argv[2] not in s:
    sys.exit(1)
open(sys.argv[4], "w").write(s.replace(sys.argv[2], sys.argv[3]))
' "$rules" "$2" "$3" "$work/mutant/rdmactl-alerts.yml" || {
    fail "control: $1: the text to mutate is not in the rules"
    return
  }
  refuses "$1 under promtool test rules" \
    promtool test rules "$work/mutant/rdmactl-alerts.test.yml" "$work/mutant/rdmactl-alerts-days.test.yml"
}
mutant "the firmware alert without its sample-count guard (a new node fires early)" \
  "
          and on (node, device, pci)
          count_over_time((max by (node, device, pci) (rdmactl_firmware_pending_activation))[3d6h:15m]) >= 288" ""
mutant "the link alert on every severity (a link above the spec fires)" ',severity="error"}' '}'
mutant "the target-down alert without its own ALERTS (it resolves a day after the target went down)" \
  '
            or
              group by (job, instance) (last_over_time(ALERTS{alertname="RdmactlMetricsTargetDown"}[1h]))' ""
mutant "the rate-drop alert per series (a new pod's series never was faster)" \
  "max by (node, device, port) (max_over_time(rdmactl_port_rate_bytes_per_second[1d]))" "max_over_time(rdmactl_port_rate_bytes_per_second[1d])"
# Every alert has a test case that fires (an exp_alerts entry naming it).
sed -n 's/^ *- alert: \([A-Za-z0-9]*\)$/\1/p' "$rules" > "$work/alerts.txt"
while read -r alert; do
  if python3 - "$rules_test" "$alert" << 'EOF'; then ok "$alert has a firing test case"; else fail "$alert has no test case in which it fires"; fi
import sys, yaml
tests = yaml.safe_load(open(sys.argv[1]))["tests"]
sys.exit(0 if any(t["alertname"] == sys.argv[2] and t.get("exp_alerts")
                  for g in tests for t in g.get("alert_rule_test", [])) else 1)
EOF
done < "$work/alerts.txt"
# Every alert's runbook_url is docs/alerts.md's anchor of its name, and the section exists.
python3 - "$rules" "$src/docs/alerts.md" > "$work/runbooks.out" 2>&1 << 'EOF'
import re, sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
doc = open(sys.argv[2]).read()
headings = {h.strip().lower() for h in re.findall(r"^#{2,4} (.+)$", doc, re.M)}
bad = []
for g in rules["groups"]:
    for r in g["rules"]:
        a = r["alert"]
        url = r["annotations"].get("runbook_url", "")
        if url != f"docs/alerts.md#{a.lower()}":
            bad.append(f"{a}: runbook_url {url!r}")
        if a.lower() not in headings:
            bad.append(f"{a}: no section '## {a}' in docs/alerts.md")
        description = r["annotations"].get("description", "")
        if not r["annotations"].get("summary"):
            bad.append(f"{a}: no summary")
        # The labels the alert's series carry: node always (the agent's own, or the PodMonitor's),
        # device and port on the port series, device on the firmware ones.
        want = ["node"]
        if "rdmactl_infiniband_" in r["expr"] or "rdmactl_port_" in r["expr"]:
            want += ["device", "port"]
        if "rdmactl_firmware_" in r["expr"]:
            want += ["device"]
        for label in want:
            if f"$labels.{label}" not in description:
                bad.append(f"{a}: the description does not name the {label}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
status=$?
if [ "$status" -eq 0 ]; then ok "every runbook_url is docs/alerts.md#<alert>, a section of docs/alerts.md; every description names the node, device and port its series have"; else
  fail "runbooks and annotations:"
  sed 's/^/    /' "$work/runbooks.out"
fi

# --- 2. the PrometheusRule ------------------------------------------------------------------------
"$render" --prometheusrule > "$work/prometheusrule.yaml" 2> "$work/render.err"
check "packaging/kubernetes/prometheusrule.yaml is render.sh --prometheusrule (run it after editing the rules)" \
  diff -u "$operator_rule" "$work/prometheusrule.yaml"
check "the PrometheusRule's spec.groups are the rules file's groups" python3 -c '
import sys, yaml
rule = yaml.safe_load(open(sys.argv[1]))
groups = yaml.safe_load(open(sys.argv[2]))["groups"]
assert rule["kind"] == "PrometheusRule" and rule["apiVersion"] == "monitoring.coreos.com/v1", rule["kind"]
assert rule["spec"]["groups"] == groups, "the groups differ"
' "$operator_rule" "$rules"
check "the PrometheusRule is in the PodMonitor's namespace" python3 -c '
import sys, yaml
ns = lambda p: yaml.safe_load(open(p))["metadata"]["namespace"]
assert ns(sys.argv[1]) == ns(sys.argv[2]), (ns(sys.argv[1]), ns(sys.argv[2]))
' "$operator_rule" "$src/packaging/kubernetes/podmonitor.yaml"
"$render" --runbook-base https://git.example.org/hpc/rdmactl/-/blob/main/docs/alerts.md > "$work/rebased.yml"
check "render.sh --runbook-base: every runbook_url rebased, the rules otherwise unchanged, still valid" python3 -c '
import sys, yaml
a = yaml.safe_load(open(sys.argv[1])); b = yaml.safe_load(open(sys.argv[2]))
n = 0
for ga, gb in zip(a["groups"], b["groups"]):
    for ra, rb in zip(ga["rules"], gb["rules"]):
        want = ra["annotations"]["runbook_url"].replace("docs/alerts.md", sys.argv[3], 1)
        assert rb["annotations"]["runbook_url"] == want, rb["annotations"]["runbook_url"]
        rb["annotations"]["runbook_url"] = ra["annotations"]["runbook_url"]
        n += 1
assert a == b and n > 0
' "$rules" "$work/rebased.yml" https://git.example.org/hpc/rdmactl/-/blob/main/docs/alerts.md
check "promtool check rules on the rebased rules" promtool check rules "$work/rebased.yml"
refuses "render.sh --runbook-base with a relative path" "$render" --runbook-base docs/x.md
"$render" --prometheusrule --label release=kube-prometheus-stack --label example.com/team=hpc > "$work/labelled.yaml"
check "render.sh --label: the PrometheusRule's labels, its spec unchanged" python3 -c '
import sys, yaml
a = yaml.safe_load(open(sys.argv[1])); b = yaml.safe_load(open(sys.argv[2]))
want = {"app.kubernetes.io/name": "rdmactl", "release": "kube-prometheus-stack", "example.com/team": "hpc"}
assert b["metadata"]["labels"] == want, b["metadata"]["labels"]
assert a["spec"] == b["spec"]
' "$operator_rule" "$work/labelled.yaml"
refuses "render.sh --label with a blank in the value" "$render" --prometheusrule --label "release=kube prometheus"
refuses "render.sh --label without --prometheusrule" "$render" --label release=x

# --- 3. real scrapes ------------------------------------------------------------------------------
mkdir -p "$work/scrape"
for spec in "$src"/examples/*.yaml; do
  name=$(basename "$spec" .yaml)
  "$rdmactl" plan -f "$spec" --state "$src/examples/demo-host.json" --format prom > "$work/scrape/plan-$name.prom" 2> "$work/plan.err" ||
    fail "plan $name --format prom: exit $?: $(cat "$work/plan.err")"
done

fixture=$src/tests/fixtures/sysfs/cx6dx-roce
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$rdmactl" --root "$fixture" --node prometheus-test serve -f "$src/examples/roce-lossless.yaml" --dry-run \
  --no-rdma-responder --listen "127.0.0.1:$port" > "$work/serve.log" 2>&1 &
serve_pid=$!
scraped=
for _ in $(seq 100); do
  if curl -sf "http://127.0.0.1:$port/metrics" -o "$work/scrape/serve.prom" 2> /dev/null &&
    grep -q '^rdmactl_reconciles_total{node="prometheus-test"} [1-9]' "$work/scrape/serve.prom"; then
    scraped=yes
    break
  fi
  kill -0 "$serve_pid" 2> /dev/null || break
  sleep 0.2
done
kill -TERM "$serve_pid" 2> /dev/null
wait "$serve_pid" 2> /dev/null
serve_pid=
if [ -n "$scraped" ]; then ok "serve /metrics scraped after its first reconcile"; else
  fail "serve: no /metrics after its first reconcile; its log: $(cat "$work/serve.log")"
  rm -f "$work/scrape/serve.prom"
fi

# apply on a copy of the fixture with a spec that manages nothing: no change, then the self-test,
# which has no RDMA device to test here (skipped: rdmactl_selftest_success 0).
cp -r "$fixture" "$work/root"
printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: prometheus-test}\n' > "$work/empty.yaml"
if timeout 60 "$rdmactl" --root "$work/root" --node prometheus-test apply -f "$work/empty.yaml" --format prom \
  > "$work/scrape/apply.prom" 2> "$work/apply.err" && grep -q '^rdmactl_selftest_success{' "$work/scrape/apply.prom"; then
  ok "apply --format prom with its self-test"
else
  fail "apply --format prom: exit $?, no rdmactl_selftest_success: $(cat "$work/apply.err")"
fi

# A self-test that ran its tests (a loopback that passed, one below its bandwidth, a peer that
# failed), as apply renders it: no machine here can run one (apply's above is skipped).
if "$selftest_prom" prometheus-test > "$work/scrape/selftest.prom" 2> "$work/selftest-prom.err" &&
  grep -q '^rdmactl_selftest_latency_seconds{.*statistic="p99"' "$work/scrape/selftest.prom" &&
  grep -q '^rdmactl_selftest_round_trip_seconds{.*test="peer"' "$work/scrape/selftest.prom"; then
  ok "a self-test's loopback and peer tests in the prom format (rdmactl_selftest_prom)"
else
  fail "rdmactl_selftest_prom: exit $?, no latency or round trip: $(cat "$work/selftest-prom.err")"
fi

# fabric --format prom where no fabric answers (this machine's RDMA devices, usually none): the
# failed scan's metrics, exit 0 all the same. Where a real fabric answers, its metrics.
"$rdmactl" fabric --format prom > "$work/scrape/fabric-here.prom" 2> "$work/fabric-here.err" ||
  fail "fabric --format prom: exit $? ($(cat "$work/fabric-here.err"))"

# fabric --format prom on ibsim's fat tree (tests/ibsim/fabric-fattree.net): OpenSM on node01,
# leaf01 port 2 (to node02) cut to one lane (a link-width error: ibportstate from node01 by the
# directed route 0,1, as tests/ibsim's width scenario does) and symbol errors on spine01 port 1 (an
# error-counters warning); scanned from node05.
fabric_dir=$work/fabric
(
  cd "$work" || exit 1
  "$ibsim_fabric" start "$fabric_dir" "$src/tests/ibsim/fabric-fattree.net" > /dev/null &&
    "$ibsim_fabric" sm "$fabric_dir" node01 15 > /dev/null &&
    "$ibsim_fabric" wait-master "$fabric_dir" node01 30 > /dev/null &&
    timeout 60 "$ibsim_fabric" run "$fabric_dir" node01 -- ibportstate -D 0,1 2 width 1 > /dev/null &&
    "$ibsim_fabric" cmd "$fabric_dir" 'PerformanceSet "spine01"[1] PortCounters.SymbolErrorCounter=25' > /dev/null &&
    timeout 60 "$ibsim_fabric" run "$fabric_dir" node05 -- "$rdmactl" fabric --format prom
) > "$work/scrape/fabric-ibsim.prom" 2> "$work/fabric-ibsim.err"
if grep -q '^rdmactl_fabric_scan_success 1$' "$work/scrape/fabric-ibsim.prom" &&
  grep -Eq '^rdmactl_fabric_findings_by_severity\{severity="error"\} [1-9]' "$work/scrape/fabric-ibsim.prom" &&
  grep -Eq '^rdmactl_fabric_findings_by_severity\{severity="warning"\} [1-9]' "$work/scrape/fabric-ibsim.prom"; then
  ok "fabric --format prom on ibsim's fat tree: a scan with findings of both severities"
else
  fail "fabric --format prom on ibsim: $(grep -E 'scan_success|findings' "$work/scrape/fabric-ibsim.prom" | tr '\n' ' ') $(tail -5 "$work/fabric-ibsim.err")"
fi
"$ibsim_fabric" stop "$fabric_dir" > /dev/null 2>&1
fabric_dir=

for f in "$work"/scrape/*.prom; do
  out=$(promtool check metrics < "$f" 2>&1) || fail "promtool check metrics $(basename "$f"): $out"
done
cat "$work"/scrape/*.prom | grep -v '^#' > "$work/series.txt"
grep -Eo '^[a-zA-Z_:][a-zA-Z0-9_:]*' "$work/series.txt" | sort -u > "$work/names.txt"
echo "# $(wc -l < "$work/names.txt") metric names in $(find "$work/scrape" -name '*.prom' | wc -l) real scrapes"

# Families no scrape here can have, each with the reason (check_queries.py --unscraped: their
# label matchers cannot be checked, and only families listed here may go unchecked). They must be
# declared by the source (out.family("NAME", ...)), so a misspelling is never excused, and absent
# from the scrapes above (when a scrape gains one, it leaves this list).
cat > "$work/unscraped.txt" << 'EOF'
rdmactl_subnet_manager_master an agent whose spec manages the subnet manager asks the real sminfo: tests/ibsim_opensm (failover) scrapes serve's /metrics on an ibsim fabric
rdmactl_subnet_manager_local_master as rdmactl_subnet_manager_master (tests/ibsim_opensm)
rdmactl_subnet_manager_local_active as rdmactl_subnet_manager_master (tests/ibsim_opensm)
EOF
while read -r name _; do
  if grep -qx "$name" "$work/names.txt"; then
    fail "$name is in a real scrape now: take it off the list of families not scraped here"
  elif grep -rq "family(\"$name\"" "$src/agent"; then
    echo "$name" >> "$work/names.txt"
  else
    fail "$name, listed as not scraped here, is not a family agent/ declares"
  fi
done < "$work/unscraped.txt"

# Label values no scrape here shows, each a string literal of the source that writes it:
#   rdmactl_selftest_info{result}: outcome_name() (agent/selftest/selftest.cpp); here
#     "skipped" (apply), "none" (serve before a self-test) and "failed" (rdmactl_selftest_prom).
printf '%s\n' "rdmactl_selftest_info result passed agent/selftest/selftest.cpp" > "$work/values.src"
: > "$work/values.txt"
while read -r metric label value file; do
  if grep -qF "\"$value\"" "$src/$file"; then
    echo "$metric $label $value" >> "$work/values.txt"
  else
    fail "the value $value of $metric{$label}, listed as not scraped here, is no string in $file"
  fi
done < "$work/values.src"

# --- 4. the expressions against the metrics -------------------------------------------------------
if python3 "$here/check_queries.py" --names "$work/names.txt" --series "$work/series.txt" --values "$work/values.txt" \
  --unscraped "$work/unscraped.txt" --rules "$rules" --dashboard "$dashboard" --recording "$work/dashboard-rules.yml" \
  > "$work/queries.out" 2>&1; then
  ok "every metric the rules and the dashboard use is one rdmactl exports, with the labels and values it has"
  sed -n 's/^# /# /p' "$work/queries.out"
else
  fail "metric names:"
  sed 's/^/    /' "$work/queries.out"
fi
check "every dashboard query parses (promtool check rules over them as recording rules)" \
  promtool check rules "$work/dashboard-rules.yml"
check "the dashboard has queries to check" grep -q 'rdmactl_dashboard:query_20' "$work/dashboard-rules.yml"

# Controls: a misspelt metric (dashboard and rules), a query that does not parse.
sed 's/rdmactl_drift_changes{/rdmactl_drift_change{/' "$dashboard" > "$work/misspelt.json"
sed 's/rate(rdmactl_infiniband_symbol_error_total\[/rate(rdmactl_infiniband_symbol_errors_total[/' "$rules" > "$work/misspelt.yml"
if cmp -s "$dashboard" "$work/misspelt.json" || cmp -s "$rules" "$work/misspelt.yml"; then
  fail "control: no metric found to misspell"
else
  refuses "the dashboard with rdmactl_drift_change (misspelt)" python3 "$here/check_queries.py" \
    --names "$work/names.txt" --dashboard "$work/misspelt.json" --recording "$work/control-rules.yml"
  grep -q 'rdmactl_drift_change is not a metric' "$work/control.out" || fail "control: not refused for the misspelt name: $(cat "$work/control.out")"
  refuses "the rules with rdmactl_infiniband_symbol_errors_total (misspelt)" python3 "$here/check_queries.py" \
    --names "$work/names.txt" --rules "$work/misspelt.yml" --recording "$work/control-rules.yml"
fi
# Controls for the label matchers, each a copy of the rules (or of the dashboard) with FROM
# replaced by TO that must be refused naming WHY (tab-separated): a misspelt value (state="master":
# OpenSM's word is Master), also in a bare {__name__=...} selector; a misspelt alternative of a
# regex, at the top (link_width, prot-state beside link-.*) or in a group ((link-width|lnk-speed));
# a misspelt value beside a right one; the negative matchers (!= and !~ on a value never seen);
# values in '' and ``; a regex with a $ that is no Grafana variable (errors$: Prometheus anchors
# the regex, so it matches only "errors"); a label the metric does not have; an alert's own ALERTS
# misspelt; the dashboard's p99 latency as p95 (a family that only rdmactl_selftest_prom scrapes).
while IFS=$'\t' read -r kind from to why; do
  case "$kind" in
    rules) target=$rules copy=$work/mislabelled.yml flag=--rules ;;
    dashboard) target=$dashboard copy=$work/mislabelled.json flag=--dashboard ;;
    *) continue ;;
  esac
  python3 -c '
import sys
s = open(sys.argv[1]).read()
if sys.argv[2] not in s:
    sys.exit(1)
open(sys.argv[4], "w").write(s.replace(sys.argv[2], sys.argv[3], 1))
' "$target" "$from" "$to" "$copy" || {
    fail "control: $from is not in the $kind"
    continue
  }
  refuses "the $kind with $to" python3 "$here/check_queries.py" --names "$work/names.txt" --series "$work/series.txt" \
    --values "$work/values.txt" --unscraped "$work/unscraped.txt" "$flag" "$copy" --recording "$work/control-rules.yml"
  grep -qF -- "$why" "$work/control.out" || fail "control: $to refused, but not for $why: $(cat "$work/control.out")"
done << 'EOF'
rules	rdmactl_fabric_subnet_managers{state="Master"}	rdmactl_fabric_subnet_managers{state="master"}	{state="master"}: no such value
rules	rdmactl_fabric_subnet_managers{state="Master"}	{__name__="rdmactl_fabric_subnet_managers",state="master"}	{state="master"}: no such value
rules	check=~"link-width|link-speed"	check=~"link_width|link-speed"	the alternative "link_width"
rules	check=~"link-width|link-speed"	check=~"link-.*|prot-state"	the alternative "prot-state"
rules	check=~"link-width|link-speed"	check=~"(link-width|lnk-speed)"	the alternative "lnk-speed"
rules	severity="error"}	severity="errors"}	{severity="errors"}: no such value
rules	severity="error"}	severity!="eror"}	{severity!="eror"}: no such value
rules	severity="error"}	severity!~"eror|warning"}	the alternative "eror"
rules	severity="error"}	severity='eror'}	{severity="eror"}: no such value
rules	severity="error"}	severity=`eror`}	{severity="eror"}: no such value
rules	severity="error"}	severity=~"errors$"}	{severity=~"errors$"}: the regex matches no value
rules	severity="error"}	severity="error",lane="1"}	no label lane
rules	ALERTS{alertname="RdmactlMetricsTargetDown"}	ALERTS{alertname="RdmactlMetricTargetDown"}	{alertname="RdmactlMetricTargetDown"}: no such value
dashboard	statistic=\"p99\"	statistic=\"p95\"	{statistic="p95"}: no such value
EOF
# Label matchers on a family no scrape has, not listed (or listed without a reason): refused.
grep -v '^rdmactl_subnet_manager_master ' "$work/unscraped.txt" > "$work/unscraped-short.txt"
refuses "the dashboard's rdmactl_subnet_manager_master{node=~...} with the family not listed as unscraped" \
  python3 "$here/check_queries.py" --names "$work/names.txt" --series "$work/series.txt" --values "$work/values.txt" \
  --unscraped "$work/unscraped-short.txt" --dashboard "$dashboard" --recording "$work/control-rules.yml"
grep -qF "rdmactl_subnet_manager_master has no scraped series" "$work/control.out" ||
  fail "control: refused, but not for the unlisted family: $(cat "$work/control.out")"
sed 's/^\(rdmactl_subnet_manager_master\) .*/\1/' "$work/unscraped.txt" > "$work/unscraped-noreason.txt"
refuses "rdmactl_subnet_manager_master listed as unscraped without a reason" \
  python3 "$here/check_queries.py" --names "$work/names.txt" --series "$work/series.txt" --values "$work/values.txt" \
  --unscraped "$work/unscraped-noreason.txt" --dashboard "$dashboard" --recording "$work/control-rules.yml"
grep -qF "rdmactl_subnet_manager_master is listed as not scraped without a reason" "$work/control.out" ||
  fail "control: refused, but not for the missing reason: $(cat "$work/control.out")"
# shellcheck disable=SC2016  # $node is Grafana's, inside the query
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = next(p for p in d["panels"] if p.get("targets"))
p["targets"][0]["expr"] = "sum by (node) (rdmactl_drift_changes{node=~\"$node\"}"
json.dump(d, open(sys.argv[2], "w"))
' "$dashboard" "$work/unbalanced.json"
python3 "$here/check_queries.py" --names "$work/names.txt" --dashboard "$work/unbalanced.json" \
  --recording "$work/unbalanced-rules.yml" > /dev/null 2>&1
refuses "a dashboard query with an unclosed parenthesis, under promtool check rules" promtool check rules "$work/unbalanced-rules.yml"

# --- 5. the dashboard's shape ---------------------------------------------------------------------
# Grafana's dashboard JSON model (classic): uid, title, schemaVersion, templating.list, panels with
# type, gridPos {h, w, x, y} on a 24-column grid, datasource and targets[].expr for Prometheus.
python3 - "$dashboard" > "$work/shape.out" 2>&1 << 'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
for key in ("uid", "title", "schemaVersion", "templating", "panels", "time"):
    if key not in d:
        bad.append(f"no {key}")
if d.get("id") not in (None,):
    bad.append("a provisioned dashboard carries no id (Grafana assigns it)")
variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
ds = variables.get("datasource")
if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
    bad.append("no datasource variable of type prometheus")
for name in ("node", "device", "port"):
    v = variables.get(name)
    if not v or v.get("type") != "query" or "label_values(" not in json.dumps(v.get("query")):
        bad.append(f"no {name} query variable from label_values")
    elif v.get("datasource", {}).get("uid") != "${datasource}":
        bad.append(f"variable {name} does not use ${{datasource}}")
ids = set()
def walk(panels):
    for p in panels:
        yield p
        yield from walk(p.get("panels", []))
for p in walk(d.get("panels", [])):
    g = p.get("gridPos", {})
    if p.get("id") in ids:
        bad.append(f"panel id {p.get('id')} twice")
    ids.add(p.get("id"))
    if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24 or g["w"] < 1:
        bad.append(f"panel {p.get('title')}: gridPos {g}")
    if p.get("type") == "row":
        continue
    if p.get("datasource", {}).get("uid") != "${datasource}":
        bad.append(f"panel {p.get('title')}: datasource is not ${{datasource}}")
    if not p.get("targets") or not all(t.get("expr") and t.get("refId") for t in p["targets"]):
        bad.append(f"panel {p.get('title')}: a target without expr or refId")
for title in ("drift", "firmware", "self-test", "error", "fabric"):
    if not any(title in p.get("title", "").lower() for p in walk(d.get("panels", []))):
        bad.append(f"no panel about {title}")
print("\n".join(bad) or f"{len(ids)} panels")
sys.exit(1 if bad else 0)
EOF
status=$?
if [ "$status" -eq 0 ]; then ok "the dashboard's JSON model: $(cat "$work/shape.out")"; else
  fail "the dashboard's JSON model:"
  sed 's/^/    /' "$work/shape.out"
fi
check "the Grafana provisioning file is a dashboard provider of type file" python3 -c '
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
assert p["apiVersion"] == 1 and p["providers"][0]["type"] == "file" and p["providers"][0]["options"]["path"], p
' "$src/packaging/grafana/provisioning/rdmactl.yaml"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
