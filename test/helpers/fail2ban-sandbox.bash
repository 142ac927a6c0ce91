# shellcheck shell=bash
# Bats helpers: a real fail2ban server in a sandbox. Its own network namespace
# (the firewall ban action changes only that namespace's tables), its own
# config dir (a copy of /etc/fail2ban's packaged files plus the project's),
# socket, pid file, database and log. Load with `load ../helpers/fail2ban-sandbox`.
#
#   fail2ban_notifier_in ROOT   copies the notifier and its modules into
#       the temp root ROOT (as install places them) and sets F2B_NOTIFIER to
#       the copy: the action's notifier then runs with HOSTGUARD_ROOT=ROOT
#   fail2ban_sandbox_make DIR NOTIFIER settingKey=VALUE...
#       Makes the namespace (F2B_NS) and the config dir DIR/etc (F2B_CONF)
#       with the project's filter, action and the jail rendered from the
#       stack-config settings (banMaxRetry=10 ...); the action's notifier
#       parameter is NOTIFIER. Sets F2B_DIR F2B_SOCK F2B_PID F2B_LOG
#       F2B_ACCESS_LOG.
#   fail2ban_sandbox_render settingKey=VALUE...   re-renders the jail (e.g.
#       banBanTime) with the Pulumi program's renderer and places it with the
#       real installer (`install install --part bantool` into a scratch
#       root), so the jail is exactly what a host gets.
#   fail2ban_start       starts fail2ban-server inside the namespace with the
#                        caller's environment (HOSTGUARD_ROOT), waits <= 20 s
#   fail2ban_client ARGS...               fail2ban-client on the sandbox socket
#   fail2ban_stop        stops it (client stop, then kill); safe to call twice
#   fail2ban_sandbox_destroy              stop, then delete the namespace
#   fail2ban_wait_for SECS COMMAND...     polls COMMAND every 0.2 s until it
#                                         succeeds or SECS pass
#   fail2ban_log_lines IP N [STATUS]      appends N matching access-log lines
# shellcheck source=process.bash
source "${BASH_SOURCE[0]%/*}/process.bash"
# shellcheck source=render-payload.bash
source "${BASH_SOURCE[0]%/*}/render-payload.bash"

F2B_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
F2B_JAIL=nginx-bad-request

fail2ban_notifier_in() {
  local lib="$1/usr/local/lib/hostguard"
  mkdir -p "${lib}"
  cp "${F2B_REPO}/scripts/hostguard-notify" "${lib}/"
  mkdir -p "${lib}/hostguard"
  (cd "${F2B_REPO}/scripts" && cp --parents hostguard/*.py hostguard/*/*.py "${lib}/")
  # shellcheck disable=SC2034 # read by the tests that load this helper
  F2B_NOTIFIER="${lib}/hostguard-notify"
}

fail2ban_sandbox_make() {
  # $2, the notifier, is found by the Python action under HOSTGUARD_ROOT (fail2ban_notifier_in).
  local dir="$1"
  shift 2
  F2B_DIR="${dir}"
  F2B_CONF="${dir}/etc"
  F2B_SOCK="${dir}/run/f2b.sock"
  F2B_PID="${dir}/run/f2b.pid"
  F2B_LOG="${dir}/fail2ban.log"
  F2B_ACCESS_LOG="${dir}/access.log"
  F2B_NS="hg-f2b-$$-${BATS_TEST_NUMBER:-0}"
  ip netns add "${F2B_NS}"
  ip -n "${F2B_NS}" link set lo up
  mkdir -p "${F2B_CONF}/jail.d" "${dir}/run"
  cp -r /etc/fail2ban/action.d /etc/fail2ban/filter.d "${F2B_CONF}/"
  cp /etc/fail2ban/jail.conf /etc/fail2ban/fail2ban.conf /etc/fail2ban/paths-*.conf "${F2B_CONF}/"
  cp "${F2B_REPO}/scripts/fail2ban/filter.d/nginx-bad-request.local" "${F2B_CONF}/filter.d/"
  # The Python action imports the notifier's package under HOSTGUARD_ROOT (fail2ban_start passes the caller's).
  cp "${F2B_REPO}/scripts/fail2ban/action.d/slack-notify.py" "${F2B_CONF}/action.d/"
  # Debian enables sshd in jail.d/defaults-debian.conf (not copied); make sure.
  printf '[sshd]\nenabled = false\n' >"${F2B_CONF}/jail.local"
  cat >"${F2B_CONF}/fail2ban.local" <<CONF
[Definition]
loglevel = INFO
logtarget = ${F2B_LOG}
socket = ${F2B_SOCK}
pidfile = ${F2B_PID}
dbfile = ${dir}/fail2ban.sqlite3
CONF
  : >"${F2B_ACCESS_LOG}"
  F2B_SETTINGS=()
  fail2ban_sandbox_render "$@"
}

fail2ban_sandbox_render() {
  (($# == 0)) || F2B_SETTINGS+=("$@")
  local scratch="${F2B_DIR}/render" jail=etc/fail2ban/jail.d/hostguard-nginx-bad-request.local
  rm -rf -- "${scratch}"
  mkdir -p -- "${scratch}/root"
  render_payload "${scratch}/payload" "nginxAccessLog=${F2B_ACCESS_LOG}" "${F2B_SETTINGS[@]}"
  "${scratch}/payload/install" install --part bantool --root "${scratch}/root" \
    --settings "${scratch}/payload/hostguard.conf" >"${scratch}/install.log" 2>&1 \
    || { cat "${scratch}/install.log" >&2; return 1; }
  cp -- "${scratch}/root/${jail}" "${F2B_CONF}/jail.d/"
}

fail2ban_client() {
  timeout 30 fail2ban-client -c "${F2B_CONF}" -s "${F2B_SOCK}" -p "${F2B_PID}" "$@"
}

fail2ban_wait_for() {
  local secs="$1" i
  shift
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  "$@"
}

fail2ban_start() {
  # Foreground server in the background: its pid is ours to kill. fd 3 is
  # closed because bats waits for it.
  ip netns exec "${F2B_NS}" fail2ban-server -f -x -c "${F2B_CONF}" -s "${F2B_SOCK}" \
    -p "${F2B_PID}" >>"${F2B_DIR}/server.out" 2>&1 3>&- &
  F2B_SERVER_PID=$!
  if ! fail2ban_wait_for 20 fail2ban_jail_up; then
    echo "fail2ban did not start its jail within 20 s; log:" >&2
    cat "${F2B_LOG}" "${F2B_DIR}/server.out" >&2 2>/dev/null
    return 1
  fi
}

fail2ban_jail_up() {
  fail2ban_client status "${F2B_JAIL}" | grep -q 'Banned IP list'
}

fail2ban_stop() {
  [[ -n "${F2B_SERVER_PID:-}" ]] || return 0
  # The client's stop lets the jail post its stop message; the signal is the fallback.
  fail2ban_client stop >/dev/null 2>&1 || true
  stop_process "${F2B_SERVER_PID}"
  F2B_SERVER_PID=""
}

fail2ban_sandbox_destroy() {
  fail2ban_stop
  if [[ -n "${F2B_NS:-}" ]]; then
    ip netns delete "${F2B_NS}" 2>/dev/null || true
    F2B_NS=""
  fi
}

fail2ban_log_lines() {
  local ip="$1" count="$2" status="${3:-403}" now i
  for ((i = 1; i <= count; i++)); do
    now="$(LC_ALL=C date -u '+%d/%b/%Y:%H:%M:%S +0000')"
    printf '%s - - [%s] "GET /probe-%d.env HTTP/1.1" %s 153 "-" "scanner"\n' \
      "${ip}" "${now}" "${i}" "${status}" >>"${F2B_ACCESS_LOG}"
  done
}
