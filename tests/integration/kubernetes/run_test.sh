#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Kubernetes manifests and image recipe in packaging/kubernetes/, checked offline:
#
#   tests/integration/kubernetes/run_test.sh RDMACTL_BINARY_OR_BUILD_DIR
#
# - validate.mjs: each manifest against the Kubernetes OpenAPI schema (npm kubernetes-models, the
#   v1.33 definitions compiled to ajv validators) and the PodMonitor against the prometheus-operator
#   CRD's schema (npm @kubernetes-models/prometheus-operator); unknown fields through the same
#   packages' TypeScript interfaces (tsc); controls that must fail; and the policy of issue 14
#   (resources, system-node-critical, Pod Security labels, service account without a token,
#   hostPath state, grace period, token Secret 0400, PodMonitor on the pod's port).
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
(cd "$tools" && RDMACTL_K8S_EXPORT=$work/export.json node validate.mjs "$k8s/rdmactl.yaml" "$k8s/podmonitor.yaml") > "$work/validate.out" 2>&1
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
