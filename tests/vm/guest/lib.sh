# SPDX-License-Identifier: Apache-2.0
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

# perftest_pair TOOL PORT LOG-PREFIX ADDR ARGS...: a perftest server and client in this guest (as
# ib_write_bw's own loopback example does): the server on PORT, the client connecting to ADDR.
# Writes LOG-PREFIX-server.log and LOG-PREFIX-client.log; the exit code is the client's, and a
# server left waiting by a client that never connected is stopped rather than left to hang.
perftest_pair() {
  local tool=$1 port=$2 log=$3 addr=$4
  shift 4
  "$tool" "$@" -p "$port" > "$log-server.log" 2>&1 &
  local server=$! client_rc=0
  # shellcheck disable=SC2317  # called through wait_until
  listening() { ss -Hltn "sport = :$port" | grep -q .; }
  wait_until 20 listening || { cat "$log-server.log"; fail "$tool server did not listen on $port"; }
  "$tool" "$@" -p "$port" "$addr" > "$log-client.log" 2>&1 || client_rc=$?
  [ "$client_rc" -eq 0 ] || kill "$server" 2>/dev/null || true
  local server_rc=0
  wait "$server" || server_rc=$?
  echo "--- $tool $* -p $port $addr: client exit $client_rc, server exit $server_rc"
  cat "$log-client.log"
  if [ "$client_rc" -ne 0 ] || [ "$server_rc" -ne 0 ]; then
    echo "--- server"; cat "$log-server.log"
    return 1
  fi
}
