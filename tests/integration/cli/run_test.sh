#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The command line as a user meets it, against the built binary:
#
#   tests/integration/cli/run_test.sh RDMACTL_BINARY
#
#   - a mistyped command is named in the error (usage, exit 64); no command at all says so
#   - `rdmactl completion bash`: `bash -n` accepts it, it lists every command of `rdmactl --help`,
#     and, sourced into bash, completes commands, options and --format values
#   - `rdmactl completion zsh`: a #compdef script that `zsh -n` accepts, listing every command
#   - NO_COLOR (https://no-color.org): the logs on a terminal (script(1)) are coloured without it
#     and carry no escape sequence with it
#
# Needs no root. Exit codes: 0 passed, 1 failed, 77 skipped (zsh or script missing, not root). As
# root or under CI (CI=true) a check that cannot run is a failure, never a skip.
set -u

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 RDMACTL_BINARY (got: ${1:-nothing}, which is not an executable)" >&2
  exit 1
fi
rdmactl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../../.." && pwd)

# under_ci, cannot_run: a missing tool skips (77) only when not root and not CI.
. "$(dirname "$0")/../lib.sh"
command -v zsh > /dev/null || cannot_run "zsh not found: apt-get install --no-install-recommends zsh"
command -v script > /dev/null || cannot_run "script not found: apt-get install bsdutils"

work=$(mktemp -d /tmp/rdmactl-cli-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

# --- unknown command -------------------------------------------------------------------------
check_unknown() {
  local expected=$1
  shift
  "$rdmactl" "$@" > "$work/out" 2> "$work/err"
  local status=$?
  if [ "$status" -ne 64 ]; then
    fail "rdmactl $*: exit $status, expected 64 (usage)"
  elif ! grep -qF "$expected" "$work/err"; then
    fail "rdmactl $*: stderr does not say '$expected': $(cat "$work/err")"
  elif grep -q "A subcommand is required" "$work/err"; then
    fail "rdmactl $*: CLI11's 'A subcommand is required' instead of naming the command"
  else
    ok "rdmactl $*: $(head -1 "$work/err")"
  fi
}
check_unknown 'rdmactl: unknown command "fro"; see rdmactl --help' fro
check_unknown 'rdmactl: unknown command "fro"; see rdmactl --help' --node n1 fro --format json
check_unknown 'rdmactl: unknown command "plna" (did you mean "plan"?); see rdmactl --help' --log-level=debug plna -f x.yaml
check_unknown 'rdmactl: unknown command "pln" (did you mean "plan"?); see rdmactl --help' pln -f x.yaml
check_unknown 'rdmactl plan: unknown option --fromat (did you mean "--format"?)' plan -f x.yaml --fromat json
check_unknown 'rdmactl validate: unknown option --fiel (did you mean "--file"?)' validate --fiel=x.yaml
check_unknown 'unknown format "jsno" (text, json, yaml, junit, prom) (did you mean "json"?)' \
  plan -f "$source_dir/examples/roce-lossless.yaml" --state "$source_dir/examples/demo-host.json" --format jsno
check_unknown 'rdmactl: no command given; see rdmactl --help'
# A known command keeps CLI11's own message about what it lacks.
"$rdmactl" plan > /dev/null 2> "$work/err"
status=$?
{ [ "$status" -eq 64 ] && grep -q -- "--file" "$work/err"; } || fail "rdmactl plan (no -f): exit $status, $(cat "$work/err")"

# --- the commands --help lists ---------------------------------------------------------------
"$rdmactl" --help > "$work/help"
mapfile -t commands < <(awk '/^(SUBCOMMANDS|Subcommands):/ {on = 1; next} on && /^ +[a-z-]+ / {print $1} on && /^$/ {on = 0}' "$work/help")
if [ "${#commands[@]}" -lt 10 ]; then
  fail "rdmactl --help lists ${#commands[@]} command(s): ${commands[*]:-none}"
fi
for c in validate show plan apply export doctor selftest serve confirm completion; do
  printf '%s\n' "${commands[@]}" | grep -qx "$c" || fail "rdmactl --help does not list $c"
done

# --- bash ------------------------------------------------------------------------------------
if ! "$rdmactl" completion bash > "$work/rdmactl.bash"; then
  fail "rdmactl completion bash: exit $?"
fi
if bash -n "$work/rdmactl.bash" 2> "$work/err"; then ok "bash -n: no syntax error"; else fail "bash -n: $(cat "$work/err")"; fi
for c in "${commands[@]}"; do
  grep -q "commands=\"[^\"]*\\b$c\\b" "$work/rdmactl.bash" || fail "bash completion does not list the command $c"
done
# COMPREPLY of the words given, the last one being completed.
complete_bash() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _rdmactl; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$work/rdmactl.bash" "$@"
}
expect_completion() {
  local expected=$1
  shift
  local got
  got=$(complete_bash "$@" | sort | tr '\n' ' ')
  if [ "$got" != "$expected " ]; then
    fail "bash completion of '$*': got '$got', expected '$expected '"
  else
    ok "bash completion of '$*': $got"
  fi
}
expect_completion "plan" rdmactl pl
expect_completion "selftest serve show switch-config" rdmactl s
expect_completion "json junit prom text yaml" rdmactl plan -f x.yaml --format ""
expect_completion "json text yaml" rdmactl show --format ""
expect_completion "json junit prom text" rdmactl --node n1 doctor --format ""
expect_completion "--state --states" rdmactl plan --st
expect_completion "debug" rdmactl --log-level de
expect_completion "bash" rdmactl completion ba
expect_completion "--check --confirm" rdmactl apply --c
expect_completion "eos nvue sonic" rdmactl switch-config --vendor ""
# Every option of every command is offered after its command.
for c in "${commands[@]}"; do
  "$rdmactl" "$c" --help > "$work/help-$c" 2>&1
  options=$(complete_bash rdmactl "$c" - | tr '\n' ' ')
  for option in $(grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+' "$work/help-$c" | grep -oE -- '--[a-z-]+'); do
    case " $options " in *" $option "*) ;; *) fail "bash completion of 'rdmactl $c -' lacks $option" ;; esac
  done
done

# --- zsh -------------------------------------------------------------------------------------
if ! "$rdmactl" completion zsh > "$work/_rdmactl"; then
  fail "rdmactl completion zsh: exit $?"
fi
head -1 "$work/_rdmactl" | grep -qx '#compdef rdmactl' || fail "zsh completion does not begin with #compdef rdmactl"
if zsh -n "$work/_rdmactl" 2> "$work/err"; then ok "zsh -n: no syntax error"; else fail "zsh -n: $(cat "$work/err")"; fi
for c in "${commands[@]}"; do
  grep -q "^        '$c:" "$work/_rdmactl" || fail "zsh completion does not describe the command $c"
  grep -q "^        $c)$" "$work/_rdmactl" || fail "zsh completion has no arguments for the command $c"
done
grep -q "'--format\[[^]]*\]:value:(text json yaml junit prom)'" "$work/_rdmactl" || fail "zsh completion lacks plan's --format values"
# Loaded as compinit loads it: autoload from $fpath, then the function is defined.
mkdir -p "$work/fpath"
cp "$work/_rdmactl" "$work/fpath/_rdmactl"
if zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit && compinit -u -D && [[ ${_comps[rdmactl]} == _rdmactl ]]' _ "$work/fpath" 2> "$work/err"; then
  ok "zsh compinit maps rdmactl to _rdmactl"
else
  fail "zsh compinit does not map rdmactl to _rdmactl: $(cat "$work/err")"
fi

"$rdmactl" completion fish > /dev/null 2> "$work/err"
status=$?
[ "$status" -eq 64 ] || fail "rdmactl completion fish: exit $status, expected 64"

# --- NO_COLOR --------------------------------------------------------------------------------
# Logs on a terminal: the agent's start-up lines (serve --dry-run writes nothing), until its
# /v1/status counts a reconcile (the start-up lines come before the first one), at most 60 s: not
# a fixed time, which a loaded machine can overrun. script(1) gives the command a terminal; its
# typescript is what the terminal received.
esc=$(printf '\033')
port=$((20000 + RANDOM % 20000))
cat > "$work/serve-until-reconciled.sh" <<EOF
'$rdmactl' --root '$source_dir/tests/fixtures/sysfs/cx6dx-roce' serve -f '$source_dir/examples/roce-lossless.yaml' \
  --dry-run --no-rdma-responder --listen 127.0.0.1:$port &
agent=\$!
for _ in \$(seq 600); do
  (exec 3<>/dev/tcp/127.0.0.1/$port && printf 'GET /v1/status HTTP/1.0\r\n\r\n' >&3 &&
     grep -q '"reconciles": [1-9]' <&3) 2>/dev/null && break
  sleep 0.1
done
kill \$agent
wait \$agent
EOF
logged_command="bash $work/serve-until-reconciled.sh"
coloured=$(env -u NO_COLOR TERM=xterm script -qec "$logged_command" /dev/null < /dev/null 2>&1)
if [[ "$coloured" != *"$esc["* ]]; then
  fail "without NO_COLOR, logs on a terminal carry no colour: the NO_COLOR check below would prove nothing: $coloured"
fi
plain=$(NO_COLOR=1 TERM=xterm script -qec "$logged_command" /dev/null < /dev/null 2>&1)
if [[ "$plain" == *"$esc["* ]]; then
  fail "NO_COLOR=1: the output still carries escape sequences"
elif [[ "$plain" != *"info: agent for node"* ]]; then
  fail "NO_COLOR=1: the agent logged nothing to check: $plain"
else
  ok "NO_COLOR=1: no escape sequence on a terminal"
fi
# An empty NO_COLOR does not count (no-color.org).
empty=$(NO_COLOR= TERM=xterm script -qec "$logged_command" /dev/null < /dev/null 2>&1)
[[ "$empty" == *"$esc["* ]] || fail "NO_COLOR= (empty) turned colour off; only a non-empty value does"

# --- the fleet: validate across nodes, plan --states, switch-config ---------------------------
fleet="$source_dir/examples/fleet"
out=$("$rdmactl" validate -f "$fleet/fabric.yaml" 2>&1)
status=$?
[ "$status" -eq 65 ] || fail "validate of the fleet example: exit $status, expected 65 (its nodes conflict): $out"
[[ "$out" == *"fabric.yaml:35:9: nodes[1].interfaces[1].addresses: error [duplicate-address]"* ]] ||
  fail "validate does not name the duplicate address where the spec sets it: $out"
out=$("$rdmactl" plan -f "$fleet/fabric.yaml" --states "$fleet/states" --format json 2>&1)
status=$?
[ "$status" -eq 1 ] || fail "plan --states of the fleet example: exit $status, expected 1 (error findings)"
checks=$(printf '%s' "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["kind"], r["summary"]["nodes"], " ".join(sorted(f["check"] for f in r["findings"])))')
[ "$checks" = "FleetPlan 3 duplicate-address rail-subnet unmatched-entry" ] ||
  fail "plan --states --format json: $checks"
"$rdmactl" plan -f "$source_dir/examples/roce-lossless.yaml" --states "$fleet/states" > /dev/null 2>&1
status=$?
[ "$status" -eq 2 ] || fail "plan --states with a spec whose nodes agree: exit $status, expected 2 (drift)"
"$rdmactl" plan -f "$fleet/fabric.yaml" --states "$fleet/states" --state "$fleet/states/gpu-01.json" > /dev/null 2>&1
[ $? -eq 64 ] || fail "--state and --states together are a usage error"
for args in "nvue --ports swp1-32 --uplinks swp49-64" \
  "sonic --platform broadcom --cable-length 5m --ports Ethernet0 --uplinks Ethernet248 --uplink-cable-length 300m" \
  "eos --platform strata --ports Ethernet1-32 --uplinks Ethernet49" "eos --platform sand --ports Ethernet3/1"; do
  # shellcheck disable=SC2086 # the words of $args are the options
  out=$("$rdmactl" switch-config -f "$source_dir/examples/roce-lossless.yaml" --vendor $args 2>&1)
  status=$?
  [ "$status" -eq 0 ] || fail "switch-config --vendor $args: exit $status: $out"
done
"$rdmactl" switch-config -f "$source_dir/examples/roce-lossless.yaml" --vendor sonic --platform mellanox --cable-length 5m \
  --ports Etherent4 > "$work/out" 2> "$work/err"
{ [ $? -eq 64 ] && [ ! -s "$work/out" ] && grep -q '"Etherent4" is not a SONiC port' "$work/err"; } ||
  fail "switch-config --ports Etherent4: not refused as a port name: $(cat "$work/err")"
printf '%s' "$("$rdmactl" switch-config -f "$source_dir/examples/roce-lossless.yaml" --vendor sonic --platform mellanox \
  --cable-length 5m --ports Ethernet0)" |
  python3 -c 'import json,sys; json.load(sys.stdin)' || fail "switch-config --vendor sonic is not JSON"
"$rdmactl" switch-config -f "$source_dir/examples/roce-lossless.yaml" --vendor junos --ports xe-0/0/0 > /dev/null 2>&1
[ $? -eq 64 ] || fail "switch-config --vendor junos: not a usage error"
"$rdmactl" switch-config -f "$source_dir/examples/roce-lossless.yaml" --vendor sonic --cable-length 5m --ports Ethernet0 \
  > /dev/null 2> "$work/err"
{ [ $? -eq 64 ] && grep -q 'show version' "$work/err"; } || fail "switch-config --vendor sonic without --platform: not 64 naming show version"
ok "fleet: validate across nodes, plan --states (json, exit codes), switch-config for nvue, sonic and eos"
"$rdmactl" switch-config -f "$source_dir/examples/roce-lossless.yaml" --vendor nvue --ports 'swp1;reboot' > "$work/out" 2> "$work/err"
{ [ $? -eq 64 ] && [ ! -s "$work/out" ]; } || fail "switch-config --ports 'swp1;reboot': not refused before printing"

# CNPs on a PFC priority: validate and plan both warn (on standard error; the exit code is theirs).
cat > "$work/cnp.yaml" <<'EOF2'
apiVersion: rdmactl/v1
kind: FabricSpec
metadata: {name: cnp}
defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      qos: {trust: dscp, dscpToPriority: {26: 3, 48: 3}, pfc: [3]}
      ecn: {cnpDscp: 48}
EOF2
"$rdmactl" validate -f "$work/cnp.yaml" > /dev/null 2> "$work/err" ||
  fail "validate of a spec with CNPs on a PFC priority: not valid: $(cat "$work/err")"
grep -q 'cnp.yaml:8:22: defaults.interfaces\[0\].ecn.cnpDscp: warning \[cnp-pfc\]' "$work/err" ||
  fail "validate does not warn of CNPs on a PFC priority: $(cat "$work/err")"
"$rdmactl" plan -f "$work/cnp.yaml" --state "$source_dir/examples/demo-host.json" > /dev/null 2> "$work/err"
grep -q 'warning \[cnp-pfc\]' "$work/err" || fail "plan does not warn of CNPs on a PFC priority: $(cat "$work/err")"
ok "validate and plan warn of CNPs on a PFC priority"

# --- an invalid spec, to automation ------------------------------------------------------------
# plan --format json prints the problems as JSON on standard output (exit 65), never only text.
printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: t\ndefaults:\n  interfaces:\n    - name: eth0\n      mtu: 99999\n' > "$work/bad.yaml"
"$rdmactl" plan -f "$work/bad.yaml" --state "$source_dir/examples/demo-host.json" --format json > "$work/out" 2> "$work/err"
status=$?
problem=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["problems"][0]
print(d["kind"], d["valid"], p["file"].endswith("bad.yaml"), p["line"], p["column"], p["path"], "|", p["message"][:40])' "$work/out" 2>&1)
{ [ "$status" -eq 65 ] && [ "${problem%% |*}" = "SpecError False True 8 12 defaults.interfaces[0].mtu" ]; } ||
  fail "plan --format json of an invalid spec: exit $status, stdout read as: $problem"
"$rdmactl" plan -f "$work/bad.yaml" --state "$source_dir/examples/demo-host.json" --format junit > "$work/out" 2> /dev/null
grep -q '<testcase classname="spec" name="defaults.interfaces\[0\].mtu" time="0" file="[^"]*bad.yaml" line="8">' "$work/out" ||
  fail "plan --format junit of an invalid spec: $(cat "$work/out")"
ok "plan --format json|junit of an invalid spec: the problems on standard output, exit 65"

# validate says what a host will refuse (a sysctl outside net.*, a global net.* key under --netns).
printf 'apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: t\ndefaults:\n  sysctl:\n    vm.swappiness: "10"\n    net.core.rmem_max: "1"\n' > "$work/sysctl.yaml"
"$rdmactl" validate -f "$work/sysctl.yaml" > /dev/null 2> "$work/err" || fail "validate sysctl.yaml: $(cat "$work/err")"
grep -q 'sysctl.yaml:7:5: .*note \[sysctl-scope\] plan and apply refuse vm.swappiness on a host unless its /etc/rdmactl/sysctl-allow lists it' "$work/err" ||
  fail "validate does not say vm.swappiness needs the allow-list: $(cat "$work/err")"
grep -q 'note \[sysctl-scope\] net.core.rmem_max is one for the whole host' "$work/err" ||
  fail "validate does not say net.core.rmem_max is refused under --netns: $(cat "$work/err")"
ok "validate names the sysctl keys a host may refuse"

# A spec from a pipe (issue 43): process substitution and /dev/stdin on a pipe, as `-f -` is read.
"$rdmactl" validate -f <(cat "$source_dir/examples/minimal.yaml") > "$work/out" 2> "$work/err" ||
  fail "validate -f <(cat minimal.yaml): $(cat "$work/err")"
grep -q '^/dev/fd/[0-9]*: valid' "$work/out" "$work/err" || fail "validate -f <(...) does not name the pipe: $(cat "$work/out" "$work/err")"
cat "$source_dir/examples/minimal.yaml" | "$rdmactl" validate -f /dev/stdin > /dev/null 2> "$work/err" ||
  fail "validate -f /dev/stdin on a pipe: $(cat "$work/err")"
"$rdmactl" switch-config -f <(cat "$source_dir/examples/roce-lossless.yaml") --vendor nvue --ports swp1 > /dev/null 2> "$work/err" ||
  fail "switch-config -f <(...): $(cat "$work/err")"
ok "a spec from a pipe: -f <(render) and -f /dev/stdin"

# --- serve's timer ------------------------------------------------------------------------------
"$rdmactl" serve -f "$source_dir/examples/roce-lossless.yaml" --interval 10ms > /dev/null 2> "$work/err"
{ [ $? -eq 64 ] && grep -q 'shorter than 1s' "$work/err"; } || fail "serve --interval 10ms: $(cat "$work/err")"
ok "serve --interval below 1s and switch-config --ports with shell characters are usage errors"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "cli: all checks passed"
