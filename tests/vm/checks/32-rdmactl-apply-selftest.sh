#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# apply ends with the RDMA self-test: with a spec that sets RoCE on rxe0 and a pass mark rxe can
# meet under emulation, apply converges and its JSON report's `selftest` says passed for the
# loopback on rxe0/1 with its figures; with the default mark (0.9 of the 10 Gb/s rxe reports, far
# above what an emulated guest moves) apply exits 1 with the self-test failed and the reason, and
# the converged settings stay (a slow fabric is reported, not rolled back). All of it runs again
# with the sanitizer build (vm-sanitize): apply's self-test is verbs code.
# vm-timeout: 150
# vm-sanitize: yes
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source-path=SCRIPTDIR source=../guest/lib.sh
. "${VM_LIB:-$(dirname "$0")/../guest/lib.sh}"
[ -n "${RDMACTL:-}" ] || skip "no rdmactl binary (run-checks.sh --binary PATH)"
dev=${VM_RXE_DEV:-rxe0}
d=/sys/kernel/config/rdma_cm/$dev
trap 'rmdir "$d" 2>/dev/null || true' EXIT

# rdma_cm's ToS for rxe0/1, read as cma_roce_tos keeps it: through the configfs directory, made and
# removed again here when absent (rdmactl too removes the directory it made; the value stays).
kernel_tos() {
  if [ -d "$d" ]; then cat "$d/ports/1/default_roce_tos"; return; fi
  mkdir "$d"
  cat "$d/ports/1/default_roce_tos"
  rmdir "$d"
}

write_spec() {  # FILE SELFTEST-LINE
  printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: apply-selftest\n' > "$1"
  printf 'defaults:\n  interfaces:\n    - rdmaDevice: %s\n      roce: {mode: v2, tos: 106}\n' "$dev" >> "$1"
  printf '  selftest: %s\n' "$2" >> "$1"
}

spec=$VM_SCRATCH/apply-selftest.yaml
write_spec "$spec" "{enabled: true, minBandwidthRatio: 0.0001}"
rc=0
"$RDMACTL" apply -f "$spec" --format json > apply.json 2> apply.err || rc=$?
[ "$rc" -eq 0 ] || { cat apply.json apply.err; fail "apply exited $rc, want 0"; }
jq -e '.selftest.result == "passed"' apply.json > /dev/null || { cat apply.json; fail "apply's selftest did not pass"; }
jq -e --arg dev "$dev" '[.selftest.tests[] | select(.test == "loopback" and .device == $dev and .port == 1
    and .result == "passed" and .bandwidthGbps > 0 and .latencyUs.typical > 0)] | length == 1' apply.json > /dev/null \
  || { cat apply.json; fail "no passed loopback on $dev/1 with figures in apply's report"; }
jq -e '.selftest.tests[0].trafficClass.tos == 106 and .selftest.tests[0].trafficClass.source == "spec roce.tos"' \
  apply.json > /dev/null || { cat apply.json; fail "apply's self-test did not run on the spec's ToS 106"; }
echo "ok: apply converged and ended with the self-test: $(jq -r '.selftest.tests[0] | "\(.device)/\(.port) \(.bandwidthGbps) Gb/s, latency \(.latencyUs.typical) us, \(.result)"' apply.json)"
"$RDMACTL" apply -f "$spec" > apply.txt 2>&1 || { cat apply.txt; fail "text apply exited non-zero"; }
grep -q "^Self-test passed" apply.txt || { cat apply.txt; fail "the text report has no 'Self-test passed' line"; }
echo "ok: the text report ends with: $(grep '^Self-test' apply.txt)"

write_spec "$spec" "{enabled: true}"
rc=0
"$RDMACTL" apply -f "$spec" --format json > failed.json 2> failed.err || rc=$?
[ "$rc" -eq 1 ] || { cat failed.json failed.err; fail "apply with the default pass mark exited $rc, want 1 (self-test failed)"; }
jq -e '.selftest.result == "failed" and (.selftest.tests[0].reason | length > 0)' failed.json > /dev/null \
  || { cat failed.json; fail "the report does not say the self-test failed, with a reason"; }
tos=$(kernel_tos)
[ "$tos" = 106 ] || fail "the RoCE ToS is $tos, not 106: it did not stay after a failed self-test"
echo "ok: default mark: apply exits 1, selftest failed: $(jq -r '.selftest.tests[0].reason' failed.json)"

write_spec "$spec" "{enabled: false}"
"$RDMACTL" apply -f "$spec" --format json > off.json || { cat off.json; fail "apply with the self-test off failed"; }
jq -e '.selftest == null' off.json > /dev/null || { cat off.json; fail "selftest ran although enabled: false"; }
echo "ok: selftest: {enabled: false} runs none (report selftest null)"
# Back to the kernel's default for the checks after this one.
mkdir -p "$d"
echo 0 > "$d/ports/1/default_roce_tos"
rmdir "$d"
