# SPDX-License-Identifier: Apache-2.0
# Sourced by the integration tests: whether a missing prerequisite is a skip or a failure.
# Skips only where the tools may legitimately be missing: not root and not CI. As root (which can
# install them) or under CI (CI=true: tests/run.sh), a missing tool is a failure.
under_ci() {
  case "${CI:-}" in true | 1 | yes) return 0 ;; esac
  return 1
}
cannot_run() {
  if under_ci || [ "$(id -u)" -eq 0 ]; then
    echo "FAIL: cannot run (euid $(id -u), CI=${CI:-}): $*" >&2
    exit 1
  fi
  echo "SKIP: $*" >&2
  exit 77
}
