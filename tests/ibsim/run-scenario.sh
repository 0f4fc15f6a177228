#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-scenario.sh BINARY TOPOLOGY SCENARIO - one `rdmactl fabric` scenario on an ibsim fabric.
#
# BINARY is an rdmactl with the `fabric` command; TOPOLOGY is fattree, 2sw4hca, fdr10, oddtree or torus
# (fabric-*.net here) or none; SCENARIO plants one fault (or none) and checks that `fabric --format json` reports
# exactly the expected findings (check, node description, port), each once. Everything lives in
# one temporary directory; only the processes started here (ibsim-fabric.sh's PID files) are
# stopped, on any exit. Exit 0 passed, 1 failed, 77 skipped (a package missing; a failure under
# CI=true).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
F=$HERE/ibsim-fabric.sh
[ $# -eq 3 ] || { echo "usage: $0 BINARY TOPOLOGY SCENARIO" >&2; exit 2; }
BIN=$(realpath "$1"); TOPO=$2; SCEN=$3

under_ci() { case ${CI:-} in true|1|yes) return 0 ;; *) return 1 ;; esac; }
skip() {
  if under_ci; then echo "FAIL (CI=true, cannot run): $*" >&2; exit 1; fi
  echo "SKIP: $*" >&2; exit 77
}
fail() { echo "FAIL [$TOPO/$SCEN]: $*" >&2; exit 1; }

command -v python3 >/dev/null || skip "python3 not found"
if [ "$TOPO" != none ]; then
  command -v ibsim >/dev/null || skip "ibsim not found (apt-get install ibsim-utils)"
  command -v opensm >/dev/null || skip "opensm not found (apt-get install opensm)"
  command -v ibportstate >/dev/null || skip "ibportstate not found (apt-get install infiniband-diags)"
  ls /usr/lib/*/umad2sim/libumad2sim.so >/dev/null 2>&1 || [ -n "${UMAD2SIM:-}" ] ||
    skip "libumad2sim.so not found (apt-get install libumad2sim0)"
fi

# An AddressSanitizer build refuses to start when LD_PRELOAD puts libumad2sim.so before its runtime.
# libumad2sim.so's own out-of-bounds read is suppressed there (asan-umad2sim.supp says why).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:suppressions=$HERE/asan-umad2sim.supp
# libibnetdisc's own leak inside ibnd_discover_fabric likewise (lsan-libibnetdisc.supp).
export LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$HERE/lsan-libibnetdisc.supp

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-ibsim.XXXXXX")
FAB=$WORK/fabric
cleanup() {
  [ -n "${SERVE_PID:-}" ] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true
  # serve-stall stops ibsim (SIGSTOP): a stopped process would keep a TERM pending for ever.
  [ -s "$FAB/ibsim.pid" ] && kill -CONT "$(cat "$FAB/ibsim.pid")" 2>/dev/null || true
  [ -d "$FAB" ] && "$F" stop "$FAB" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"  # libumad2sim.so writes ./sys-<pid>/ here

# start [NETFILE]: ibsim with the topology; one SM (node01, priority 15), MASTER with every port Active.
start() {
  "$F" start "$FAB" "${1:-$HERE/fabric-$TOPO.net}" >/dev/null
  "$F" sm "$FAB" node01 15 >/dev/null
  "$F" wait-master "$FAB" node01 30 >/dev/null
}
console() { "$F" cmd "$FAB" "$@" >/dev/null || fail "ibsim console: $*"; }
as_node() { local node=$1; shift; timeout 60 "$F" run "$FAB" "$node" -- "$@"; }

# fabric NODE OUT ARGS...: runs `BINARY fabric ARGS` as NODE, stdout to OUT, stderr to OUT.err; sets RC.
fabric() {
  local node=$1 out=$2; shift 2
  RC=0
  timeout 90 "$F" run "$FAB" "$node" -- "$BIN" fabric "$@" >"$out" 2>"$out.err" || RC=$?
  [ "$RC" -ne 124 ] || fail "fabric timed out; stderr: $(cat "$out.err")"
}

# expect_findings JSON "check|node description|port" ...: exactly these findings (port "-" for none,
# "*" for any node or port).
expect_findings() {
  local json=$1; shift
  python3 - "$json" "$@" <<'EOF' || fail "findings differ (report: $json)"
import json, sys
report = json.load(open(sys.argv[1]))
found = [(f["check"], f["node"]["description"], "-" if f["node"]["port"] is None else str(f["node"]["port"]))
         for f in report["findings"]]
want = [tuple(w.split("|")) for w in sys.argv[2:]]
left = list(found)
missing = []
for w in want:
    hit = next((f for f in left if all(a == "*" or a == b for a, b in zip(w, f))), None)
    if hit is None:
        missing.append(w)
    else:
        left.remove(hit)
if missing or left:
    print("expected:", want, "\nmissing:", missing, "\nunexpected:", left, file=sys.stderr)
    for f in report["findings"]:
        print("  [%s] %s port %s: %s" % (f["check"], f["node"]["description"], f["node"]["port"], f["message"]),
              file=sys.stderr)
    sys.exit(1)
EOF
}

# expect_json JSON PYTHON-EXPRESSION...: each expression over `r` (the report) is true.
expect_json() {
  local json=$1; shift
  python3 - "$json" "$@" <<'EOF' || fail "report check failed (report: $json)"
import json, sys
r = json.load(open(sys.argv[1]))
for expr in sys.argv[2:]:
    if not eval(expr, {"r": r}):
        print("not true:", expr, "\nsummary:", r.get("summary"), file=sys.stderr)
        sys.exit(1)
EOF
}

# serve_start ARGS...: `BINARY serve` as the viewer node with a minimal spec, --dry-run, on a free
# port (PORT), log in serve.log; SERVE_PID is timeout's, which passes a TERM on to serve.
serve_start() {
  printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: ibsim-serve}\n' >spec.yaml
  # A free port (serve takes no port 0): the kernel's pick for a socket closed at once.
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  timeout 110 "$F" run "$FAB" "$VIEWER" -- "$BIN" serve -f "$WORK/spec.yaml" --dry-run --listen "127.0.0.1:$PORT" \
    --no-rdma-responder --no-link-events "$@" >serve.log 2>&1 &
  SERVE_PID=$!
}
serve_stop() {
  kill -TERM "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
  SERVE_PID=
}
# serve_pid: the agent's own pid (timeout's child).
serve_pid() { pgrep -P "$SERVE_PID" | head -1; }
# metrics_wait LINE SECONDS: GET /metrics until it has LINE (metrics.txt: the last answer).
metrics_wait() {
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$PORT/metrics', timeout=5).read().decode())" \
      >metrics.txt 2>/dev/null && grep -qx "$1" metrics.txt && return 0
    kill -0 "$SERVE_PID" 2>/dev/null || fail "serve is gone; its log: $(tail -20 serve.log)"
    sleep 0.2
  done
  fail "no '$1' in /metrics within $2 s; serve.log: $(tail -20 serve.log)"
}
# serve_has_no_child: no scan is left running and none is a zombie between two scans.
serve_has_no_child() {
  local pid kids
  pid=$(serve_pid)
  [ -n "$pid" ] || fail "serve is gone"
  kids=$(cat /proc/"$pid"/task/*/children 2>/dev/null | tr -s ' \n' ' ')
  [ -z "${kids// /}" ] || fail "serve has children between scans: $kids ($(ps -o pid,stat,args -p "${kids// /,}" 2>/dev/null))"
}

expect_rc() { [ "$RC" -eq "$1" ] || fail "exit code $RC, expected $1; stderr: $(cat "$2.err" 2>/dev/null)"; }

case $TOPO in
  fattree|oddtree|torus) VIEWER=node05 ;;
  2sw4hca) VIEWER=node04 ;;
  fdr10) VIEWER=node03 ;;
  none) VIEWER= ;;
  *) fail "unknown topology $TOPO" ;;
esac

case $SCEN in
  clean)
    # Two SMs: node01 master (15), node02 standby (14). Nothing to report.
    start
    "$F" sm "$FAB" node02 14 >/dev/null
    fabric "$VIEWER" r.json --format json
    expect_rc 0 r.json
    expect_findings r.json
    if [ "$TOPO" = fattree ]; then
      expect_json r.json 'r["summary"]["switches"] == 3' 'r["summary"]["cas"] == 6' 'r["summary"]["links"] == 10'
    else
      expect_json r.json 'r["summary"]["switches"] == 2' 'r["summary"]["cas"] == 4' 'r["summary"]["links"] == 6'
    fi
    expect_json r.json 'r["summary"]["subnetManagers"] == 2' 'r["summary"]['"'"'masters'"'"'] == 1' \
      'all(l["width"] == "12x" and l["speed"] == "HDR" for l in r["links"])' \
      'sorted((s["node"]["description"], s["state"], s["priority"]) for s in r["subnetManagers"]) == [("node01 mlx5_0", "Master", 15), ("node02 mlx5_0", "Standby", 14)]' \
      'r["subnetManagers"][0]["guid"].startswith("0x") and len(r["subnetManagers"][0]["guid"]) == 18' \
      'r["summary"]["countersFailed"] == 0' \
      'all(p["counters"] is not None for n in r["nodes"] for p in n["ports"] if p["port"] > 0)'
    ;;
  width)
    # leaf01 port 2 (node02's link) set to 1x by the switch port's LinkWidthEnabled (DR path 0,1
    # from node01 is leaf01); ibsim applies it to both ends (sim_mad.c do_portinfo), the SM keeps it.
    start
    as_node node01 ibportstate -D 0,1 2 width 1 >/dev/null
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "link-width|leaf01|2"
    expect_json r.json 'any(f["peer"]["description"] == "node02 mlx5_0" and f["peer"]["port"] == 1 and "1x" in f["message"] and "12x" in f["message"] for f in r["findings"])'
    ;;
  speed)
    # sw01 port 2 (node02's link) down to EDR (LinkSpeedExtEnabled 2) where both ends support HDR.
    start
    as_node node01 ibportstate -D 0,1 2 espeed 2 >/dev/null
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "link-speed|sw01|2"
    expect_json r.json '"runs at EDR but both ends support HDR" in r["findings"][0]["message"]'
    ;;
  counters)
    # Two counters on one port: one finding naming both (ibqueryerrors' threshold 0).
    start
    console 'PerformanceSet "leaf02"[7] PortCounters.SymbolErrorCounter=250'
    console 'PerformanceSet "leaf02"[7] PortCounters.LinkErrorRecoveryCounter=3'
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "error-counters|leaf02|7"
    expect_json r.json '"SymbolErrorCounter 250 (> 0)" in r["findings"][0]["message"]' \
      '"LinkErrorRecoveryCounter 3 (> 0)" in r["findings"][0]["message"]' \
      'r["findings"][0]["peer"]["description"] == "spine01" and r["findings"][0]["peer"]["port"] == 3'
    ;;
  counters-saturated)
    # A PortCounters counter at its maximum (SymbolErrorCounter is 16 bits: libibmad fields.c
    # BITSOFFS(32, 16)) stops there; ibsim's PMA has no 64-bit error counters (sim_mad.c do_cpi:
    # no CapabilityMask2). A threshold above the maximum could never fire: the saturated counter is
    # a finding that says so. LinkDownedCounter 3 under its threshold 5 is not.
    start
    console 'PerformanceSet "leaf02"[7] PortCounters.SymbolErrorCounter=65535'
    console 'PerformanceSet "leaf01"[8] PortCounters.LinkDownedCounter=3'
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: sat}\nfabric: {thresholds: {SymbolErrorCounter: 100000, LinkDownedCounter: 5}}\n' >spec.yaml
    fabric "$VIEWER" r.json -f spec.yaml --format json
    expect_rc 2 r.json
    expect_findings r.json "error-counters|leaf02|7"
    expect_json r.json '"SymbolErrorCounter 65535 (saturated: PortCounters stops at 65535; the threshold 100000 cannot be told)" in r["findings"][0]["message"]'
    ;;
  fdr10-speeds)
    # FDR10 through the Mellanox ExtendedPortInfo (fabric-fdr10.net): five links at FDR10, one at
    # QDR between ports that support no more (ibsim writes no ExtendedPortInfo on it). Without a
    # spec nothing is wrong; with linkSpeed FDR10 the QDR link, and only it, is.
    start
    fabric "$VIEWER" r.json --format json
    expect_rc 0 r.json
    expect_findings r.json
    expect_json r.json 'sorted(l["speed"] for l in r["links"]) == ["FDR10"] * 5 + ["QDR"]'
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: fdr10}\nfabric: {linkSpeed: FDR10, linkWidth: 12x}\n' >spec.yaml
    fabric "$VIEWER" s.json -f spec.yaml --format json
    expect_rc 2 s.json
    expect_findings s.json "link-speed|sw02|2"
    expect_json s.json '"link runs at QDR; the spec says linkSpeed FDR10" in r["findings"][0]["message"]'
    ;;
  no-master)
    # The only SM is killed (SIGKILL): no master. Ports stay Active (ibsim keeps their state).
    start
    "$F" sm-stop "$FAB" node01 KILL >/dev/null
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "subnet-manager|*|*"
    expect_json r.json 'r["summary"]["masters"] == 0'
    ;;
  port-init)
    # The SM stops, then node03's link is taken down (`ibportstate down`: PortState Down): both ends
    # come back at Initialize/LinkUp (ibsim sim_mad.c do_portinfo) and no SM makes them Active.
    start
    "$F" sm-stop "$FAB" node01 TERM >/dev/null
    as_node node01 ibportstate -D 0,1 3 down >/dev/null
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "subnet-manager|*|*" "port-state|leaf01|3"
    expect_json r.json 'any(f["check"] == "port-state" and "Initialize/LinkUp" in f["message"] for f in r["findings"])'
    ;;
  unlink)
    # A pulled cable: both ends Down/Polling (sim_cmd.c unlink_port), node06 gone. PortInfo cannot
    # tell it from an empty port, so without the spec's `fabric.cas` nothing is reported; the scan
    # shows 5 CAs and leaf02 port 3 polling.
    start
    console 'Unlink "leaf02"[3]'
    fabric "$VIEWER" r.json --format json
    expect_rc 0 r.json
    expect_findings r.json
    expect_json r.json 'r["summary"]["cas"] == 5' \
      'any(n["description"] == "leaf02" and any(p["port"] == 3 and p["state"] == "Down" and p["physState"] == "Polling" for p in n["ports"]) for n in r["nodes"])'
    ;;
  duplicate-guid)
    # node06 takes node01's node GUID (sim_cmd.c do_set_guid); its link is relinked so that the SM
    # and discovery meet it again.
    start
    console 'Guid "node06" 0x100000'
    console 'Unlink "leaf02"[3]'
    console 'ReLink "leaf02"[3]'
    sleep 2
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "duplicate-guid|*|*"
    expect_json r.json 'r["findings"][0]["node"]["guid"] == "0x0000000000100000"'
    ;;
  default-description)
    # node06 keeps the description its firmware came with (no rdma-ndd).
    sed 's/# "node06 mlx5_0"/# "MT4123 ConnectX6 Mellanox Technologies"/' "$HERE/fabric-$TOPO.net" >"$WORK/default.net"
    start "$WORK/default.net"
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "node-description|MT4123 ConnectX6 Mellanox Technologies|-"
    ;;
  unresponsive)
    # node06 answers every MAD with an error status (ibsim `Error "node06"[1] 100`): leaf02 port 3
    # is LinkUp but nothing answers behind it.
    start
    console 'Error "node06"[1] 100'
    fabric "$VIEWER" r.json --format json
    expect_rc 2 r.json
    expect_findings r.json "unresponsive-node|leaf02|3"
    expect_json r.json 'r["summary"]["cas"] == 5'
    ;;
  formats)
    # text, junit and prom of a healthy fabric and of one with a finding.
    start
    fabric "$VIEWER" healthy.txt
    expect_rc 0 healthy.txt
    grep -q '^Healthy: no findings.$' healthy.txt || fail "text: $(cat healthy.txt)"
    grep -q 'subnet manager "node01 mlx5_0" (0x0000000000100000) port 1 lid 1: Master, priority 15' healthy.txt ||
      fail "text: $(cat healthy.txt)"
    console 'PerformanceSet "spine01"[1] PortCounters.PortXmitDiscards=7'
    fabric "$VIEWER" r.txt
    expect_rc 2 r.txt
    grep -q 'warning \[error-counters\] "spine01" (0x0000000000200000) port 1 -- "leaf01" (0x0000000000200001) port 7: .*PortXmitDiscards 7' r.txt ||
      fail "text: $(cat r.txt)"
    grep -q '^      fix: ' r.txt || fail "text without a fix: $(cat r.txt)"
    fabric "$VIEWER" r.xml --format junit
    expect_rc 2 r.xml
    python3 - r.xml <<'EOF' || fail "junit: $(cat r.xml)"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites" and root.get("failures") == "1" and root.get("tests") == "9", root.attrib
cases = root.findall("./testsuite/testcase")
failed = [c for c in cases if c.find("failure") is not None]
assert len(cases) == 9 and len(failed) == 1 and failed[0].get("classname") == "fabric error-counters"
EOF
    fabric "$VIEWER" r.prom --format prom
    expect_rc 0 r.prom
    grep -qx 'rdmactl_fabric_findings{check="error-counters",severity="warning"} 1' r.prom || fail "prom: $(cat r.prom)"
    grep -qx 'rdmactl_fabric_links_by_rate{width="12x",speed="HDR"} 10' r.prom || fail "prom: $(cat r.prom)"
    grep -qx 'rdmactl_fabric_port_errors{counter="PortXmitDiscards"} 7' r.prom || fail "prom: $(cat r.prom)"
    if command -v promtool >/dev/null; then
      promtool check metrics <r.prom || fail "promtool check metrics"
    elif under_ci; then
      fail "promtool not found (CI must lint the metrics)"
    fi
    ;;
  spec)
    # The spec's fabric: (parsed from YAML): a link below its linkWidth/linkSpeed, counts that
    # differ, a threshold that lets a few symbol errors pass and catches the others.
    start
    "$F" sm "$FAB" node02 14 >/dev/null
    cat >spec.yaml <<'EOF'
apiVersion: rdmactl/v1
kind: FabricSpec
metadata: {name: ibsim-fabric}
fabric:
  linkWidth: 12x
  linkSpeed: HDR
  switches: 3
  cas: 7
  subnetManagers: 2
  thresholds: {SymbolErrorCounter: 10, LinkErrorRecoveryCounter: 5}
EOF
    as_node node01 ibportstate -D 0,1 2 width 1 >/dev/null
    console 'PerformanceSet "leaf02"[7] PortCounters.SymbolErrorCounter=9'
    console 'PerformanceSet "spine01"[1] PortCounters.LinkErrorRecoveryCounter=6'
    fabric "$VIEWER" r.json -f spec.yaml --format json
    expect_rc 2 r.json
    python3 - r.json <<'EOF' || fail "spec: $(cat r.json)"
import json, sys
d = json.load(open(sys.argv[1]))
got = sorted((f["check"], f["node"]["description"], f["node"].get("port", 0)) for f in d["findings"])
want = sorted([("link-width", "leaf01", 2), ("error-counters", "spine01", 1), ("node-count", "", 0)])
assert sorted(g[0] for g in got) == sorted(w[0] for w in want), got
width = [f for f in d["findings"] if f["check"] == "link-width"][0]
assert "the spec says linkWidth 12x" in width["message"], width
count = [f for f in d["findings"] if f["check"] == "node-count"][0]
assert "7" in count["message"] and "6" in count["message"], count
counters = [f for f in d["findings"] if f["check"] == "error-counters"][0]
assert "LinkErrorRecoveryCounter 6 (> 5)" in counters["message"] and "SymbolErrorCounter" not in counters["message"], counters
EOF
    ;;
  serve)
    # The agent: `serve --fabric-interval` scans on its own timer and /metrics carries the scan.
    start
    console 'PerformanceSet "spine01"[1] PortCounters.PortXmitDiscards=7'
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: ibsim-serve}\n' >spec.yaml
    # A free port (serve takes no port 0): the kernel's pick for a socket closed at once.
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    timeout 60 "$F" run "$FAB" "$VIEWER" -- "$BIN" serve -f "$WORK/spec.yaml" --dry-run --fabric-interval 10s \
      --listen "127.0.0.1:$port" --no-rdma-responder --no-link-events >serve.log 2>&1 &
    for _ in $(seq 100); do
      python3 -c "import urllib.request,sys; t=urllib.request.urlopen('http://127.0.0.1:$port/metrics').read().decode(); sys.exit(0 if 'rdmactl_fabric_scan_success 1' in t else 1)" 2>/dev/null && break
      sleep 0.1
    done
    python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics').read().decode())" >metrics.txt ||
      fail "GET /metrics: $(cat serve.log)"
    pkill -TERM -f "$BIN serve -f $WORK/spec.yaml" || true
    wait || true
    grep -qx 'rdmactl_fabric_scan_success 1' metrics.txt || fail "metrics: $(grep rdmactl_fabric metrics.txt)"
    grep -qx 'rdmactl_fabric_links 10' metrics.txt || fail "metrics: $(grep rdmactl_fabric metrics.txt)"
    grep -qx 'rdmactl_fabric_findings{check="error-counters",severity="warning"} 1' metrics.txt || fail "metrics: $(grep rdmactl_fabric metrics.txt)"
    grep -q '^rdmactl_reconciles_total' metrics.txt || fail "the agent's own metrics are missing"
    if command -v promtool >/dev/null; then
      promtool check metrics <metrics.txt || fail "promtool check metrics"
    elif under_ci; then
      fail "promtool not found (CI must lint the metrics)"
    fi
    ;;
  serve-crash)
    # Every scan crashes (scan_fault_preload.cpp, segv: umad_init raises SIGSEGV), as the scan in a
    # thread of libumad2sim.so once took the agent down: each is a failed scan, named in a warning,
    # and the agent answers on. ASan's SEGV handler is off so that the sanitizer build crashes as
    # the plain one does, on the signal (ASan would turn it into exit code 1).
    [ -r "${RDMACTL_SCAN_FAULT_PRELOAD:-}" ] || fail "RDMACTL_SCAN_FAULT_PRELOAD (tests/ibsim/CMakeLists.txt) not set"
    start
    LD_PRELOAD=$RDMACTL_SCAN_FAULT_PRELOAD RDMACTL_TEST_SCAN_FAULT=segv ASAN_OPTIONS=$ASAN_OPTIONS:handle_segv=0 \
      serve_start --fabric-interval 10s
    metrics_wait 'rdmactl_fabric_scan_success 0' 40
    grep -q 'fabric scan failed (killed by signal 11 (SIGSEGV))' serve.log || fail "no warning naming the crash: $(cat serve.log)"
    sleep 1
    serve_has_no_child
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/healthz', timeout=5)" ||
      fail "/healthz after the crash: $(tail -20 serve.log)"
    grep -q '^rdmactl_reconciles_total' metrics.txt || fail "the agent's own metrics are missing"
    if command -v promtool >/dev/null; then
      promtool check metrics <metrics.txt || fail "promtool check metrics"
    fi
    serve_stop
    ;;
  serve-stall)
    # The fabric stalls (ibsim stopped with SIGSTOP) under a scan that has connected and is about
    # to discover (scan_fault_preload.cpp, mark-discovery: it marks the moment and waits 2 s), and
    # resumes (SIGCONT). The scan, whose MADs are never answered (umad2sim has no MAD timeout), is
    # killed at --fabric-timeout and is a failed scan; the next scan after the resume succeeds.
    [ -r "${RDMACTL_SCAN_FAULT_PRELOAD:-}" ] || fail "RDMACTL_SCAN_FAULT_PRELOAD (tests/ibsim/CMakeLists.txt) not set"
    start
    LD_PRELOAD=$RDMACTL_SCAN_FAULT_PRELOAD RDMACTL_TEST_SCAN_FAULT=mark-discovery RDMACTL_TEST_SCAN_MARK=$WORK/scan-mark \
      serve_start --fabric-interval 10s --fabric-timeout 5s
    metrics_wait 'rdmactl_fabric_scan_success 1' 40
    rm -f "$WORK/scan-mark"
    for _ in $(seq 150); do [ -e "$WORK/scan-mark" ] && break; sleep 0.1; done
    [ -e "$WORK/scan-mark" ] || fail "no second scan within 15 s: $(tail -5 serve.log)"
    kill -STOP "$(cat "$FAB/ibsim.pid")"
    metrics_wait 'rdmactl_fabric_scan_success 0' 30
    grep -q 'fabric scan failed (still running after 5s: killed)' serve.log || fail "no warning naming the deadline: $(cat serve.log)"
    sleep 1
    serve_has_no_child
    kill -CONT "$(cat "$FAB/ibsim.pid")"
    metrics_wait 'rdmactl_fabric_scan_success 1' 40
    grep -qx 'rdmactl_fabric_links 10' metrics.txt || fail "metrics after the resume: $(grep rdmactl_fabric metrics.txt)"
    grep -q 'fabric scan succeeded again' serve.log || fail "no note of the recovery: $(cat serve.log)"
    serve_stop
    ;;
  dot)
    # The picture (fabric --format dot, rendered by Graphviz's dot -Tsvg): two planted faults, a
    # link-width error on leaf01 port 2 (node02's link, as in `width`) and a SymbolErrorCounter
    # warning on leaf02 port 7 (a spine link, as in `counters`), with node02 a standby SM. The SVG
    # is read back: the faulty links and only they are red/orange and carry their finding in the
    # tooltip, the SMs are marked, the ranks read spine above leaves above CAs. Then --collapse.
    # RDMACTL_PICTURE_DIR=DIR keeps both SVGs there, fabric.svg and fabric-collapsed.svg
    # (tests/ibsim/render-picture.sh writes docs/images/ so); without it both must be the pictures
    # docs/images/ has, byte for byte, so that the documentation shows what rdmactl draws today.
    command -v dot >/dev/null || skip "dot not found (apt-get install graphviz)"
    start
    "$F" sm "$FAB" node02 14 >/dev/null
    as_node node01 ibportstate -D 0,1 2 width 1 >/dev/null
    console 'PerformanceSet "leaf02"[7] PortCounters.SymbolErrorCounter=250'
    fabric "$VIEWER" r.dot --format dot
    expect_rc 2 r.dot
    dot -Tsvg r.dot >r.svg 2>dot.err || fail "dot -Tsvg: $(cat dot.err)"
    [ ! -s dot.err ] || fail "dot -Tsvg warned: $(cat dot.err)"
    python3 "$HERE/check-picture.py" r.svg full || fail "the picture (r.dot: $(head -c 3000 r.dot))"
    fabric "$VIEWER" c.dot --format dot --collapse
    expect_rc 2 c.dot
    dot -Tsvg c.dot >c.svg 2>dot.err || fail "dot -Tsvg (--collapse): $(cat dot.err)"
    [ ! -s dot.err ] || fail "dot -Tsvg (--collapse) warned: $(cat dot.err)"
    python3 "$HERE/check-picture.py" c.svg collapse || fail "the collapsed picture (c.dot: $(head -c 3000 c.dot))"
    RC=0; "$BIN" fabric --format json --collapse >out 2>out.err || RC=$?
    expect_rc 64 out
    grep -q -- '--collapse: only --format dot draws a graph to collapse (not --format json)' out.err || fail "$(cat out.err)"
    if [ -n "${RDMACTL_PICTURE_DIR:-}" ]; then
      cp r.svg "$RDMACTL_PICTURE_DIR/fabric.svg"
      cp c.svg "$RDMACTL_PICTURE_DIR/fabric-collapsed.svg"
    else
      for pair in r.svg:fabric.svg c.svg:fabric-collapsed.svg; do
        docs=$HERE/../../docs/images/${pair#*:}
        cmp -s "${pair%%:*}" "$docs" ||
          fail "docs/images/${pair#*:} is not what rdmactl and $(dot -V 2>&1) draw now: run tests/ibsim/render-picture.sh ($(diff "$docs" "${pair%%:*}" 2>&1 | head -20))"
      done
    fi
    ;;
  dot-ranks)
    # The ranks, and links within one rank, rendered by dot -Tsvg with nothing on its standard
    # error (dot 2.42 fails or warns on a `label` on a link within one rank: dot.cpp writes an
    # xlabel there). 2sw4hca: two leaves cabled together, so their links are within one rank.
    # oddtree: a host on the spine and an empty leaf, the spine still above the three leaves.
    # torus: 16 switches with a host each, all leaves, 32 links within one rank (where a `label`
    # makes dot 2.42 warn).
    # One CA keeps its default description (a node-description warning): the one node drawn orange.
    command -v dot >/dev/null || skip "dot not found (apt-get install graphviz)"
    def="MT4123 ConnectX6 Mellanox Technologies"
    case $TOPO in
      2sw4hca)
        planted=node03
        ranks=("sw01,sw02" "node01 mlx5_0,node02 mlx5_0,$def,node04 mlx5_0")
        collapsed=("sw01,sw02" "node01 mlx5_0,$def")
        ;;
      oddtree)
        planted=node06
        ranks=("spine01" "leaf01,leaf02,leaf03" "node01 mlx5_0,node02 mlx5_0,node03 mlx5_0,node04 mlx5_0,node05 mlx5_0,$def,ufm01 mlx5_0")
        collapsed=("spine01" "leaf01,leaf02,leaf03" "node01 mlx5_0,$def,ufm01 mlx5_0")
        ;;
      torus)
        planted=node16
        ranks=("$(printf 'sw%02d,' $(seq 16) | sed 's/,$//')" "$(printf 'node%02d mlx5_0,' $(seq 15))$def")
        collapsed=("$(printf 'sw%02d,' $(seq 16) | sed 's/,$//')" "node01 mlx5_0,$def")
        ;;
      *) fail "dot-ranks: no ranks known for $TOPO" ;;
    esac
    sed "s/# \"$planted mlx5_0\"/# \"$def\"/" "$HERE/fabric-$TOPO.net" >"$WORK/ranks.net"
    grep -qF "# \"$def\"" "$WORK/ranks.net" || fail "the netfile was not rewritten"
    start "$WORK/ranks.net"
    for mode in ranks ranks-collapse; do
      args=(--format dot); want=("${ranks[@]}")
      [ "$mode" = ranks ] || { args+=(--collapse); want=("${collapsed[@]}"); }
      fabric "$VIEWER" "$mode.dot" "${args[@]}"
      expect_rc 2 "$mode.dot"
      dot -Tsvg "$mode.dot" >"$mode.svg" 2>dot.err || fail "dot -Tsvg ($mode): $(cat dot.err)"
      [ ! -s dot.err ] || fail "dot -Tsvg ($mode) warned: $(cat dot.err)"
      python3 "$HERE/check-picture.py" "$mode.svg" "$mode" "$def" "${want[@]}" ||
        fail "the picture ($mode.dot: $(head -c 3000 "$mode.dot"))"
    done
    ;;
  dot-quoting)
    # node06's description carries what DOT and Graphviz's escStrings would read (\N is the node's
    # name there, \n a line break, &lt; an entity Graphviz decodes; <b> is markup in SVG), a
    # letter that is not ASCII, and U+FFFE, UTF-8 but no XML character: the picture shows the first
    # as they are, in the label and in the tooltip, and U+FFFE as \ufffe (so the SVG parses).
    command -v dot >/dev/null || skip "dot not found (apt-get install graphviz)"
    fffe=$(printf '\xef\xbf\xbe')
    sed 's|# "node06 mlx5_0"|# "node06 \\N C:\\new é <b>\&lt;'"$fffe"'"|' "$HERE/fabric-$TOPO.net" >"$WORK/quoting.net"
    grep -qF '# "node06 \N C:\new é <b>&lt;'"$fffe"'"' "$WORK/quoting.net" || fail "the netfile was not rewritten"
    start "$WORK/quoting.net"
    fabric "$VIEWER" r.dot --format dot
    expect_rc 0 r.dot
    dot -Tsvg r.dot >r.svg 2>dot.err || fail "dot -Tsvg: $(cat dot.err)"
    [ ! -s dot.err ] || fail "dot -Tsvg warned: $(cat dot.err)"
    python3 - r.svg <<'PY' || fail "the description in the picture (r.dot: $(grep -a node06 r.dot))"
import sys, xml.etree.ElementTree as ET
S, X = "{http://www.w3.org/2000/svg}", "{http://www.w3.org/1999/xlink}"
want = "node06 \\N C:\\new \u00e9 <b>&lt;\\ufffe"
for g in ET.parse(sys.argv[1]).getroot().iter(S + "g"):
    if "node" not in (g.get("class") or "").split():
        continue
    texts = [t.text for t in g.iter(S + "text")]
    if texts[:2] == [want, "0x000000000010000a"]:
        tip = g.find(".//" + S + "a").get(X + "title")
        assert tip.startswith('channel adapter "%s" 0x000000000010000a' % want), tip
        sys.exit(0)
    assert not any("node06" in (t or "") for t in texts), texts
sys.exit("no node labelled %r" % want)
PY
    ;;
  select-port)
    start
    fabric "$VIEWER" r.json --ca ibsim0 --port 1 --format json
    expect_rc 0 r.json
    expect_json r.json 'r["source"]["ca"] == "ibsim0" and r["source"]["port"] == 1' \
      'r["source"]["guid"] == "0x0000000000100009"'
    fabric "$VIEWER" bad.json --ca mlx5_0
    expect_rc 1 bad.json
    grep -q 'no InfiniBand port: no RDMA device mlx5_0 (devices: ibsim0)' bad.json.err || fail "$(cat bad.json.err)"
    fabric "$VIEWER" bad2.json --ca ibsim0 --port 2
    expect_rc 1 bad2.json
    grep -q 'no InfiniBand port' bad2.json.err || fail "$(cat bad2.json.err)"
    ;;
  errors)
    # Usage and spec errors need no fabric; "no InfiniBand port" needs a host without one.
    RC=0; "$BIN" fabric --format yaml >out 2>out.err || RC=$?
    expect_rc 64 out
    RC=0; "$BIN" fabric --port 300 >out 2>out.err || RC=$?
    expect_rc 64 out
    printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nbogus: 1\n' >bad.yaml
    RC=0; "$BIN" fabric -f bad.yaml >out 2>out.err || RC=$?
    expect_rc 65 out
    if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
      RC=0; env -u LD_PRELOAD "$BIN" fabric >out 2>out.err || RC=$?
      expect_rc 1 out
      grep -q '^rdmactl: .*no InfiniBand port: libibumad finds no RDMA device' out.err || fail "$(cat out.err)"
    fi
    ;;
  *) fail "unknown scenario $SCEN" ;;
esac
echo "PASS [$TOPO/$SCEN]"
