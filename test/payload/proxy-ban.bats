#!/usr/bin/env bats
# trustedProxies (issue 25) against the real programs, in one network
# namespace: a second real nginx as the load balancer (it adds
# X-Forwarded-For and connects from its own address) in front of the
# server's nginx, and a real fail2ban with the project's jail, filter,
# slack-notify and hostguard-nginx-ban actions, its firewall ban action
# (iptables-multiport) inside the namespace. The server's nginx reads the
# drop-in and the deny snippet that `install --part web` places, from the
# payload the Pulumi program renders. The scanner, the other client, the
# proxy and the server each have their own address on the namespace's
# loopback; curl --interface picks the client's.
#
# The drop-in's ban list path /var/lib/hostguard/... is the one thing
# rewritten in the test's copy: it points into the test's temp root, where
# the action's helper (HOSTGUARD_ROOT) writes it.

bats_require_minimum_version 1.5.0

readonly JAIL=nginx-bad-request
readonly PROXY=10.9.1.5
readonly SERVER=192.0.2.10
readonly SCANNER=203.0.113.66
readonly CLIENT=198.51.100.7
readonly PROXIES='trustedProxies=["10.9.1.0/24","fd00:9::/64"]'

setup() {
  load ../helpers/receiver
  load ../helpers/fail2ban-sandbox
  load ../helpers/proxy-sandbox
  local tool
  for tool in fail2ban-server nginx iptables curl; do
    command -v "${tool}" >/dev/null || { echo "${tool} is not installed (.ci/run installs it): the test cannot run" >&2; false; }
  done
  REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
  ROOT="${BATS_TEST_TMPDIR}/root"
  fail2ban_notifier_in "${ROOT}"
  mkdir -p "${ROOT}/var/lib/hostguard"
  chmod 0700 "${ROOT}/var/lib/hostguard"
  SRV="${BATS_TEST_TMPDIR}/server"
  PRX="${BATS_TEST_TMPDIR}/proxy"
  LIST="${ROOT}/var/lib/hostguard/nginx-bans.map"
  SLOW_READERS=()
}

teardown() {
  local pid
  for pid in "${SLOW_READERS[@]}"; do
    kill "${pid}" 2>/dev/null || true
  done
  fail2ban_stop
  receiver_stop
  local dir
  for dir in "${SRV:-}" "${PRX:-}"; do
    [[ -n "${dir}" && -s "${dir}/nginx.pid" ]] && stop_process "$(<"${dir}/nginx.pid")" QUIT
  done
  fail2ban_sandbox_destroy
  {
    echo "--- messages received:"
    [[ -z "${RECEIVER_MESSAGES:-}" ]] || receiver_payloads
    echo "--- fail2ban log (tail):"
    tail -n 30 "${F2B_LOG}" 2>/dev/null || true
    echo "--- server access log (tail):"
    tail -n 15 "${SRV}/logs/access.log" 2>/dev/null || true
    echo "--- server error log (tail):"
    grep -v "signal\|exit\|gracefully" "${SRV}/logs/error.log" 2>/dev/null | tail -n 15 || true
    echo "--- ban list:"
    cat "${LIST:-/dev/null}" 2>/dev/null || true
  } >&2
}

# Everything up with the jail rendered from settingKey=VALUE args.
start_all() {
  fail2ban_sandbox_make "${BATS_TEST_TMPDIR}/f2b" "${F2B_NOTIFIER}" \
    banMaxRetry=10 banFindTime=1m banBanTime=10m banAction=iptables-multiport "$@"
  local payload="${F2B_DIR}/render/payload" web="${BATS_TEST_TMPDIR}/web-root" address
  for address in "${PROXY}" "${SERVER}" "${SCANNER}" "${CLIENT}"; do
    ip -n "${F2B_NS}" addr add "${address}/32" dev lo
  done
  # Part web placed by the real installer from the rendered payload, nginx.conf's head as Debian's.
  stock_nginx_conf "${web}"
  "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf" \
    >"${BATS_TEST_TMPDIR}/web-install.log" 2>&1 || { cat "${BATS_TEST_TMPDIR}/web-install.log" >&2; return 1; }
  proxy_sandbox_write_nginx "${web}" "${ROOT}" "${SRV}" "${PRX}" "${SERVER}" "${PROXY}"
  if [[ -f "${payload}/fail2ban/action.d/hostguard-nginx-ban.py" ]]; then
    proxy_sandbox_install_action "${payload}" "${ROOT}" "${SRV}"
  fi
  proxy_sandbox_nginx "${SRV}" -t -q
  proxy_sandbox_nginx "${SRV}" 3>&-
  proxy_sandbox_nginx "${PRX}" 3>&-
  RECEIVER_WRAP=(ip netns exec "${F2B_NS}")
  receiver_start
  RECEIVER_WRAP=()
  receiver_make_root "${ROOT}"
  fail2ban_start
  fail2ban_wait_for 10 status_is 200 via_proxy "${CLIENT}" /
}

# WEB/etc/nginx/nginx.conf as the head of Debian's and Ubuntu's stock file (its one main-context
# include), then any further lines given.
stock_nginx_conf() {
  local web="$1"
  shift
  mkdir -p "${web}/etc/nginx"
  printf '%s\n' 'user www-data;' 'worker_processes auto;' 'pid /run/nginx.pid;' \
    'include /etc/nginx/modules-enabled/*.conf;' '' 'events {' '    worker_connections 768;' '}' "$@" \
    >"${web}/etc/nginx/nginx.conf"
}

# nginx's worker processes: only the current generation's one (worker_processes 1), the old ones ended.
old_workers_gone() {
  [[ "$(pgrep -c -P "$1" || true)" -eq 1 ]]
}

# HTTP status of a request from ADDRESS through the proxy ("000": no answer).
via_proxy() {
  local from="$1" path="$2"
  shift 2
  ip netns exec "${F2B_NS}" curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
    --interface "${from}" "$@" "http://${PROXY}:8080${path}" || true
}

# The same, straight to the server's nginx (what the firewall sees).
direct() {
  local from="$1" path="$2"
  ip netns exec "${F2B_NS}" curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
    --interface "${from}" "http://${SERVER}:80${path}" || true
}

banned_ips() {
  fail2ban_client status "${JAIL}" | sed -n 's/^.*Banned IP list:[[:space:]]*//p'
}

is_banned() {
  [[ " $(banned_ips) " == *" $1 "* ]]
}

status_is() {
  [[ "$("${@:2}")" == "$1" ]]
}

# The scanner's 10 denied requests through the proxy, two of them with a
# forged X-Forwarded-For (the proxy appends the real address; the server
# trusts only the proxy's entry).
scan_through_proxy() {
  local i code
  for ((i = 1; i <= 10; i++)); do
    ((i < 10)) || TENTH_NS="$(date +%s%N)"
    if ((i <= 2)); then
      code="$(via_proxy "${SCANNER}" "/probe-${i}.env" -H "X-Forwarded-For: ${CLIENT}")"
    else
      code="$(via_proxy "${SCANNER}" "/probe-${i}.env")"
    fi
    [[ "${code}" == 403 ]] || { echo "probe ${i}: ${code}, not 403" >&2; return 1; }
  done
}

@test "trustedProxies: a scanner behind the proxy is banned and refused at nginx; the other client and the proxy are not; unban restores both" {
  start_all "${PROXIES}"
  # A deploy reloads fail2ban: the Python action (and its nginx paths) must outlive it.
  fail2ban_client reload >/dev/null
  fail2ban_wait_for 10 fail2ban_jail_up
  grep -qx "ignoreip  = 127.0.0.1/8 ::1 10.9.1.0/24 fd00:9::/64" "${F2B_CONF}/jail.d/hostguard-nginx-bad-request.local"
  grep -q '^            hostguard-nginx-ban\.py\[' "${F2B_CONF}/jail.d/hostguard-nginx-bad-request.local"
  [[ "$(via_proxy "${SCANNER}" /)" == 200 ]]
  [[ "$(direct "${SCANNER}" /)" == 200 ]]
  # nginx logs the client behind the proxy, never the proxy.
  grep -q "^${SCANNER} - " "${F2B_ACCESS_LOG}"
  ! grep -q "^${PROXY} " "${F2B_ACCESS_LOG}" || false

  scan_through_proxy
  fail2ban_wait_for 20 is_banned "${SCANNER}"
  # Refused by nginx through the proxy (403 on a page the other client gets).
  fail2ban_wait_for 10 status_is 403 via_proxy "${SCANNER}" /
  # Not a benchmark (polls every 0.2 s, each a curl): an order of magnitude, shown by bats.
  echo "# 10th denied request to 403 at nginx through the proxy: $((($(date +%s%N) - TENTH_NS) / 1000000)) ms" >&3
  [[ "$(via_proxy "${CLIENT}" /)" == 200 ]]
  grep -qx "${SCANNER} 1;" "${LIST}"
  [[ "$(stat -c '%a %U' "${LIST}")" == "600 root" ]]
  # The scanner's own connections are dropped by the firewall (its action
  # may run after nginx's: waited for).
  fail2ban_wait_for 10 bash -c "ip netns exec '${F2B_NS}' iptables -S 'f2b-${JAIL}' | grep -q -- '-s ${SCANNER}/32 -j REJECT'"
  [[ "$(direct "${SCANNER}" /)" == 000 ]]
  [[ "$(direct "${CLIENT}" /)" == 200 ]]
  # The proxy is never banned; only the scanner is.
  [[ "$(banned_ips)" == "${SCANNER}" ]]
  ! grep -q "Ban ${PROXY}" "${F2B_LOG}" || false
  # The chat messages name the scanner (SPEC texts): start, then the ban.
  receiver_wait_count 2 15
  receiver_texts | grep -qxF "Ban Alert(${JAIL})\\n Banned IP: *${SCANNER}*\\n Failures: 10 failure(s)\\n Timestap: $(receiver_texts | sed -n 's/.*Timestap: //p' | head -1)"
  ! grep -q 'hostguard-nginx-ban: \|hostguard-nginx-ban.*Error' "${F2B_LOG}" || false

  fail2ban_client set "${JAIL}" unbanip "${SCANNER}" >/dev/null
  fail2ban_wait_for 10 status_is 200 via_proxy "${SCANNER}" /
  # nginx's reload is graceful: an old worker may still answer one connection
  # with the previous list for a moment, so the direct path is waited for too.
  fail2ban_wait_for 10 status_is 200 direct "${SCANNER}" /
  [[ "$(via_proxy "${CLIENT}" /)" == 200 ]]
  ! grep -q "^${SCANNER} " "${LIST}" || false
  receiver_wait_count 3 15
  receiver_texts | grep -qxF "Ban Alert(${JAIL})\\n Unbanned IP: *${SCANNER}*"
}

@test "without trustedProxies: today's behaviour, the proxy's address is logged and banned (every client through it cut off)" {
  start_all
  ! grep -q 'hostguard-nginx-ban' "${F2B_CONF}/jail.d/hostguard-nginx-bad-request.local" || false
  [[ ! -e "${BATS_TEST_TMPDIR}/web-root/etc/nginx/conf.d/hostguard-realip.conf" ]]
  cmp "${REPO}/scripts/nginx/hostguard-deny.conf" "${SRV}/deny.conf"
  [[ "$(via_proxy "${SCANNER}" /)" == 200 ]]
  grep -q "^${PROXY} - " "${F2B_ACCESS_LOG}"
  ! grep -q "^${SCANNER} " "${F2B_ACCESS_LOG}" || false
  scan_through_proxy
  fail2ban_wait_for 20 is_banned "${PROXY}"
  [[ "$(banned_ips)" == "${PROXY}" ]]
  # The firewall now drops the proxy's connections: the other client gets a 502 too.
  fail2ban_wait_for 10 status_is 502 via_proxy "${CLIENT}" /
  [[ ! -e "${LIST}" ]]
}

@test "trustedProxies: a ban nginx cannot take is said in fail2ban's log, in bounded time; the firewall ban holds and fail2ban goes on" {
  start_all "${PROXIES}"
  # An admin's broken edit: nginx -t now fails, so the action must not reload.
  printf 'this_is_not_a_directive on;\n' >"${SRV}/conf.d/broken.conf"
  scan_through_proxy
  fail2ban_wait_for 20 is_banned "${SCANNER}"
  fail2ban_wait_for 30 grep -q 'ERROR .*hostguard-nginx-ban: .*nginx was NOT reloaded' "${F2B_LOG}"
  # The list holds the ban (nginx takes it at its next good reload); the
  # running nginx still serves with its old configuration.
  grep -qx "${SCANNER} 1;" "${LIST}"
  [[ "$(via_proxy "${CLIENT}" /)" == 200 ]]
  fail2ban_wait_for 10 status_is 000 direct "${SCANNER}" /
  # fail2ban still answers and bans.
  fail2ban_client set "${JAIL}" banip 192.0.2.99 >/dev/null
  fail2ban_wait_for 10 is_banned 192.0.2.99
  # Once the config is good again, the pending list is tried again and nginx
  # reloaded with it, without another ban (retries 2, 4, 8, 16 s apart).
  rm "${SRV}/conf.d/broken.conf"
  fail2ban_wait_for 40 status_is 403 via_proxy "${SCANNER}" /
  [[ "$(via_proxy "${CLIENT}" /)" == 200 ]]
  fail2ban_wait_for 10 grep -q 'hostguard-nginx-ban: the ban list applied after' "${F2B_LOG}"
}

@test "trustedProxies: a dual-stack proxy forwards an IPv4 scanner as ::ffff:a.b.c.d; its ban is refused at nginx all the same" {
  PROXY_DUAL_STACK=1 start_all "${PROXIES}"
  [[ "$(via_proxy "${SCANNER}" /)" == 200 ]]
  grep -q "^::ffff:${SCANNER} - " "${F2B_ACCESS_LOG}"
  scan_through_proxy
  # fail2ban bans the address as IPv4; nginx sees the client IPv4-mapped.
  fail2ban_wait_for 20 is_banned "${SCANNER}"
  fail2ban_wait_for 10 status_is 403 via_proxy "${SCANNER}" /
  [[ "$(via_proxy "${CLIENT}" /)" == 200 ]]
  grep -qx "::ffff:${SCANNER} 1;" "${LIST}"
  fail2ban_client set "${JAIL}" unbanip "${SCANNER}" >/dev/null
  # No request while the list still holds it: each 403 counts toward a new ban
  # (polling every 0.2 s got the scanner banned again under load).
  fail2ban_wait_for 10 list_lacks "${SCANNER}"
  local i
  for ((i = 0; i < 10; i++)); do
    [[ "$(via_proxy "${SCANNER}" /)" == 200 ]] && break
    sleep 1
  done
  ((i < 10))
}

# list_lacks IP: nginx's ban list holds no spelling of IP.
list_lacks() {
  ! grep -q "${1} " "${LIST}"
}

@test "trustedProxies: bans from many addresses reload nginx at most once per 2 s; slow readers pin no more worker generations than that, and those end within worker_shutdown_timeout" {
  start_all "${PROXIES}"
  head -c 4000000 /dev/zero >"${SRV}/www/big"
  local master i start reloads seconds workers
  master="$(<"${SRV}/nginx.pid")"
  reloads="$(grep -c 'SIGHUP' "${SRV}/logs/error.log" || true)"
  start="$(date +%s%N)"
  SLOW_READERS=()
  for ((i = 1; i <= 20; i++)); do
    # A download held open (1 KB/s) before each ban: each reload leaves a worker generation serving it.
    ip netns exec "${F2B_NS}" curl -s -o /dev/null --limit-rate 1k --max-time 120 \
      --interface "${CLIENT}" "http://${SERVER}:80/big" &
    SLOW_READERS+=("$!")
    fail2ban_client set "${JAIL}" banip "198.18.6.${i}" >/dev/null
  done
  fail2ban_wait_for 10 grep -qx "198.18.6.20 1;" "${LIST}"
  sleep 2.5 # a reload the last pass started is logged
  seconds="$((($(date +%s%N) - start) / 1000000000))"
  reloads="$(($(grep -c 'SIGHUP' "${SRV}/logs/error.log") - reloads))"
  workers="$(pgrep -c -P "${master}" || true)"
  echo "# 20 bans in ${seconds} s: ${reloads} reload(s), ${workers} worker process(es)" >&3
  ((reloads >= 1 && reloads <= seconds / 2 + 2))
  ((workers <= reloads + 2))
  [[ "$(wc -l <"${LIST}")" -eq 41 ]]
  # The drop-in install placed (30 s): the old generations the slow readers pin (4 MB at 1 KB/s,
  # more than an hour) end within 30 s of the last reload. Waited for at most 30 s + 10 s.
  ((workers > 1))
  grep -qx 'worker_shutdown_timeout 30s;' "${SRV}/modules-enabled/hostguard-worker-shutdown.conf"
  fail2ban_wait_for 40 old_workers_gone "${master}"
  echo "# old workers gone $((($(date +%s%N) - start) / 1000000000)) s after the first ban" >&3
}

@test "hostguard-nginx-ban: the Python action, loaded by fail2ban, refuses what is not an address, keeps the list atomic and unique; flush empties it; a held lock is waited for boundedly, then the pass tried again" {
  local payload="${BATS_TEST_TMPDIR}/payload"
  render_payload "${payload}" "${PROXIES}"
  cp -r "${payload}/hostguard" "${ROOT}/usr/local/lib/hostguard/"
  export HOSTGUARD_ROOT="${ROOT}"
  run timeout 120 /usr/bin/python3 - "${payload}/fail2ban/action.d/hostguard-nginx-ban.py" "${LIST}" \
    "${ROOT}/var/lib/hostguard" <<'PY'
import fcntl, os, subprocess, sys, time
from fail2ban.server.actions import Actions
from fail2ban.server.jail import Jail

actions = Actions(Jail("nginx-bad-request", backend="polling"))
actions.add("hostguard-nginx-ban", sys.argv[1], {"nginx_pid": "/no-such.pid"})
action, listed, state = actions["hostguard-nginx-ban"], sys.argv[2], sys.argv[3]

def ban(ip):
    action.ban({"ip": ip, "failures": 10, "time": 1700000000.0})

def settled():
    for _ in range(200):
        if action.bans._writer is None:
            return
        time.sleep(0.05)
    raise AssertionError("the writer thread did not finish")

for bad in ("1.2.3.4;}", "192.0.2.0/24", "256.1.1.1", "1::2::3", "", "a b", "fe80::1%eth0"):
    try:
        ban(bad)
    except Exception as error:
        assert "ban list is unchanged" in str(error) or "firewall only" in str(error), error
    else:
        raise AssertionError(f"{bad!r} was not refused")
assert not os.path.exists(listed)
for ip in ("192.0.2.1", "2001:DB8::1", "192.0.2.1", "::ffff:192.0.2.2", "192.0.2.9/32"):
    ban(ip)
settled()
lines = open(listed).read().splitlines()[1:]
# As nginx writes $remote_addr, in each form it can: an IPv4 client also IPv4-mapped, a /32 as the
# address; no duplicate.
assert lines == [
    "192.0.2.1 1;", "::ffff:192.0.2.1 1;", "2001:db8::1 1;", "192.0.2.2 1;", "::ffff:192.0.2.2 1;",
    "192.0.2.9 1;", "::ffff:192.0.2.9 1;",
], lines
assert oct(os.stat(listed).st_mode & 0o777) == "0o600"
action.unban({"ip": "192.0.2.1", "failures": 10, "time": 1700000000.0})
settled()
assert "192.0.2.1 1;" not in open(listed).read().splitlines()
assert action.flush() is True
assert open(listed).read().splitlines()[1:] == []
assert not os.path.exists(os.path.join(state, ".nginx-bans.map.tmp"))
# A lock held by someone else: a pass gives up after its bounded wait (10 s), the list unchanged
# meanwhile; the writer tries the pass again, and the ban is in once the lock is free.
before = open(listed).read()
holder = subprocess.Popen(["flock", state, "sleep", "14"])
time.sleep(0.3)
ban("192.0.2.4")
time.sleep(8)
assert open(listed).read() == before, "written while another held the lock"
holder.wait()
for _ in range(800):
    if action.bans._writer is None:
        break
    time.sleep(0.05)
assert "192.0.2.4 1;" in open(listed).read().splitlines()
print("ok")
PY
  echo "${output}"
  [[ "${status}" -eq 0 && "${output}" == *ok ]]
}

@test "install --part web: the drop-in and the proxied snippet come with trustedProxies and go when it is emptied" {
  local payload="${BATS_TEST_TMPDIR}/payload" web="${BATS_TEST_TMPDIR}/web-root"
  mkdir -p "${web}"
  render_payload "${payload}" "${PROXIES}"
  "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf"
  grep -qx 'set_real_ip_from 10.9.1.0/24;' "${web}/etc/nginx/conf.d/hostguard-realip.conf"
  grep -qx 'set_real_ip_from fd00:9::/64;' "${web}/etc/nginx/conf.d/hostguard-realip.conf"
  grep -qx 'real_ip_header X-Forwarded-For;' "${web}/etc/nginx/conf.d/hostguard-realip.conf"
  grep -qx 'real_ip_recursive on;' "${web}/etc/nginx/conf.d/hostguard-realip.conf"
  grep -qx 'if ($hostguard_banned) {' "${web}/etc/nginx/snippets/hostguard-deny.conf"
  render_payload "${payload}"
  "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf"
  [[ ! -e "${web}/etc/nginx/conf.d/hostguard-realip.conf" ]]
  cmp "${REPO}/scripts/nginx/hostguard-deny.conf" "${web}/etc/nginx/snippets/hostguard-deny.conf"
  ! python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT * FROM record").fetchall())' \
    "${web}/var/lib/hostguard/install.db" | grep -q 'hostguard-realip' || false
  "${payload}/install" uninstall --part web --root "${web}"
  [[ ! -e "${web}/etc/nginx/snippets/hostguard-deny.conf" ]]
}

@test "install --part web: the worker_shutdown_timeout drop-in comes where nginx.conf includes modules-enabled, stands aside for the user's own, warns without the include; uninstall removes it" {
  local payload="${BATS_TEST_TMPDIR}/payload" web="${BATS_TEST_TMPDIR}/web-root"
  local dropin="${BATS_TEST_TMPDIR}/web-root/etc/nginx/modules-enabled/hostguard-worker-shutdown.conf"
  render_payload "${payload}" "${PROXIES}"
  stock_nginx_conf "${web}"
  "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf"
  grep -qx 'worker_shutdown_timeout 30s;' "${dropin}"
  # The user's own in nginx.conf: a second one would fail nginx -t, so the drop-in goes and install succeeds.
  stock_nginx_conf "${web}" 'worker_shutdown_timeout 10s;'
  run -0 "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf"
  [[ "${output}" == *"worker_shutdown_timeout is set in /etc/nginx/nginx.conf: yours is kept"* ]]
  [[ ! -e "${dropin}" ]]
  # ... or in a main-context file of its own.
  stock_nginx_conf "${web}" '# worker_shutdown_timeout 5s; (a comment sets nothing)'
  printf 'worker_shutdown_timeout 10s;\n' >"${web}/etc/nginx/modules-enabled/50-mine.conf"
  run -0 "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf"
  [[ "${output}" == *"worker_shutdown_timeout is set in /etc/nginx/modules-enabled/50-mine.conf: yours is kept"* ]]
  [[ ! -e "${dropin}" ]]
  rm "${web}/etc/nginx/modules-enabled/50-mine.conf"
  "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf"
  [[ -f "${dropin}" ]]
  "${payload}/install" uninstall --part web --root "${web}"
  [[ ! -e "${dropin}" ]]
  [[ -f "${web}/etc/nginx/nginx.conf" ]]
  # An nginx.conf without the include: a warning naming the file and the line to add; nginx.conf untouched.
  printf 'events {}\nhttp {}\n' >"${web}/etc/nginx/nginx.conf"
  run -0 "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf"
  [[ "${output}" == *"WARN /etc/nginx/nginx.conf does not include /etc/nginx/modules-enabled/*.conf"* ]]
  [[ "${output}" == *'add `include /etc/nginx/modules-enabled/*.conf;` at the top of /etc/nginx/nginx.conf'* ]]
  [[ ! -e "${dropin}" ]]
  [[ "$(<"${web}/etc/nginx/nginx.conf")" == $'events {}\nhttp {}' ]]
}
