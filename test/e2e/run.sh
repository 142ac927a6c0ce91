#!/usr/bin/env bash
# End-to-end scenarios of issues 4 and 11 with the real Pulumi engine and the real
# command provider over SSH against disposable test hosts (test/e2e/lib/hosts.sh)
# and an HTTPS webhook receiver in the test's lan namespace. The program is the
# repository's own, copied to a temp project and switched by config
# (hostguard:aws false, hosts from the harness, fixed cronMinute).
# Scenarios run in the order 1 4 5 6 2 3 10 11 12 19 7, then 8 (a 3-host fleet),
# 13 (hostguard:aws true, adopting a group in moto's EC2 API through the
# stack's dynamic resources), 9 (no webhook in any CLI output or the
# exported state), 14 (a host without fail2ban, a stack of its own) and 15
# (trustedProxies: a host behind a second nginx adding X-Forwarded-For, a
# stack of its own), then 16 (hostguard:delivery ssm: State Manager and the
# SSM agent played by lib/state_manager.py over moto, on four hosts, against
# an SSH deploy of the same settings; what it cannot show: lib/fleet.sh) and
# 17 (the README's Quick start, Verify, Rotate and Uninstall as written:
# lib/quickstart.sh), then 18 (no host: an up killed after its first EC2
# change, cancel, destroy, on both EC2 paths against moto, and a host removed
# from an adopting stack: lib/ec2-killed.sh);
# then 20 (Debian 12 as its packages leave it: the stock sshd jail on the
# journal, a ban in each jail, a stack of its own); each is timed and
# asserted on the hosts or the receiver. Prints a summary; exits 1 if any
# scenario failed. When this machine cannot deploy (no root, no engine, no
# command plugin 1.2.1) it prints a loud NOT RUN banner and exits 0.
#
# With HG_E2E_OS=debian13 every host is a Debian 13 one (lib/os-root.sh) and
# the default is DEBIAN13_SCENARIOS: deploy, a host alert and its recovery,
# a ban (fail2ban's default nftables banaction there) and the unban, a
# webhook rotation, destroy, the Quick start.
#
# Usage: run.sh [N...] runs only scenarios N... (default all, or HG_E2E_ONLY).
# Reads: tools/pulumi-env.sh and the engine cache; HG_E2E_ONLY (space-separated
# scenario numbers to run, default all); HG_E2E_OS (debian12, the default, or
# debian13); HG_KEEP_RUN_DIR=1 keeps logs;
# scenario 13 starts moto_server from the venv of tools/setup.bash
# (hg_setup_moto, HOSTGUARD_MOTO_VENV) and drives it with lib/moto-ec2.ts.
set -euo pipefail
umask 077

# shellcheck source=lib/runner.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/runner.sh"
# shellcheck source=../helpers/nginx-sandbox.bash
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/nginx-sandbox.bash"
# shellcheck source=lib/fleet.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/fleet.sh"
# shellcheck source=lib/quickstart.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/quickstart.sh"
# shellcheck source=lib/ec2-killed.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ec2-killed.sh"

readonly JAIL=nginx-bad-request
readonly STACK=e2e
readonly FLEET_STACK=fleet
readonly AWS_STACK=aws
readonly BANTIME_S=20
readonly INSTALL_DIR=/usr/local/lib/hostguard
readonly DEBIAN13_SCENARIOS="1 5 2 3 7 17"
E2E_TITLES=(
  [1]="preview shows the plan; up installs files, cron, jail, deny rule; start message"
  "thresholds 0: a monitor run delivers the three host alerts; at 100, the next one their recoveries"
  "10 denied requests in a minute: ban message, dropped, unban message, back"
  "second up changes nothing and runs no remote command"
  "webhook rotation: only the webhook resource changes; alerts go to the new URL only"
  "one script edited: only the part carrying it is redeployed"
  "destroy leaves every host as before the first up"
  "a fleet of 3 hosts in one stack; one host removed from the hosts: the up uninstalls it only"
  "no webhook URL in the exported state or any CLI output"
  "sshd killed during an up: clear failure, rerun converges, no half-written file"
  "rotation to a webhook answering 404 no_service fails the up and the old one keeps delivering; set back, retried, then a good one posts the test message"
  "heartbeat URL: one request per monitor run"
  "AWS adopt mode against moto: shared guard, every group of the host, an up killed with SIGKILL after its first change and a throttled up keep the original, exact rules, drift removed, terminated instance, destroy restores the group"
  [14]="a host without fail2ban: up fails naming it; no jail; with it back, up installs"
  [15]="trustedProxies: a scanner behind a proxy is banned, refused at nginx, named; the other client is served"
  [16]="delivery ssm, State Manager played over moto (lib/fleet.sh): 3 tagged hosts get the SSH deploy's payload, the untagged none; a second run changes nothing; a tampered object is refused everywhere; a rotation and a host tagged later arrive at the next run; destroy's uninstall leaves every tagged host as before"
  [19]="appProperties emptied and nginxServerConf moved in one up: old edits out, old files as before, the host as a fresh install of the new settings"
  [17]="the README's Quick start as written, on a host reached as admin with sudo; then its Verify, Rotate and Uninstall"
  [18]="AWS against moto, no host: a first up killed after its first EC2 change, then cancel and destroy (no up between), on the adopt and create paths: every original rule and group back; one adopted host of two removed: a warning, not a refusal"
  [20]="Debian 12 as its packages leave it (no auth.log, fail2ban not started): up starts fail2ban, hostguard's jail bans a scanner, the stock sshd jail bans password guesses from the journal; destroy leaves /etc/fail2ban byte for byte"
)

MINUTE=0
# Each stack's cron minute, taken quiet when the stack is made (a run outlives the
# 10 minutes between cron runs, and a monitor run would leave logs behind): host -> minute.
declare -A HOST_MINUTE=()

# quiet_minute_for NAME...: MINUTE <- a quiet minute now, recorded for the hosts NAME.
quiet_minute_for() {
  local name
  MINUTE="$(e2e_quiet_minute)"
  for name in "$@"; do
    HOST_MINUTE["${name}"]="${MINUTE}"
  done
}

# --- assertions on the hosts -------------------------------------------------

http_code() {
  curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$1" 2>/dev/null || true
}

# Every file of the installer's table is there with its mode, root-owned.
assert_installed() {
  local name="$1" line part src dest mode got n=0
  local table
  table="$(host_exec "${name}" "${INSTALL_DIR}/install" list)" || fail "${name}: install list failed"
  while IFS='|' read -r part src dest mode; do
    [[ -n "${dest}" ]] || continue
    got="$(host_exec "${name}" stat -c '%a %U:%G %F' "${dest}" 2>&1)" || fail "${name}: ${dest} (${part}) missing"
    expect_eq "${name}: ${dest}" "${got}" "${mode#0} root:root regular file"
    n=$((n + 1))
  done <<<"${table}"
  ((n >= 10)) || fail "${name}: install list names only ${n} files"
  expect_eq "${name}: hostguard.conf" "$(host_exec "${name}" stat -c '%a %U:%G' /etc/hostguard/hostguard.conf)" "644 root:root"
  expect_eq "${name}: webhook.conf" "$(host_exec "${name}" stat -c '%a %U:%G' /etc/hostguard/webhook.conf)" "600 root:root"
  for line in host-monitor container-monitor; do
    host_exec "${name}" grep -qE "^${HOST_MINUTE[${name}]:-${MINUTE}}-59/10 \* \* \* \* root .*${INSTALL_DIR}/${line}( |$)" /etc/cron.d/hostguard ||
      fail "${name}: no ${line} entry at minute ${HOST_MINUTE[${name}]:-${MINUTE}} in /etc/cron.d/hostguard: $(host_exec "${name}" cat /etc/cron.d/hostguard)"
  done
}

assert_jail() {
  local name="$1" out label
  out="$(host_exec "${name}" fail2ban-client status "${JAIL}" 2>&1)" || fail "${name}: fail2ban-client status ${JAIL}: ${out}"
  for label in "Currently failed:" "Total failed:" "File list:" "Currently banned:" "Total banned:" "Banned IP list:"; do
    grep -qF -- "${label}" <<<"${out}" || fail "${name}: no '${label}' in the jail report: ${out}"
  done
  grep -qF "/var/log/nginx/access.log" <<<"${out}" || fail "${name}: jail does not watch the access log: ${out}"
}

assert_deny() {
  local name="$1" addr path
  addr="$(host_addr "${name}")"
  for path in /.env /app/.git/config /backup.bak; do
    expect_eq "${name}: GET ${path}" "$(http_code "http://${addr}${path}")" 403
  done
  expect_eq "${name}: GET /" "$(http_code "http://${addr}/")" 200
}

# mtime and ctime of everything a deploy writes: a remote command that ran
# would change at least the ones of its part.
times_of() {
  { host_exec "$1" find "${HG_SNAPSHOT_PATHS[@]}" -printf '%p %T@ %C@\n' 2>/dev/null || true; } | sort
}

ssh_logins() {
  host_sshd_log "$1" | grep -c 'Accepted publickey' || true
}

# Only the given `op name` lines among the preview's steps that change something.
assert_plan() {
  local log="$1" want="$2" got
  e2e_pulumi_json "${log}" preview --stack "${STACK}" --json || { e2e_show_log "${log}"; fail "preview failed"; }
  got="$(jq -r '[.steps[]? | select(.op != "same") | "\(.op) \(.urn | split("::") | last)"] | sort | join(",")' \
    "${E2E_LOG_DIR}/${log}.json")"
  expect_eq "changes in the plan" "${got}" "${want}"
}

up() {
  local log="$1" stack="${2:-${STACK}}"
  e2e_pulumi "${log}" up --stack "${stack}" --yes --skip-preview || { e2e_show_log "${log}"; fail "pulumi up (${log}) failed"; }
}

export_state() {
  e2e_pulumi_json "$1" stack export --stack "${2:-${STACK}}" || { e2e_show_log "$1"; fail "stack export failed"; }
}

# --- scenarios ------------------------------------------------------------------

s1_install() {
  local since created
  e2e_pulumi_json 01-preview preview --stack "${STACK}" --json || { e2e_show_log 01-preview; fail "preview failed"; }
  created="$(jq -r '[.steps[]? | select(.op == "create") | .urn | split("::") | last] | sort | join(",")' \
    "${E2E_LOG_DIR}/01-preview.json")"
  expect_eq "resources the preview would create" "${created}" "h1,h1-bantool,h1-base,h1-monitors,h1-web,h1-webhook,hostguard-${STACK}"
  expect_eq "h1 untouched by preview" "$(host_snapshot h1)" "$(cat "${E2E_WORK}/h1.before")"
  since="$(date +%s.%N)"
  up 01-up
  assert_installed h1
  assert_jail h1
  assert_deny h1
  e2e_wait_message "${since}" 20 "^url1	Ban tool \(${JAIL}\) jail has started	#alerts$" >/dev/null
  # The container monitor as cron runs it, with the host's python3 reading the runtime's JSON
  # (the host's docker is the test stand-in, with no containers).
  host_exec h1 "${INSTALL_DIR}/container-monitor" >"${E2E_LOG_DIR}/01-container-monitor.log" 2>&1 ||
    fail "container-monitor exited non-zero: $(cat "${E2E_LOG_DIR}/01-container-monitor.log")"
  grep -q 'container-monitor: containers=0 running=0 previously_running=0 alerts=0' "${E2E_LOG_DIR}/01-container-monitor.log" ||
    fail "container-monitor did not check: $(cat "${E2E_LOG_DIR}/01-container-monitor.log")"
  export_state 01-export
}

s4_no_changes() {
  local times logins
  times="$(times_of h1)"
  logins="$(ssh_logins h1)"
  e2e_pulumi 04-preview preview --stack "${STACK}" --expect-no-changes || { e2e_show_log 04-preview; fail "preview --expect-no-changes failed"; }
  up 04-up
  if grep -Eq '^ +[0-9]+ (created|updated|replaced|deleted)' "${E2E_LOG_DIR}/04-up.log"; then
    e2e_show_log 04-up
    fail "second up changed something"
  fi
  e2e_log_has 04-up -E '^ +7 unchanged' "no '7 unchanged' in the summary"
  expect_eq "ssh logins on h1 during preview and up" "$(ssh_logins h1)" "${logins}"
  expect_eq "mtimes and ctimes on h1" "$(times_of h1)" "${times}"
}

s5_rotation() {
  local since probe
  since="$(date +%s.%N)"
  e2e_webhook "${STACK}" "${E2E_URL2}"
  assert_plan 05-preview "update h1-webhook"
  up 05-up
  host_exec h1 grep -qF "/B001/" /etc/hostguard/webhook.conf || fail "h1 webhook file not rotated"
  probe="e2e rotation probe ${RANDOM}"
  host_exec h1 "${INSTALL_DIR}/hostguard-notify" text "${probe}" >"${E2E_LOG_DIR}/05-notify.log" 2>&1 ||
    fail "hostguard-notify failed: $(cat "${E2E_LOG_DIR}/05-notify.log")"
  e2e_wait_message "${since}" 20 "^url2	${probe}$" >/dev/null
  if e2e_messages_since "${since}" | grep -q '^url1'; then
    fail "the old URL got messages after the rotation: $(e2e_messages_since "${since}" | grep '^url1')"
  fi
  export_state 05-export
}

s6_edit_script() {
  local before after want got
  printf '# e2e edit %s\n' "${RANDOM}" >>"${E2E_PROJECT_DIR}/scripts/host-monitor"
  want="$(sha256sum "${E2E_PROJECT_DIR}/scripts/host-monitor" | cut -d' ' -f1)"
  before="$(times_of h1 | grep -v "^${INSTALL_DIR}/host-monitor \|^${INSTALL_DIR} \|^/var/lib/hostguard")"
  assert_plan 06-preview "update h1-monitors"
  up 06-up
  got="$(host_exec h1 sha256sum "${INSTALL_DIR}/host-monitor" | cut -d' ' -f1)"
  expect_eq "host-monitor on h1" "${got}" "${want}"
  after="$(times_of h1 | grep -v "^${INSTALL_DIR}/host-monitor \|^${INSTALL_DIR} \|^/var/lib/hostguard")"
  if [[ "${after}" != "${before}" ]]; then
    fail "files other than host-monitor changed: $(diff <(echo "${before}") <(echo "${after}") | grep '^[<>]')"
  fi
}

s2_thresholds() {
  local since kind busy
  local -a keys=(cpuThreshold memoryThreshold diskThreshold)
  for kind in "${keys[@]}"; do
    e2e_pulumi "02-set-${kind}" config set --stack "${STACK}" "hostguard:${kind}" 0 || fail "config set ${kind}"
  done
  e2e_pulumi 02-set-resolved config set --stack "${STACK}" hostguard:alertSendResolved true || fail "config set alertSendResolved"
  assert_plan 02-preview "update h1-base"
  up 02-up
  host_exec h1 grep -qx 'CPU_THRESHOLD=0' /etc/hostguard/hostguard.conf || fail "threshold not on h1"
  since="$(date +%s.%N)"
  # "Strictly greater than 0": an idle second can read 0.0 % CPU, so keep a
  # core busy while the monitor samples.
  host_exec h1 timeout 3 sh -c 'while :; do :; done' &
  busy=$!
  host_exec h1 "${INSTALL_DIR}/host-monitor" >"${E2E_LOG_DIR}/02-host-monitor.log" 2>&1 ||
    fail "host-monitor exited non-zero: $(cat "${E2E_LOG_DIR}/02-host-monitor.log")"
  wait "${busy}" || true # timeout ends the loop with 124
  e2e_wait_message "${since}" 30 '^url[12]	\[Server Alert\] \\nHigh CPU Usage Detected: [0-9.]+%\\nLoad Average: ' >/dev/null
  e2e_wait_message "${since}" 30 '^url[12]	\[Server Alert\] \\nHigh Memory Usage Detected: [0-9.]+%\\nActive Processes: [0-9]+$' >/dev/null
  e2e_wait_message "${since}" 30 '^url[12]	\[Server Alert\] \\nHigh Disk Usage Detected: [0-9.]+%\\nSystem Uptime: ' >/dev/null
  # At 100 no measure can be over its threshold: the next run resolves all three.
  for kind in "${keys[@]}"; do
    e2e_pulumi "02-set-${kind}-100" config set --stack "${STACK}" "hostguard:${kind}" 100 || fail "config set ${kind} 100"
  done
  up 02-up-100
  since="$(date +%s.%N)"
  host_exec h1 "${INSTALL_DIR}/host-monitor" >"${E2E_LOG_DIR}/02-host-monitor-resolved.log" 2>&1 ||
    fail "host-monitor exited non-zero: $(cat "${E2E_LOG_DIR}/02-host-monitor-resolved.log")"
  e2e_wait_message "${since}" 30 '^url[12]	\[Server Alert\] \\nCPU Usage Back to Normal: [0-9.]+%\\nLoad Average: ' >/dev/null
  e2e_wait_message "${since}" 30 '^url[12]	\[Server Alert\] \\nMemory Usage Back to Normal: [0-9.]+%\\nActive Processes: [0-9]+$' >/dev/null
  e2e_wait_message "${since}" 30 '^url[12]	\[Server Alert\] \\nDisk Usage Back to Normal: [0-9.]+%\\nSystem Uptime: ' >/dev/null
  # Back to the SPEC's thresholds, so cron's own runs stay quiet.
  for kind in "${keys[@]}" alertSendResolved; do
    e2e_pulumi "02-rm-${kind}" config rm --stack "${STACK}" "hostguard:${kind}" || fail "config rm ${kind}"
  done
  up 02-up-restore
}

# The jail's "Total failed" on host NAME.
jail_total_failed() {
  host_exec "$1" fail2ban-client status "${JAIL}" 2>/dev/null | sed -n 's/^.*Total failed:[[:space:]]*//p'
}

# Waits (at most 60 s) until the jail on host NAME has counted more than
# BEFORE failures.
wait_jail_counted() {
  local name="$1" before="$2" i now
  for ((i = 0; i < 120; i++)); do
    now="$(jail_total_failed "${name}")"
    [[ -n "${now}" ]] && ((now > before)) && return 0
    sleep 0.5
  done
  fail "${name}: the jail counted no new failure within 60 s (Total failed ${now:-?}, before ${before})"
}

s3_ban() {
  local since addr client i code ban
  addr="$(host_addr h1)"
  client="$(client_addr c1)"
  since="$(date +%s.%N)"
  # A jail (re)started moments ago reads its log late: fail2ban's pyinotify
  # backend keeps a new log path "pending" for a while, and lines read after
  # their bantime count as an expired ban. So the first denied request is a
  # probe: the other nine go once the jail has counted it.
  local failed_before
  failed_before="$(jail_total_failed h1)"
  for ((i = 1; i <= 10; i++)); do
    code="$(client_curl c1 -o /dev/null -w '%{http_code}' "http://${addr}/.env?n=${i}" 2>/dev/null || true)"
    expect_eq "request ${i} from c1" "${code}" 403
    ((i > 1)) || wait_jail_counted h1 "${failed_before}"
  done
  ban="$(e2e_wait_message "${since}" 30 "^url[12]	Ban Alert\(${JAIL}\)\\\\n Banned IP: \*${client//./\\.}\*\\\\n Failures: [0-9]+ failure\(s\)\\\\n Timestap: [0-9]+$")"
  printf '  %s\n' "${ban#*	}"
  code="$(client_curl c1 -o /dev/null -w '%{http_code}' "http://${addr}/" 2>/dev/null || true)"
  expect_eq "c1 while banned" "${code}" 000
  assert_firewall_ban h1 "${client}"
  e2e_wait_message "${since}" $((BANTIME_S + 30)) "^url[12]	Ban Alert\(${JAIL}\)\\\\n Unbanned IP: \*${client//./\\.}\*$" >/dev/null
  code="$(client_curl c1 -o /dev/null -w '%{http_code}' "http://${addr}/" 2>/dev/null || true)"
  expect_eq "c1 after the unban" "${code}" 200
}

# The ban is in the firewall of the banaction the host's fail2ban has by
# default: iptables-multiport on Debian 12, nftables on Debian 13.
assert_firewall_ban() {
  local name="$1" client="$2" actions rules
  actions="$(host_exec "${name}" fail2ban-client get "${JAIL}" actions 2>&1)" || fail "${name}: the jail's actions: ${actions}"
  if [[ "$(host_os "${name}")" == debian13 ]]; then
    grep -qw nftables <<<"${actions}" || fail "${name}: no nftables action in the jail: ${actions}"
    rules="$(host_exec "${name}" nft list ruleset 2>&1)" || fail "${name}: nft list ruleset: ${rules}"
  else
    grep -qw iptables-multiport <<<"${actions}" || fail "${name}: no iptables-multiport action in the jail: ${actions}"
    rules="$(host_exec "${name}" iptables -S 2>&1)" || fail "${name}: iptables -S: ${rules}"
  fi
  grep -qF "${client}" <<<"${rules}" || fail "${name}: ${client} is not in the firewall: ${rules}"
}

s10_sshd_killed() {
  local logins i pid rc=0 leftovers
  # A change to the installer's own files (they travel in every bundle): every part runs again.
  printf '# e2e edit %s\n' "${RANDOM}" >>"${E2E_PROJECT_DIR}/scripts/hostguard/paths.py"
  logins="$(ssh_logins h1)"
  (e2e_pulumi 10-up-killed up --stack "${STACK}" --yes --skip-preview) &
  pid=$!
  for ((i = 0; i < 600; i++)); do
    (($(ssh_logins h1) > logins)) && break
    sleep 0.05
  done
  host_kill_sshd h1
  wait "${pid}" || rc=$?
  ((rc != 0)) || fail "up succeeded although sshd was killed (the kill came after the last session?)"
  printf '  up failed (%s) with:\n' "${rc}"
  e2e_log_lines 10-up-killed 'error|Error'
  # What the SSH library says depends on when the kill lands: EOF, a refused
  # dial, or a session that ended without an exit status.
  e2e_log_has 10-up-killed -Ei 'ssh|dial|connect|EOF|refused|without exit status' "the failure does not name the connection"
  host_start_sshd h1
  up 10-up-rerun
  e2e_pulumi 10-preview preview --stack "${STACK}" --expect-no-changes || { e2e_show_log 10-preview; fail "not converged"; }
  leftovers="$(host_exec h1 find "${HG_SNAPSHOT_PATHS[@]}" /tmp -name '.hostguard-tmp.*' -o -name 'hostguard.*' -path '/tmp/*' 2>/dev/null || true)"
  [[ -z "${leftovers}" ]] || fail "temp files left on h1: ${leftovers}"
  assert_files_complete h1
  assert_installed h1
}

# Each installed file (rendered ones included) has the bytes the stack shipped.
assert_files_complete() {
  local name="$1" table files part src dest mode want got n=0
  export_state "10-export-${name}"
  e2e_pulumi_json "10-outputs-${name}" stack output --stack "${STACK}" --json hosts || fail "stack output"
  files="$(jq -r --arg h "${name}" '.[$h].files[] | "\(.path) \(.sha256)"' "${E2E_LOG_DIR}/10-outputs-${name}.json")"
  table="$(host_exec "${name}" "${INSTALL_DIR}/install" list)"
  while IFS='|' read -r part src dest mode; do
    [[ -n "${dest}" ]] || continue
    want="$(awk -v p="${src}" '$1 == p { print $2 }' <<<"${files}")"
    [[ -n "${want}" ]] || continue
    got="$(host_exec "${name}" sha256sum "${dest}" | cut -d' ' -f1)"
    expect_eq "${name}: ${dest} (${part})" "${got}" "${want}"
    n=$((n + 1))
  done <<<"${table}"
  ((n >= 5)) || fail "${name}: only ${n} files compared"
}

s7_destroy() {
  e2e_pulumi 07-destroy destroy --stack "${STACK}" --yes || { e2e_show_log 07-destroy; fail "destroy failed"; }
  assert_snapshot_restored h1
}

assert_snapshot_restored() {
  local name="$1" now
  now="$(host_snapshot "${name}")"
  if [[ "${now}" != "$(cat "${E2E_WORK}/${name}.before")" ]]; then
    diff <(cat "${E2E_WORK}/${name}.before") <(echo "${now}") | sed 's/^/    /' >&2 || true
    fail "${name}: filesystem differs from before the first up"
  fi
}

s8_fleet() {
  local name since starts i index=2
  for name in h2 h3 h4; do
    host_up "${name}" "${index}"
    index=$((index + 1))
    e2e_host_prepare "${name}"
    host_snapshot "${name}" >"${E2E_WORK}/${name}.before"
  done
  quiet_minute_for h2 h3 h4
  e2e_stack "${FLEET_STACK}" "  hostguard:banBanTime: ${BANTIME_S}s
" "h2:${MINUTE}" "h3:${MINUTE}" "h4:${MINUTE}"
  since="$(date +%s.%N)"
  up 08-up "${FLEET_STACK}"
  for name in h2 h3 h4; do
    assert_installed "${name}"
    assert_jail "${name}"
    assert_deny "${name}"
    printf '  %s installed at %s\n' "${name}" "$(host_exec "${name}" stat -c %y "${INSTALL_DIR}/install")"
  done
  for ((starts = 0, i = 0; i < 100 && starts < 3; i++)); do
    starts="$(e2e_messages_since "${since}" | grep -c "^url1	Ban tool (${JAIL}) jail has started	#alerts$" || true)"
    ((starts >= 3)) || sleep 0.2
  done
  expect_eq "start messages from the fleet" "${starts}" 3
  export_state 08-export "${FLEET_STACK}"
  e2e_pulumi 08-preview preview --stack "${FLEET_STACK}" --expect-no-changes || { e2e_show_log 08-preview; fail "fleet preview not empty"; }
  # Issue 41: one host's entry deleted from hostguard:hosts; the up uninstalls it, the others keep theirs.
  e2e_pulumi 08-remove-h4 config rm --stack "${FLEET_STACK}" --path 'hostguard:hosts[2]' || { e2e_show_log 08-remove-h4; fail "config rm hosts[2]"; }
  up 08-up-removed "${FLEET_STACK}"
  assert_snapshot_restored h4
  assert_installed h2
  assert_installed h3
  e2e_pulumi 08-preview-removed preview --stack "${FLEET_STACK}" --expect-no-changes || { e2e_show_log 08-preview-removed; fail "preview after the removal not empty"; }
  e2e_pulumi 08-destroy destroy --stack "${FLEET_STACK}" --yes || { e2e_show_log 08-destroy; fail "fleet destroy failed"; }
  for name in h2 h3 h4; do
    assert_snapshot_restored "${name}"
  done
}

s9_no_secret() {
  local f n=0 hits
  # An export of a state before any webhook resource (scenario 13's killed up) proves nothing
  # about it but is still searched below; at least one export must hold the webhook resource.
  for f in "${E2E_LOG_DIR}"/*-export*.json; do
    [[ -e "${f}" ]] || continue
    jq -e '[.deployment.resources[]? | select(.urn | endswith("-webhook"))] | length > 0' "${f}" >/dev/null ||
      continue
    n=$((n + 1))
  done
  ((n > 0)) || fail "no stack export holding the webhook resource was taken: nothing to prove"
  # Every CLI output of the run, the state backend and the stack files.
  hits="$(grep -rlF -e "${RECEIVER_SENTINEL}" -e "/services/T000/" "${E2E_LOG_DIR}" "${E2E_WORK}/state" \
    "${E2E_PROJECT_DIR}"/Pulumi.*.yaml 2>/dev/null || true)"
  [[ -z "${hits}" ]] || fail "the webhook appears in: ${hits}"
  printf '  checked %d exports and %d CLI logs\n' "${n}" "$(find "${E2E_LOG_DIR}" -type f | wc -l)"
}

# verifyWebhook (the default) posts the connectivity test on each rotation.
# A refused webhook fails the webhook resource with the status and Slack's
# error text, never the URL; the good one after it passes and gets the test.
s11_verify_webhook() {
  local since log=11-up-refused old_url=E2E_URL1 old_label=url1 plan
  if host_exec h1 grep -qF "/B001/" /etc/hostguard/webhook.conf; then
    old_url=E2E_URL2 old_label=url2
  fi
  since="$(date +%s.%N)"
  s11_refused "${log}"
  e2e_log_has "${log}" -F "the host keeps the webhook it had" "the failure does not say the old webhook is kept"
  expect_eq "test messages refused with 404" "$(refusals_since "${since}")" 1
  # The host still delivers to the old webhook: no candidate left, a later alert reaches it.
  host_exec h1 test ! -e /etc/hostguard/.hostguard-tmp.webhook.conf || fail "h1: the candidate webhook file was left"
  s11_probe "${old_label}" "after the refused rotation"
  # The old URL set back: the up succeeds, whatever the failed up left in Pulumi's state.
  e2e_webhook "${STACK}" "${!old_url}"
  e2e_pulumi_json 11-preview-back preview --stack "${STACK}" --json || { e2e_show_log 11-preview-back; fail "preview failed"; }
  plan="$(jq -r '[.steps[]? | select(.op != "same") | "\(.op) \(.urn | split("::") | last)"] | sort | join(",")' \
    "${E2E_LOG_DIR}/11-preview-back.json")"
  # The failed update left the old URL in Pulumi's state (the engine keeps a failed update's old inputs).
  expect_eq "the plan with the old URL set back" "${plan}" ""
  up 11-up-back
  s11_probe "${old_label}" "with the old URL set back"
  # The refused URL again, refused, then the same config once the service takes it: the command runs again,
  # so a failed update must not have recorded the new value as done.
  s11_refused 11-up-refused-again
  receiver_mode ok
  up 11-up-retry
  host_exec h1 grep -qF "/B404/" /etc/hostguard/webhook.conf || fail "h1: the retried webhook was not put in place"
  since="$(date +%s.%N)"
  e2e_webhook "${STACK}" "${E2E_URL3}"
  up 11-up-good
  e2e_wait_message "${since}" 20 '^url3	\[Server Alert\] \\nConnectivity test from [^	]+: webhook OK(	.*)?$' >/dev/null
  host_exec h1 grep -qF "/B003/" /etc/hostguard/webhook.conf || fail "h1 webhook file not rotated to the good URL"
  export_state 11-export
}

# s11_refused LOG: the rotation to E2E_URL_REFUSED while the receiver answers 404 no_service fails the up,
# naming the answer and never the URL; the receiver is left answering ok.
s11_refused() {
  local log="$1"
  receiver_mode status 404 no_service
  e2e_webhook "${STACK}" "${E2E_URL_REFUSED}"
  if e2e_pulumi "${log}" up --stack "${STACK}" --yes --skip-preview; then
    receiver_mode ok
    e2e_show_log "${log}"
    fail "up succeeded with a webhook answering 404 no_service"
  fi
  receiver_mode ok
  printf '  up failed with:\n'
  e2e_log_lines "${log}" 'updating failed|refused' 120
  e2e_log_has "${log}" -E "h1-webhook .*updating failed" "the failure does not name h1-webhook"
  e2e_log_has "${log}" -F "HTTP 404 no_service" "the failure does not show the status and Slack's error text"
  if grep -qF -e "${RECEIVER_SENTINEL}" -e "/services/T000/" -e "$(lan_addr):${RECEIVER_PORT}" "${E2E_LOG_DIR}/${log}.log"; then
    fail "the failed up shows the webhook URL"
  fi
  if host_exec h1 grep -qF "/B404/" /etc/hostguard/webhook.conf; then
    fail "h1: the refused webhook was put in place"
  fi
}

# s11_probe LABEL WHEN: an alert sent on h1 now reaches the receiver's URL LABEL (url1, url2, url3).
s11_probe() {
  local since probe
  since="$(date +%s.%N)"
  probe="e2e old webhook probe ${RANDOM}"
  host_exec h1 "${INSTALL_DIR}/hostguard-notify" text "${probe}" >"${E2E_LOG_DIR}/11-notify.log" 2>&1 ||
    fail "hostguard-notify ${2}: $(cat "${E2E_LOG_DIR}/11-notify.log")"
  e2e_wait_message "${since}" 20 "^$1	${probe}$" >/dev/null || fail "the alert ${2} did not reach ${1}"
}

# Host settings converge (issue 41): the stack's appProperties emptied and nginxServerConf moved to another
# file in one up take the old edits out (nginx tested and reloaded), leave the old files as before hostguard,
# and the host as a fresh install of the new settings leaves it. Adds, and removes at its end, a Spring
# file /opt/app/config/application.properties and a second site /etc/nginx/conf.d/hg-e2e-other.conf (port 8081).
s19_settings_converge() {
  local addr props=/opt/app/config/application.properties other=/etc/nginx/conf.d/hg-e2e-other.conf
  local site=/etc/nginx/sites-available/default props_before other_before site_before converged
  local -a paths=(/etc/nginx /etc/hostguard /etc/cron.d /etc/fail2ban /etc/logrotate.d /opt/app)
  addr="$(host_addr h1)"
  host_exec h1 install -D -m 0644 /dev/stdin "${props}" <<<"server.port=8080"
  host_exec h1 install -m 0644 /dev/stdin "${other}" <<<'server { listen 8081; location / { return 200 "other\n"; } }'
  props_before="$(host_exec h1 sha256sum "${props}")"
  other_before="$(host_exec h1 sha256sum "${other}")"
  site_before="$(awk -v p="${site}" '$1 == p { print $6 }' "${E2E_WORK}/h1.before")"
  [[ -n "${site_before}" ]] || fail "no ${site} in the snapshot before the first up"
  e2e_pulumi 19-set-props config set --stack "${STACK}" hostguard:appProperties "${props}" || fail "config set appProperties"
  up 19-up-props
  host_exec h1 grep -qx -- '#---' "${props}" || fail "h1: no Spring document in ${props}"
  # One up: appProperties emptied, nginxServerConf moved.
  e2e_pulumi 19-rm-props config rm --stack "${STACK}" hostguard:appProperties || fail "config rm appProperties"
  e2e_pulumi 19-set-conf config set --stack "${STACK}" hostguard:nginxServerConf "${other}" || fail "config set nginxServerConf"
  assert_plan 19-preview "update h1-base,update h1-web"
  up 19-up-moved
  e2e_log_has 19-up-moved -F "removed the final document spring.web.resources.add-mappings=false from ${props}; restart the application to apply it" \
    "the up does not say the Spring document went and the app needs a restart"
  e2e_log_has 19-up-moved -F "removed the deny include from ${site}" "the up does not say the include left ${site}"
  e2e_log_has 19-up-moved -F "nginx configuration tested and reloaded" "the up does not say nginx was tested and reloaded"
  expect_eq "h1: ${props} after appProperties was emptied" "$(host_exec h1 sha256sum "${props}")" "${props_before}"
  expect_eq "h1: ${site} after nginxServerConf moved" "$(host_exec h1 sha256sum "${site}" | cut -d' ' -f1)" "${site_before}"
  host_exec h1 grep -q 'hostguard-deny.conf; # hostguard' "${other}" || fail "h1: no deny include in ${other}"
  # nginx was tested and reloaded: the deny rule moved from the default site to the other one.
  expect_eq "h1: GET :8081/.env" "$(http_code "http://${addr}:8081/.env")" 403
  expect_eq "h1: GET :80/.env" "$(http_code "http://${addr}/.env")" 404
  # Python's bytecode (fail2ban compiles the action) records its source's mtime: left out.
  converged="$(host_snapshot h1 "${paths[@]}" | grep -vF /__pycache__/)"
  # A fresh install of the new settings: destroy (the host as before, but the two files the scenario added),
  # then up.
  e2e_pulumi 19-destroy destroy --stack "${STACK}" --yes || { e2e_show_log 19-destroy; fail "destroy failed"; }
  expect_eq "h1: ${other} after destroy" "$(host_exec h1 sha256sum "${other}")" "${other_before}"
  expect_eq "h1 after destroy, but the two added files" "$(host_snapshot h1 | grep -vF "${other} ")" \
    "$(cat "${E2E_WORK}/h1.before")"
  up 19-up-fresh
  if [[ "$(host_snapshot h1 "${paths[@]}" | grep -vF /__pycache__/)" != "${converged}" ]]; then
    diff <(echo "${converged}") <(host_snapshot h1 "${paths[@]}" | grep -vF /__pycache__/) | sed 's/^/    /' >&2 || true
    fail "h1 after the converging up differs from a fresh install of the same settings"
  fi
  # Back to the stack's settings of the other scenarios; the added files go.
  e2e_pulumi 19-set-back config set --stack "${STACK}" hostguard:nginxServerConf "${site/sites-available/sites-enabled}" ||
    fail "config set nginxServerConf back"
  up 19-up-back
  expect_eq "h1: ${other} with nginxServerConf set back" "$(host_exec h1 sha256sum "${other}")" "${other_before}"
  host_exec h1 rm -rf /opt/app/config "${other}"
  host_exec h1 service nginx reload >/dev/null
  assert_deny h1
}

# Each monitor run that completed pings the heartbeat URL once (a GET the
# receiver records in its request log only).
s12_heartbeat() {
  local since runs=3 i got
  printf '%s' "${E2E_HEARTBEAT_URL}" |
    e2e_pulumi "12-set-heartbeat" config set --stack "${STACK}" --secret hostguard:heartbeatUrl ||
    { e2e_show_log 12-set-heartbeat; fail "config set heartbeatUrl failed"; }
  assert_plan 12-preview "create h1-heartbeat"
  up 12-up
  expect_eq "h1: heartbeat.conf" "$(host_exec h1 stat -c '%a %U:%G' /etc/hostguard/heartbeat.conf)" "600 root:root"
  since="$(date +%s.%N)"
  for ((i = 1; i <= runs; i++)); do
    host_exec h1 "${INSTALL_DIR}/host-monitor" >"${E2E_LOG_DIR}/12-host-monitor-${i}.log" 2>&1 ||
      fail "host-monitor run ${i} exited non-zero: $(cat "${E2E_LOG_DIR}/12-host-monitor-${i}.log")"
    got="$(heartbeats_since "${since}")"
    expect_eq "heartbeat requests after monitor run ${i}" "${got}" "${i}"
  done
  export_state 12-export
}

# A host whose fail2ban was removed (programs hidden, daemon stopped, its
# /etc config kept, as a package removal leaves it). install refuses the bantool
# part before writing anything, so the up fails naming fail2ban-client and
# its package, and /etc/fail2ban stays byte for byte as it was. Each part is
# its own install run (docs/host.md): base, the webhook, monitors and
# web have their programs and are installed, so the host is monitored and
# the deny rule answers. With fail2ban back, the next up installs the jail;
# destroy leaves the host as before the first up.
s14_missing_program() {
  local name=h14 stack=nofail2ban log=14-up-no-fail2ban f2b_before path
  host_up "${name}" 14
  e2e_host_prepare "${name}"
  # Debian 12's stock fail2ban did not start (no auth.log); stopped in case it did.
  if host_exec "${name}" fail2ban-client ping >/dev/null 2>&1; then
    host_exec "${name}" timeout 30 service fail2ban stop >/dev/null 2>&1 3>&- || fail "${name}: fail2ban stop"
  fi
  host_hide_package "${name}" fail2ban
  host_exec "${name}" test ! -e /usr/bin/fail2ban-client || fail "${name}: fail2ban-client still there"
  host_snapshot "${name}" >"${E2E_WORK}/${name}.before"
  f2b_before="$(host_snapshot "${name}" /etc/fail2ban)"
  quiet_minute_for "${name}"
  e2e_stack "${stack}" "" "${name}:${MINUTE}"
  if e2e_pulumi "${log}" up --stack "${stack}" --yes --skip-preview; then
    e2e_show_log "${log}"
    fail "up succeeded on a host without fail2ban"
  fi
  printf '  up failed with:\n'
  e2e_log_lines "${log}" 'creating failed|needs|refused' 160
  e2e_log_has "${log}" -E "${name}-bantool .*creating failed" "the failure does not name ${name}-bantool"
  e2e_log_has "${log}" -F "part bantool needs fail2ban-client for the nginx-bad-request jail: not installed" \
    "the failure does not name fail2ban-client"
  e2e_log_has "${log}" -F "Debian/Ubuntu package: fail2ban" "the failure does not name the package"
  # Nothing of the refused part: no jail, filter or action, no manifest.
  expect_eq "${name}: /etc/fail2ban after the refused part" "$(host_snapshot "${name}" /etc/fail2ban)" "${f2b_before}"
  host_exec "${name}" test ! -e /var/lib/hostguard/install-bantool.manifest || fail "${name}: a bantool manifest was written"
  # The other parts, as documented: installed.
  for path in "${INSTALL_DIR}/install" /etc/hostguard/webhook.conf /etc/cron.d/hostguard /etc/nginx/snippets/hostguard-deny.conf; do
    host_exec "${name}" test -f "${path}" || fail "${name}: ${path} (a part with its programs) not installed"
  done
  assert_deny "${name}"
  # fail2ban installed again (not running: Debian 12's stock sshd jail has no
  # auth.log): the next up adds the jail and starts fail2ban.
  host_unhide_package "${name}"
  up 14-up-fail2ban-back "${stack}"
  assert_installed "${name}"
  assert_jail "${name}"
  e2e_pulumi 14-destroy destroy --stack "${stack}" --yes || { e2e_show_log 14-destroy; fail "destroy failed"; }
  assert_snapshot_restored "${name}"
  host_down "${name}"
}

# --- scenario 20: Debian 12 as its packages leave it ---------------------------------

# The sshd jail's banned addresses on host NAME.
sshd_banned() {
  host_exec "$1" fail2ban-client status sshd 2>/dev/null | sed -n 's/^.*Banned IP list:[[:space:]]*//p'
}

# One SSH password guess from client NAME at ADDR, as a bot makes it: an
# invalid user, one wrong password (through SSH_ASKPASS: no terminal).
ssh_guess() {
  local name="$1" addr="$2" askpass="${E2E_WORK}/askpass"
  [[ -x "${askpass}" ]] || printf '#!/bin/sh\necho wrong-password\n' | install -m 0700 /dev/stdin "${askpass}"
  # Bounded: once the jail bans the client mid-session its packets are dropped and ssh would wait for ever.
  client_exec "${name}" env -i PATH="${PATH}" SSH_ASKPASS="${askpass}" SSH_ASKPASS_REQUIRE=force DISPLAY=none \
    timeout 20 ssh -F /dev/null -o BatchMode=no -o PreferredAuthentications=password -o PubkeyAuthentication=no \
    -o NumberOfPasswordPrompts=1 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o ConnectTimeout=5 -o LogLevel=ERROR "guess@${addr}" true </dev/null >/dev/null 2>&1 || true
}

# Issue 40: a host as Debian 12's packages leave it (test/e2e/lib/README.md):
# no rsyslog, so no /var/log/auth.log, and fail2ban's stock sshd jail on
# that file, so fail2ban does not start. The up installs every part (the
# bantool part makes the stock sshd jail read the journal, recorded), and
# starts fail2ban; hostguard's jail bans a scanner, the user's sshd jail
# bans a client's password guesses read from the journal; destroy leaves
# /etc/fail2ban byte for byte as before and the host as before the up.
s20_stock_debian12() {
  local name=h20 stack=stock addr scanner guesser since out f2b_before i code
  host_up "${name}" 20
  client_up c20 20
  client_up c21 21
  e2e_host_prepare "${name}"
  addr="$(host_addr "${name}")"
  scanner="$(client_addr c20)"
  guesser="$(client_addr c21)"
  host_exec "${name}" test ! -e /var/log/auth.log || fail "${name} has /var/log/auth.log"
  if host_exec "${name}" fail2ban-client ping >/dev/null 2>&1; then
    fail "${name}: fail2ban runs before the up (not Debian 12's stock configuration)"
  fi
  out="$(host_exec "${name}" fail2ban-client -t 2>&1)" && fail "${name}: fail2ban-client -t passes before the up"
  grep -qF "Have not found any log file for sshd jail" <<<"${out}" || fail "${name}: fail2ban-client -t: ${out}"
  host_snapshot "${name}" >"${E2E_WORK}/${name}.before"
  f2b_before="$(host_snapshot "${name}" /etc/fail2ban)"
  quiet_minute_for "${name}"
  e2e_stack "${stack}" "  hostguard:banBanTime: ${BANTIME_S}s
" "${name}:${MINUTE}"
  since="$(date +%s.%N)"
  up 20-up "${stack}"
  e2e_log_has 20-up -F "placing /etc/fail2ban/jail.d/00-hostguard-sshd-journal.conf" "the up does not say it makes the sshd jail read the journal"
  assert_installed "${name}"
  assert_jail "${name}"
  out="$(host_exec "${name}" fail2ban-client status sshd 2>&1)" || fail "${name}: no sshd jail: ${out}"
  grep -qF "Journal matches:" <<<"${out}" || fail "${name}: the sshd jail does not read the journal: ${out}"
  e2e_wait_message "${since}" 20 "^url1	Ban tool \(${JAIL}\) jail has started	#alerts$" >/dev/null

  # hostguard's jail: a scanner's denied requests (the first a probe, as in scenario 3).
  local failed_before
  failed_before="$(jail_total_failed "${name}")"
  for ((i = 1; i <= 10; i++)); do
    code="$(client_curl c20 -o /dev/null -w '%{http_code}' "http://${addr}/.env?n=${i}" 2>/dev/null || true)"
    expect_eq "request ${i} from c20" "${code}" 403
    ((i > 1)) || wait_jail_counted "${name}" "${failed_before}"
  done
  e2e_wait_message "${since}" 30 "^url1	Ban Alert\(${JAIL}\)\\\\n Banned IP: \*${scanner//./\\.}\*" >/dev/null
  expect_eq "c20 while banned" "$(client_curl c20 -o /dev/null -w '%{http_code}' "http://${addr}/" 2>/dev/null || true)" 000

  # The user's own sshd jail: password guesses, read from the journal.
  for ((i = 1; i <= 10; i++)); do
    [[ " $(sshd_banned "${name}") " == *" ${guesser} "* ]] && break
    ssh_guess c21 "${addr}"
  done
  for ((i = 0; i < 40; i++)); do
    [[ " $(sshd_banned "${name}") " == *" ${guesser} "* ]] && break
    sleep 0.5
  done
  [[ " $(sshd_banned "${name}") " == *" ${guesser} "* ]] ||
    fail "${name}: ${guesser} not banned by the sshd jail: $(host_exec "${name}" fail2ban-client status sshd); sshd: $(host_sshd_log "${name}" | tail -n 8)"
  host_sshd_log "${name}" | grep -q "Failed password for invalid user guess from ${guesser//./\.} " ||
    fail "${name}: no failed password of ${guesser} in sshd's journal"
  if client_exec c21 timeout 5 bash -c "exec 3<>/dev/tcp/${addr}/22" 2>/dev/null; then
    fail "${name}: c21 still reaches sshd after its ban"
  fi
  expect_eq "ssh from the root namespace while c21 is banned" "$(host_ssh "${name}" id -u)" 0

  e2e_pulumi 20-destroy destroy --stack "${stack}" --yes || { e2e_show_log 20-destroy; fail "destroy failed"; }
  e2e_log_has 20-destroy -F "fail2ban not reloaded" "destroy does not say the stock configuration fails fail2ban's test again"
  expect_eq "${name}: /etc/fail2ban after destroy" "$(host_snapshot "${name}" /etc/fail2ban)" "${f2b_before}"
  assert_snapshot_restored "${name}"
  host_down "${name}"
  client_down c20
  client_down c21
}

# --- scenario 15: a host behind a trusted proxy ------------------------------------

# The load balancer: a second nginx in client namespace NAME (the machine's
# nginx binary, everything else under DIR), on port 8080 of the client's
# address, passing to UPSTREAM with X-Forwarded-For added and connecting from
# its own address; waits (at most 10 s) until it answers.
proxy_nginx_start() {
  local name="$1" dir="$2" upstream="$3" addr i
  addr="$(client_addr "${name}")"
  mkdir -p "${dir}/tmp" "${dir}/logs"
  cat >"${dir}/nginx.conf" <<CONF
$(nginx_sandbox_main "${dir}")
http {
$(nginx_sandbox_http_head "${dir}" "${dir}/logs/access.log")
    server {
        listen ${addr}:8080;
        location / {
            proxy_pass http://${upstream};
            proxy_bind ${addr};
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_connect_timeout 2s;
        }
    }
}
CONF
  client_exec "${name}" nginx -p "${dir}" -c "${dir}/nginx.conf" -e "${dir}/logs/error.log" ||
    fail "the proxy's nginx did not start: $(tail -n 5 "${dir}/logs/error.log" 2>/dev/null)"
  for ((i = 0; i < 50; i++)); do
    client_exec "${name}" curl -s -o /dev/null --max-time 1 "http://${addr}:8080/" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "the proxy's nginx does not answer on ${addr}:8080: $(tail -n 5 "${dir}/logs/error.log")"
}

# HTTP status of a request from client NAME through the proxy at PROXY ("000": no answer).
via_proxy() {
  local name="$1" proxy="$2" path="$3"
  client_curl "${name}" -o /dev/null -w '%{http_code}' "http://${proxy}:8080${path}" 2>/dev/null || true
}

# Polls (every 0.2 s, at most SECS) until client NAME gets WANT through the proxy.
wait_via_proxy() {
  local secs="$1" want="$2" name="$3" proxy="$4" path="$5" i code=""
  for ((i = 0; i < secs * 5; i++)); do
    code="$(via_proxy "${name}" "${proxy}" "${path}")"
    [[ "${code}" == "${want}" ]] && return 0
    sleep 0.2
  done
  fail "${name} through the proxy: ${code}, not ${want} within ${secs} s"
}

# Issue 25: with hostguard:trustedProxies set to the proxy's address, the
# host's nginx logs the client behind the proxy (realip drop-in), the jail
# never counts the proxy (ignoreip), and a ban also lands in nginx's ban list
# (hostguard-nginx-ban), since the firewall cannot tell the scanner's
# packets from the other client's: both come from the proxy.
s15_trusted_proxy() {
  local name=h15 stack=proxied since addr proxy scanner other i code ban banned seen
  host_up "${name}" 15
  e2e_host_prepare "${name}"
  host_snapshot "${name}" >"${E2E_WORK}/${name}.before"
  client_up p15 15
  client_up c16 16
  client_up c17 17
  addr="$(host_addr "${name}")"
  proxy="$(client_addr p15)"
  scanner="$(client_addr c16)"
  other="$(client_addr c17)"
  proxy_nginx_start p15 "${E2E_WORK}/proxy-nginx" "${addr}:80"
  quiet_minute_for "${name}"
  e2e_stack "${stack}" "  hostguard:trustedProxies:
    - ${proxy}/32
" "${name}:${MINUTE}"
  since="$(date +%s.%N)"
  up 15-up "${stack}"
  assert_installed "${name}"
  assert_jail "${name}"
  e2e_wait_message "${since}" 30 "^url1	Ban tool \(${JAIL}\) jail has started	#alerts$" >/dev/null
  host_exec "${name}" grep -qx "set_real_ip_from ${proxy}/32;" /etc/nginx/conf.d/hostguard-realip.conf ||
    fail "${name}: no set_real_ip_from ${proxy}/32 in the realip drop-in"
  host_exec "${name}" grep -qE "^ignoreip *=.* ${proxy}/32( |$)" /etc/fail2ban/jail.d/hostguard-nginx-bad-request.local ||
    fail "${name}: the proxy is not in the jail's ignoreip"
  # nginx logs the client behind the proxy, never the proxy (the lines
  # before are the proxy's own start-up check, before the drop-in).
  seen="$(host_exec "${name}" grep -c '' /var/log/nginx/access.log || true)"
  expect_eq "c17 through the proxy" "$(via_proxy c17 "${proxy}" /)" 200
  expect_eq "c16 through the proxy before the scan" "$(via_proxy c16 "${proxy}" /)" 200
  expect_eq "the access log's new lines, by client" \
    "$(host_exec "${name}" tail -n "+$((seen + 1))" /var/log/nginx/access.log | cut -d' ' -f1 | paste -sd' ')" "${other} ${scanner}"

  # As in scenario 3: the first denied request is a probe; the other nine go
  # once the jail has counted it.
  local failed_before
  failed_before="$(jail_total_failed "${name}")"
  for ((i = 1; i <= 10; i++)); do
    expect_eq "request ${i} from c16 through the proxy" "$(via_proxy c16 "${proxy}" "/.env?n=${i}")" 403
    ((i > 1)) || wait_jail_counted "${name}" "${failed_before}"
  done
  ban="$(e2e_wait_message "${since}" 30 "^url1	Ban Alert\(${JAIL}\)\\\\n Banned IP: \*${scanner//./\\.}\*\\\\n Failures: [0-9]+ failure\(s\)\\\\n Timestap: [0-9]+$")"
  printf '  %s\n' "${ban#*	}"
  # Refused by nginx through the proxy, on the page the other client gets.
  wait_via_proxy 20 403 c16 "${proxy}" /
  expect_eq "c17 through the proxy while c16 is banned" "$(via_proxy c17 "${proxy}" /)" 200
  host_exec "${name}" grep -qx "${scanner} 1;" /var/lib/hostguard/nginx-bans.map || fail "${name}: the scanner is not in nginx's ban list"
  # The scanner's own connections are dropped by the firewall; the proxy is never banned.
  code="$(client_curl c16 -o /dev/null -w '%{http_code}' --max-time 3 "http://${addr}/" 2>/dev/null || true)"
  expect_eq "c16 straight to the host while banned" "${code}" 000
  banned="$(host_exec "${name}" fail2ban-client status "${JAIL}" | sed -n 's/^.*Banned IP list:[[:space:]]*//p')"
  expect_eq "banned addresses" "${banned}" "${scanner}"

  # Unban restores both.
  since="$(date +%s.%N)"
  host_exec "${name}" fail2ban-client set "${JAIL}" unbanip "${scanner}" >/dev/null || fail "unbanip failed"
  wait_via_proxy 20 200 c16 "${proxy}" /
  e2e_wait_message "${since}" 30 "^url1	Ban Alert\(${JAIL}\)\\\\n Unbanned IP: \*${scanner//./\\.}\*$" >/dev/null

  e2e_pulumi 15-destroy destroy --stack "${stack}" --yes || { e2e_show_log 15-destroy; fail "destroy failed"; }
  assert_snapshot_restored "${name}"
  client_down p15
  client_down c16
  client_down c17
  host_down "${name}"
}

# --- scenario 13: AWS adopt mode against moto ---------------------------------

MOTO_PID=""

moto_ec2() {
  (cd "${E2E_REPO_ROOT}" && node --import tsx test/e2e/lib/moto-ec2.ts "$@")
}

# moto's EC2 API on a free loopback port, a child of the scenario, and the
# SDK's standard settings pointing at it (the CLI passes its environment to
# the dynamic provider). The secret key is a sentinel that must appear nowhere.
moto_start() {
  local venv port i
  venv="${HOSTGUARD_MOTO_VENV:-${XDG_CACHE_HOME:-${HOME}/.cache}/hostguard/moto-venv}"
  [[ -x "${venv}/bin/moto_server" ]] || fail "no moto_server in ${venv} (source tools/setup.bash && hg_setup_moto)"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "${venv}/bin/moto_server" -H 127.0.0.1 -p "${port}" >"${E2E_LOG_DIR}/13-moto.log" 2>&1 &
  MOTO_PID=$!
  for ((i = 0; i < 300; i++)); do
    curl -sS -o /dev/null --max-time 1 "http://127.0.0.1:${port}/moto-api/" 2>/dev/null && break
    sleep 0.1
  done
  ((i < 300)) || fail "moto_server did not answer on port ${port}: $(cat "${E2E_LOG_DIR}/13-moto.log")"
  export AWS_ENDPOINT_URL="http://127.0.0.1:${port}" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=e2e
  AWS_SECRET_ACCESS_KEY="e2e-moto-secret-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
  export AWS_SECRET_ACCESS_KEY
  export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
}

moto_stop() {
  [[ -n "${MOTO_PID}" ]] || return 0
  kill "${MOTO_PID}" 2>/dev/null || true
  wait "${MOTO_PID}" 2>/dev/null || true
  MOTO_PID=""
}

expect_rules() {
  local what="$1" group="$2" want="$3" got
  got="$(moto_ec2 ingress "${group}")"
  [[ "${got}" == "${want}" ]] && return 0
  diff <(echo "${want}") <(echo "${got}") | sed 's/^/    /' >&2 || true
  fail "${what}: the group's inbound rules are not as wanted"
}

# A fault-injecting proxy in front of moto (test/aws/faultProxy.ts): every
# FAIL action is answered with RequestLimitExceeded once an AFTER action went
# through; with AFTER "hold", the first change is forwarded and never answered
# ("held ACTION" in its output). Prints nothing; sets FAULT_PID and FAULT_ENDPOINT.
FAULT_PID=""
FAULT_ENDPOINT=""
fault_proxy_start() {
  local out="${E2E_LOG_DIR}/13-fault-proxy.out" i
  # The file exists before the loop reads it (the job's redirection may come later).
  : >"${out}"
  # exec: the background job is node itself, so that killing FAULT_PID stops the proxy.
  (cd "${E2E_REPO_ROOT}" && exec node --import tsx test/e2e/lib/moto-ec2.ts fault-proxy "${AWS_ENDPOINT_URL}" "$1" "${2:-}") >"${out}" 2>&1 &
  FAULT_PID=$!
  # Starting node with tsx takes 15 s and more on a loaded machine: wait up to 120 s. The file
  # may not exist yet (the background job makes it), which is no failure of the loop.
  for ((i = 0; i < 1200; i++)); do
    FAULT_ENDPOINT="$(head -n1 "${out}" 2>/dev/null || true)"
    [[ "${FAULT_ENDPOINT}" == http://* ]] && return 0
    sleep 0.1
  done
  fail "the fault proxy did not start within 120 s: $(cat "${out}" 2>/dev/null)"
}

fault_proxy_stop() {
  [[ -n "${FAULT_PID}" ]] || return 0
  kill "${FAULT_PID}" 2>/dev/null || true
  wait "${FAULT_PID}" 2>/dev/null || true
  FAULT_PID=""
}

s13_aws_adopt() {
  local vpc group other instance wizard web80 eni2 before wanted admin log types original
  trap 'fault_proxy_stop; moto_stop' EXIT
  moto_start
  read -r vpc group other instance wizard web80 eni2 <<<"$(moto_ec2 setup)"
  before="$(moto_ec2 snapshot "${group}")"
  grep -qx 'in -1 all 0.0.0.0/0 "allow all"' <<<"${before}" || fail "the group has no allow-all rule to begin with: ${before}"
  host_up h5 5
  e2e_host_prepare h5
  host_snapshot h5 >"${E2E_WORK}/h5.before"
  admin="${HG_NET}.0.0/16"
  wanted="$(moto_ec2 wanted "${admin}")"
  quiet_minute_for h5
  e2e_stack "${AWS_STACK}" "  hostguard:aws: \"true\"
  hostguard:vpcId: ${vpc}
  hostguard:securityGroupId: ${group}
  hostguard:adminCidrs:
    - ${admin}
  hostguard:banBanTime: ${BANTIME_S}s
  aws:region: us-east-1
" "h5:${MINUTE}"

  # The group is on an instance outside the stack: preview refuses, naming it.
  if e2e_pulumi 13-preview-shared preview --stack "${AWS_STACK}"; then
    fail "preview accepted a group that instance ${other} outside the stack carries"
  fi
  if ! grep -qF "instance ${other}" "${E2E_LOG_DIR}/13-preview-shared.log" ||
    ! grep -qF "hostguard:sharedSecurityGroupInstances" "${E2E_LOG_DIR}/13-preview-shared.log"; then
    e2e_show_log 13-preview-shared
    fail "the refusal does not name the instance and the opt-in key"
  fi
  expect_eq "the group after the refused preview" "$(moto_ec2 snapshot "${group}")" "${before}"
  e2e_pulumi 13-opt-in config set --stack "${AWS_STACK}" --path "hostguard:sharedSecurityGroupInstances[0]" "${other}" || fail "config set opt-in"

  # Issue 24: the host's instance has an allow-all group beside the adopted one and a
  # port-80 group on a secondary interface with an Elastic IP. Preview reads every group
  # on every interface and refuses, naming each; the user's fix lets it pass.
  e2e_pulumi 13-instance config set --stack "${AWS_STACK}" --path "hostguard:hosts[0].instanceId" "${instance}" || fail "config set instanceId"
  if e2e_pulumi 13-preview-host preview --stack "${AWS_STACK}"; then
    fail "preview accepted an instance with an allow-all group beside the adopted one"
  fi
  for want in "group ${wizard} on interface" "lets in all traffic from 0.0.0.0/0" "group ${web80} on interface ${eni2}" "lets in tcp 80 from 0.0.0.0/0"; do
    e2e_log_has 13-preview-host -F "${want}" "the whole-host refusal does not name: ${want}"
  done
  expect_eq "the group after the refused preview" "$(moto_ec2 snapshot "${group}")" "${before}"
  moto_ec2 close-host "${instance}" "${group}"

  # Issue 33: `pulumi up` killed with SIGKILL right after its first EC2 change (the proxy
  # forwards it and holds the answer), as a CI job cancelled past its grace period: the
  # record of the group's rules was in the state before that change was sent. The CLI and
  # every process it started are killed (lib/ec2-killed.sh).
  fault_proxy_start hold
  ek_up_killed "${E2E_PROJECT_DIR}" "${AWS_STACK}" 13-up-killed
  fault_proxy_stop
  [[ "$(moto_ec2 snapshot "${group}")" != "${before}" ]] || fail "the killed up's first change did not reach EC2"
  # The file backend's lock of the killed CLI, removed as a user would.
  e2e_pulumi 13-cancel cancel --stack "${AWS_STACK}" --yes || true
  export_state 13-export-killed "${AWS_STACK}"
  expect_eq "rules recorded before the killed up's first change" \
    "$(jq -r '[.deployment.resources[] | select(.inputs.kind == "hostguard:adopted-group-record") | .outputs.original | length] | join(",")' \
      "${E2E_LOG_DIR}/13-export-killed.json")" "$(grep -c '^in ' <<<"${before}")"
  expect_eq "the enforcing resource was still pending when killed" \
    "$(jq -r '[.deployment.resources[] | select(.inputs.kind == "hostguard:adopted-group-ingress")] | length' "${E2E_LOG_DIR}/13-export-killed.json")" "0"

  # One up through a proxy that throttles every read-back after the first revoke (the
  # killed up's authorize already reached EC2, so this up only revokes): the up fails, and
  # the state still holds the group's original rules.
  fault_proxy_start RevokeSecurityGroupIngress DescribeSecurityGroups
  if (export AWS_ENDPOINT_URL="${FAULT_ENDPOINT}" AWS_MAX_ATTEMPTS=2 HOSTGUARD_READBACK_TRIES=2 &&
    e2e_pulumi 13-up-throttled up --stack "${AWS_STACK}" --yes --skip-preview); then
    fail "the up through the throttling proxy succeeded"
  fi
  fault_proxy_stop
  e2e_log_has 13-up-throttled -F "RequestLimitExceeded" "the throttled up does not name the throttling"
  export_state 13-export-throttled "${AWS_STACK}"
  original="$(jq -r '[.deployment.resources[] | select(.inputs.kind == "hostguard:adopted-group-ingress") | .outputs.original | length] | join(",")' \
    "${E2E_LOG_DIR}/13-export-throttled.json")"
  expect_eq "original rules kept in the state after the failed up" "${original}" "$(grep -c '^in ' <<<"${before}")"

  up 13-up "${AWS_STACK}"
  expect_rules "after up" "${group}" "${wanted}"
  assert_installed h5
  export_state 13-export "${AWS_STACK}"
  # Only the dynamic resources talk to EC2: no @pulumi/aws resource, provider or invoke.
  types="$(jq -r '[.deployment.resources[].type] | unique | join(",")' "${E2E_LOG_DIR}/13-export.json")"
  if grep -qE '(^|,)(aws:|pulumi:providers:aws)' <<<"${types}"; then
    fail "the adopt-mode stack holds @pulumi/aws resources: ${types}"
  fi
  expect_eq "hostguard's dynamic resources" \
    "$(jq -r '[.deployment.resources[] | select(.type == "pulumi-nodejs:dynamic:Resource") | .inputs.kind] | sort | join(",")' "${E2E_LOG_DIR}/13-export.json")" \
    "hostguard:adopted-group-ingress,hostguard:adopted-group-record"

  # A rule added by hand: preview --refresh shows it, up --refresh removes it.
  moto_ec2 add-rule "${group}"
  log=13-preview-refresh
  e2e_pulumi "${log}" preview --refresh --diff --stack "${AWS_STACK}" || { e2e_show_log "${log}"; fail "preview --refresh failed"; }
  # The refresh's diff of the rules read from EC2: the hand-added one as one added key.
  if ! grep -qE '^ +\+ tcp\|3306-3306\|cidr4\|0\.0\.0\.0/0 +: \{' "${E2E_LOG_DIR}/${log}.log" ||
    ! grep -qF '+ description: "added by hand"' "${E2E_LOG_DIR}/${log}.log"; then
    e2e_show_log "${log}" 80
    fail "preview --refresh does not show the rule added by hand"
  fi
  # The --diff view: a step line `~ TYPE: (update)`, then its id and URN.
  grep -A2 -F ': (update)' "${E2E_LOG_DIR}/${log}.log" | grep -qF '::hostguard-ingress]' ||
    { e2e_show_log "${log}" 80; fail "preview --refresh plans no update of hostguard-ingress"; }
  expect_rules "after preview --refresh (changes nothing)" "${group}" "$(sort <<<"${wanted}"$'\n''tcp 3306-3306 0.0.0.0/0 "added by hand"')"
  e2e_pulumi 13-up-refresh up --refresh --stack "${AWS_STACK}" --yes --skip-preview || { e2e_show_log 13-up-refresh; fail "up --refresh failed"; }
  expect_rules "after up --refresh" "${group}" "${wanted}"
  e2e_pulumi 13-preview-clean preview --refresh --expect-no-changes --stack "${AWS_STACK}" || { e2e_show_log 13-preview-clean; fail "not converged after up --refresh"; }

  # The host's instance is terminated before destroy: refresh and destroy still work.
  moto_ec2 terminate "${instance}"
  e2e_pulumi 13-refresh-terminated refresh --stack "${AWS_STACK}" --yes --skip-preview || { e2e_show_log 13-refresh-terminated; fail "refresh after the instance was terminated failed"; }
  e2e_pulumi 13-destroy destroy --stack "${AWS_STACK}" --yes || { e2e_show_log 13-destroy; fail "destroy failed"; }
  expect_eq "the group after destroy" "$(moto_ec2 snapshot "${group}")" "${before}"
  assert_snapshot_restored h5
  if grep -rlF "${AWS_SECRET_ACCESS_KEY}" "${E2E_LOG_DIR}" "${E2E_WORK}/state" "${E2E_PROJECT_DIR}"/Pulumi.*.yaml 2>/dev/null; then
    fail "the AWS secret key appears in the files above"
  fi
}

# POSTs answered 404 since EPOCH (the connectivity test the receiver refused).
refusals_since() {
  jq -s --argjson since "$1" '[.[] | select(.time > $since and .method == null and .status == 404)] | length' \
    "${RECEIVER_REQUESTS}"
}

# GET requests with status 200 on the heartbeat path since EPOCH (the path
# is matched by its tail, so the URL stays out of argv).
heartbeats_since() {
  jq -s --argjson since "$1" \
    '[.[] | select(.time > $since and .method == "GET" and .status == 200 and (.path | endswith("-heartbeat")))] | length' \
    "${RECEIVER_REQUESTS}"
}

# --- setup ------------------------------------------------------------------------

setup() {
  e2e_work_dir hg-e2e-stack
  hosts_init
  echo "run ${HG_RUN_ID}, network ${HG_NET}.0.0/16, work dir ${E2E_WORK}"
  host_up h1 1
  client_up c1 1
  e2e_receiver_start
  E2E_URL2="https://$(lan_addr):${RECEIVER_PORT}/services/T000/B001/${RECEIVER_SENTINEL}-rotated"
  E2E_URL3="https://$(lan_addr):${RECEIVER_PORT}/services/T000/B003/${RECEIVER_SENTINEL}-verified"
  E2E_URL_REFUSED="https://$(lan_addr):${RECEIVER_PORT}/services/T000/B404/${RECEIVER_SENTINEL}-refused"
  E2E_HEARTBEAT_URL="https://$(lan_addr):${RECEIVER_PORT}/ping/${RECEIVER_SENTINEL}-heartbeat"
  e2e_host_prepare h1
  host_snapshot h1 >"${E2E_WORK}/h1.before"
  e2e_project_init "${E2E_WORK}"
  quiet_minute_for h1
  e2e_stack "${STACK}" "  hostguard:banBanTime: ${BANTIME_S}s
" "h1:${MINUTE}"
  printf 'engine: pulumi %s, node %s; cron minute %s\n' "$(pulumi version)" "$(node --version)" "${MINUTE}"
}

main() {
  E2E_ONLY="${*:-${HG_E2E_ONLY:-}}"
  if [[ "$(hg_e2e_os)" == debian13 ]]; then
    E2E_ONLY="${E2E_ONLY:-${DEBIAN13_SCENARIOS}}"
  fi
  e2e_require_root "npm run test:e2e" "the test hosts need network and mount namespaces"
  e2e_require_engine "npm run test:e2e"
  setup
  scenario 1 s1_install
  scenario 4 s4_no_changes 1
  scenario 5 s5_rotation 1
  scenario 6 s6_edit_script 1
  scenario 2 s2_thresholds 1
  scenario 3 s3_ban 1
  scenario 10 s10_sshd_killed 1
  scenario 11 s11_verify_webhook 1
  scenario 12 s12_heartbeat 1
  scenario 19 s19_settings_converge 1
  scenario 7 s7_destroy 1
  scenario 8 s8_fleet
  scenario 13 s13_aws_adopt
  scenario 9 s9_no_secret
  scenario 14 s14_missing_program
  scenario 15 s15_trusted_proxy
  scenario 16 s16_fleet_ssm
  scenario 17 qs_scenario
  scenario 18 ek_scenario
  scenario 20 s20_stock_debian12
  e2e_summary
}

main "$@"
