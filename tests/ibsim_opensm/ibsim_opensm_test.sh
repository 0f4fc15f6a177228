#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The subnet_manager reconciler against the REAL OpenSM 3.3.23 and sminfo on an ibsim fabric:
# `rdmactl --root ROOT` writes Debian's OpenSM files in a test root that plays a simulated node
# (harness.sh), the systemctl stand-in starts /usr/sbin/opensm from the unit's ExecStart as that
# node, and the real sminfo (from the root, and from a third node) says what the fabric elected.
#
#   ibsim_opensm_test.sh election | tie-break | failover | ports-spelling | partitions | ports-all | mgid-stale-bytes
#
# Env: RDMACTL (default build/rdmactl), KEEP_WORKDIR=1 (keep $W), IBSIM_OPENSM_DEADLINE (s, 80),
# IBSIM_OPENSM_HOST_HOOK=SCRIPT (run as `SCRIPT ROOT` after each host is made: for negative
# controls only). Exit 0 passed, 1 failed, 77 skipped (ibsim or OpenSM not installed; under CI=1
# that is a failure).
#
# fabric.net: host a = node01, port GUID 0x946dae0300f14a20; host b = node02, port GUID
# 0x0002c9030002fb06 (the lower); node04 = the observer.
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
[[ ${CI:-} ]] && skip() { echo "FAIL (CI): cannot run: $*"; exit 1; }

scenario=${1:-}
GUID_A=0x946dae0300f14a20
GUID_B=0x0002c9030002fb06

# json_get JSON FILTER: a value of rdmactl's JSON report (jq).
json_get() { jq -c -r "$2" <<<"$1" 2>/dev/null; }
changes_of() { json_get "$1" '[.changes[] | .resource + "/" + .field] | join(" ")'; }

state_of() {  # GUID: the SMInfo state word of the SM on the port with GUID, asked by the observer
  observer_sminfo -G "$1" | grep -oE 'SMINFO_[A-Z]+' | head -n 1
}
is_standby() { [[ $(state_of "$1") == SMINFO_STANDBY ]]; }

apply_ok() {  # NAME SPEC: apply exits 0, every change applied and verified
  local t0 t1
  t0=$(date +%s.%N)
  rdm "$1" apply -f "$2" --format json; local rc=$?
  t1=$(date +%s.%N)
  if ((rc == 0)) && [[ $(json_get "$OUT" '.summary.failed') == 0 ]] && [[ $ERR == *"verified"* || $(json_get "$OUT" '.changes | length') == 0 ]]; then
    pass "apply on host $1 exits 0, verified ($(echo "$t1 - $t0" | bc | sed 's/^\./0./') s; changes: $(changes_of "$OUT"))"
  else
    fail "apply on host $1: exit $rc"; echo "$OUT"; echo "$ERR" | tail -20
    return 1
  fi
}

second_apply_writes_nothing() {  # NAME SPEC
  local before calls
  before=$(fingerprint "$1"); calls=$(mutating_calls "$1")
  rdm "$1" apply -f "$2" --format json; local rc=$?
  local n; n=$(json_get "$OUT" '.changes | length')
  if ((rc == 0)) && [[ $n == 0 && $(fingerprint "$1") == "$before" && $(mutating_calls "$1") == "$calls" ]]; then
    pass "second apply on host $1: exit 0, no change, no file touched, no systemctl start/stop/enable"
  else
    fail "second apply on host $1: exit $rc, $n change(s) ($(changes_of "$OUT")), systemctl calls $calls -> $(mutating_calls "$1")"
    echo "$ERR" | tail -10
  fi
}

plan_empty() {  # NAME SPEC
  rdm "$1" plan -f "$2" --format json; local rc=$?
  if ((rc == 0)) && [[ $(json_get "$OUT" '(.changes | length) + (.errors | length)') == 0 ]]; then
    pass "plan on host $1: exit 0, nothing planned"
  else
    fail "plan on host $1: exit $rc, changes: $(changes_of "$OUT"), errors: $(json_get "$OUT" '.errors')"
    echo "$ERR" | tail -5
  fi
}

# Two SM hosts, a (priority PA) and b (priority PB), OpenSM started through rdmactl apply, a first.
two_hosts() {
  fabric_start
  make_host a node01
  make_host b node02
  [[ $GUID_a == "$GUID_A" && $GUID_b == "$GUID_B" ]] || fatal "fabric.net GUIDs: $GUID_a $GUID_b"
  if [[ -n ${IBSIM_OPENSM_HOST_HOOK:-} ]]; then "$IBSIM_OPENSM_HOST_HOOK" "$ROOT_a"; "$IBSIM_OPENSM_HOST_HOOK" "$ROOT_b"; fi
}

case $scenario in
election)
  # 1. priority 15 on a, 14 on b: a is MASTER, b STANDBY, as the real sminfo from node04 says.
  h_init; two_hosts
  # a starts alone; b joins while a higher SM is master (it polls a MASTER that is higher: no
  # Trap 144), so b can poll every 500 ms.
  opensm_conf a "sweep_interval 1" "sminfo_polling_timeout 3000" "polling_retry_number 1"
  opensm_conf b "sweep_interval 1" "sminfo_polling_timeout 500" "polling_retry_number 1"
  SA=$(spec a 15); SB=$(spec b 14)
  rdm a plan -f "$SA" --format json; rc=$?
  [[ $rc == 2 && $(changes_of "$OUT") == "subnet-manager/priority subnet-manager/port subnet-manager/enabled" ]] &&
    pass "plan on a: exit 2, priority, port, enabled" || fail "plan on a: exit $rc, $(changes_of "$OUT")"
  apply_ok a "$SA"
  apply_ok b "$SB"
  grep -qx "PORTS=\"$GUID_A\"\|PORTS=$GUID_A" "$ROOT_a/etc/default/opensm" && pass "a: PORTS=$GUID_A" || fail "a: PORTS: $(grep PORTS= "$ROOT_a/etc/default/opensm")"
  grep -qx 'sm_priority 14' "$ROOT_b/etc/opensm/opensm.conf" && grep -qx 'sminfo_polling_timeout 500' "$ROOT_b/etc/opensm/opensm.conf" &&
    pass "b: opensm.conf sm_priority 14, the site's other lines kept" || fail "b: opensm.conf: $(cat "$ROOT_b/etc/opensm/opensm.conf")"
  for h in a b; do
    eval "g=\$GUID_$h"
    pid=$(instance_pid "$h" "opensm@$g.service")
    [[ -n $pid ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "^/usr/sbin/opensm --guid $g " &&
      pass "host $h runs the real opensm --guid $g (pid $pid) from opensm@.service's ExecStart" ||
      fail "host $h: no opensm@$g process"
  done
  out=$(observer_sminfo)
  [[ $out == *"sm guid 0x946dae0300f14a20,"*"priority 15 state 3 SMINFO_MASTER"* ]] &&
    pass "node04 sminfo: master a (priority 15): $out" || fail "node04 sminfo: $out"
  wait_until 5 "b STANDBY (node04: sminfo -G $GUID_B)" is_standby "$GUID_B" &&
    pass "node04 sminfo -G $GUID_B: $(observer_sminfo -G "$GUID_B")" || fail "b: $(observer_sminfo -G "$GUID_B")"
  lid_b=$(as node02 ibstat ibsim0 1 | sed -n 's/^[[:space:]]*Base lid: //p')
  out=$(observer_sminfo "$lid_b")
  [[ $out == *"priority 14 state 2 SMINFO_STANDBY"* ]] && pass "node04 sminfo $lid_b (b's LID): $out" || fail "sminfo $lid_b: $out"
  second_apply_writes_nothing a "$SA"
  second_apply_writes_nothing b "$SB"
  finish ;;

tie-break)
  # 2. Equal priorities: the lower port GUID is master. OpenSM 3.3.23 decides with
  # osm_sm_is_greater_than() (include/opensm/osm_sm.h): "l_priority > r_priority ||
  # (l_priority == r_priority && cl_ntoh64(l_guid) < cl_ntoh64(r_guid))", the numerically lower
  # GUID in host order. osm_sminfo_rcv.c (smi_rcv_remote_sm_is_higher: "SM with higher priority or
  # with same priority and lower GUID"), which a DISCOVERING SM uses to decide whether another
  # DISCOVERING or STANDBY SM outranks it (then it goes STANDBY and polls that one), and
  # osm_state_mgr.c (state_mgr_get_highest_sm: whom a master hands over to) both use it.
  #
  # How the test makes OpenSM decide, and not the order of arrival: host c (node03, priority 15)
  # is master first; a (0x946d..., higher GUID) and b (0x0002..., lower) join at priority 14, both
  # STANDBY. Then c's OpenSM is stopped. a polls every 500 ms and b every 2000 ms, so a notices
  # first and rediscovers while b is still STANDBY: a would win if arrival decided; OpenSM's rule
  # makes a go STANDBY under b, and b, rediscovering later, finds a STANDBY and lower and becomes
  # master. (The other way round, a higher SM joining a lower master, goes through Trap 144, whose
  # TrapRepress ibsim drops: the standby's trap MAD stays outstanding for ever, and once master it
  # never sweeps; seen here in 2 of 2 runs, README "Known hang".) rdmactl's judgement (lower GUID
  # wins at equal priority) must agree: both plans empty afterwards.
  h_init; two_hosts
  make_host c node03
  [[ -n ${IBSIM_OPENSM_HOST_HOOK:-} ]] && "$IBSIM_OPENSM_HOST_HOOK" "$ROOT_c"
  opensm_conf c "sweep_interval 1" "sminfo_polling_timeout 3000" "polling_retry_number 1"
  opensm_conf a "sweep_interval 1" "sminfo_polling_timeout 500" "polling_retry_number 1"
  opensm_conf b "sweep_interval 1" "sminfo_polling_timeout 2000" "polling_retry_number 1"
  SC=$(spec c 15); SA=$(spec a 14); SB=$(spec b 14)
  apply_ok c "$SC"
  apply_ok a "$SA"
  apply_ok b "$SB"
  wait_until 5 "a and b STANDBY under c" bash -c "$(declare -f observer_sminfo as state_of is_standby); W=$W SOCK=$SOCK UMAD2SIM=$UMAD2SIM OBSERVER=$OBSERVER; is_standby $GUID_A && is_standby $GUID_B" ||
    fail "a: $(state_of "$GUID_A"), b: $(state_of "$GUID_B")"
  "$ROOT_c/usr/bin/systemctl" stop opensm; say "stopped c's OpenSM (systemctl stop opensm)"
  drop_dead_clients
  wait_until 15 "b (equal priority, lower GUID) master" master_is "$GUID_B" && pass "node04 sminfo: $(observer_sminfo)" || fail "node04 sminfo: $(observer_sminfo)"
  wait_until 5 "a STANDBY" is_standby "$GUID_A" && pass "node04 sminfo -G $GUID_A: $(observer_sminfo -G "$GUID_A")" ||
    fail "a: $(observer_sminfo -G "$GUID_A")"
  # a rediscovered first (DISCOVERING after c stopped) and stepped back to STANDBY.
  log_a=$ROOT_a/var/log/opensm.$GUID_A.log log_b=$ROOT_b/var/log/opensm.$GUID_B.log
  ta=$(grep -h "Entering DISCOVERING" "$log_a" | tail -n 1 | awk '{print $3 "." $4}')
  tb=$(grep -h "Entering DISCOVERING" "$log_b" | tail -n 1 | awk '{print $3 "." $4}')
  say "after c stopped: a DISCOVERING at $ta, b at $tb; a's last state: $(grep -ho 'Entering [A-Z]* state' "$log_a" | tail -n 1)"
  [[ $ta < $tb ]] && pass "a rediscovered first and still deferred to b: not first come, first served" ||
    say "note: b rediscovered first this time (the run does not tell the order rule from the GUID rule)"
  sync_port a; sync_port b
  plan_empty a "$SA"
  plan_empty b "$SB"
  finish ;;

failover)
  # 3. The master's opensm dies (SIGKILL of the stand-in's opensm@ main process); the standby takes
  # over; on the dead host opensm.service is still active (oneshot, RemainAfterExit) while its
  # instance is failed (no Restart=): plan shows `enabled` drift and apply starts the instance.
  # The master is host M (priority 15), the standby host S (14); FAILOVER_MASTER=a|b picks M.
  h_init; two_hosts
  M=${FAILOVER_MASTER:-b}; S=$([[ $M == a ]] && echo b || echo a)
  eval "GM=\$GUID_$M; GS=\$GUID_$S; RM=\$ROOT_$M"
  # M polls every 3000 ms: it joins again later while S (lower priority) is master.
  opensm_conf "$M" "sweep_interval 1" "sminfo_polling_timeout 3000" "polling_retry_number 1"
  # S: a standby declares the master dead after (1 + 1) unanswered polls 500 ms apart.
  opensm_conf "$S" "sweep_interval 1" "sminfo_polling_timeout 500" "polling_retry_number 1"
  SM_=$(spec "$M" 15); SS=$(spec "$S" 14)
  apply_ok "$M" "$SM_"; apply_ok "$S" "$SS"
  wait_until 5 "$S STANDBY" is_standby "$GS" || fail "$S never STANDBY: $(observer_sminfo -G "$GS")"
  unit_m=opensm@$GM.service
  pid=$(instance_pid "$M" "$unit_m")
  [[ -n $pid ]] || fatal "no pid for $unit_m"
  kill -KILL "$pid"; say "killed $M's opensm (pid $pid, $unit_m) with SIGKILL"
  for ((i = 0; i < 40; i++)); do alive "$pid" || break; sleep 0.05; done
  drop_dead_clients
  wait_until 10 "$S took over (node04 sminfo)" master_is "$GS" && pass "failover: $(observer_sminfo)" || fail "no failover: $(observer_sminfo)"
  w=$("$RM/usr/bin/systemctl" is-active "$unit_m"); s=$("$RM/usr/bin/systemctl" is-active opensm)
  [[ $w == failed && $s == active ]] && pass "$M: opensm.service $s, $unit_m $w" || fail "$M: opensm.service $s, $unit_m $w"
  sync_port a; sync_port b
  rdm "$M" plan -f "$SM_" --format json; rc=$?
  [[ $rc == 2 && $(changes_of "$OUT") == "subnet-manager/enabled" && $(json_get "$OUT" '.changes[0].current') == false ]] &&
    pass "plan on $M: exit 2, enabled false -> true (the instance is dead)" || fail "plan on $M: exit $rc, $(changes_of "$OUT")"
  # The standby host says who is master: doctor's note and show's state, after the failover.
  rdm "$S" doctor --format json; rc=$?
  [[ $(json_get "$OUT" '[.notes[] | select(.resource == "subnet-manager") | .message] | join(";")') == *"master SM: $GS"*"this node's OpenSM"* ]] &&
    pass "doctor on $S names the master $GS, its own OpenSM" ||
    fail "doctor on $S (exit $rc) does not say who is master ($GS): $(json_get "$OUT" '.notes')"
  rdm "$S" show --format json; rc=$?
  [[ $rc == 0 && $(json_get "$OUT" '.subnetManager.master.guid') == "$GS" ]] &&
    pass "show on $S: master $GS" || fail "show on $S (exit $rc): master $(json_get "$OUT" '.subnetManager.master')"
  rdm "$S" plan -f "$SS"; rc=$?
  [[ $rc == 0 ]] && pass "plan on $S: exit 0 ($S, priority 14, is master: nothing to do)" || fail "plan on $S: exit $rc: $OUT"
  # The agent on the standby host (dry run: it changes nothing) exports the new master.
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  eval "RS=\$ROOT_$S"
  timeout 30 "$RDMACTL" --root "$RS" --node "host-$S" serve -f "$SS" --dry-run --listen "127.0.0.1:$port" \
    --no-rdma-responder --no-link-events >"$W/serve.log" 2>&1 &
  server=$!
  metrics_of() { python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics').read().decode())" 2>/dev/null; }
  # Both samples from one scrape: each scrape renders one observation, and a later observation may
  # see sminfo time out under a loaded simulator (master 0 for that interval, as documented).
  serve_master() {
    scrape=$(metrics_of)
    grep -q "^rdmactl_subnet_manager_master{node=\"host-$S\",guid=\"$GS\",.*} 1$" <<<"$scrape" &&
      grep -qx "rdmactl_subnet_manager_local_master{node=\"host-$S\"} 1" <<<"$scrape"
  }
  if wait_until 10 "the agent on $S exports the master" serve_master; then
    pass "serve on $S: /metrics says master $GS, this node's OpenSM"
  else
    fail "serve on $S: /metrics: $(grep subnet_manager <<<"$scrape"); log: $(tail -3 "$W/serve.log")"
  fi
  kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null
  # The repaired host rejoins as a standby: its spec now gives it priority 13. (With 15 it would
  # take mastership back by a handover, which ibsim cannot carry: its reply to Trap 144 is lost and
  # the SM waits for ever; see ../../../shared/reference/ibsim/README.md, Known hang.) apply writes
  # the priority, restarts OpenSM (opensm.service stopped and started: the dead instance runs
  # again), and verifies that a master exists; the unit tests cover the start of a dead instance
  # with nothing else to change (LayoutTest.DebianADeadInstanceIsStartedAgain).
  SM13=$(spec "$M" 13)
  rdm "$M" apply -f "$SM13" --format json; rc=$?
  if [[ $rc == 0 && $(json_get "$OUT" '.summary.failed') == 0 ]]; then
    pass "apply on $M exits 0, verified: $(changes_of "$OUT")"
  else
    fail "apply on $M: exit $rc: $(grep -E 'warning|error' <<<"$ERR" | tr '\n' ';')"
  fi
  newpid=$(instance_pid "$M" "$unit_m")
  [[ -n $newpid && $newpid != "$pid" && $("$RM/usr/bin/systemctl" is-active "$unit_m") == active ]] &&
    pass "$unit_m runs again (pid $newpid)" || fail "$unit_m does not run again: $("$RM/usr/bin/systemctl" is-active "$unit_m")"
  wait_until 5 "$M STANDBY" is_standby "$GM" && pass "node04 sminfo -G $GM: standby" || fail "$M not standby: $(observer_sminfo -G "$GM")"
  master_is "$GS" && pass "$S stays master" || fail "master moved: $(observer_sminfo)"
  plan_empty "$M" "$SM13"
  finish ;;

ports-spelling)
  # 4. PORTS names b's GUID in capitals and without its leading zeros. opensm.service starts
  # opensm@WORD for each word as spelt (`sed -r "s/(\w+)/opensm@\1.service/g"`); the instance runs
  # `opensm --guid 0x2C9030002FB06` (OpenSM reads the GUID with strtoull: the same port). rdmactl
  # must find that instance and plan nothing.
  h_init; fabric_start
  make_host b node02
  [[ -n ${IBSIM_OPENSM_HOST_HOOK:-} ]] && "$IBSIM_OPENSM_HOST_HOOK" "$ROOT_b"
  spelt=0x2C9030002FB06
  sed -i "s/^PORTS=.*/PORTS=$spelt/" "$ROOT_b/etc/default/opensm"
  opensm_conf b "sweep_interval 1" "sm_priority 15"
  SB=$(spec b 15)
  # The admin's own `systemctl enable --now opensm`.
  "$ROOT_b/usr/bin/systemctl" enable --now opensm 2>/dev/null || fail "systemctl enable --now opensm"
  unit=opensm@$spelt.service
  [[ $("$ROOT_b/usr/bin/systemctl" is-active "$unit") == active ]] && pass "$unit is active" || fail "$unit: $("$ROOT_b/usr/bin/systemctl" is-active "$unit")"
  pid=$(instance_pid b "$unit")
  [[ -n $pid ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "^/usr/sbin/opensm --guid $spelt " &&
    pass "the real opensm runs with --guid $spelt" || fail "no opensm --guid $spelt"
  wait_until 5 "the SM on b master" master_is "$GUID_B" && pass "node04 sminfo: $(observer_sminfo)" || fail "node04: $(observer_sminfo)"
  sync_port b
  plan_empty b "$SB"
  second_apply_writes_nothing b "$SB"
  finish ;;

partitions)
  # 5. subnetManager.partitions: rdmactl writes partitions.conf, the real OpenSM reads it (the
  # stand-in passes the root's file as -P), and the real saquery from node04 shows each IPoIB
  # broadcast group with the spec's MTU (MCMemberRecord Mtu 0x85: selector "exactly", code 5 =
  # 4096; code 4 = 2048). A changed MTU reaches the fabric through apply's restart; a partition
  # OpenSM would merge away (0x7fff under another name) is refused before OpenSM sees it.
  h_init; fabric_start
  make_host a node01
  opensm_conf a "sweep_interval 1"
  printf '# partitions of the ibsim test site\n' >"$ROOT_a/etc/opensm/partitions.conf"
  partitions_spec() {  # STORAGE-MTU [DEFAULT-NAME]
    cat >"$W/spec-p.yaml" <<EOF
apiVersion: rdmactl/v1
kind: FabricSpec
metadata: {name: ibsim-partitions}
defaults:
  selftest: {enabled: false}
nodes:
  - match: host-a
    subnetManager:
      enabled: true
      priority: 15
      port: {rdmaDevice: mlx5_0, port: 1}
      partitions:
        - {name: ${2:-Default}, pkey: 0x7fff, ipoib: true, mtu: 4096, members: {ALL: full}}
        - {name: storage, pkey: 0x0a12, ipoib: true, mtu: $1, members: {ALL_CAS: full, ALL_SWITCHES: full}}
EOF
    echo "$W/spec-p.yaml"
  }
  group_mtu() {  # MGID: the Mtu of the MCMemberRecord of MGID as node04's saquery -g shows it
    as "$OBSERVER" saquery -g 2>&1 | awk -v g="$1" '/MGID/ { m = index($0, g) > 0 } m && /Mtu/ { sub(/.*\./, ""); print; exit }'
  }
  mtus_are() { [[ $(group_mtu ff12:401b:ffff::ffff:ffff) == "$1" && $(group_mtu ff12:401b:8a12::ffff:ffff) == "$2" ]]; }
  SP=$(partitions_spec 2048)
  apply_ok a "$SP"
  f="$ROOT_a/etc/opensm/partitions.conf"
  [[ $(cat "$f") == "# partitions of the ibsim test site"*"Default=0x7fff, ipoib, mtu=5 : ALL=full;"*"storage=0x0a12, ipoib, mtu=4 : ALL_CAS=full, ALL_SWITCHES=full;"* ]] &&
    pass "partitions.conf: the spec's definitions, the site's comment kept" || fail "partitions.conf: $(cat "$f")"
  pid=$(instance_pid a "opensm@$GUID_A.service")
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "-P $f" && pass "the real opensm reads $f" || fail "opensm's command line: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
  wait_until 5 "a master" master_is "$GUID_A" || fail "no master: $(observer_sminfo)"
  wait_until 5 "saquery: Default 0x85, storage 0x84" mtus_are 0x85 0x84 &&
    pass "saquery -g: the Default broadcast group Mtu 0x85 (4096), storage's 0x84 (2048)" ||
    fail "saquery -g: Default $(group_mtu ff12:401b:ffff::ffff:ffff), storage $(group_mtu ff12:401b:8a12::ffff:ffff)"
  sync_port a
  plan_empty a "$SP"
  SP=$(partitions_spec 4096)
  apply_ok a "$SP"
  wait_until 5 "saquery: storage 0x85" mtus_are 0x85 0x85 && pass "after apply (OpenSM restarted once): storage's group Mtu 0x85" ||
    fail "after apply: storage $(group_mtu ff12:401b:8a12::ffff:ffff)"
  sync_port a
  second_apply_writes_nothing a "$SP"
  before=$(fingerprint a)
  bad=$(partitions_spec 4096 main)
  rdm a apply -f "$bad"; rc=$?
  [[ $rc == 65 && $ERR == *"P_Key 0x7fff is OpenSM's Default partition"* && $(fingerprint a) == "$before" ]] &&
    pass "0x7fff named main: apply exits 65 naming it, nothing written" || fail "0x7fff named main: exit $rc: $ERR"
  # A file OpenSM would drop whole ("all" is no keyword: a bad PortGUID): the plan says so.
  SP=$(partitions_spec 4096)
  printf 'Default=0x7fff, ipoib, mtu=5 : all=full;\n' >"$f"
  rdm a plan -f "$SP" --format json; rc=$?
  [[ $rc == 2 && $(json_get "$OUT" '.changes[0].note') == *"OpenSM drops the whole file"* ]] &&
    pass "a partitions.conf OpenSM would drop: plan exit 2 says so" || fail "plan on a dropped file: exit $rc: $(json_get "$OUT" '.changes')"
  finish ;;

ports-all)
  # 7. Debian's default PORTS=ALL and a spec without a port: opensm.service (a oneshot with
  # RemainAfterExit) starts opensm@<GUID> for each GUID `ibstat -p` lists (the real ibstat, as the
  # simulated node). Its OpenSM dies (SIGKILL: the unit fails, no Restart=); opensm.service stays
  # active. rdmactl judges every instance PORTS implies: the plan shows `enabled` drift (not "no
  # master"), apply starts that instance, and the fabric has its master again.
  h_init; fabric_start
  make_host b node02
  [[ -n ${IBSIM_OPENSM_HOST_HOOK:-} ]] && "$IBSIM_OPENSM_HOST_HOOK" "$ROOT_b"
  opensm_conf b "sweep_interval 1" "sm_priority 15"
  SALL=$W/spec-all.yaml
  printf '%s\n' 'apiVersion: rdmactl/v1' 'kind: FabricSpec' 'metadata: {name: ibsim-ports-all}' 'defaults:' \
    '  selftest: {enabled: false}' 'nodes:' '  - match: host-b' '    subnetManager: {enabled: true, priority: 15}' >"$SALL"
  grep -qx 'PORTS=ALL' "$ROOT_b/etc/default/opensm" || fatal "the package's PORTS=ALL: $(grep PORTS= "$ROOT_b/etc/default/opensm")"
  "$ROOT_b/usr/bin/systemctl" enable --now opensm 2>/dev/null || fail "systemctl enable --now opensm"
  unit=opensm@$GUID_B.service
  wait_until 5 "b master" master_is "$GUID_B" || fail "no master: $(observer_sminfo)"
  sync_port b
  plan_empty b "$SALL"
  pid=$(instance_pid b "$unit")
  [[ -n $pid ]] || fatal "no pid for $unit"
  kill -KILL "$pid"; say "killed b's opensm (pid $pid, $unit) with SIGKILL"
  for ((i = 0; i < 40; i++)); do alive "$pid" || break; sleep 0.05; done
  drop_dead_clients
  w=$("$ROOT_b/usr/bin/systemctl" is-active "$unit"); s=$("$ROOT_b/usr/bin/systemctl" is-active opensm)
  [[ $w == failed && $s == active ]] && pass "opensm.service $s, $unit $w" || fail "opensm.service $s, $unit $w"
  rdm b plan -f "$SALL" --format json; rc=$?
  [[ $rc == 2 && $(changes_of "$OUT") == "subnet-manager/enabled" && $(json_get "$OUT" '.errors | length') == 0 ]] &&
    pass "plan without a spec port: exit 2, enabled false -> true (the instance PORTS=ALL implies is dead)" ||
    fail "plan: exit $rc, changes: $(changes_of "$OUT"), errors: $(json_get "$OUT" '[.errors[].message] | join(";")')"
  apply_ok b "$SALL"
  newpid=$(instance_pid b "$unit")
  [[ -n $newpid && $newpid != "$pid" && $("$ROOT_b/usr/bin/systemctl" is-active "$unit") == active ]] &&
    pass "$unit runs again (pid $newpid)" || fail "$unit does not run again: $("$ROOT_b/usr/bin/systemctl" is-active "$unit")"
  wait_until 10 "b master again" master_is "$GUID_B" && pass "node04 sminfo: $(observer_sminfo)" || fail "node04: $(observer_sminfo)"
  sync_port b
  second_apply_writes_nothing b "$SALL"
  finish ;;

mgid-stale-bytes)
  # 6. A multicast group without flags of its own, as rdmactl renders it (show prints the file's
  # definitions in rdmactl's form), read by the real OpenSM. osm_prtn_config.c: for a bare
  # `mgid=GID` at the end of a line, parse_name_token returns a length one past the '\0' ending the
  # line's string, and mgroup_create parses the group's flags from there: stale bytes of a longer
  # earlier line in osm_prtn_config_parse_file's 4096-byte buffer. A comment puts "mtu=1" exactly
  # there; the group must keep the MTU it inherits (code 4, Mtu 0x84 with selector "exactly"), as it
  # does with rdmactl's ',' ending, not get 0x81. The bare form itself, on the real OpenSM first:
  # the stale bytes are read (0x81), and rdmactl's plan names the line.
  h_init; fabric_start
  make_host a node01
  opensm_conf a "sweep_interval 1"
  f="$ROOT_a/etc/opensm/partitions.conf"
  group_mtu() {  # MGID: its Mtu in node04's saquery -g
    as "$OBSERVER" saquery -g 2>&1 | awk -v g="$1" '/MGID/ { m = index($0, g) > 0 } m && /Mtu/ { sub(/.*\./, ""); print; exit }'
  }
  # with_comment DEFINITION: the file OpenSM reads: a comment with "mtu=1" at the offset a bare
  # mgid line of DEFINITION leaves stale (its length + '\n' + '\0'), then DEFINITION.
  with_comment() {
    local mg; mg=$(grep -m1 'mgid=' <<<"$1"); mg=${mg%,}
    printf '#%*s%s\n%s\n' "$((${#mg} + 1))" '' 'mtu=1' "$1" >"$f"
  }
  start_sm() {
    "$ROOT_a/usr/bin/systemctl" stop opensm 2>/dev/null
    "$ROOT_a/usr/bin/systemctl" enable --now opensm 2>/dev/null || fail "systemctl enable --now opensm"
    wait_until 5 "a master" master_is "$GUID_A" || fail "no master: $(observer_sminfo)"
  }
  group_is() { [[ $(group_mtu ff12:1234::1) == "$1" ]]; }
  bare=$'Test=0x0030 :\n    mgid=ff12:1234::1\n    ALL=full;'
  with_comment "$bare"
  start_sm
  # Deterministic: osm_prtn_config_parse_file (3.3.23) reads every line with fgets into one stack
  # buffer, line[4096], which writes only the line and its NUL, so the bytes after the bare line's
  # NUL are the comment's (the longest line before it), and the parser, finding no ',' after the
  # mgid, reads on past the NUL into them.
  wait_until 5 "saquery: ff12:1234::1 Mtu 0x81" group_is 0x81 &&
    pass "the bare mgid line: the real OpenSM took the comment's stale \"mtu=1\" (Mtu 0x81)" ||
    fail "the bare mgid line: ff12:1234::1 Mtu $(group_mtu ff12:1234::1), not 0x81 (the comment's stale \"mtu=1\")"
  rdm a show --format json
  err=$(json_get "$OUT" '.subnetManager.local.partitionsError')
  [[ $err == *"partitions.conf:3: line 3: an mgid without flags at the end of a line"*"end it with ','"* ]] &&
    pass "rdmactl names the bare mgid line: $err" || fail "rdmactl does not name line 3: $err"
  # rdmactl's rendering of the same definition (show reads the file's definitions in its form).
  printf 'Test=0x0030 :\n    mgid=ff12:1234::1,\n    ALL=full;\n' >"$f"
  rdm a show --format json
  rendered=$(json_get "$OUT" '.subnetManager.local.partitions[0]')
  [[ $rendered == *"mgid=ff12:1234::1"* ]] || fatal "show: no rendered definition: $(json_get "$OUT" '.subnetManager.local')"
  say "rdmactl renders: ${rendered//$'\n'/\\n}"
  with_comment "$rendered"
  start_sm
  wait_until 5 "saquery: ff12:1234::1 Mtu 0x84" group_is 0x84 &&
    pass "rdmactl's rendering: the group keeps its inherited MTU (Mtu 0x84)" ||
    fail "rdmactl's rendering: ff12:1234::1 Mtu $(group_mtu ff12:1234::1) (0x81: OpenSM read the stale comment bytes)"
  finish ;;

*)
  echo "usage: $0 election | tie-break | failover | ports-spelling | partitions | ports-all | mgid-stale-bytes" >&2; exit 2 ;;

esac
