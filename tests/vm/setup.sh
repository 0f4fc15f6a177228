#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepares everything the Soft-RoCE test VM needs, once, and caches it:
#   - host packages: QEMU, static busybox, kmod, and the RDMA userspace the guest runs (the guest
#     boots on the host's root filesystem, so its tools are the host's);
#   - Debian's stock kernel (linux-image-amd64 resolved to its concrete package), extracted, with
#     its module tree depmod'ed so the guest's modprobe finds rdma_rxe & co.;
#   - netdevsim, which Debian's config leaves out, built by build-netdevsim.sh from Debian's
#     linux-source and linux-headers of exactly that kernel version, in the tree's updates/;
#   - a small busybox initramfs that mounts the host root read-only over 9p under a tmpfs overlay.
# Idempotent and non-interactive. A warm run only verifies the cache and prints its path, so it
# is cheap enough to call before every boot (run-in-vm.sh does).
#
# Output: the path of the prepared kernel directory on stdout (progress goes to stderr).
# Exit: 0 ready; 77 the VM cannot be prepared here (one-line reason on stderr); other = a bug.
# Env:  RDMACTL_VM_CACHE      cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/rdmactl-vm)
#       RDMACTL_VM_KERNEL_PKG kernel package (default linux-image-amd64, the metapackage)
#       RDMACTL_VM_REFRESH=1  re-resolve and re-extract the kernel even if the cache is complete
set -euo pipefail
shopt -s inherit_errexit  # errexit also inside $(...)

CACHE=${RDMACTL_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmactl-vm}
KPKG=${RDMACTL_VM_KERNEL_PKG:-linux-image-amd64}
SELF=$(realpath "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")

# What the guest needs from the host root, plus what this script itself uses to unpack the kernel
# (dpkg-deb is essential; xz/zstd for compressed modules, if a kernel ships them). The checks read
# rdmactl's JSON with jq and python3: a fresh CI machine has neither. build-netdevsim.sh compiles
# against the extracted (not installed) linux-headers with the kernel's compiler (gcc-12 for
# bookworm's 6.1; binutils comes with it) and runs linux-kbuild's prebuilt modpost/objtool, which
# link libelf1 and libssl3.
PACKAGES=(qemu-system-x86 busybox-static kmod iproute2 rdma-core ibverbs-utils ibverbs-providers
          perftest rdmacm-utils infiniband-diags xz-utils zstd util-linux procps jq python3
          make gcc-12 libelf1 libssl3)

log() { echo "setup.sh: $*" >&2; }
# Exit 77 is reserved for "this machine cannot run the VM"; callers turn it into a skip.
cannot() { echo "setup.sh: cannot prepare the VM: $*" >&2; exit 77; }

missing_packages() {
  # One dpkg-query call for all packages: the warm path must stay fast.
  local installed
  installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null |
              awk '$2=="installed"{print $1}') || true
  local p
  for p in "${PACKAGES[@]}"; do
    grep -qx "$p" <<<"$installed" || echo "$p"
  done
}

apt_updated=
apt_update() {
  [ -n "$apt_updated" ] && return 0
  log "apt-get update"
  apt-get update -qq >&2 || cannot "apt-get update failed (no access to the Debian archive?)"
  apt_updated=1
}

install_packages() {
  local missing
  mapfile -t missing < <(missing_packages)
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || cannot "missing packages ${missing[*]} and no apt-get (not Debian?)"
  [ "$(id -u)" -eq 0 ] || cannot "missing packages ${missing[*]}; run tests/vm/setup.sh as root once"
  apt_update
  log "installing ${missing[*]}"
  # dpkg's chatter goes to a log; it is shown only if the install fails.
  local aptlog
  aptlog=$(mktemp)
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
         "${missing[@]}" >"$aptlog" 2>&1; then
    tail -n 20 "$aptlog" >&2; rm -f "$aptlog"
    cannot "apt-get install ${missing[*]} failed"
  fi
  rm -f "$aptlog"
}

# The recipe's fingerprint: a cached kernel dir built by a different version of this script or of
# build-netdevsim.sh (for example a changed initramfs /init) is rebuilt instead of silently reused.
recipe_id() { cat "$SELF" "$HERE/build-netdevsim.sh" | sha256sum | cut -c1-16; }

cache_ready() {  # $1 = kernel dir
  [ -f "$1/ready" ] && [ "$(cat "$1/ready")" = "$(recipe_id)" ] &&
    [ -f "$1/vmlinuz" ] && [ -f "$1/initrd.gz" ] && [ -s "$1/kver" ] &&
    [ -f "$1/lib/modules/$(cat "$1/kver")/updates/netdevsim.ko" ]
}

build_netdevsim() {  # $1 = staging dir holding lib/modules/<kver>; $2 = kver; $3 = Debian version
  local log rc=0
  log=$(mktemp)
  "$HERE/build-netdevsim.sh" "$2" "$3" "$CACHE/dl" "$1/lib/modules/$2/updates/netdevsim.ko" \
    2> >(tee "$log" >&2) || rc=$?
  wait $!  # the tee, so that the log is complete
  if [ "$rc" -ne 0 ]; then
    local why
    why=$(grep -m1 'cannot build netdevsim' "$log" || tail -n 1 "$log")
    rm -f "$log"
    cannot "${why#build-netdevsim.sh: }"
  fi
  rm -f "$log"
}

resolve_kernel_pkg() {
  local pkg=$KPKG dep
  # apt-cache needs package lists; a fresh machine may have none yet.
  if ! apt-cache show "$pkg" >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || cannot "apt knows no package $pkg and only root can run apt-get update"
    apt_update
    apt-cache show "$pkg" >/dev/null 2>&1 || cannot "no package $pkg in the configured archive"
  fi
  # The metapackage depends on exactly one concrete linux-image-<abi>-<flavour>.
  dep=$(apt-cache depends "$pkg" | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  echo "${dep:-$pkg}"
}

download_deb() {  # $1 = package; prints the .deb path
  local pkg=$1 out
  mkdir -p "$CACHE/dl"
  # apt-get download as root warns that _apt cannot write the directory; harmless, so filtered.
  if ! out=$(cd "$CACHE/dl" && apt-get download "$pkg" 2>&1); then
    echo "$out" | grep -v 'unsandboxed' >&2
    cannot "apt-get download $pkg failed"
  fi
  # Newest download of this exact package name (an earlier version may still be there).
  find "$CACHE/dl" -maxdepth 1 -name "${pkg}_*.deb" -printf '%T@ %p\n' | sort -rn | head -1 | cut -d' ' -f2-
}

build_initramfs() {  # $1 = staging dir holding lib/modules/<kver>; $2 = kver
  local T=$1 kver=$2 ir f b
  ir=$T/initramfs
  mkdir -p "$ir/bin" "$ir/mods"
  cp /bin/busybox "$ir/bin/busybox"
  # Only what /init needs before the real root is up; everything else the guest modprobes from
  # the 9p-shared module tree. --show-depends lists dependencies first and skips built-ins.
  for m in virtio_pci 9pnet_virtio 9p overlay; do
    modprobe -d "$T" -S "$kver" --show-depends "$m"
  done | awk '$1=="insmod" && !seen[$2]++ {print $2}' | while read -r f; do
    b=$(basename "$f")
    # busybox insmod cannot decompress; store plain .ko files.
    case $f in
      *.xz)  xz -dc "$f" > "$ir/mods/${b%.xz}"; b=${b%.xz} ;;
      *.zst) zstd -qdc "$f" > "$ir/mods/${b%.zst}"; b=${b%.zst} ;;
      *)     cp "$f" "$ir/mods/$b" ;;
    esac
    echo "$b" >> "$ir/mods/order"
  done
  [ -s "$ir/mods/order" ] || log "note: virtio/9p/overlay are all built into this kernel"
  touch "$ir/mods/order"

  # /init runs under busybox. It builds the guest root: host root (9p, read-only) as the lower
  # layer of an overlay whose upper layer is RAM, so the guest may write anywhere and nothing
  # reaches the host except through the explicitly shared read-write directories.
  cat > "$ir/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
fail() { echo "init: $*; dropping to a shell" >/dev/console; exec sh; }
mkdir -p /proc /sys /dev /lower /up /newroot
mount -t proc proc /proc && mount -t sysfs sys /sys && mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod "/mods/$m" || echo "init: insmod $m failed" >/dev/console; done
o=trans=virtio,version=9p2000.L,msize=262144
# cache=loose: the host root is read-only for the guest's lifetime, so caching it is safe and
# much faster under TCG.
mount -t 9p -o "$o,ro,cache=loose" hostroot /lower || fail "cannot mount the host root"
mount -t tmpfs -o mode=0755 up /up && mkdir -p /up/u /up/w
mount -t overlay -o lowerdir=/lower,upperdir=/up/u,workdir=/up/w ovl /newroot || fail "no overlay"
for d in proc sys dev; do mount --move "/$d" "/newroot/$d"; done
mkdir -p /newroot/lib/modules /newroot/vmjob
mount -t 9p -o "$o,ro,cache=loose" modules /newroot/lib/modules || fail "cannot mount the modules"
mount -t 9p -o "$o" vmjob /newroot/vmjob || fail "cannot mount the job dir"
# Read-write shares: rdmactl.shares=/a:/b on the command line, tags share0, share1, ... in order.
shares=$(sed -n 's/.*rdmactl\.shares=\([^ ]*\).*/\1/p' /newroot/proc/cmdline)
i=0
for p in $(echo "$shares" | tr ':' ' '); do
  mkdir -p "/newroot$p" && mount -t 9p -o "$o" "share$i" "/newroot$p" || fail "cannot mount share $p"
  i=$((i + 1))
done
[ -x /newroot/bin/bash ] || fail "the host root has no /bin/bash"
exec switch_root /newroot /bin/bash /vmjob/stage2
EOF
  chmod +x "$ir/init"
  (cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$T/initrd.gz"
  rm -rf "$ir"
}

build_kernel_dir() {
  local pkg deb kver kdir T
  pkg=$(resolve_kernel_pkg)
  kdir=$CACHE/$pkg
  if [ -z "${RDMACTL_VM_REFRESH:-}" ] && cache_ready "$kdir"; then echo "$kdir"; return 0; fi
  log "preparing $pkg in $kdir"
  mkdir -p "$CACHE/dl"
  deb=$(find "$CACHE/dl" -maxdepth 1 -name "${pkg}_*.deb" | head -1)
  if [ -z "$deb" ] || [ -n "${RDMACTL_VM_REFRESH:-}" ]; then
    log "apt-get download $pkg"
    deb=$(download_deb "$pkg")
  fi
  [ -n "$deb" ] || cannot "apt-get download $pkg produced no .deb"
  T=$kdir.tmp
  rm -rf "$T"; mkdir -p "$T"
  dpkg-deb -x "$deb" "$T/root"
  kver=$(ls "$T/root/lib/modules")
  [ "$(wc -w <<<"$kver")" -eq 1 ] || { log "expected one kernel in $deb, found: $kver"; exit 1; }
  # Keep only what the guest uses: the kernel image and the module tree.
  mv "$T/root/boot/vmlinuz-$kver" "$T/vmlinuz"
  mkdir -p "$T/lib/modules"
  mv "$T/root/lib/modules/$kver" "$T/lib/modules/$kver"
  cp "$T/root/boot/config-$kver" "$T/config"
  rm -rf "$T/root"
  for opt in CONFIG_RDMA_RXE CONFIG_INFINIBAND_USER_ACCESS CONFIG_INFINIBAND_ADDR_TRANS_CONFIGFS \
             CONFIG_CONFIGFS_FS CONFIG_NET_9P_VIRTIO CONFIG_9P_FS CONFIG_OVERLAY_FS CONFIG_VIRTIO_NET; do
    grep -q "^$opt=[ym]" "$T/config" || cannot "$pkg lacks $opt"
  done
  dpkg-deb -f "$deb" Version > "$T/version"
  build_netdevsim "$T" "$kver" "$(cat "$T/version")"
  depmod -b "$T" "$kver"
  build_initramfs "$T" "$kver"
  echo "$kver" > "$T/kver"
  recipe_id > "$T/ready"
  rm -rf "$kdir"; mv "$T" "$kdir"
  # Other kernels' downloads are dead weight once a newer one is ready.
  find "$CACHE/dl" -maxdepth 1 -name 'linux-image-*.deb' ! -name "${pkg}_*" -delete
  echo "$kdir"
}

main() {
  install_packages
  mkdir -p "$CACHE" || cannot "cannot create the cache dir $CACHE"
  # Parallel callers (two ctest runs) must not build the same dir at once.
  exec 9>"$CACHE/.lock"
  flock 9
  local kdir
  # Fast path: the last prepared kernel, if it is complete and from this recipe. No apt at all.
  if [ -z "${RDMACTL_VM_REFRESH:-}" ] && [ "$KPKG" = linux-image-amd64 ] && [ -L "$CACHE/current" ] &&
     cache_ready "$CACHE/current"; then
    realpath "$CACHE/current"
    return 0
  fi
  kdir=$(build_kernel_dir)
  if [ "$KPKG" = linux-image-amd64 ]; then ln -sfn "$(basename "$kdir")" "$CACHE/current"; fi
  log "ready: kernel $(cat "$kdir/kver") ($(cat "$kdir/version")) in $kdir"
  echo "$kdir"
}

main "$@"
