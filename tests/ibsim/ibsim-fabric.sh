#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ibsim-fabric.sh - a simulated InfiniBand fabric for tests: ibsim (Debian ibsim-utils) plus the
# LD_PRELOAD shim libumad2sim.so, on which the real OpenSM and infiniband-diags run unmodified.
# Copied unchanged from ../shared/reference/ibsim/, whose README.md explains each step.
# No RDMA hardware, kernel module or root is needed; everything lives under one state directory.
#
#   ibsim-fabric.sh start   DIR [NETFILE]            start ibsim in the background, print the env
#   ibsim-fabric.sh cmd     DIR CONSOLE-COMMAND...   send one ibsim console command, print its reply
#   ibsim-fabric.sh run     DIR NODE -- COMMAND...   run COMMAND as fabric node NODE (SIM_HOST)
#   ibsim-fabric.sh sm      DIR NODE PRIORITY [OPENSM-ARGS...]  start OpenSM on NODE, files in DIR/sm-NODE/
#   ibsim-fabric.sh sm-stop DIR NODE [SIGNAL]        stop that OpenSM (default TERM; KILL = crash)
#   ibsim-fabric.sh wait-master DIR NODE [SECONDS]   wait until the SM on NODE is MASTER and every
#                                                    linked port is Active (default 30 s)
#   ibsim-fabric.sh status  DIR                      processes, SM states
#   ibsim-fabric.sh stop    DIR                      stop what this script started in DIR (PID files)
#
# NETFILE defaults to fabric-2sw4hca.net next to this script. NODE is a node id of the netfile
# ("node01", "sw01"); an HCA node is seen through its port 1, a switch through port 0.
# Env: UMAD2SIM=/path/libumad2sim.so (default: found under /usr/lib*), IBSIM_CMD_TIMEOUT=10 (s),
#      IBSIM_SM_POLL_MS / IBSIM_SM_POLL_RETRIES: OpenSM sminfo_polling_timeout / polling_retry_number
#      for `sm` (default 500 ms, or 3000 ms when an SM of lower or equal priority runs; 1 retry).
# Exit codes: 0 ok, 1 failed / timed out / ibsim reported an error, 2 usage, 3 ibsim not running.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "ibsim-fabric: $*" >&2; exit 1; }
usage() { sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

find_preload() {
  local p
  if [ -n "${UMAD2SIM:-}" ]; then [ -r "$UMAD2SIM" ] || die "UMAD2SIM=$UMAD2SIM not readable"; echo "$UMAD2SIM"; return; fi
  for p in /usr/lib/*/umad2sim/libumad2sim.so /usr/lib64/umad2sim/libumad2sim.so \
           /usr/lib/umad2sim/libumad2sim.so /usr/local/lib/umad2sim/libumad2sim.so; do
    [ -r "$p" ] && { echo "$p"; return; }
  done
  die "libumad2sim.so not found (Debian: apt-get install ibsim-utils libumad2sim0)"
}

alive() {  # PID: running and not a zombie (a killed child of an exited shell waits for init to reap it)
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# pid_ok PIDFILE COMM DIR: true when PIDFILE names a live process called COMM whose command line
# mentions DIR, so a recycled PID is never signalled.
pid_ok() {
  local pf=$1 comm=$2 dir=$3 pid
  [ -s "$pf" ] || return 1
  pid=$(cat "$pf")
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/" || return 1
}

state_dir() {  # absolute path of an existing state dir
  [ -n "${1:-}" ] || usage
  [ -d "$1" ] || die "no state directory $1"
  (cd "$1" && pwd)
}

load_env() {  # DIR: read IBSIM_SOCKNAME and LD_PRELOAD of a started fabric
  [ -r "$1/env" ] || die "$1 holds no started fabric (run: $0 start $1)"
  # shellcheck disable=SC1091
  SOCK=$(. "$1/env"; echo "$IBSIM_SOCKNAME"); PRELOAD=$(. "$1/env"; echo "$LD_PRELOAD")
}

need_ibsim() {  # clients of a missing ibsim retry connect() every 2 s for ever: refuse early
  pid_ok "$1/ibsim.pid" ibsim "$1" || { echo "ibsim-fabric: ibsim is not running for $1" >&2; exit 3; }
}

sock_ready() { grep -qF "@$1:ctl@" /proc/net/unix 2>/dev/null; }

node_known() {  # NODE is a quoted node id or description in the netfile
  grep -qE "^[[:space:]]*(Switch|Hca|Ca|Rt)[[:space:]]+[0-9]+[[:space:]]+\"$2\"|#[[:space:]]*\"$2\"" "$1/fabric.net"
}

cmd_start() {
  [ $# -ge 1 ] && [ $# -le 2 ] || usage
  local net=${2:-$HERE/fabric-2sw4hca.net} dir pid i
  [ -r "$net" ] || die "netfile $net not readable"
  command -v ibsim >/dev/null || die "ibsim not found (Debian: apt-get install ibsim-utils)"
  mkdir -p "$1"; dir=$(state_dir "$1")
  pid_ok "$dir/ibsim.pid" ibsim "$dir" && die "ibsim already running for $dir (pid $(cat "$dir/ibsim.pid"))"
  PRELOAD=$(find_preload)
  SOCK=ibsim-$(printf '%s' "$dir" | sha1sum | cut -c1-12)
  sock_ready "$SOCK" && die "socket @$SOCK:ctl is in use by another ibsim"
  cp "$net" "$dir/fabric.net"
  rm -f "$dir/ctl.fifo" "$dir/ibsim.pid"; mkfifo "$dir/ctl.fifo"
  # stdin is the fifo opened read-write: ibsim holds a writer itself, so it never reads EOF
  # (a fifo opened read-only would hit EOF after each writer and make ibsim spin).
  ( cd "$dir" && IBSIM_SOCKNAME=$SOCK exec ibsim -s "$dir/fabric.net" 0<>"$dir/ctl.fifo" \
      >"$dir/ibsim.out" 2>"$dir/ibsim.err" ) &
  pid=$!; echo "$pid" >"$dir/ibsim.pid"
  for ((i = 0; i < 200; i++)); do
    sock_ready "$SOCK" && break
    alive "$pid" || { cat "$dir/ibsim.err" "$dir/ibsim.out" >&2; rm -f "$dir/ibsim.pid"; die "ibsim exited"; }
    sleep 0.05
  done
  sock_ready "$SOCK" || die "ibsim did not open its socket within 10 s"
  printf 'export IBSIM_SOCKNAME=%s\nexport LD_PRELOAD=%s\n' "$SOCK" "$PRELOAD" >"$dir/env"
  cat <<EOF
ibsim pid $pid, fabric $dir/fabric.net
environment of every client (also in $dir/env; add SIM_HOST=<node> per process):
IBSIM_SOCKNAME=$SOCK
LD_PRELOAD=$PRELOAD
example: SIM_HOST=$(awk -F'"' '/^[[:space:]]*(Ca|Hca)[[:space:]]/{print $2; exit}' "$dir/fabric.net") IBSIM_SOCKNAME=$SOCK LD_PRELOAD=$PRELOAD ibstat
EOF
}

cmd_cmd() {
  [ $# -ge 2 ] || usage
  local dir line before size i tmo=${IBSIM_CMD_TIMEOUT:-10} reply
  dir=$(state_dir "$1"); shift; need_ibsim "$dir"
  line="$*"
  [ ${#line} -le 126 ] || die "console lines are limited to 126 characters"
  exec 9>"$dir/cmd.lock"; flock -w "$tmo" 9 || die "another cmd holds $dir/cmd.lock"
  before=$(stat -c %s "$dir/ibsim.out")
  timeout 5 bash -c 'printf "%s\n" "$1" >"$2"' _ "$line" "$dir/ctl.fifo" || die "cannot write to $dir/ctl.fifo"
  for ((i = 0; i < tmo * 20; i++)); do     # the reply ends with a new "sim> " prompt
    size=$(stat -c %s "$dir/ibsim.out")
    if [ "$size" -gt "$before" ] && [ "$(tail -c 5 "$dir/ibsim.out")" = "sim> " ]; then break; fi
    [[ $line =~ ^[[:space:]]*[Qq]uit ]] && ! pid_ok "$dir/ibsim.pid" ibsim "$dir" && break
    sleep 0.05
  done
  reply=$(tail -c +"$((before + 1))" "$dir/ibsim.out" | sed 's/sim> $//')
  [ -n "$reply" ] && printf '%s\n' "$reply"
  [ "$size" -gt "$before" ] || die "no reply within ${tmo} s"
  # ibsim gives no status; its error replies are recognisable text
  if grep -qE "not found|can't|cannot|bad (param|port|lid)|unknown - skipped|is not linked|must be in|is missing|not valid|out of range|does not match|no (local|remote) port|no previous link|already connected" <<<"$reply"; then
    return 1
  fi
}

drop_dead_clients() {  # DIR: ibsim frees the slot of a client killed without exit() only when a
  # MAD to it fails, and it has 10 slots; disconnect every listed client whose process is gone
  local dir=$1 n pid
  while read -r n pid; do
    alive "$pid" || "${BASH_SOURCE[0]}" cmd "$dir" "X $n" >/dev/null 2>&1 || true
  done < <("${BASH_SOURCE[0]}" cmd "$dir" Attached 2>/dev/null | sed -n 's/^Client \([0-9]*\): pid \([0-9]*\) .*/\1 \2/p')
}

cmd_run() {
  [ $# -ge 4 ] && [ "$3" = "--" ] || usage
  local dir node=$2
  dir=$(state_dir "$1"); shift 3; need_ibsim "$dir"; load_env "$dir"
  node_known "$dir" "$node" || die "node \"$node\" is not in $dir/fabric.net"
  [ -w . ] || die "the working directory must be writable (libumad2sim.so makes ./sys-<pid>/ there)"
  exec env IBSIM_SOCKNAME="$SOCK" SIM_HOST="$node" LD_PRELOAD="$PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
}

cmd_sm() {
  [ $# -ge 3 ] || usage
  local dir node=$2 prio=$3 smdir pid i
  dir=$(state_dir "$1"); shift 3; need_ibsim "$dir"; load_env "$dir"
  node_known "$dir" "$node" || die "node \"$node\" is not in $dir/fabric.net"
  [[ $prio =~ ^([0-9]|1[0-5])$ ]] || die "priority must be 0..15"
  command -v opensm >/dev/null || die "opensm not found (Debian: apt-get install opensm)"
  smdir=$dir/sm-$node; mkdir -p "$smdir"
  pid_ok "$smdir/opensm.pid" opensm "$dir" && die "OpenSM already running on $node (pid $(cat "$smdir/opensm.pid"))"
  drop_dead_clients "$dir"; clean_sys "$smdir"
  # Polling timeout: 500 ms, so a standby takes over about 1.2 s after the master dies. An SM that
  # joins while an SM of lower or equal priority runs gets 3000 ms: if it polls a lower-priority
  # MASTER before that master hands over, it sends Trap 144 whose TrapRepress ibsim drops, and as
  # umad2sim never times a MAD out, both SMs wait for that MAD for ever (see README).
  local poll=500 pf other
  for pf in "$dir"/sm-*/opensm.pid; do
    [ "$pf" != "$smdir/opensm.pid" ] && pid_ok "$pf" opensm "$dir" || continue
    other=$(awk '$1 == "sm_priority" {print $2}' "$(dirname "$pf")/opensm.conf")
    [ -n "$other" ] && [ "$other" -le "$prio" ] && poll=3000
  done
  poll=${IBSIM_SM_POLL_MS:-$poll}
  # every file OpenSM reads or writes is under $smdir (defaults point at /etc/opensm and /var);
  # a partitions.conf already in $smdir is used, otherwise OpenSM's built-in default partition.
  cat >"$smdir/opensm.conf" <<EOF
# written by ibsim-fabric.sh
sm_priority $prio
sweep_interval 1
# a standby declares the master dead after (polling_retry_number + 1) missed polls of
# sminfo_polling_timeout ms; OpenSM defaults 10000 ms x 4 retries = about 50 s
sminfo_polling_timeout $poll
polling_retry_number ${IBSIM_SM_POLL_RETRIES:-1}
log_file $smdir/opensm.log
dump_files_dir $smdir/
partition_config_file $smdir/partitions.conf
qos_policy_file $smdir/qos-policy.conf
prefix_routes_file $smdir/prefix-routes.conf
per_module_logging_file $smdir/per-module-logging.conf
torus_config $smdir/torus-2QoS.conf
EOF
  rm -f "$smdir/stdout.log"
  ( cd "$smdir" && exec env IBSIM_SOCKNAME="$SOCK" SIM_HOST="$node" LD_PRELOAD="$PRELOAD" \
      OSM_CACHE_DIR="$smdir" OSM_TMP_DIR="$smdir" \
      opensm -F "$smdir/opensm.conf" -p "$prio" -f "$smdir/opensm.log" "$@" </dev/null >"$smdir/stdout.log" 2>&1 ) &
  pid=$!; echo "$pid" >"$smdir/opensm.pid"
  for ((i = 0; i < 300; i++)); do
    grep -qE "Entering (MASTER|STANDBY) state" "$smdir/stdout.log" 2>/dev/null && break
    alive "$pid" || { cat "$smdir/stdout.log" >&2; rm -f "$smdir/opensm.pid"; die "opensm on $node exited"; }
    sleep 0.05
  done
  echo "opensm pid $pid on $node priority $prio polling ${poll} ms: $(grep -oE "Entering (MASTER|STANDBY) state" "$smdir/stdout.log" | tail -1 || echo 'no state yet')"
}

cmd_sm_stop() {
  [ $# -ge 2 ] && [ $# -le 3 ] || usage
  local dir smdir sig=${3:-TERM} pid i
  dir=$(state_dir "$1"); smdir=$dir/sm-$2
  pid_ok "$smdir/opensm.pid" opensm "$dir" || die "no OpenSM of this script runs on $2"
  pid=$(cat "$smdir/opensm.pid")
  kill -s "$sig" "$pid"
  for ((i = 0; i < 200; i++)); do alive "$pid" || break; sleep 0.05; done
  alive "$pid" && die "opensm $pid still running after SIG$sig"
  rm -f "$smdir/opensm.pid"; rm -rf "$smdir/sys-$pid"   # left behind when killed without exit()
  drop_dead_clients "$dir"
  echo "opensm pid $pid on $2 stopped (SIG$sig)"
}

sm_state() {  # DIR NODE: the SMInfo state of the SM on NODE, asked from NODE itself (DR path 0)
  timeout 5 "${BASH_SOURCE[0]}" run "$1" "$2" -- sminfo -D 0 2>/dev/null | grep -oE 'SMINFO_[A-Z]+' || true
}

cmd_wait_master() {
  [ $# -ge 2 ] && [ $# -le 3 ] || usage
  local dir node=$2 limit=${3:-30} start now st notactive
  dir=$(state_dir "$1"); need_ibsim "$dir"
  start=$(date +%s.%N)
  while :; do
    st=$(sm_state "$dir" "$node")
    if [ "$st" = SMINFO_MASTER ]; then
      # every port with a physical link (LinkUp) must be Active
      notactive=$(timeout 10 "${BASH_SOURCE[0]}" run "$dir" "$node" -- iblinkinfo 2>/dev/null | grep 'LinkUp)' | grep -vc 'Active/' || true)
      [ "$notactive" = 0 ] && break
    fi
    now=$(date +%s.%N)
    if awk -v a="$now" -v b="$start" -v l="$limit" 'BEGIN{exit !(a-b > l)}'; then
      echo "SM on $node: ${st:-no answer}; not MASTER with all ports Active after $limit s" >&2; return 1
    fi
    sleep 0.1
  done
  now=$(date +%s.%N)
  awk -v a="$now" -v b="$start" -v n="$node" 'BEGIN{printf "SM on %s is MASTER, all linked ports Active (%.2f s)\n", n, a-b}'
}

cmd_status() {
  [ $# -eq 1 ] || usage
  local dir pf node
  dir=$(state_dir "$1")
  if pid_ok "$dir/ibsim.pid" ibsim "$dir"; then echo "ibsim pid $(cat "$dir/ibsim.pid") running"; else echo "ibsim not running"; fi
  for pf in "$dir"/sm-*/opensm.pid; do
    [ -e "$pf" ] || continue
    node=$(basename "$(dirname "$pf")"); node=${node#sm-}
    if pid_ok "$pf" opensm "$dir"; then echo "opensm pid $(cat "$pf") on $node: $(sm_state "$dir" "$node" | grep . || echo 'no answer to SMInfo')"
    else echo "opensm on $node: not running (stale $pf)"; fi
  done
}

clean_sys() {  # SMDIR: remove the ./sys-<pid>/ trees libumad2sim.so left for processes that are gone
  local d
  for d in "$1"/sys-*; do
    [ -d "$d" ] && ! alive "${d##*/sys-}" && rm -rf "$d"
  done
  return 0
}

stop_pid() {  # PIDFILE COMM DIR
  local pid i
  pid_ok "$1" "$2" "$3" || { rm -f "$1"; return 0; }
  pid=$(cat "$1"); kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.05; done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.1; fi
  echo "stopped $2 pid $pid"
  rm -f "$1"; rm -rf "$(dirname "$1")/sys-$pid"
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  local dir pf
  dir=$(state_dir "$1")
  for pf in "$dir"/sm-*/opensm.pid; do [ -e "$pf" ] && stop_pid "$pf" opensm "$dir"; done
  [ -e "$dir/ibsim.pid" ] && stop_pid "$dir/ibsim.pid" ibsim "$dir"
  for pf in "$dir"/sm-*; do [ -d "$pf" ] && clean_sys "$pf"; done
  rm -f "$dir/ctl.fifo" "$dir/cmd.lock"
}

[ $# -ge 1 ] || usage
sub=$1; shift
case $sub in
  start) cmd_start "$@" ;;
  cmd) cmd_cmd "$@" ;;
  run) cmd_run "$@" ;;
  sm) cmd_sm "$@" ;;
  sm-stop) cmd_sm_stop "$@" ;;
  wait-master) cmd_wait_master "$@" ;;
  status) cmd_status "$@" ;;
  stop) cmd_stop "$@" ;;
  -h|--help|help) usage ;;
  *) usage ;;
esac
