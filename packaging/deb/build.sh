#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian packages of rdmactl from a built binary, with dpkg-deb alone (no source
# package, no debhelper: the binary comes from the CMake build):
#
#   packaging/deb/build.sh BUILD_DIR_OR_BINARY OUT_DIR
#
# makes OUT_DIR/rdmactl_<version>_<arch>.deb (the binary stripped, man pages made from its --help,
# bash and zsh completion, the systemd units, conffiles, the maintainer scripts) and
# OUT_DIR/rdmactl-dbgsym_<version>_<arch>.deb (its debug symbols, by build ID, as dh_strip makes
# them), and prints their paths. <version> is `rdmactl --version` plus the Debian revision of the
# latest entry in packaging/deb/changelog, which must be for that upstream version.
#
# Environment:
#   RDMACTL_DEB_REQUIRE_COMPLETION=1  fail when the binary has no `rdmactl completion bash|zsh`
#                                     (without it, the package is built without completion and a
#                                     warning says so)
#   SOURCE_DATE_EPOCH                 file times in the packages (default: the changelog's date)
#
# Needs dpkg-dev (dpkg-shlibdeps), binutils (strip, objcopy, readelf) and help2man.
set -euo pipefail

die() { echo "build.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: $0 BUILD_DIR_OR_BINARY OUT_DIR"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)

binary=$1
[ -d "$binary" ] && binary=$binary/rdmactl
[ -f "$binary" ] && [ -x "$binary" ] || die "$1: no rdmactl binary there (pass the CMake build directory or the binary)"
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
mkdir -p "$2"
out=$(cd "$2" && pwd)

for tool in dpkg-deb dpkg-shlibdeps strip objcopy readelf help2man gzip; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install dpkg-dev binutils help2man)"
done

# --- versions -------------------------------------------------------------------------------------
upstream=$("$binary" --version | awk '{print $NF; exit}')
[[ $upstream =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || die "cannot read the version from '$binary --version'"
changelog=$here/changelog
version=$(sed -n '1s/^rdmactl (\([^)]*\)).*/\1/p' "$changelog")
[ "${version%-*}" = "$upstream" ] || die "packaging/deb/changelog's latest entry is $version, but the binary is \
$upstream: add an entry for $upstream-1 at the top of packaging/deb/changelog (dch -v $upstream-1)"
maintainer=$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$changelog" | head -n1)
[ -n "$maintainer" ] || die "no maintainer in the trailer line of packaging/deb/changelog"
: "${SOURCE_DATE_EPOCH:=$(date -d "$(sed -n 's/^ -- .*>  //p' "$changelog" | head -n1)" +%s)}"
export SOURCE_DATE_EPOCH

case $(readelf -h "$binary" | sed -n 's/^ *Machine: *//p') in
  *X86-64*) arch=amd64 ;;
  *AArch64*) arch=arm64 ;;
  *) die "unknown machine in $binary: add it to build.sh" ;;
esac
build_id=$(readelf -n "$binary" | sed -n 's/^ *Build ID: *//p' | head -n1)
[ ${#build_id} -gt 2 ] || die "$binary has no GNU build ID (link it with --build-id)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 022
pkg=$work/rdmactl
dbg=$work/rdmactl-dbgsym

# --- the binary, stripped; its debug symbols apart ------------------------------------------------
# As dh_strip: the debug file under /usr/lib/debug/.build-id, compressed; .comment and .note out.
install -d "$pkg/usr/sbin" "$dbg/usr/lib/debug/.build-id/${build_id:0:2}"
debug_file=$dbg/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug
objcopy --only-keep-debug --compress-debug-sections "$binary" "$debug_file"
chmod 0644 "$debug_file"
strip --remove-section=.comment --remove-section=.note -o "$pkg/usr/sbin/rdmactl" "$binary"
objcopy --add-gnu-debuglink="$debug_file" "$pkg/usr/sbin/rdmactl"
chmod 0755 "$pkg/usr/sbin/rdmactl"
bin=$pkg/usr/sbin/rdmactl

# --- files ----------------------------------------------------------------------------------------
doc=$pkg/usr/share/doc/rdmactl
install -d "$doc/examples" "$pkg/usr/share/rdmactl/schemas" "$pkg/lib/systemd/system" \
  "$pkg/etc/rdmactl" "$pkg/etc/default" "$pkg/usr/share/man/man8"
install -m 0644 "$src"/schemas/*.json "$pkg/usr/share/rdmactl/schemas/"
# The alerting rules and the dashboard (docs/alerts.md): for a Prometheus' rule_files and Grafana.
install -D -m 0644 "$src/packaging/prometheus/rdmactl-alerts.yml" "$pkg/usr/share/rdmactl/prometheus/rdmactl-alerts.yml"
install -D -m 0644 "$src/packaging/grafana/rdmactl.json" "$pkg/usr/share/rdmactl/grafana/rdmactl.json"
install -m 0644 "$src"/examples/*.yaml "$src"/examples/*.json "$doc/examples/"
install -d "$doc/examples/fleet/states"
install -m 0644 "$src"/examples/fleet/*.yaml "$doc/examples/fleet/"
install -m 0644 "$src"/examples/fleet/states/*.json "$doc/examples/fleet/states/"
install -m 0644 "$src/README.md" "$doc/README.md"
# The manual: docs/ beside the README, whose links into docs/ (and the pages' into ../examples/)
# then resolve; links into the source tree (packaging/, schemas/, tests/) do not.
install -d "$doc/docs"
install -m 0644 "$src"/docs/*.md "$doc/docs/"
if [ -d "$src/docs/images" ]; then
  install -d "$doc/docs/images"
  install -m 0644 "$src"/docs/images/* "$doc/docs/images/"
fi
install -m 0644 "$here/copyright" "$doc/copyright"
gzip -9n < "$changelog" > "$doc/changelog.Debian.gz"
chmod 0644 "$doc/changelog.Debian.gz"
install -m 0644 "$src"/packaging/systemd/rdmactl.service "$src"/packaging/systemd/rdmactl-apply.service \
  "$src"/packaging/systemd/rdmactl-apply.timer "$pkg/lib/systemd/system/"
install -m 0644 "$here/default" "$pkg/etc/default/rdmactl"
{
  echo "# An example from /usr/share/doc/rdmactl/examples (minimal.yaml), installed by the rdmactl"
  echo "# package: replace it with this fleet's spec. rdmactl.service plans it in --dry-run until"
  echo "# RDMACTL_SERVE_OPTS in /etc/default/rdmactl says otherwise."
  cat "$src/examples/minimal.yaml"
} > "$pkg/etc/rdmactl/fabric.yaml"
chmod 0644 "$pkg/etc/rdmactl/fabric.yaml"
"$bin" validate -f "$pkg/etc/rdmactl/fabric.yaml" >/dev/null || die "the example spec does not validate"

# --- man pages: one per command, from its --help -----------------------------------------------
# The commands are the ones `rdmactl --help` lists, so a new command gets its page without an edit.
mapfile -t commands < <("$bin" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
[ ${#commands[@]} -ge 5 ] || die "found only ${#commands[@]} commands in 'rdmactl --help'"
summary_of() { "$bin" --help | awk -v c="$1" '/^Subcommands:/{on=1; next} on && $1 == c {$1=""; sub(/^ +/, ""); print; exit}'; }
man_page() {  # NAME DESCRIPTION EXECUTABLE SEE_ALSO
  local include=$work/$1.h2m
  { cat "$src/packaging/man/rdmactl.h2m"; printf '\n[SEE ALSO]\n%s\n' "$4"; } > "$include"
  help2man --no-info --no-discard-stderr --section=8 --manual="rdmactl manual" \
    --source="rdmactl $upstream" --version-string="$upstream" --name="$2" --include="$include" \
    --output="$work/$1.8" "$3" || die "help2man failed for $1"
  # The examples name the source tree's examples/; installed, they are in the documentation.
  sed -i 's|\([ =]\)examples/|\1/usr/share/doc/rdmactl/examples/|g' "$work/$1.8"
  gzip -9n < "$work/$1.8" > "$pkg/usr/share/man/man8/$1.8.gz"
  chmod 0644 "$pkg/usr/share/man/man8/$1.8.gz"
}
see_all=""
for c in "${commands[@]}"; do see_all+=".BR rdmactl\\-$c (8),"$'\n'; done
see_all+="the README and the manual (docs/index.md) in /usr/share/doc/rdmactl, the example specs in /usr/share/doc/rdmactl/examples and
the spec's JSON Schema in /usr/share/rdmactl/schemas."
man_page rdmactl "declarative configuration of RDMA hosts (RoCE and InfiniBand)" "$bin" "$see_all"
for c in "${commands[@]}"; do
  wrapper=$work/rdmactl-$c
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$bin" "$c" > "$wrapper"
  chmod 0755 "$wrapper"
  summary=$(summary_of "$c")
  [ -n "$summary" ] || die "no summary for $c in 'rdmactl --help'"
  # man's NAME line: "rdmactl-plan - show what apply would change ..." (lower-case first letter).
  man_page "rdmactl-$c" "${summary,}" "$wrapper" ".BR rdmactl (8),
the README and the manual (docs/index.md) in /usr/share/doc/rdmactl."
done

# --- shell completion -----------------------------------------------------------------------------
if "$bin" completion bash > "$work/completion.bash" 2>/dev/null && [ -s "$work/completion.bash" ] &&
   "$bin" completion zsh > "$work/completion.zsh" 2>/dev/null && [ -s "$work/completion.zsh" ]; then
  install -D -m 0644 "$work/completion.bash" "$pkg/usr/share/bash-completion/completions/rdmactl"
  install -D -m 0644 "$work/completion.zsh" "$pkg/usr/share/zsh/vendor-completions/_rdmactl"
elif [ "${RDMACTL_DEB_REQUIRE_COMPLETION:-0}" = 1 ]; then
  die "$binary has no 'rdmactl completion bash|zsh' (RDMACTL_DEB_REQUIRE_COMPLETION=1)"
else
  echo "build.sh: warning: $binary has no 'rdmactl completion bash|zsh': the package has no shell completion" >&2
fi

# --- control --------------------------------------------------------------------------------------
install -d -m 0755 "$pkg/DEBIAN" "$dbg/DEBIAN"
install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$pkg/DEBIAN/"
printf '/etc/default/rdmactl\n/etc/rdmactl/fabric.yaml\n' > "$pkg/DEBIAN/conffiles"
chmod 0644 "$pkg/DEBIAN/conffiles"

# dpkg-shlibdeps reads debian/control: give it a minimal one.
install -d "$work/shlibs/debian"
printf 'Source: rdmactl\n\nPackage: rdmactl\nArchitecture: any\n' > "$work/shlibs/debian/control"
shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$bin" | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || die "dpkg-shlibdeps found no dependencies for $bin"

installed_size() { du -k -s --apparent-size --exclude=DEBIAN "$1" | cut -f1; }

cat > "$pkg/DEBIAN/control" <<EOF
Package: rdmactl
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(installed_size "$pkg")
Depends: $shlibs, git
Recommends: mstflint, opensm, infiniband-diags
Suggests: perftest, rdmacm-utils
Section: net
Priority: optional
Description: declarative configuration of RDMA hosts (RoCE and InfiniBand)
 rdmactl converges a host's RDMA configuration to a YAML fabric spec: link
 type, MTU and link state, addresses, DCB QoS (trust, DSCP map, PFC), RoCE
 ECN, RoCE mode and ToS, IPoIB mode, the OpenSM subnet manager and net.*
 sysctl keys. plan reports the drift; apply converges, verifies, rolls back
 on failure and proves the result with an RDMA self-test (bandwidth and
 latency, loopback and between nodes); doctor checks the ports' health.
 .
 The agent, rdmactl serve (rdmactl.service), keeps the host converged and
 serves an HTTP API with Prometheus metrics on 127.0.0.1:9473. As installed
 it only reports drift (--dry-run) until /etc/default/rdmactl says otherwise.
 rdmactl-apply.timer is the alternative without a daemon: a periodic apply,
 optionally of a git checkout.
EOF

cat > "$dbg/DEBIAN/control" <<EOF
Package: rdmactl-dbgsym
Source: rdmactl
Version: $version
Auto-Built-Package: debug-symbols
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(installed_size "$dbg")
Depends: rdmactl (= $version)
Section: debug
Priority: optional
Description: debug symbols for rdmactl
Build-Ids: $build_id
EOF
# As dh_installdocs does for -dbgsym packages: the documentation is rdmactl's.
install -d "$dbg/usr/share/doc"
ln -s rdmactl "$dbg/usr/share/doc/rdmactl-dbgsym"

for tree in "$pkg" "$dbg"; do
  (cd "$tree" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 -r md5sum) \
    > "$tree/DEBIAN/md5sums"
  chmod 0644 "$tree/DEBIAN/md5sums" "$tree/DEBIAN/control"
  find "$tree" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
done

deb=$out/rdmactl_${version}_${arch}.deb
dbgsym=$out/rdmactl-dbgsym_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
dpkg-deb --root-owner-group -Zxz --build "$dbg" "$dbgsym" >/dev/null
echo "$deb"
echo "$dbgsym"
