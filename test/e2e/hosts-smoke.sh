#!/usr/bin/env bash
# Self-test of the disposable test hosts (test/e2e/lib/hosts.sh): brings up
# two hosts and a client, proves SSH with strict host keys, private
# filesystems, nginx, fail2ban as Debian 12 leaves it (not started: no
# auth.log), sshd's lines in the journal, cron, the lan-side HTTPS receiver and a ban
# that drops one client on one host only, then tears everything down and
# proves nothing is left. Prints each step with its time (lib/runner.sh);
# exits 1 on failure.
#
# Reads: nothing but the machine's packages; needs root. Uses
# test/helpers/test-ca.sh and webhook-receiver.py through
# test/helpers/receiver.bash.
set -euo pipefail
umask 077

# shellcheck source=lib/runner.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/runner.sh"

readonly JAIL=nginx-http-auth
E2E_TITLES=(
  [1]="host_up h1 1"
  "host_up h2 2"
  "client_up c1 1"
  "host_up again is a no-op; another index is refused"
  "ssh as root with the key, strict host key checking"
  "file written over ssh stays in h1's private view"
  "host_snapshot is stable and hashes files"
  "nginx answers on each host"
  "stock fail2ban does not start (no auth.log); sshd logs to the journal; cron runs"
  "receiver starts in the lan namespace"
  "h1 reaches the HTTPS receiver in the lan namespace"
  "ban on h1 drops the client there only; unban restores"
  "cron runs a job from the host's own /etc/cron.d"
  "host_kill_sshd / host_start_sshd"
  "teardown leaves no namespace, mount, process or file"
)
PROBE="probe-$$-${RANDOM}"
declare -a NS_INODES=()

http_code() {
  client_curl c1 -o /dev/null -w '%{http_code}' "http://$(host_addr "$1")/" 2>/dev/null || true
}

t_host1_up() { host_up h1 1; }
t_host2_up() { host_up h2 2; }
t_client_up() { client_up c1 1; }

t_idempotent() {
  local pid
  pid="$(host_pid h1)"
  host_up h1 1
  expect_eq "init pid after second host_up" "$(host_pid h1)" "${pid}"
  if host_up h1 7 2>/dev/null; then
    fail "host_up with another index should fail"
  fi
}

t_ssh_strict() {
  local kh="${HG_RUN_DIR}/smoke_known_hosts" name out
  for name in h1 h2; do
    host_known_hosts_line "${name}" >"${kh}"
    out="$(ssh -F /dev/null -i "$(host_ssh_key)" -o IdentitiesOnly=yes -o BatchMode=yes \
      -o StrictHostKeyChecking=yes -o UserKnownHostsFile="${kh}" -o ConnectTimeout=5 \
      "root@$(host_addr "${name}")" id -u)"
    expect_eq "id -u over ssh on ${name}" "${out}" 0
    expect_eq "hostname over ssh on ${name}" "$(host_ssh "${name}" hostname)" "${name}"
  done
  # h1's key must not vouch for h2: strict checking is real.
  host_known_hosts_line h1 | sed "s/^[^ ]*/$(host_addr h2)/" >"${kh}"
  if ssh -F /dev/null -i "$(host_ssh_key)" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="${kh}" -o ConnectTimeout=5 \
    "root@$(host_addr h2)" true 2>/dev/null; then
    fail "ssh accepted h2 with h1's host key"
  fi
  # Password and no-key logins are refused.
  if ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile=/dev/null \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 \
    "root@$(host_addr h1)" true 2>/dev/null; then
    fail "ssh without the key was accepted"
  fi
}

t_private_fs() {
  printf '%s\n' "${PROBE}" | host_ssh h1 "umask 022; mkdir -p /etc/hostguard && cat >/etc/hostguard/${PROBE}"
  expect_eq "probe on h1" "$(host_exec h1 cat "/etc/hostguard/${PROBE}")" "${PROBE}"
  if host_exec h2 test -e "/etc/hostguard/${PROBE}"; then
    fail "probe visible on h2"
  fi
  if [[ -e "/etc/hostguard/${PROBE}" ]]; then
    fail "probe landed on the machine's own /etc"
  fi
  # The packaged fail2ban and nginx configs are there, and /root is fresh.
  host_exec h1 test -f /etc/fail2ban/jail.conf || fail "no jail.conf on h1"
  host_exec h1 test -f /etc/nginx/nginx.conf || fail "no nginx.conf on h1"
  if host_exec h1 test -e /root/.gitconfig; then
    fail "the machine's /root leaks into h1"
  fi
}

t_snapshot() {
  local a b c
  a="$(host_snapshot h2)"
  b="$(host_snapshot h2)"
  expect_eq "two snapshots of an idle host" "${b}" "${a}"
  grep -q '^/etc/hostguard absent$' <<<"${a}" || fail "h2 snapshot: /etc/hostguard not absent"
  grep -qE '^/etc/nginx/nginx.conf f 0644 root:root [0-9]+ [0-9a-f]{64}$' <<<"${a}" ||
    fail "h2 snapshot: no hashed nginx.conf line"
  c="$(host_snapshot h1 /etc/hostguard)"
  grep -q "^/etc/hostguard/${PROBE} f 0644 root:root " <<<"${c}" || fail "h1 snapshot misses the probe: ${c}"
}

t_nginx() {
  local name
  for name in h1 h2; do
    expect_eq "nginx on ${name} from c1" "$(http_code "${name}")" 200
    expect_eq "nginx on ${name} from the root namespace" \
      "$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://$(host_addr "${name}")/")" 200
  done
  host_exec h1 grep -q "^$(client_addr c1) " /var/log/nginx/access.log ||
    fail "client address not in h1's private access log"
}

t_fail2ban_cron() {
  local name out
  for name in h1 h2; do
    # Debian 12 as its packages leave it (issue 40): no rsyslog, no auth.log.
    host_exec "${name}" test ! -e /var/log/auth.log || fail "${name} has /var/log/auth.log"
    if out="$(host_exec "${name}" fail2ban-client -t 2>&1)"; then
      fail "fail2ban-client -t passes on ${name}: not the stock configuration"
    fi
    grep -qF "Have not found any log file for sshd jail" <<<"${out}" || fail "${name}: fail2ban -t: ${out}"
    if host_exec "${name}" fail2ban-client ping >/dev/null 2>&1; then
      fail "fail2ban runs on ${name} with the stock configuration"
    fi
    host_ssh "${name}" true
    host_sshd_log "${name}" | grep -q "^Accepted publickey for root from $(root_addr) " ||
      fail "no login of root in ${name}'s journal: $(host_sshd_log "${name}")"
    # shellcheck disable=SC2016 # expanded inside the host
    host_exec "${name}" sh -c 'kill -0 "$(cat /run/crond.pid)"' || fail "cron not running on ${name}"
    expect_eq "cron processes on ${name}" "$(host_exec "${name}" pgrep -cx cron)" 1
  done
}

t_receiver() {
  host_exec h1 install -D -m 0644 /dev/stdin /etc/hostguard/test-ca.pem <"${RECEIVER_CA}"
  # The URL goes through curl's config on stdin, never argv.
  printf 'url=%s\n' "${RECEIVER_URL}" |
    host_exec h1 curl -sS --max-time 5 --cacert /etc/hostguard/test-ca.pem \
      --data-urlencode 'payload={"text":"hello from h1"}' -K - >/dev/null
  receiver_wait_count 1 5
  expect_eq "received text" "$(receiver_texts)" "hello from h1"
}

t_ban() {
  local client out i
  client="$(client_addr c1)"
  # The admin's fix of Debian's sshd jail (upstream fail2ban#3292), then fail2ban starts.
  host_exec h1 sh -c "printf '[sshd]\nbackend = systemd\n\n[${JAIL}]\nenabled = true\n' >/etc/fail2ban/jail.d/smoke.local"
  out="$(host_exec h1 timeout 30 service fail2ban start 2>&1 3>&-)" || fail "fail2ban start: ${out}"
  for ((i = 0; i < 100; i++)); do
    host_exec h1 fail2ban-client ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  out="$(host_exec h1 fail2ban-client set "${JAIL}" banip "${client}" 2>&1)" || fail "banip: ${out}"
  # The banaction of the host's fail2ban: iptables-multiport on Debian 12, nftables on Debian 13.
  if [[ "$(host_os h1)" == debian13 ]]; then
    out="$(host_exec h1 nft list ruleset)"
  else
    out="$(host_exec h1 iptables -S)"
  fi
  grep -qF -- "${client}" <<<"${out}" || fail "no ban rule in h1's firewall: ${out}"
  if iptables -S 2>/dev/null | grep -qF "${client}" || nft list ruleset 2>/dev/null | grep -qF "${client}"; then
    fail "ban rule leaked into the root namespace firewall"
  fi
  expect_eq "h1 from the banned client" "$(http_code h1)" 000
  expect_eq "h2 from the same client" "$(http_code h2)" 200
  expect_eq "h1 from the root namespace" \
    "$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://$(host_addr h1)/")" 200
  out="$(host_exec h1 fail2ban-client set "${JAIL}" unbanip "${client}" 2>&1)" || fail "unbanip: ${out}"
  expect_eq "h1 after unban" "$(http_code h1)" 200
}

# Opt-in (HG_SMOKE_CRON=1): up to a minute to see cron run a job of h1's own
# /etc/cron.d.
t_cron_job() {
  local i
  host_exec h1 sh -c 'umask 022; echo "* * * * * root touch /run/smoke-cron-ran" >/etc/cron.d/smoke'
  for ((i = 0; i < 75; i++)); do
    host_exec h1 test -e /run/smoke-cron-ran && return 0
    sleep 1
  done
  fail "cron did not run h1's /etc/cron.d/smoke within 75 s"
}

t_sshd_restart() {
  host_kill_sshd h1
  if host_ssh h1 true 2>/dev/null; then
    fail "ssh still works after host_kill_sshd"
  fi
  expect_eq "h2 unaffected" "$(host_ssh h2 id -u)" 0
  host_start_sshd h1
  expect_eq "ssh after host_start_sshd" "$(host_ssh h1 id -u)" 0
}

record_namespaces() {
  local ns
  for ns in "$(host_netns h1)" "$(host_netns h2)" "$(client_netns c1)" "$(lan_netns)"; do
    NS_INODES+=("$(stat -L -c %i "/run/netns/${ns}")")
  done
  NS_INODES+=("$(stat -L -c %i "/proc/$(host_pid h1)/ns/mnt")")
  NS_INODES+=("$(stat -L -c %i "/proc/$(host_pid h2)/ns/mnt")")
}

t_teardown() {
  local run_dir="${HG_RUN_DIR}" root_if live ino
  root_if="$(_hg_root_if)"
  receiver_stop
  hosts_down_all
  if ip netns list | grep -q "^hg-${HG_RUN_ID}-"; then
    fail "namespaces left: $(ip netns list | grep "^hg-${HG_RUN_ID}-")"
  fi
  if ip link show "${root_if}" >/dev/null 2>&1; then
    fail "root-side veth ${root_if} left"
  fi
  [[ ! -e "${run_dir}" ]] || fail "run directory left: ${run_dir}"
  if grep -lsF "${run_dir}" /proc/[0-9]*/mountinfo; then
    fail "mounts of ${run_dir} left in the processes above"
  fi
  # One stat for all processes; some exit while it runs, hence || true.
  live="$(stat -L -c '%i %n' /proc/[0-9]*/ns/net /proc/[0-9]*/ns/mnt 2>/dev/null || true)"
  for ino in "${NS_INODES[@]}"; do
    if grep "^${ino} " <<<"${live}"; then
      fail "process still in a test namespace (inode ${ino}), see above"
    fi
  done
  [[ ! -e "/etc/hostguard/${PROBE}" ]] || fail "probe on the machine's /etc"
}

main() {
  ((EUID == 0)) || { echo "hosts-smoke: needs root" >&2; exit 1; }
  hosts_init
  trap e2e_teardown EXIT
  echo "run ${HG_RUN_ID}, network ${HG_NET}.0.0/16, dir ${HG_RUN_DIR}"
  scenario 1 t_host1_up
  scenario 2 t_host2_up
  scenario 3 t_client_up
  # The rest needs the hosts; the teardown runs whatever came up.
  scenario 4 t_idempotent 1 2 3
  scenario 5 t_ssh_strict 1 2 3
  scenario 6 t_private_fs 1 2 3
  scenario 7 t_snapshot 1 2 3
  scenario 8 t_nginx 1 2 3
  scenario 9 t_fail2ban_cron 1 2 3
  scenario --here 10 e2e_receiver_start 1 2 3
  scenario 11 t_receiver 10
  scenario 12 t_ban 1 2 3
  if [[ "${HG_SMOKE_CRON:-0}" == 1 ]]; then
    scenario 13 t_cron_job 1 2 3
  fi
  scenario 14 t_sshd_restart 1 2 3
  if e2e_passed 1 2 3; then
    record_namespaces
  fi
  scenario 15 t_teardown
  trap - EXIT
  e2e_summary
}

main "$@"
