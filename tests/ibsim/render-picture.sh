#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# render-picture.sh [BINARY] - regenerates docs/images/fabric.svg and fabric-collapsed.svg, the
# pictures docs/infiniband.md shows ("The fabric as a picture"): the ibsim scenario `dot` (run-scenario.sh:
# fabric-fattree.net with a link-width error and an error-counters warning planted, two SMs) draws
# the fabric with `rdmactl fabric --format dot` (and --collapse), renders it with Graphviz's
# `dot -Tsvg`, checks the pictures (check-picture.py) and keeps them. Nothing is written unless the
# scenario passes. BINARY defaults to build/rdmactl. Needs what the ibsim tests need, and graphviz.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${1:-$TOP/build/rdmactl}
[ -x "$BIN" ] || { echo "render-picture.sh: no rdmactl at $BIN (build it, or name it)" >&2; exit 2; }
OUT=$TOP/docs/images
mkdir -p "$OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-picture.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
RDMACTL_PICTURE_DIR=$TMP "$HERE/run-scenario.sh" "$BIN" fattree dot
mv "$TMP/fabric.svg" "$TMP/fabric-collapsed.svg" "$OUT/"
echo "wrote $OUT/fabric.svg and $OUT/fabric-collapsed.svg"
