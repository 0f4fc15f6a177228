#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds netdevsim (drivers/net/netdevsim) for one Debian kernel as an out-of-tree module, from
# Debian's own packages of exactly that kernel's version: the driver's source from linux-source-X.Y,
# the build tree from linux-headers-<kver> (+ its -common and linux-kbuild-X.Y). Debian's kernel
# config has "# CONFIG_NETDEVSIM is not set", so the module tree has no netdevsim; setup.sh calls
# this and puts the module in the cached tree's updates/ directory before depmod.
#
#   build-netdevsim.sh KVER VERSION DLDIR OUT.ko
#
#   KVER     the kernel release, e.g. 6.1.0-57-amd64 (linux-headers-KVER is the build tree)
#   VERSION  the Debian version of the kernel image package, e.g. 6.1.192-3; every package used
#            here is fetched at exactly this version (apt-get download PKG=VERSION)
#   DLDIR    download cache: keeps the headers .debs and the extracted driver source
#            (netdevsim-src_VERSION.tar.gz, ~40 KB); the ~140 MB linux-source .deb is deleted
#            once the driver's directory is out of it, and other versions' files are removed
#   OUT.ko   where the module goes (debug info stripped, unsigned)
#
# Exit: 0 built; 77 cannot be built here (the reason is the last line on stderr); 2 usage.
# Needs: apt-get (package lists for VERSION), dpkg-deb, tar, xz, make, the compiler the kernel was
# built with (gcc-12 for bookworm's 6.1, from CONFIG_CC_VERSION_TEXT), strip, modinfo.
set -euo pipefail
shopt -s inherit_errexit

log() { echo "build-netdevsim.sh: $*" >&2; }
cannot() { echo "build-netdevsim.sh: cannot build netdevsim: $*" >&2; exit 77; }

[ $# -eq 4 ] || { sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2; }
KVER=$1 VERSION=$2 DL=$3 OUT=$4
# linux-source-6.1 for 6.1.0-57-amd64
SERIES=$(sed -n 's/^\([0-9]\+\.[0-9]\+\)\..*/\1/p' <<<"$KVER")
[ -n "$SERIES" ] || cannot "cannot read the kernel series from $KVER"
mkdir -p "$DL"

W=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-netdevsim.XXXXXX")
trap 'rm -rf "$W"' EXIT

fetch() {  # PKG: prints the path of PKG_VERSION_*.deb in DLDIR, downloading it if needed
  local pkg=$1 deb out
  deb=$(find "$DL" -maxdepth 1 -name "${pkg}_${VERSION}_*.deb" | head -1)
  if [ -z "$deb" ]; then
    log "apt-get download $pkg=$VERSION"
    # As root, apt warns that _apt cannot write the directory; harmless, so filtered.
    if ! out=$(cd "$DL" && apt-get download "$pkg=$VERSION" 2>&1); then
      echo "$out" | grep -v unsandboxed >&2
      cannot "apt-get download $pkg=$VERSION failed (not in the archive any more, or no archive)"
    fi
    deb=$(find "$DL" -maxdepth 1 -name "${pkg}_${VERSION}_*.deb" | head -1)
    [ -n "$deb" ] || cannot "apt-get download $pkg=$VERSION produced no .deb"
  fi
  echo "$deb"
}

# --- the build tree: linux-headers-KVER, the -common it includes, linux-kbuild (prebuilt
#     fixdep/modpost/objtool), extracted, not installed ----------------------------------------
hdeb=$(fetch "linux-headers-$KVER")
deps=$(dpkg-deb -f "$hdeb" Depends | tr ',' '\n' | awk '{print $1}')
common=$(grep -m1 '^linux-headers-.*-common$' <<<"$deps") || cannot "$hdeb depends on no -common"
kbuild=$(grep -m1 '^linux-kbuild-' <<<"$deps") || cannot "$hdeb depends on no linux-kbuild"
debs=("$hdeb" "$(fetch "$common")" "$(fetch "$kbuild")")

# --- the driver's source: drivers/net/netdevsim of linux-source-SERIES at VERSION --------------
src=$DL/netdevsim-src_$VERSION.tar.gz
if [ ! -s "$src" ]; then
  sdeb=$(fetch "linux-source-$SERIES")
  log "extracting drivers/net/netdevsim from $(basename "$sdeb")"
  # The .deb holds one linux-source-SERIES.tar.xz; stream it instead of unpacking 1.3 GB.
  dpkg-deb --fsys-tarfile "$sdeb" | tar -xO "./usr/src/linux-source-$SERIES.tar.xz" | xz -dc |
    tar -x -C "$W" "linux-source-$SERIES/drivers/net/netdevsim" ||
    cannot "no drivers/net/netdevsim in $(basename "$sdeb")"
  tar -czf "$src.tmp" -C "$W/linux-source-$SERIES/drivers/net" netdevsim
  mv "$src.tmp" "$src"
  rm -rf "$W/linux-source-$SERIES" "$sdeb"
fi

for d in "${debs[@]}"; do dpkg-deb -x "$d" "$W/root"; done
H=$W/root/usr/src/linux-headers-$KVER
for f in Makefile .config Module.symvers; do
  [ -f "$H/$f" ] || cannot "linux-headers-$KVER has no $f"
done
# Debian's Makefile is one line including the -common tree by its absolute /usr/src path.
sed -i "s|^include /usr/src/|include $W/root/usr/src/|" "$H/Makefile"
# An unsigned module: a kernel enforcing signatures would refuse it (Debian's 6.1 does not).
grep -q '^CONFIG_MODULE_SIG_FORCE=y' "$H/.config" &&
  cannot "linux-$KVER enforces module signatures (CONFIG_MODULE_SIG_FORCE=y); an unsigned module would be refused"
cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' "$H/.config")
command -v "${cc:-gcc}" > /dev/null ||
  cannot "linux-$KVER was built with ${cc:-gcc}, which is not installed (apt-get install ${cc:-gcc})"

mkdir -p "$W/netdevsim"
tar -xzf "$src" -C "$W"
# The driver's own Makefile, as in the tree: obj-$(CONFIG_NETDEVSIM) += netdevsim.o, with bpf.o,
# ipsec.o and psample.o by the kernel's CONFIG_BPF_SYSCALL, CONFIG_XFRM_OFFLOAD, CONFIG_PSAMPLE.
log "building netdevsim for $KVER ($VERSION) with ${cc:-gcc}"
if ! make -C "$H" M="$W/netdevsim" CONFIG_NETDEVSIM=m CC="${cc:-gcc}" -j"$(nproc)" modules \
       > "$W/build.log" 2>&1; then
  tail -n 30 "$W/build.log" >&2
  cannot "make M=drivers/net/netdevsim failed against linux-headers-$KVER (output above)"
fi
# modpost passes (exit 0) with warnings for symbols the kernel does not export; such a module
# would not load, so they are failures here.
if grep -E 'WARNING: modpost: .*undefined' "$W/build.log" >&2; then
  cannot "netdevsim uses symbols linux-$KVER does not export (above)"
fi
ko=$W/netdevsim/netdevsim.ko
vermagic=$(modinfo -F vermagic "$ko")
[ "${vermagic%% *}" = "$KVER" ] || cannot "built netdevsim.ko has vermagic '$vermagic', not $KVER"
mkdir -p "$(dirname "$OUT")"
strip --strip-debug -o "$OUT" "$ko"

# Other versions' downloads are dead weight now (setup.sh drops other kernels' images likewise).
find "$DL" -maxdepth 1 \( -name "linux-headers-*.deb" -o -name "linux-kbuild-*.deb" \
  -o -name "linux-source-*.deb" -o -name "netdevsim-src_*.tar.gz" \) ! -name "*_${VERSION}_*" \
  ! -name "netdevsim-src_${VERSION}.tar.gz" -delete
log "built $OUT (vermagic $vermagic)"
