#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package, end to end on this machine:
#
#   tests/integration/deb/run_test.sh RDMACTL_BINARY_OR_BUILD_DIR
#
# builds rdmactl_<version>_<arch>.deb and its -dbgsym with packaging/deb/build.sh, runs lintian
# (no error; a warning fails unless it is in ACCEPTED_WARNINGS below, with the reason), installs
# both with dpkg -i, checks what the installation made (the stripped binary and its debug file,
# the token's mode, the directories, conffiles, man pages, completion, the units' enable state),
# runs systemd-analyze verify and security on the installed units, starts the agent the way
# rdmactl.service does, reinstalls (the token stays), removes (configuration stays), purges and
# checks that nothing is left: no file or directory with rdmactl in its name under /etc /usr /lib
# /var /run /opt /srv that was not there before, no user or group, no dpkg record.
#
# It changes the system (dpkg -i installs to /usr/sbin, /etc, /lib/systemd): it needs root, refuses
# to run when an rdmactl package is already installed, moves anything the package would overwrite
# or purge would delete (e.g. a developer's /etc/rdmactl or /var/lib/rdmactl) aside first and puts
# it back at exit, and always purges what it installed (trap), also when a check fails or it is
# interrupted.
#
# Exit: 0 passed, 1 failed, 77 skipped (not root, or a tool missing; under CI=true those fail).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../../.." && pwd)

# Lintian warnings this package accepts, and why. Any other warning, and any error, fails.
declare -A ACCEPTED_WARNINGS=(
  # The package is not uploaded to Debian: there is no ITP bug for its first changelog entry to close.
  [initial-upload-closes-no-bugs]=1
)

failures=0
checks=0
pass() { checks=$((checks + 1)); echo "ok   - $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }
check() {  # DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $* (CI=true: a skip is a failure)"; exit 1; fi
  echo "SKIP: $*"; exit 77
}

[ $# -eq 1 ] || { echo "usage: $0 RDMACTL_BINARY_OR_BUILD_DIR" >&2; exit 64; }
input=$1
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg -i and dpkg -P of the package on this machine)"
missing=()
for tool in dpkg-deb dpkg-shlibdeps lintian help2man strip objcopy readelf systemd-analyze curl; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] || skip "missing ${missing[*]} (apt-get install dpkg-dev lintian help2man binutils systemd curl)"
status=$(dpkg-query -W -f='${db:Status-Abbrev}' rdmactl rdmactl-dbgsym 2>/dev/null | tr -d ' ')
if [ -n "$status" ]; then
  msg="an rdmactl package is known to dpkg here ($(dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\n' rdmactl rdmactl-dbgsym 2>/dev/null | tr '\n' ';')); this test installs and purges its own build: dpkg -P rdmactl-dbgsym rdmactl first"
  if [ "${CI:-}" = true ]; then echo "FAIL: $msg"; exit 1; fi
  echo "SKIP: $msg"; exit 77
fi

work=$(mktemp -d /tmp/rdmactl-deb-test.XXXXXX)
backup=$work/backup
installed=0
server_pid=""
snapshot() {  # the names that must be the same before installation and after purge
  # /run/netns: other tests' namespaces come and go (rdmactl-test-*), and are not the package's.
  find /etc /usr /lib /var /run /opt /srv -xdev -path /run/netns -prune -o -iname '*rdmactl*' -print 2>/dev/null | sort
  sha256sum /etc/passwd /etc/group /etc/shadow /etc/gshadow 2>/dev/null
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
  if [ "$installed" = 1 ]; then
    echo "cleanup: purging the test's packages"
    dpkg -P rdmactl-dbgsym rdmactl >/dev/null 2>&1 || echo "cleanup: dpkg -P failed: purge rdmactl by hand"
  fi
  if [ -f "$backup.list" ]; then
    while IFS= read -r path; do
      rm -rf "$path"
      mkdir -p "$(dirname "$path")"
      mv "$backup$path" "$path" && echo "cleanup: restored $path"
    done < "$backup.list"
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build ----------------------------------------------------------------------------------------
echo "# build"
if ! "$src/packaging/deb/build.sh" "$input" "$work/out" > "$work/build.out"; then
  echo "FAIL - packaging/deb/build.sh"; exit 1
fi
deb=$(sed -n 1p "$work/build.out")
dbgsym=$(sed -n 2p "$work/build.out")
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
check "Debian file name ($(basename "$deb"))" test "$(basename "$deb")" = "rdmactl_${version}_${arch}.deb"
check "debug symbols package ($(basename "$dbgsym"))" test "$(basename "$dbgsym")" = "rdmactl-dbgsym_${version}_${arch}.deb"
check "Maintainer is 'Name <address>'" grep -Eq '^[^<>]+ <[^@<> ]+@[^<> ]+>$' <<< "$(dpkg-deb -f "$deb" Maintainer)"
depends=$(dpkg-deb -f "$deb" Depends)
check "Depends has the shared libraries (dpkg-shlibdeps): libc6, libstdc++6, libibverbs1" \
  grep -Eq 'libc6 \(>= [^)]+\).*libibverbs1.*libstdc\+\+6' <<< "$depends"
check "Depends has git (the apply timer runs it)" grep -Eq '(^|, )git(,|$| )' <<< "$depends"
check "conffiles: /etc/default/rdmactl, /etc/rdmactl/fabric.yaml" \
  test "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles | sort | tr '\n' ' ')" = "/etc/default/rdmactl /etc/rdmactl/fabric.yaml "

# --- lintian --------------------------------------------------------------------------------------
echo "# lintian $(lintian --version | awk '{print $2}')"
lintian --display-info --pedantic "$deb" "$dbgsym" > "$work/lintian.out" 2>&1
grep -v '^running with root privileges' "$work/lintian.out" | sed 's/^/    /'
check "lintian: no error" bash -c "! grep -q '^E: ' '$work/lintian.out'"
unexpected=$(awk '/^W: /{sub(/^W: [^ ]+ /, ""); print $1}' "$work/lintian.out" | sort -u | while read -r tag; do
  [ -n "${ACCEPTED_WARNINGS[$tag]:-}" ] || echo "$tag"; done)
check "lintian: no warning but the accepted ones (${!ACCEPTED_WARNINGS[*]})${unexpected:+; unexpected: $unexpected}" \
  test -z "$unexpected"

# --- set the machine's own rdmactl files aside ----------------------------------------------------
# What dpkg -i would overwrite and what dpkg -P deletes; put back by cleanup.
{
  dpkg-deb --fsys-tarfile "$deb"; } | tar -tf - | sed 's|^\./|/|' | grep -v '/$' > "$work/payload"
dpkg-deb --fsys-tarfile "$dbgsym" | tar -tf - | sed 's|^\./|/|' | grep -v '/$' >> "$work/payload"
: > "$backup.list"
{
  cat "$work/payload"
  printf '%s\n' /etc/rdmactl /var/lib/rdmactl /var/cache/rdmactl /var/log/rdmactl /run/rdmactl \
    /etc/systemd/system/multi-user.target.wants/rdmactl.service \
    /etc/systemd/system/multi-user.target.wants/rdmactl-apply.service \
    /etc/systemd/system/timers.target.wants/rdmactl-apply.timer
  ls -d /var/lib/systemd/deb-systemd-helper-enabled/*rdmactl* /var/lib/systemd/deb-systemd-helper-masked/*rdmactl* \
    /var/lib/systemd/deb-systemd-helper-enabled/*/rdmactl* 2>/dev/null
} | while IFS= read -r path; do
  # Skip what an earlier line already moved (a directory holding it).
  if [ -e "$path" ] || [ -L "$path" ]; then
    mkdir -p "$backup$(dirname "$path")"
    mv "$path" "$backup$path" && echo "$path" >> "$backup.list" && echo "# set aside until the end: $path"
  fi
done
snapshot > "$work/before"

# --- install --------------------------------------------------------------------------------------
echo "# dpkg -i"
installed=1
if DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" "$dbgsym" < /dev/null > "$work/dpkg-i.out" 2>&1; then
  pass "dpkg -i $(basename "$deb") $(basename "$dbgsym")"
else
  sed 's/^/    /' "$work/dpkg-i.out"; fail "dpkg -i"; exit 1
fi
check "dpkg: rdmactl installed" test "$(dpkg-query -W -f='${db:Status-Abbrev}' rdmactl)" = "ii "
check "/usr/sbin/rdmactl runs (--version: $(/usr/sbin/rdmactl --version 2>&1))" /usr/sbin/rdmactl --version
check "/usr/sbin/rdmactl is stripped (no .debug_info, no .symtab)" \
  bash -c "! readelf -S /usr/sbin/rdmactl | grep -Eq '\.debug_info|\.symtab'"
build_id=$(readelf -n /usr/sbin/rdmactl | sed -n 's/^ *Build ID: *//p')
debug_file=/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug
check "its debug file $debug_file (rdmactl-dbgsym) has the symbols" \
  bash -c "readelf -S '$debug_file' 2>/dev/null | grep -q '\.debug_info'"
check "the binary's .gnu_debuglink names it" \
  bash -c "readelf --string-dump=.gnu_debuglink /usr/sbin/rdmactl | grep -q '${build_id:2}.debug'"
stat_of() { stat -c '%a %U:%G' "$1" 2>/dev/null; }
check "/etc/rdmactl/token: mode 0600 root:root ($(stat_of /etc/rdmactl/token))" test "$(stat_of /etc/rdmactl/token)" = "600 root:root"
check "/etc/rdmactl/token: 64 hex digits" grep -Eqx '[0-9a-f]{64}' /etc/rdmactl/token
token_sum=$(sha256sum < /etc/rdmactl/token)
check "/etc/rdmactl: 0755 ($(stat_of /etc/rdmactl))" test "$(stat_of /etc/rdmactl)" = "755 root:root"
check "/var/lib/rdmactl: 0700 ($(stat_of /var/lib/rdmactl))" test "$(stat_of /var/lib/rdmactl)" = "700 root:root"
check "/var/log/rdmactl: 0750 ($(stat_of /var/log/rdmactl))" test "$(stat_of /var/log/rdmactl)" = "750 root:root"
check "the installed spec validates" /usr/sbin/rdmactl validate -f /etc/rdmactl/fabric.yaml
check "dpkg knows both conffiles" \
  test "$(dpkg-query -W -f='${Conffiles}\n' rdmactl | awk 'NF{print $1}' | sort | tr '\n' ' ')" = "/etc/default/rdmactl /etc/rdmactl/fabric.yaml "
check "copyright is machine-readable (DEP-5)" grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' /usr/share/doc/rdmactl/copyright
check "changelog.Debian.gz names $version" bash -c "zcat /usr/share/doc/rdmactl/changelog.Debian.gz | head -n1 | grep -qF '($version)'"
check "the manual is installed beside the README (docs/index.md and every page)" \
  bash -c "cd '$src' && test -f docs/index.md && for f in docs/*.md docs/images/*; do cmp -s \"\$f\" /usr/share/doc/rdmactl/\"\$f\" || exit 1; done"
check "the alerting rules and the dashboard are installed" \
  bash -c "cmp -s '$src/packaging/prometheus/rdmactl-alerts.yml' /usr/share/rdmactl/prometheus/rdmactl-alerts.yml && cmp -s '$src/packaging/grafana/rdmactl.json' /usr/share/rdmactl/grafana/rdmactl.json"
mapfile -t commands < <(/usr/sbin/rdmactl --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
for c in "" "${commands[@]}"; do
  page=rdmactl${c:+-$c}
  # Read through man -w and zcat: formatting with man would leave a page in /var/cache/man.
  check "man page $page(8)" bash -c "zcat \"\$(man -w 8 '$page' 2>/dev/null)\" | grep -q '^\.SH OPTIONS'"
done
if /usr/sbin/rdmactl completion bash >/dev/null 2>&1; then
  check "bash completion installed" test -s /usr/share/bash-completion/completions/rdmactl
  check "bash completion loads in bash" bash -c '. /usr/share/bash-completion/completions/rdmactl && complete -p rdmactl >/dev/null'
  check "zsh completion installed" test -s /usr/share/zsh/vendor-completions/_rdmactl
else
  echo "note - the binary has no 'rdmactl completion': the package has none (RDMACTL_DEB_REQUIRE_COMPLETION=1 makes that an error)"
fi
check "rdmactl.service enabled (deb-systemd-helper)" \
  test "$(readlink /etc/systemd/system/multi-user.target.wants/rdmactl.service)" = /lib/systemd/system/rdmactl.service
check "rdmactl-apply.timer installed, not enabled (it conflicts with the agent)" \
  bash -c '[ -f /lib/systemd/system/rdmactl-apply.timer ] && [ ! -e /etc/systemd/system/timers.target.wants/rdmactl-apply.timer ]'

# --- systemd --------------------------------------------------------------------------------------
echo "# systemd-analyze"
units=(/lib/systemd/system/rdmactl.service /lib/systemd/system/rdmactl-apply.service /lib/systemd/system/rdmactl-apply.timer)
# --man=no: verify would format the Documentation= man pages with man, which leaves them in
# /var/cache/man; they are checked with man -w below instead.
systemd-analyze verify --man=no "${units[@]}" > "$work/verify.out" 2>&1
verify_rc=$?
sed 's/^/    /' "$work/verify.out"
check "systemd-analyze verify of the installed units: clean" test "$verify_rc" = 0 -a ! -s "$work/verify.out"
for page in $(sed -n 's/^Documentation=//p' "${units[@]}" | tr ' ' '\n' | sed -n 's/^man:\(.*\)(\([0-9]\))$/\2:\1/p' | sort -u); do
  check "the units' Documentation= page ${page#*:}(${page%%:*}) is installed" bash -c "man -w ${page%%:*} ${page#*:} > /dev/null 2>&1"
done
for doc_file in $(sed -n 's/^Documentation=//p' "${units[@]}" | tr ' ' '\n' | sed -n 's|^file://||p' | sort -u); do
  check "the units' Documentation= file $doc_file is installed" test -f "$doc_file"
done
# The exposure figures docs/automation.md quotes; a change to the units that loosens them fails here.
for unit in rdmactl.service rdmactl-apply.service; do
  exposure=$(systemd-analyze security --offline=true --no-pager "/lib/systemd/system/$unit" 2>/dev/null |
    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  echo "    $unit: exposure $exposure (before hardening: 9.6 UNSAFE)"
  check "$unit: systemd-analyze security exposure $exposure <= 4.0" awk -v e="$exposure" 'BEGIN{exit !(e != "" && e <= 4.0)}'
done

# --- the agent starts with the generated token -----------------------------------------------------
pid1=$(ps -p 1 -o comm= | tr -d ' ')
free_port() {
  local p
  for p in 9473 $(shuf -i 20000-60000 -n 20); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
}
if [ "$pid1" = systemd ]; then
  echo "# the installed unit (PID 1 is systemd)"
  for _ in $(seq 1 20); do systemctl is-active --quiet rdmactl.service && break; sleep 0.5; done
  check "rdmactl.service is active after installation" systemctl is-active --quiet rdmactl.service
  check "rdmactl.service answers /healthz" curl -fs -o /dev/null --retry 10 --retry-connrefused --retry-delay 1 http://127.0.0.1:9473/healthz
else
  echo "# PID 1 is '$pid1', not systemd: the unit cannot be started here; running its ExecStart by hand"
  port=$(free_port)
  exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/rdmactl.service)
  # As systemd runs it: /etc/default/rdmactl as the environment, $RDMACTL_SERVE_OPTS split on
  # spaces; only the port is this test's (9473 may be in use here).
  (
    set -a; . /etc/default/rdmactl; set +a
    RDMACTL_SERVE_OPTS="$RDMACTL_SERVE_OPTS --listen 127.0.0.1:$port"
    eval "exec ${exec_start//\$RDMACTL_SERVE_OPTS/\$RDMACTL_SERVE_OPTS}"
  ) > "$work/serve.out" 2>&1 &
  server_pid=$!
  base=http://127.0.0.1:$port
  check "the agent answers /healthz (ExecStart: $exec_start)" \
    curl -fs -o /dev/null --retry 20 --retry-connrefused --retry-delay 1 "$base/healthz"
  check "it runs in --dry-run as installed" bash -c "curl -fsS '$base/v1/status' | grep -q '\"mode\": *\"dry-run\"'"
  check "POST /v1/reconcile without the token: 401" \
    test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/v1/reconcile")" = 401
  check "POST /v1/reconcile with the generated token: 202" \
    test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat /etc/rdmactl/token)" "$base/v1/reconcile")" = 202
  kill -TERM "$server_pid"
  serve_rc=timeout
  for _ in $(seq 1 100); do
    if ! kill -0 "$server_pid" 2>/dev/null; then wait "$server_pid"; serve_rc=$?; break; fi
    sleep 0.1
  done
  server_pid=""
  check "it stops on SIGTERM with exit 0 within 10 s (exit: $serve_rc)" test "$serve_rc" = 0
  [ "$serve_rc" = 0 ] || sed 's/^/    /' "$work/serve.out"
  echo "note - not checked here: systemd starting rdmactl.service, its sandbox at run time, Restart=/StartLimit behaviour"
fi

# --- the man pages' examples work when pasted -----------------------------------------------------
# Every example line of every installed page that starts with "rdmactl", run as it is written in a
# directory holding the files the examples name (fabric.yaml, states/, gpu-01.json), with
# RDMACTL_NETNS naming a namespace that does not exist: a command that would touch the host stops
# there (exit 1, "network namespace ... not found") after its options and spec were read. A usage
# error (64), an invalid spec (65), a file an example names that is not there, or anything else
# fails.
echo "# the man pages' examples"
examples_run=0
while IFS= read -r -d '' page; do
  while IFS= read -r line; do
    scratch=$work/man-example
    rm -rf "$scratch"; mkdir -p "$scratch/states"
    cp /usr/share/doc/rdmactl/examples/roce-lossless.yaml "$scratch/fabric.yaml"
    cp /usr/share/doc/rdmactl/examples/fleet/states/*.json "$scratch/states/"
    cp /usr/share/doc/rdmactl/examples/demo-host.json "$scratch/gpu-01.json"
    # Files an example writes outside the scratch directory (a completion script in /etc, a
    # node_exporter textfile) are made as on a host that has their directory, then removed.
    made=()
    for target in $(grep -oE '> */[^ ]+' <<< "$line" | sed 's/^> *//'); do
      [ -e "$target" ] && continue
      [ -d "$(dirname "$target")" ] || { mkdir -p "$(dirname "$target")"; made+=("dir:$(dirname "$target")"); }
      made+=("$target")
    done
    ( cd "$scratch" && RDMACTL_NETNS=rdmactl-man-example timeout 20 bash -c "$line" ) > "$work/ex.out" 2> "$work/ex.err" < /dev/null
    rc=$?
    for ((i = ${#made[@]} - 1; i >= 0; i--)); do
      case ${made[i]} in dir:*) rmdir -p --ignore-fail-on-non-empty "${made[i]#dir:}" 2>/dev/null ;; *) rm -f "${made[i]}" ;; esac
    done
    examples_run=$((examples_run + 1))
    # Exit 1 where it reached the host: the namespace (or, for `fabric`, the InfiniBand port) is not there.
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] ||
       { [ "$rc" -eq 1 ] && grep -qE 'network namespace ".*" not found|no InfiniBand port' "$work/ex.err"; }; then
      :
    else
      check "$(basename "$page" .8.gz): '$line' works when pasted (exit $rc: $(head -c 300 "$work/ex.err"))" false
    fi
  done < <(zcat "$page" | sed -e 's/\\f[BIRP]//g' -e 's/\\[,/&]//g' -e 's/\\-/-/g' -e 's/\\(aq/'\''/g' \
             -e 's/\\(dq/"/g' -e 's/\\e/\\/g' |
             grep -E '^ *rdmactl ' | sed -e 's/^ *//' -e 's/ *#.*$//' | grep -v '\\$')
done < <(find /usr/share/man/man8 -name 'rdmactl*.8.gz' -print0)
check "the man pages' examples: $examples_run run, each exit 0, 2, or 1 at the host" test "$examples_run" -ge 25
# plan and apply keep the checked spec in /var/cache/rdmactl (agent/cli/spec_cache.h): rdmactl's own, 0700.
check "the spec cache: /var/cache/rdmactl 0700 ($(stat_of /var/cache/rdmactl 2>/dev/null)) with an entry" \
  bash -c 'test "$(stat -c "%a %U:%G" /var/cache/rdmactl)" = "700 root:root" && ls /var/cache/rdmactl/spec-*.bin > /dev/null'

# --- reinstall, remove, purge ---------------------------------------------------------------------
echo "# dpkg -i again, dpkg -r, dpkg -P"
check "dpkg -i again" bash -c "DEBIAN_FRONTEND=noninteractive dpkg -i '$deb' '$dbgsym' < /dev/null > /dev/null 2>&1"
check "the token survives a reinstallation" test "$(sha256sum < /etc/rdmactl/token)" = "$token_sum"
check "dpkg -r" bash -c 'dpkg -r rdmactl-dbgsym rdmactl < /dev/null > /dev/null 2>&1'
check "after dpkg -r: the binary is gone" test ! -e /usr/sbin/rdmactl
check "after dpkg -r: the token, conffiles and state stay" \
  test -f /etc/rdmactl/token -a -f /etc/rdmactl/fabric.yaml -a -f /etc/default/rdmactl -a -d /var/lib/rdmactl
check "dpkg -P" bash -c 'dpkg -P rdmactl-dbgsym rdmactl < /dev/null > /dev/null 2>&1'
installed=0
check "dpkg has no record of rdmactl" test -z "$(dpkg-query -W -f='${db:Status-Abbrev}' rdmactl rdmactl-dbgsym 2>/dev/null | tr -d ' ')"
for path in /etc/rdmactl /etc/default/rdmactl /var/lib/rdmactl /var/cache/rdmactl /var/log/rdmactl /run/rdmactl /usr/share/doc/rdmactl \
            /etc/systemd/system/multi-user.target.wants/rdmactl.service; do
  check "after dpkg -P: $path is gone" test ! -e "$path" -a ! -L "$path"
done

# --- purge keeps what the package did not make ----------------------------------------------------
# An audit log directory that existed before installation (an administrator's, say a mount for the
# central log store), a GitOps clone and a recorded state in /var/lib/rdmactl, and a token an
# administrator wrote over the generated one: dpkg -P removes rdmactl's own files around them.
echo "# dpkg -P keeps what the package did not make"
install -d -m 0750 /var/log/rdmactl
printf '{"old":"audit line from before the package"}\n' > /var/log/rdmactl/audit.jsonl
check "dpkg -i with /var/log/rdmactl already there" \
  bash -c "DEBIAN_FRONTEND=noninteractive dpkg -i '$deb' < /dev/null > /dev/null 2>&1"
installed=1
mkdir -p /var/lib/rdmactl/fabric/.git
printf '{}\n' > /var/lib/rdmactl/state.json
printf '{}\n' > /var/lib/rdmactl/journal-4026531840.json
printf '{}\n' > /var/lib/rdmactl/link-type.json
umask_was=$(umask); umask 077; printf 'f%.0s' $(seq 64) > /etc/rdmactl/token; printf '\n' >> /etc/rdmactl/token; umask "$umask_was"
check "dpkg -P" bash -c 'dpkg -P rdmactl < /dev/null > /dev/null 2>&1'
installed=0
check "after dpkg -P: the audit log of a directory the package did not make stays" \
  grep -q 'from before the package' /var/log/rdmactl/audit.jsonl
check "after dpkg -P: the GitOps clone and the recorded state stay" test -d /var/lib/rdmactl/fabric/.git -a -f /var/lib/rdmactl/state.json
check "after dpkg -P: rdmactl's journal and link-type record are gone" \
  test ! -e /var/lib/rdmactl/journal-4026531840.json -a ! -e /var/lib/rdmactl/link-type.json -a ! -e /var/lib/rdmactl/.package-created
check "after dpkg -P: a token the administrator wrote stays" grep -qx 'f\{64\}' /etc/rdmactl/token
rm -rf /var/log/rdmactl /var/lib/rdmactl /etc/rdmactl

snapshot > "$work/after"
check "after dpkg -P: nothing named rdmactl left, /etc/passwd, group, shadow, gshadow unchanged" \
  diff -u "$work/before" "$work/after"

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
