#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Kubernetes manifests and image recipe in packaging/kubernetes/, checked offline:
#
#   tests/integration/kubernetes/run_test.sh RDMACTL_BINARY_OR_BUILD_DIR
#
# - validate.mjs: each manifest against the Kubernetes OpenAPI schema (npm kubernetes-models, the
#   v1.33 definitions compiled to ajv validators), the PodMonitor and the PrometheusRule against the
#   prometheus-operator CRDs' schemas (npm @kubernetes-models/prometheus-operator); unknown fields through the same
#   packages' TypeScript interfaces (tsc); controls that must fail; and the policy of issue 14
#   (resources, system-node-critical, Pod Security labels, service account without a token,
#   hostPath state, grace period, token Secret 0400, PodMonitor on the pod's port), and of issue 28
#   (the PodMonitor's labels as Prometheus would store them, tolerations, the image by digest).
# - pin-image.sh: writes a digest into a copy of kustomization.yaml, which then renders the
#   DaemonSet's image pinned; refuses what is no digest.
# - with the binary: the ConfigMap's spec passes `rdmactl validate`, and every option the
#   DaemonSet passes to `rdmactl serve` is one serve has.
# - the Dockerfile: Debian 12, installs the .deb that packaging/deb/build.sh names, leaves no token
#   in the image, runs the binary the DaemonSet runs.
#
# The npm packages (pinned in package.json and package-lock.json here) are installed with npm ci
# into $RDMACTL_K8S_CHECK_DIR (default ~/.cache/rdmactl/k8s-schema-check), once per lock file;
# the checks themselves use no network and no cluster.
#
# Exit: 0 passed, 1 failed, 77 skipped (node or npm missing, or the npm registry unreachable;
# under CI=true those fail).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../../.." && pwd)
k8s=$src/packaging/kubernetes

skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $* (CI=true: a skip is a failure)"; exit 1; fi
  echo "SKIP: $*"; exit 77
}
[ $# -eq 1 ] || { echo "usage: $0 RDMACTL_BINARY_OR_BUILD_DIR" >&2; exit 64; }
binary=$1
[ -d "$binary" ] && binary=$binary/rdmactl
[ -x "$binary" ] || { echo "FAIL: $1: no rdmactl binary"; exit 1; }
for tool in node npm; do
  command -v "$tool" >/dev/null || skip "$tool is missing (apt-get install nodejs npm)"
done

# --- the checker's npm packages -------------------------------------------------------------------
tools=${RDMACTL_K8S_CHECK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmactl/k8s-schema-check}
mkdir -p "$tools"
if ! cmp -s "$here/package-lock.json" "$tools/package-lock.json" || [ ! -d "$tools/node_modules" ]; then
  echo "# npm ci into $tools (package-lock.json changed or first run)"
  cp "$here/package.json" "$here/package-lock.json" "$tools/"
  if ! (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error); then
    rm -rf "$tools/node_modules" "$tools/package-lock.json"
    skip "npm ci failed (is the npm registry reachable?)"
  fi
fi
cp "$here/validate.mjs" "$tools/validate.mjs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {  # DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   - $what"; else failed=$((failed + 1)); echo "FAIL - $what"; fi
}

# --- schemas and policy ---------------------------------------------------------------------------
echo "# manifests: $(cd "$tools" && node -p 'const l=require("./package-lock.json").packages; ["kubernetes-models","@kubernetes-models/prometheus-operator","typescript"].map(n=>n+"@"+l["node_modules/"+n].version).join(", ")')"
# The label names the agent's metrics carry, from this binary (validate.mjs: the PodMonitor's
# honorLabels must hide none of the target's labels).
"$binary" plan -f "$src/examples/roce-lossless.yaml" --state "$src/examples/demo-host.json" --format prom > "$work/plan.prom" 2> "$work/plan.err" ||
  { failed=$((failed + 1)); echo "FAIL - rdmactl plan --format prom for the metrics' labels: $(cat "$work/plan.err")"; }
metric_labels=$(grep -v '^#' "$work/plan.prom" | grep -o '[{,][a-zA-Z_][a-zA-Z0-9_]*="' | tr -d '{,="' | sort -u | paste -sd, -)
echo "# the metrics' labels: $metric_labels"
(cd "$tools" && RDMACTL_K8S_EXPORT=$work/export.json RDMACTL_METRIC_LABELS=$metric_labels \
  RDMACTL_K8S_KUSTOMIZATION=$k8s/kustomization.yaml \
  node validate.mjs "$k8s/rdmactl.yaml" "$k8s/podmonitor.yaml" "$k8s/prometheusrule.yaml") > "$work/validate.out" 2>&1
validate_rc=$?
grep -v '^[0-9]* passed, [0-9]* failed$' "$work/validate.out"
passed=$((passed + $(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$work/validate.out" | tail -n1)))
failed=$((failed + $(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$work/validate.out" | tail -n1)))
[ "$validate_rc" = 0 ] || grep -q 'FAIL' "$work/validate.out" || { failed=$((failed + 1)); echo "FAIL - validate.mjs exited $validate_rc"; }

# --- against the binary ---------------------------------------------------------------------------
echo "# against $binary"
if [ -s "$work/export.json" ]; then
  node -e 'process.stdout.write(require(process.argv[1]).spec)' "$work/export.json" > "$work/fabric.yaml"
  check "the ConfigMap's spec passes rdmactl validate" "$binary" validate -f "$work/fabric.yaml"
  "$binary" serve --help > "$work/serve-help.txt" 2>&1
  "$binary" --help > "$work/help.txt" 2>&1
  mapfile -t flags < <(node -e 'for (const a of require(process.argv[1]).command) if (a.startsWith("-")) console.log(a)' "$work/export.json")
  for flag in "${flags[@]}"; do
    check "the DaemonSet's '$flag' is an option of rdmactl or rdmactl serve" \
      grep -Eq -- "(^|[ ,])$flag([ ,=]|$)" "$work/serve-help.txt" "$work/help.txt"
  done
  command0=$(node -e 'console.log(require(process.argv[1]).command[0])' "$work/export.json")
else
  failed=$((failed + 1)); echo "FAIL - validate.mjs exported nothing to check against the binary"
  command0=""
fi

# --- pin-image.sh: the image by digest -----------------------------------------------------------
# On a copy of packaging/kubernetes/. The digest is the sha256 of a test string: no image has it,
# and none needs to (a digest given on the command line is written as is, no registry asked).
echo "# pin-image.sh"
cp -r "$k8s" "$work/k8s"
digest=sha256:$(printf 'rdmactl pin-image.sh test' | sha256sum | cut -d' ' -f1)
render() { (cd "$tools" && node validate.mjs --render-image "$work/k8s/rdmactl.yaml" "$work/k8s/kustomization.yaml"); }
check "unpinned, apply -k runs the placeholder no runtime pulls" \
  test "$(render)" = "registry.example.com/rdmactl@sha256:UNPINNED"
check "pin-image.sh REPOSITORY@sha256:HEX pins it" \
  "$work/k8s/pin-image.sh" "registry.example.com/rdmactl@$digest"
check "apply -k then runs registry.example.com/rdmactl@$digest" \
  test "$(render)" = "registry.example.com/rdmactl@$digest"
check "another registry's repository (with a port) too" \
  "$work/k8s/pin-image.sh" "registry.example.com:5000/hpc/rdmactl@$digest"
check "apply -k then runs registry.example.com:5000/hpc/rdmactl@$digest" \
  test "$(render)" = "registry.example.com:5000/hpc/rdmactl@$digest"
check "the pinned kustomization passes validate.mjs's digest checks" \
  sh -c "cd '$tools' && RDMACTL_METRIC_LABELS='$metric_labels' RDMACTL_K8S_KUSTOMIZATION='$work/k8s/kustomization.yaml' node validate.mjs '$work/k8s/rdmactl.yaml' '$work/k8s/podmonitor.yaml' '$work/k8s/prometheusrule.yaml' > '$work/validate-pinned.out' 2>&1"
cp "$work/k8s/kustomization.yaml" "$work/pinned.yaml"
check "pin-image.sh refuses a digest that is not sha256 and 64 hex digits (and changes nothing)" \
  sh -c "! '$work/k8s/pin-image.sh' registry.example.com/rdmactl@sha256:UNPINNED 2>/dev/null && cmp -s '$work/k8s/kustomization.yaml' '$work/pinned.yaml'"
check "pin-image.sh refuses a reference without tag or digest" \
  sh -c "! '$work/k8s/pin-image.sh' registry.example.com/rdmactl 2>/dev/null && cmp -s '$work/k8s/kustomization.yaml' '$work/pinned.yaml'"
# And validate.mjs refuses a kustomization that pins a tag: the check is not blind.
sed -e 's/^    digest: .*/    newTag: 0.1.0/' "$work/pinned.yaml" > "$work/k8s/kustomization.yaml"
(cd "$tools" && RDMACTL_METRIC_LABELS=$metric_labels RDMACTL_K8S_KUSTOMIZATION=$work/k8s/kustomization.yaml \
  node validate.mjs "$work/k8s/rdmactl.yaml" "$work/k8s/podmonitor.yaml" "$work/k8s/prometheusrule.yaml") > "$work/validate-tag.out" 2>&1
check "control: a kustomization with newTag fails validate.mjs, on that and nothing else" \
  test "$(grep '^FAIL' "$work/validate-tag.out")" = "FAIL - kustomization.yaml's images: none, or a sha256 digest for rdmactl.yaml's image
FAIL - apply -k runs registry.example.com:5000/hpc/rdmactl:0.1.0: pinned, or the placeholder no runtime pulls"

# --- the Dockerfile -------------------------------------------------------------------------------
# No Dockerfile linter or container builder is used here (none is in Debian 12 that works offline);
# these are the properties the manifests and the package rely on.
echo "# Dockerfile"
dockerfile=$k8s/Dockerfile
check "FROM Debian 12" grep -Eq '^FROM debian:(12|bookworm)(-slim)?(@sha256:[0-9a-f]+)?$' "$dockerfile"
check "copies the package build.sh makes (rdmactl_<version>_<arch>.deb), not the -dbgsym" \
  grep -Eq '^COPY rdmactl_\*(_amd64)?\.deb ' "$dockerfile"
# RUN lines joined across their backslash continuations.
sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' "$dockerfile" > "$work/Dockerfile.joined"
check "installs it with apt-get (its Depends resolved)" grep -Eq '^RUN .*apt-get install [^;&]*/tmp/rdmactl_\*\.deb' "$work/Dockerfile.joined"
check "removes the token the postinst generated (each pod gets its own from the Secret)" \
  grep -Eq '^RUN .*rm -f[^;]* /etc/rdmactl/token' "$work/Dockerfile.joined"
check "ENTRYPOINT is the packaged binary the DaemonSet runs ($command0)" \
  grep -Fq "ENTRYPOINT [\"$command0\"]" "$dockerfile"
check "the packaged binary's path in build.sh is $command0" grep -Fq "\$pkg$command0\"" "$src/packaging/deb/build.sh"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
