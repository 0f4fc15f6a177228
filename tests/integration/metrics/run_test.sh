#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl's Prometheus metrics through the real `promtool check metrics` (Debian's prometheus
# package), in the cases users scrape them:
#
#   tests/integration/metrics/run_test.sh RDMACTL_BINARY
#
#   1. `plan --format prom` of every examples/*.yaml against examples/demo-host.json (a recorded
#      dual-port RoCE host with its PMA and mlx5 hw counters): exit 0 although it drifts or cannot
#      plan some entries (the textfile collector's write-then-rename publishes), promtool finds no
#      problem (lint warnings count), and the series an alert needs are there in base units.
#   2. The agent's GET /metrics: `rdmactl serve --dry-run` (writes nothing) on a free loopback port,
#      under --root with the ConnectX-6 Dx sysfs fixture (port series), scraped after its first
#      reconcile, checked the same way; no self-test has run, so rdmactl_selftest_success is absent.
#   3. `doctor --format prom` of examples/gpu-host.json (a recorded host with a finding of each
#      host-level check): exit 0, promtool clean, a gauge per check and one per finding.
#
# Needs no root and no RDMA hardware. Exit codes: 0 passed, 1 failed, 77 skipped (promtool or curl
# missing, not root). As root or under CI (CI=true) a case that cannot run is a failure, never a skip.
set -u

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../../.." && pwd)

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 RDMACTL_BINARY (got: ${1:-nothing}, which is not an executable)" >&2
  exit 1
fi
rdmactl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

# under_ci, cannot_run: a missing tool skips (77) only when not root and not CI.
. "$(dirname "$0")/../lib.sh"
command -v promtool > /dev/null ||
  cannot_run "promtool not found: install Debian's prometheus (apt-get install --no-install-recommends prometheus)"
command -v curl > /dev/null || cannot_run "curl not found: apt-get install --no-install-recommends curl"

work=$(mktemp -d /tmp/rdmactl-metrics-test.XXXXXX)
serve_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [ -n "$serve_pid" ]; then
    kill -TERM "$serve_pid" 2> /dev/null
    wait "$serve_pid" 2> /dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# promtool check metrics on FILE: exit 0 and not a word of output (its lint findings are printed
# and, depending on the version, exit 0 or 3: both are failures here).
promtool_clean() {
  local what=$1 file=$2 out
  out=$(promtool check metrics < "$file" 2>&1)
  local status=$?
  if [ "$status" -ne 0 ] || [ -n "$out" ]; then
    fail "$what: promtool check metrics (exit $status): $out"
    return 1
  fi
  echo "ok: $what: promtool check metrics: no problems ($(grep -c '^[a-z]' "$file") samples)"
}

# FILE has a sample line matching the extended regex.
expect_sample() {
  local what=$1 file=$2 regex=$3
  grep -Eq "^$regex" "$file" || fail "$what: no sample matching /$regex/"
}

# 1. plan --format prom against the recorded demo host, for every example spec.
state="$source_dir/examples/demo-host.json"
for spec in "$source_dir"/examples/*.yaml; do
  name=$(basename "$spec" .yaml)
  out="$work/plan-$name.prom"
  # As the textfile collector runs it: the file appears only when the command exits 0.
  if "$rdmactl" plan -f "$spec" --state "$state" --format prom > "$out.tmp" 2> "$work/plan-$name.err" &&
    mv "$out.tmp" "$out"; then
    :
  else
    fail "plan $name --format prom: exit $? ($(cat "$work/plan-$name.err")): the textfile would never be published"
    continue
  fi
  promtool_clean "plan $name" "$out"
  expect_sample "plan $name" "$out" 'rdmactl_build_info\{version="[0-9.]+"\} 1$'
  expect_sample "plan $name" "$out" 'rdmactl_drift_changes\{node="[^"]+"\} [0-9]+$'
  expect_sample "plan $name" "$out" 'rdmactl_pending_reboot_changes\{node="[^"]+"\} [0-9]+$'
  expect_sample "plan $name" "$out" 'rdmactl_errors\{node="[^"]+"\} [0-9]+$'
  expect_sample "plan $name" "$out" 'rdmactl_port_rate_bytes_per_second\{node="[^"]+",device="mlx5_0",port="1"\} 1.25e\+10$'
  expect_sample "plan $name" "$out" 'rdmactl_port_active\{node="[^"]+",device="mlx5_0",port="1"\} [01]$'
  # Port counters under node_exporter's infiniband collector's names (node_infiniband_X is
  # rdmactl_infiniband_X: agent/report/prom.cpp, kPortCounters), none under rdmactl's old ones.
  for counter in np_cnp_packets_sent rp_cnp_packets_handled out_of_sequence_packets_received packet_sequence_errors \
    local_ack_timeout_errors symbol_error link_downed port_errors_received port_discards_transmitted \
    port_data_received_bytes port_data_transmitted_bytes; do
    expect_sample "plan $name" "$out" "rdmactl_infiniband_${counter}_total\\{node=\"[^\"]+\",device=\"mlx5_[01]\",port=\"1\"\\} [0-9]+$"
  done
  if grep -Eq '^rdmactl_port_[a-z0-9_]*_total[{ ]' "$out"; then
    fail "plan $name: a port counter under a name that is not node_exporter's: $(grep -E '^rdmactl_port_[a-z0-9_]*_total[{ ]' "$out" | head -1)"
  fi
  # Base units only: no gigabits, no microseconds.
  if grep -Eq '_gbps|_us[{ ]|_microseconds' "$out"; then fail "plan $name: a metric not in base units: $(grep -E '_gbps|_us[{ ]' "$out" | head -1)"; fi
done
# The lossless example drifts on the demo host: the drift is in the metrics, the exit code 0.
if [ -f "$work/plan-roce-lossless.prom" ]; then
  drift=$(sed -n 's/^rdmactl_drift_changes{[^}]*} \([0-9]*\)$/\1/p' "$work/plan-roce-lossless.prom")
  [ "${drift:-0}" -gt 0 ] || fail "plan roce-lossless: rdmactl_drift_changes is ${drift:-absent}, expected the demo host's drift"
  grep -q '^rdmactl_drift{' "$work/plan-roce-lossless.prom" || fail "plan roce-lossless: no rdmactl_drift series for the drifted fields"
  # np_cnp_sent of mlx5_0 port 1 in the recorded state is 18342: exported as is.
  grep -q '^rdmactl_infiniband_np_cnp_packets_sent_total{node="[^"]*",device="mlx5_0",port="1"} 18342$' "$work/plan-roce-lossless.prom" ||
    fail "plan roce-lossless: rdmactl_infiniband_np_cnp_packets_sent_total of mlx5_0/1 is not the recorded 18342"
  # port_rcv_data counts 4-octet words (recorded 4402198377455): bytes, as node_exporter exports it.
  grep -q '^rdmactl_infiniband_port_data_received_bytes_total{node="[^"]*",device="mlx5_0",port="1"} 17608793509820$' "$work/plan-roce-lossless.prom" ||
    fail "plan roce-lossless: rdmactl_infiniband_port_data_received_bytes_total of mlx5_0/1 is not 4 x the recorded 4402198377455"
fi

# 3. doctor --format prom of the recorded GPU host (examples/gpu-host.json: a finding of each of the
#    host-level checks): exit 0 with findings, promtool clean, a gauge per check and one per finding.
out="$work/doctor.prom"
if "$rdmactl" doctor --state "$source_dir/examples/gpu-host.json" --format prom > "$out" 2> "$work/doctor.err"; then
  promtool_clean "doctor --format prom" "$out"
  expect_sample "doctor" "$out" 'rdmactl_doctor_findings\{node="gpu-02",check="memlock",severity="warning"\} 1$'
  expect_sample "doctor" "$out" 'rdmactl_doctor_findings\{node="gpu-02",check="pfc",severity="error"\} 0$'
  expect_sample "doctor" "$out" 'rdmactl_doctor_finding\{node="gpu-02",check="gpu-nic-path",severity="warning",resource="pci/0000:b1:00.0"\} 1$'
else
  fail "doctor --format prom exited $?: $(cat "$work/doctor.err")"
fi

# 2. The agent's /metrics.
fixture="$source_dir/tests/fixtures/sysfs/cx6dx-roce"
port=
for _ in $(seq 20); do
  candidate=$((20000 + RANDOM % 20000))
  if ! (exec 3<> "/dev/tcp/127.0.0.1/$candidate") 2> /dev/null; then
    port=$candidate
    break
  fi
done
[ -n "$port" ] || { fail "no free loopback port for serve"; exit 1; }
"$rdmactl" --root "$fixture" --node metrics-test serve -f "$source_dir/examples/roce-lossless.yaml" --dry-run \
  --no-rdma-responder --listen "127.0.0.1:$port" > "$work/serve.log" 2>&1 &
serve_pid=$!
scraped=
for _ in $(seq 100); do
  if curl -sf "http://127.0.0.1:$port/metrics" -o "$work/agent.prom" 2> /dev/null &&
    grep -q '^rdmactl_reconciles_total{node="metrics-test"} [1-9]' "$work/agent.prom"; then
    scraped=yes
    break
  fi
  kill -0 "$serve_pid" 2> /dev/null || break
  sleep 0.2
done
if [ -z "$scraped" ]; then
  fail "serve: no /metrics after its first reconcile on 127.0.0.1:$port; its log: $(cat "$work/serve.log")"
else
  promtool_clean "serve /metrics" "$work/agent.prom"
  for regex in 'rdmactl_build_info\{version="[0-9.]+"\} 1$' \
    'rdmactl_reconcile_duration_seconds_bucket\{node="metrics-test",le="\+Inf"\} [1-9][0-9]*$' \
    'rdmactl_reconcile_duration_seconds_count\{node="metrics-test"\} [1-9][0-9]*$' \
    'rdmactl_selftest_timestamp_seconds\{node="metrics-test"\} 0$' \
    'rdmactl_selftest_info\{node="metrics-test",result="none"\} 1$' \
    'rdmactl_drift_changes\{node="metrics-test"\} [0-9]+$' \
    'rdmactl_last_reconcile_timestamp_seconds\{node="metrics-test"\} [1-9][0-9]*$' \
    'rdmactl_port_rate_bytes_per_second\{node="metrics-test",device="mlx5_0",port="1"\} [0-9.e+]+$'; do
    expect_sample "serve /metrics" "$work/agent.prom" "$regex"
  done
  # No self-test has run (a dry run runs none): rdmactl_selftest_success is absent, not 0, so
  # that an alert on `rdmactl_selftest_success == 0` does not fire on a node that never tested.
  if grep -q '^rdmactl_selftest_success' "$work/agent.prom"; then
    fail "serve /metrics: rdmactl_selftest_success before any self-test ran: $(grep '^rdmactl_selftest_success' "$work/agent.prom")"
  fi
  curl -sI "http://127.0.0.1:$port/metrics" | grep -qi '^content-type: text/plain; version=0.0.4' ||
    fail "serve /metrics: Content-Type is not text/plain; version=0.0.4"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "metrics: all checks passed"
