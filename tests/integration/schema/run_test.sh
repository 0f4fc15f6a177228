#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdmactl's JSON Schemas (schemas/, draft 2020-12) judged by two validators:
# - ajv 8 in strict mode (check.mjs): each schema compiles with every strict check on (unknown
#   keywords, union types, required properties not declared, ...);
# - the specs: every example and golden spec that `rdmactl validate` (valijson, through
#   agent/spec/json_schema.h) accepts, ajv accepts too; every spec of invalid/ (one structural
#   mistake each) both refuse;
# - the reports: `plan --format json` (report.schema.json) and the fleet plan
#   (fleet-plan.schema.json) of the examples are valid by ajv.
# The npm packages are pinned (package.json, package-lock.json) and installed with npm ci.
# Exit: 0 passed, 1 failed, 77 skipped (node or npm missing, or the registry unreachable; under
# CI=true those fail).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../../.." && pwd)

skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $* (CI=true: a skip is a failure)"; exit 1; fi
  echo "SKIP: $*"; exit 77
}
[ $# -eq 1 ] || { echo "usage: $0 RDMACTL_BINARY" >&2; exit 64; }
rdmactl=$1
[ -x "$rdmactl" ] || { echo "FAIL: $1: no rdmactl binary"; exit 1; }
for tool in node npm; do
  command -v "$tool" >/dev/null || skip "$tool is missing (apt-get install nodejs npm)"
done

tools=${RDMACTL_SCHEMA_CHECK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmactl/schema-check}
mkdir -p "$tools"
if ! cmp -s "$here/package-lock.json" "$tools/package-lock.json" || [ ! -d "$tools/node_modules" ]; then
  echo "# npm ci into $tools (package-lock.json changed or first run)"
  cp "$here/package.json" "$here/package-lock.json" "$tools/"
  if ! (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error); then
    rm -rf "$tools/node_modules" "$tools/package-lock.json"
    skip "npm ci failed (is the npm registry reachable?)"
  fi
fi
cp "$here/check.mjs" "$tools/check.mjs"
ajv() { node "$tools/check.mjs" "$@"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL - $*"; failed=$((failed + 1)); }

echo "== ajv strict: the schemas compile"
ajv compile "$src"/schemas/*.json || fail "a schema does not compile in ajv's strict mode"

echo "== specs: what rdmactl accepts, ajv accepts; invalid/ both refuse"
valid=("$src"/examples/*.yaml "$src"/examples/fleet/fabric.yaml "$src"/tests/golden/*/*/spec.yaml)
ajv validate "$src/schemas/fabric-spec.schema.json" "${valid[@]}" > "$work/valid.txt"
accepted=0
for spec in "${valid[@]}"; do
  verdict=$(grep -F "$spec " "$work/valid.txt" | head -1)
  "$rdmactl" validate -f "$spec" > /dev/null 2> "$work/err"
  status=$?
  # 65 may be a semantic or cross-node finding the schema cannot express; 0 must be ajv-valid.
  if [ "$status" -eq 0 ]; then
    accepted=$((accepted + 1))
    [[ "$verdict" == "$spec valid" ]] || fail "rdmactl accepts $spec, ajv does not: $verdict"
  elif [[ "$verdict" != "$spec valid" ]] && [ "$status" -ne 65 ]; then
    fail "ajv refuses $spec ($verdict) and rdmactl exits $status, not 65"
  fi
done
[ "$accepted" -ge 20 ] || fail "only $accepted specs accepted by rdmactl: the corpus is not what this test assumes"
echo "$accepted specs accepted by both"
invalid=("$here"/invalid/*.yaml)
ajv validate "$src/schemas/fabric-spec.schema.json" "${invalid[@]}" > "$work/invalid.txt"
for spec in "${invalid[@]}"; do
  verdict=$(grep -F "$spec " "$work/invalid.txt" | head -1)
  [[ "$verdict" == "$spec invalid:"* ]] || fail "ajv accepts $(basename "$spec"): $verdict"
  "$rdmactl" validate -f "$spec" > /dev/null 2> "$work/err"
  status=$?
  [ "$status" -eq 65 ] || fail "rdmactl validate $(basename "$spec"): exit $status, not 65: $(cat "$work/err")"
  echo "refused by both: $(basename "$spec"): ${verdict#*invalid: }"
done
[ "${#invalid[@]}" -ge 8 ] || fail "invalid/ has ${#invalid[@]} cases"

echo "== reports: plan and the fleet plan against their schemas"
"$rdmactl" plan -f "$src/examples/roce-lossless.yaml" --state "$src/examples/demo-host.json" --format json > "$work/plan.json"
[ $? -eq 2 ] || fail "plan of the example: not exit 2 (drift)"
"$rdmactl" plan -f "$src/examples/fleet/fabric.yaml" --states "$src/examples/fleet/states" --format json > "$work/fleet.json"
ajv validate "$src/schemas/report.schema.json" "$work/plan.json" | tee "$work/r1.txt"
grep -q "plan.json valid" "$work/r1.txt" || fail "plan --format json is not valid by report.schema.json"
ajv validate "$src/schemas/fleet-plan.schema.json" "$work/fleet.json" | tee "$work/r2.txt"
grep -q "fleet.json valid" "$work/r2.txt" || fail "the fleet plan is not valid by fleet-plan.schema.json"

if [ "$failed" -ne 0 ]; then echo "$failed check(s) failed"; exit 1; fi
echo "schema checks passed"
