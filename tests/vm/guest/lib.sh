# shellcheck shell=bash
# Helpers shared by the guest-side batch runner (guest/batch.sh) and the check scripts
# (checks/*.sh). Sourced, never run; bash only.

# Print a failure and stop the check with a non-zero status.
fail() { echo "FAIL: $*"; exit 1; }
# Stop the check as skipped (exit 77); the first line is shown as the skip reason.
skip() { echo "$*"; exit 77; }

# IPv4-mapped GID as sysfs prints it: 10.0.2.15 -> 0000:0000:0000:0000:0000:ffff:0a00:020f
ipv4_gid() {
  local a b c d
  IFS=. read -r a b c d <<<"$1"
  printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$a" "$b" "$c" "$d"
}

# Lowest GID index of DEV/PORT holding GID with gid_attrs type TYPE on netdev NDEV; 1 if none.
# The table has hundreds of entries: read with the builtin, since a fork per entry costs seconds
# under TCG. Empty entries answer EINVAL to the gid_attrs reads, hence the silenced errors.
gid_index() {  # DEV PORT GID TYPE NDEV
  local p=/sys/class/infiniband/$1/ports/$2 i g t n
  for ((i = 0; ; i++)); do
    [ -e "$p/gids/$i" ] || return 1
    read -r g < "$p/gids/$i" || continue
    [ "$g" = "$3" ] || continue
    { read -r t < "$p/gid_attrs/types/$i"; } 2>/dev/null || continue
    { read -r n < "$p/gid_attrs/ndevs/$i"; } 2>/dev/null || continue
    if [ "$t" = "$4" ] && [ "$n" = "$5" ]; then
      echo "$i"
      return 0
    fi
  done
}

# Port state as the kernel names it: ACTIVE, DOWN, INIT, ...
port_state() {  # DEV PORT
  local s
  s=$(cat "/sys/class/infiniband/$1/ports/$2/state" 2>/dev/null) || return 1
  echo "${s#*: }"
}

# Run CMD every 0.1 s until it succeeds; fail if it has not within SECONDS.
wait_until() {  # SECONDS CMD...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
