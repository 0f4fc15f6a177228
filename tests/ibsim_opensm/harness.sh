# SPDX-License-Identifier: Apache-2.0
# Harness of the ibsim_opensm tests (sourced by ibsim_opensm_test.sh): an ibsim fabric
# (tests/ibsim_opensm/fabric.net) and test roots that play its nodes as hosts. Each root is
# tests/fixtures/sysfs/cx7-ib plus Debian's OpenSM package files (tests/fixtures/opensm/debian: the
# units and /etc/default/opensm as ../shared/reference/captures/debian-opensm-units.md holds them)
# plus the stand-ins standin/systemctl (ROOT/usr/bin) and standin/sim-tool (ROOT/usr/sbin/sminfo,
# ROOT/usr/sbin/ibstat), so that `rdmactl --root ROOT` drives the real OpenSM and the real sminfo
# on the simulated node. How ibsim is started and how a process runs "as a node" follow
# ../shared/reference/ibsim/ibsim-fabric.sh (start, run) and its README.
#
# Everything lives in one directory $W (mktemp); cleanup (trap on EXIT, and a watchdog that
# sends SIGTERM to the test before ctest's TIMEOUT can SIGKILL it) kills what the test started:
# every opensm (and its waiter) from the stand-in's pid files, ibsim from its pid file, then any
# process left whose command line names $W; and removes $W (KEEP_WORKDIR=1 keeps it).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE_DIR=$(cd "$HERE/../.." && pwd)
RDMACTL=${RDMACTL:-$SOURCE_DIR/build/rdmactl}
DEADLINE=${IBSIM_OPENSM_DEADLINE:-80}  # s: the watchdog, below the ctest TIMEOUT
W=""
T0=$(date +%s.%N)
FAILS=0

say() { printf '[%6.2f s] %s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$*"; }
pass() { say "PASS $*"; }
fail() { say "FAIL $*"; FAILS=$((FAILS + 1)); }
fatal() { say "FATAL $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

find_preload() {
  local p
  for p in /usr/lib/*/umad2sim/libumad2sim.so /usr/lib64/umad2sim/libumad2sim.so /usr/lib/umad2sim/libumad2sim.so \
           /usr/local/lib/umad2sim/libumad2sim.so; do
    [[ -r $p ]] && { echo "$p"; return; }
  done
}

alive() {
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $st && $st != Z ]]
}

kill_pid_file() {  # PIDFILE: TERM, then KILL, a process whose command line names $W
  local pid i
  pid=$(cat "$1" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$W" || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 40; i++)); do alive "$pid" || return 0; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null
}

cleanup() {
  local rc=$? f pid left
  trap - EXIT INT TERM
  [[ -n ${WATCHDOG:-} ]] && kill "$WATCHDOG" 2>/dev/null
  [[ -n $W && -d $W ]] || exit "$rc"
  for f in "$W"/root-*/run/systemd-standin/*.pid; do [[ -e $f ]] && kill_pid_file "$f"; done
  [[ -e $W/fabric/ibsim.pid ]] && kill_pid_file "$W/fabric/ibsim.pid"
  # Anything else still running that this test started names $W in its command line (waiters
  # of the stand-in, an opensm whose pid file was lost, a sminfo cut short).
  for f in $(grep -lsF -- "$W/" /proc/[0-9]*/cmdline); do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    kill -KILL "$pid" 2>/dev/null
  done
  sleep 0.05
  left=$(for f in $(grep -lsF -- "$W/" /proc/[0-9]*/cmdline); do
           pid=${f#/proc/}; pid=${pid%/cmdline}
           [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
           alive "$pid" && echo "$pid $(tr '\0' ' ' <"$f")"; done)
  if [[ -n $left ]]; then echo "cleanup: processes left: $left" >&2; rc=1; fi
  if [[ ${KEEP_WORKDIR:-0} == 1 || ( $rc != 0 && ${KEEP_WORKDIR_ON_FAILURE:-0} == 1 ) ]]; then
    echo "work directory kept: $W"
  else
    rm -rf "$W"
  fi
  say "cleanup done (exit $rc)"
  exit "$rc"
}

h_init() {
  command -v ibsim >/dev/null || skip "ibsim not found (Debian: apt-get install ibsim-utils libumad2sim0)"
  [[ -x /usr/sbin/opensm ]] || skip "/usr/sbin/opensm not found (Debian: apt-get install opensm)"
  [[ -x /usr/sbin/sminfo && -x /usr/sbin/ibstat ]] || skip "sminfo/ibstat not found (apt-get install infiniband-diags)"
  command -v jq >/dev/null || skip "jq not found (apt-get install jq): it reads rdmactl's JSON reports"
  UMAD2SIM=$(find_preload)
  [[ -n $UMAD2SIM ]] || skip "libumad2sim.so not found (Debian: apt-get install libumad2sim0)"
  [[ -x $RDMACTL ]] || fatal "no rdmactl binary at $RDMACTL"
  W=$(mktemp -d "${TMPDIR:-/tmp}/rdmactl-ibsim-opensm.XXXXXX")
  trap cleanup EXIT
  trap 'fail "interrupted"; exit 1' INT TERM
  # The watchdog is one process (read -t on a fifo nobody writes, no sleep child), so that
  # killing it leaves nothing holding the test's stdout.
  mkfifo "$W/watchdog.fifo"
  ( read -r -t "$DEADLINE" _ <>"$W/watchdog.fifo"; echo "watchdog: ${DEADLINE} s passed" >&2; kill -TERM $$ ) &
  WATCHDOG=$!
}

# ---- the fabric ---------------------------------------------------------------------------
fabric_start() {
  local d=$W/fabric i
  mkdir -p "$d"
  cp "$HERE/fabric.net" "$d/fabric.net"
  SOCK=ibsim-$(printf '%s' "$d" | sha1sum | cut -c1-12)
  mkfifo "$d/ctl.fifo"
  # ibsim-fabric.sh cmd_start: stdin is the fifo opened read-write, so ibsim never reads EOF.
  ( cd "$d" && IBSIM_SOCKNAME=$SOCK exec ibsim -s "$d/fabric.net" 0<>"$d/ctl.fifo" >"$d/ibsim.out" 2>"$d/ibsim.err" ) &
  echo $! >"$d/ibsim.pid"
  for ((i = 0; i < 100; i++)); do
    grep -qF "@$SOCK:ctl@" /proc/net/unix 2>/dev/null && { say "ibsim up (socket @$SOCK)"; return 0; }
    alive "$(cat "$d/ibsim.pid")" || { cat "$d/ibsim.err" >&2; fatal "ibsim exited"; }
    sleep 0.05
  done
  fatal "ibsim did not open its socket within 5 s"
}

# sim_cmd LINE: one ibsim console command, its reply on stdout (ibsim-fabric.sh cmd_cmd: the reply
# ends with a new "sim> " prompt).
sim_cmd() {
  local d=$W/fabric before size i
  before=$(stat -c %s "$d/ibsim.out")
  timeout 5 bash -c 'printf "%s\n" "$1" >"$2"' _ "$1" "$d/ctl.fifo" || return 1
  for ((i = 0; i < 100; i++)); do
    size=$(stat -c %s "$d/ibsim.out")
    if ((size > before)) && [[ $(tail -c 5 "$d/ibsim.out") == "sim> " ]]; then break; fi
    sleep 0.05
  done
  tail -c +"$((before + 1))" "$d/ibsim.out" | sed 's/sim> $//'
}
# drop_dead_clients: disconnect ibsim clients whose process is gone (ibsim-fabric.sh
# drop_dead_clients). When a process dies, the kernel closes its umad file and MADs to the port
# are no longer queued for it; ibsim frees a SIGKILLed client only when a MAD to it fails, and
# until then MADs to that node go to the dead client's socket and are lost, and an OpenSM waiting
# for one never sweeps again (README "Known hang"). So after each SIGKILL the harness does here
# what the kernel does at process exit.
drop_dead_clients() {
  local n pid
  while read -r n pid; do
    alive "$pid" || { sim_cmd "X $n" >/dev/null; say "ibsim: disconnected dead client $n (pid $pid)"; }
  done < <(sim_cmd Attached | sed -n 's/^Client \([0-9]*\): pid \([0-9]*\) .*/\1 \2/p')
}

# as NODE CMD...: CMD as the simulated NODE (ibsim-fabric.sh cmd_run), from a writable directory.
as() {
  local node=$1; shift
  mkdir -p "$W/as-$node"
  (cd "$W/as-$node" && timeout 10 env IBSIM_SOCKNAME="$SOCK" SIM_HOST="$node" LD_PRELOAD="$UMAD2SIM" "$@")
}
OBSERVER=node04  # the third node: no SM, only asks

# ---- hosts --------------------------------------------------------------------------------
# make_host NAME NODE: $W/root-NAME playing NODE, with sysfs made to match the node's port.
make_host() {
  local name=$1 node=$2 r=$W/root-$1 pguid nguid
  cp -r "$SOURCE_DIR/tests/fixtures/sysfs/cx7-ib" "$r"
  cp -r "$SOURCE_DIR/tests/fixtures/opensm/debian/." "$r/"
  mkdir -p "$r/usr/bin" "$r/usr/sbin" "$r/run/ibsim" "$r/etc/opensm" "$r/sys/class/infiniband_mad"
  cp "$HERE/standin/systemctl" "$r/usr/bin/systemctl"
  cp "$HERE/standin/sim-tool" "$r/usr/sbin/sminfo"
  cp "$HERE/standin/sim-tool" "$r/usr/sbin/ibstat"
  # opensm.service and opensm@.service: ConditionPathExists=/sys/class/infiniband_mad/abi_version
  # (ib_umad's class attribute; IB_USER_MAD_ABI_VERSION is 5).
  echo 5 >"$r/sys/class/infiniband_mad/abi_version"
  printf 'SIM_HOST=%s\nIBSIM_SOCKNAME=%s\nUMAD2SIM=%s\nSIM_CA=ibsim0\n' "$node" "$SOCK" "$UMAD2SIM" >"$r/run/ibsim/host.env"
  eval "ROOT_$name=\$r; NODE_$name=\$node"
  # The port GUID (GID 0's interface ID) and the node GUID of the simulated node.
  pguid=$(as "$node" ibstat -p | head -n 1)
  nguid=$(as "$node" ibstat ibsim0 | sed -n 's/^[[:space:]]*Node GUID: //p')
  [[ $pguid =~ ^0x[0-9a-f]{16}$ && $nguid =~ ^0x[0-9a-f]{16}$ ]] || fatal "cannot read $node's GUIDs ($pguid, $nguid)"
  eval "GUID_$name=\$pguid"
  local dev=$r/sys/class/infiniband/mlx5_0 g=${pguid#0x} n=${nguid#0x}
  dev=$(cd "$dev" && pwd -P)
  printf 'fe80:0000:0000:0000:%s:%s:%s:%s\n' "${g:0:4}" "${g:4:4}" "${g:8:4}" "${g:12:4}" >"$dev/ports/1/gids/0"
  printf '%s:%s:%s:%s\n' "${n:0:4}" "${n:4:4}" "${n:8:4}" "${n:12:4}" | tee "$dev/node_guid" >"$dev/sys_image_guid"
  echo "$node mlx5_0" >"$dev/node_desc"
  sync_port "$name"
  say "host $name = $node, port GUID $pguid, root $r"
}

# sync_port NAME: the fixture port's state, LID, SM LID and rate as the simulated port has them
# (ib_sysfs show_port_state "%d: %s", show_port_lid / show_port_sm_lid "0x%x").
sync_port() {
  local r node out state phys lid smlid rate dev
  eval "r=\$ROOT_$1; node=\$NODE_$1"
  out=$(as "$node" ibstat ibsim0 1) || fatal "ibstat as $node failed"
  dev=$(cd "$r/sys/class/infiniband/mlx5_0" && pwd -P)/ports/1
  state=$(sed -n 's/^[[:space:]]*State: //p' <<<"$out")
  phys=$(sed -n 's/^[[:space:]]*Physical state: //p' <<<"$out")
  lid=$(sed -n 's/^[[:space:]]*Base lid: //p' <<<"$out")
  smlid=$(sed -n 's/^[[:space:]]*SM lid: //p' <<<"$out")
  rate=$(sed -n 's/^[[:space:]]*Rate: //p' <<<"$out")
  case $state in
    Down) echo "1: DOWN" ;; Initializing) echo "2: INIT" ;; Armed) echo "3: ARMED" ;; Active) echo "4: ACTIVE" ;;
    *) echo "0: NOP" ;;
  esac >"$dev/state"
  case $phys in
    Polling) echo "2: Polling" ;; Disabled) echo "3: Disabled" ;; LinkUp) echo "5: LinkUp" ;; *) echo "0: <unknown>" ;;
  esac >"$dev/phys_state"
  printf '0x%x\n' "${lid:-0}" >"$dev/lid"
  printf '0x%x\n' "${smlid:-0}" >"$dev/sm_lid"
  [[ $rate =~ ^[0-9]+$ ]] && echo "$rate Gb/sec (4X QDR)" >"$dev/rate"
}

# opensm_conf NAME LINES...: /etc/opensm/opensm.conf as the site keeps it before rdmactl runs
# (rdmactl manages sm_priority only and keeps every other line). The tuning is what the ibsim
# README measured: sweep_interval 1 and sminfo_polling_timeout 500 / polling_retry_number 1 make
# a failover take ~1 s instead of OpenSM's default 50 s; an SM that joins while an SM of lower or
# equal priority is master polls every 3000 ms, or its Trap 144 whose TrapRepress ibsim drops can
# wedge both SMs (README "Known hang").
opensm_conf() {
  local r; eval "r=\$ROOT_$1"; shift
  { echo "# OpenSM options of this site (tests/ibsim_opensm)"; printf '%s\n' "$@"; } >"$r/etc/opensm/opensm.conf"
}

# spec NAME PRIORITY: a spec for host NAME: OpenSM enabled with PRIORITY on mlx5_0 port 1.
spec() {
  cat >"$W/spec-$1.yaml" <<EOF
apiVersion: rdmactl/v1
kind: FabricSpec
metadata:
  name: ibsim-opensm
defaults:
  selftest: {enabled: false}   # no verbs on a simulated fabric
nodes:
  - match: "host-$1"
    subnetManager:
      enabled: true
      priority: $2
      port: {rdmaDevice: mlx5_0, port: 1}
EOF
  echo "$W/spec-$1.yaml"
}

# rdm NAME ARGS...: rdmactl on host NAME's root; stdout in $OUT, stderr in $ERR, exit code returned.
rdm() {
  local r name=$1; shift
  eval "r=\$ROOT_$name"
  OUT=$(timeout 60 "$RDMACTL" --root "$r" --node "host-$name" "$@" 2>"$W/rdmactl.err"); local rc=$?
  ERR=$(cat "$W/rdmactl.err")
  return $rc
}

# observer_sminfo ARGS...: the real sminfo from the third node.
observer_sminfo() { as "$OBSERVER" sminfo "$@" 2>&1; }

# wait_until SECONDS DESC CMD...: poll CMD every 0.1 s until it succeeds; 1 after SECONDS.
wait_until() {
  local limit=$1 desc=$2 start now; shift 2
  start=$(date +%s.%N)
  while :; do
    if "$@" >/dev/null 2>&1; then
      now=$(date +%s.%N); say "$desc after $(echo "$now - $start" | bc | sed 's/^\./0./') s"; return 0
    fi
    now=$(date +%s.%N)
    if (( $(echo "$now - $start > $limit" | bc) )); then say "$desc: not within $limit s"; return 1; fi
    sleep 0.1
  done
}

master_is() {  # GUID: the observer's sminfo names GUID as SMINFO_MASTER
  local out; out=$(observer_sminfo)
  [[ $out == *"sm guid $(printf '0x%x' "$1"),"*"state 3 SMINFO_MASTER"* ]]
}

instance_pid() {  # NAME UNIT: the pid the stand-in recorded for UNIT on host NAME
  local r; eval "r=\$ROOT_$1"
  cat "$r/run/systemd-standin/$2.pid" 2>/dev/null
}

# How a host's files and its stand-in's state look (for "a second apply writes nothing").
fingerprint() {
  local r; eval "r=\$ROOT_$1"
  (cd "$r" && find etc lib -type f -o -type l | sort | while read -r f; do
     if [[ -L $f ]]; then echo "$f -> $(readlink "$f")"; else echo "$f $(sha1sum <"$f" | cut -c1-40) $(stat -c %Y "$f")"; fi
   done)
}
mutating_calls() {  # NAME: systemctl calls that change something, from the stand-in's log
  local r; eval "r=\$ROOT_$1"
  grep -cE '^systemctl (enable|disable|start|stop|restart)' "$r/run/systemd-standin/calls.log" 2>/dev/null || true
}

finish() {
  if ((FAILS)); then say "$FAILS check(s) failed"; exit 1; fi
  say "all checks passed"
  exit 0
}
