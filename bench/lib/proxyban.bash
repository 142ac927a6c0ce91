# shellcheck shell=bash
# Benchmark 4b: ban latency through a trusted proxy (issue 25). The setup of
# test/payload/proxy-ban.bats in one network namespace: a real nginx as the
# load balancer (it adds X-Forwarded-For and connects from its own address)
# in front of the server's nginx, which reads the realip drop-in and the
# deny snippet that `install --part web` places from the payload rendered
# with trustedProxies; a real fail2ban with the project's jail, filter,
# slack-notify and hostguard-nginx-ban actions and its firewall ban action
# (iptables-multiport) in the namespace; the HTTPS receiver there too. Per
# trial, from a fresh scanner address: 9 denied requests through the proxy,
# wait until fail2ban counted them, then time from sending the 10th to (a)
# a request of the scanner through the proxy answered 403 by nginx (one
# request per poll) and (b) the REJECT rule in the namespace's iptables
# (row 4's measure, the reference), polled every 20 ms. Then another client
# through the proxy must still get 200. Row 4c (issue 43): a burst of 100,
# then 500 bans in one `fail2ban-client set JAIL banip` (fresh addresses),
# timed until every one is in nginx's ban list; the reloads nginx logged
# meanwhile (SIGHUP lines of its error log, 2.5 s after, so that the last
# pass's is in) against the target of one per 2 s of burst (and the first).
# Sourced by run.sh after ban.bash,
# whose jail name, poll interval, cap and fail2ban count check it uses.

# shellcheck source=../../test/helpers/receiver.bash
source "${BENCH_REPO}/test/helpers/receiver.bash"
# shellcheck source=../../test/helpers/fail2ban-sandbox.bash
source "${BENCH_REPO}/test/helpers/fail2ban-sandbox.bash"
# shellcheck source=../../test/helpers/proxy-sandbox.bash
source "${BENCH_REPO}/test/helpers/proxy-sandbox.bash"

readonly BENCH_PROXY=10.9.1.5
readonly BENCH_PROXY_SERVER=192.0.2.10
readonly BENCH_PROXY_CLIENT=198.51.100.7
readonly BENCH_PROXY_SETTING='trustedProxies=["10.9.1.0/24","fd00:9::/64"]'

bench_proxyban_teardown() {
  fail2ban_stop
  receiver_stop
  local dir
  for dir in "${BENCH_PROXY_SRV:-}" "${BENCH_PROXY_PRX:-}"; do
    [[ -n "${dir}" && -s "${dir}/nginx.pid" ]] || continue
    stop_process "$(<"${dir}/nginx.pid")" QUIT
    rm -f "${dir}/nginx.pid"
  done
  fail2ban_sandbox_destroy
}

# Prints the HTTP status of a request from ADDRESS through the proxy ("000":
# no answer within 1 s).
bench_proxyban_via() {
  local from="$1" path="$2"
  ip netns exec "${F2B_NS}" curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
    --interface "${from}" "http://${BENCH_PROXY}:8080${path}" || true
}

bench_proxyban_client_ok() {
  [[ "$(bench_proxyban_via "${BENCH_PROXY_CLIENT}" /)" == 200 ]]
}

# Everything up under WORK; returns 1 (said) when something did not start.
bench_proxyban_start() {
  local work="$1" address
  local root="${work}/proxyban-root" dir="${work}/proxyban" web="${work}/proxyban-web"
  BENCH_PROXY_SRV="${dir}/server"
  BENCH_PROXY_PRX="${dir}/proxy"
  fail2ban_notifier_in "${root}"
  mkdir -p "${root}/var/lib/hostguard" "${web}"
  chmod 0700 "${root}/var/lib/hostguard"
  fail2ban_sandbox_make "${dir}/f2b" "${F2B_NOTIFIER}" \
    banMaxRetry=10 banFindTime=1m banBanTime=10m banAction=iptables-multiport slackChannel=bench \
    "${BENCH_PROXY_SETTING}"
  for address in "${BENCH_PROXY}" "${BENCH_PROXY_SERVER}" "${BENCH_PROXY_CLIENT}"; do
    ip -n "${F2B_NS}" addr add "${address}/32" dev lo
  done
  local payload="${F2B_DIR}/render/payload"
  if ! "${payload}/install" install --part web --root "${web}" --settings "${payload}/hostguard.conf" \
    >"${dir}/web-install.log" 2>&1; then
    bench_error "install --part web failed: $(tail -n 3 "${dir}/web-install.log")"
    return 1
  fi
  if [[ ! -f "${payload}/fail2ban/action.d/hostguard-nginx-ban.py" ]]; then
    bench_error "the payload rendered with trustedProxies has no hostguard-nginx-ban action"
    return 1
  fi
  proxy_sandbox_write_nginx "${web}" "${root}" "${BENCH_PROXY_SRV}" "${BENCH_PROXY_PRX}" \
    "${BENCH_PROXY_SERVER}" "${BENCH_PROXY}"
  proxy_sandbox_install_action "${payload}" "${root}" "${BENCH_PROXY_SRV}"
  if ! proxy_sandbox_nginx "${BENCH_PROXY_SRV}" -t -q 2>"${dir}/nginx-t.log" \
    || ! proxy_sandbox_nginx "${BENCH_PROXY_SRV}" || ! proxy_sandbox_nginx "${BENCH_PROXY_PRX}"; then
    bench_error "the server's or the proxy's nginx did not start: $(tail -n 3 "${dir}/nginx-t.log")"
    return 1
  fi
  RECEIVER_WRAP=(ip netns exec "${F2B_NS}")
  receiver_start --dir "${dir}/receiver"
  RECEIVER_WRAP=()
  receiver_make_root "${root}" NOTIFY_MAX_TIME=10 NOTIFY_BUDGET=40
  fail2ban_start || { bench_error "fail2ban did not start (proxy ban)"; return 1; }
  receiver_wait_count 1 15 || bench_error "no start message from fail2ban (proxy ban)"
  fail2ban_wait_for 10 bench_proxyban_client_ok \
    || { bench_error "no 200 through the proxy before any ban"; return 1; }
}

# The trials; sets the caller's arrays ng (to 403 at nginx) and fw (to the
# firewall rule), in microseconds.
bench_proxyban_trials() {
  local trials="$1"
  # Every 403 of a scanner is a failure fail2ban counts, even once banned.
  local k i scanner code counted=0 start now ng_at fw_at deadline
  for ((k = 1; k <= trials; k++)); do
    scanner="203.0.113.$((10 + k))"
    ip -n "${F2B_NS}" addr add "${scanner}/32" dev lo
    for ((i = 1; i <= 9; i++)); do
      code="$(bench_proxyban_via "${scanner}" "/probe-${i}.env")"
      [[ "${code}" == 403 ]] || { bench_error "probe ${i} of ${scanner} through the proxy: ${code}, not 403"; return 0; }
    done
    counted=$((counted + 9))
    if ! fail2ban_wait_for 10 bench_total_failed_is "${counted}" >/dev/null; then
      bench_error "fail2ban did not count 9 requests of ${scanner} through the proxy"
      return 0
    fi
    # As in row 4: the notifier paces posts about 1 s apart; start clear of the last one.
    sleep 1.2
    ng_at="" fw_at=""
    bench_now_us start
    code="$(bench_proxyban_via "${scanner}" /probe-10.env)"
    [[ "${code}" == 403 ]] || { bench_error "probe 10 of ${scanner} through the proxy: ${code}, not 403"; return 0; }
    counted=$((counted + 1))
    deadline=$((start + BENCH_BAN_TIMEOUT_US))
    while [[ -z "${ng_at}" || -z "${fw_at}" ]]; do
      bench_now_us now
      ((now < deadline)) || break
      if [[ -z "${fw_at}" ]] \
        && ip netns exec "${F2B_NS}" iptables -S "f2b-${BENCH_JAIL}" 2>/dev/null \
        | grep -q -- "-s ${scanner}/32 -j REJECT"; then
        bench_now_us fw_at
      fi
      if [[ -z "${ng_at}" && "$(bench_proxyban_via "${scanner}" /)" == 403 ]]; then
        bench_now_us ng_at
        counted=$((counted + 1))
      fi
      sleep "${BENCH_POLL_SECONDS}"
    done
    if [[ -z "${ng_at}" || -z "${fw_at}" ]]; then
      bench_error "ban of ${scanner} through the proxy: 403 at nginx ${ng_at:+seen}${ng_at:-never}, firewall rule ${fw_at:+seen}${fw_at:-missing} after 15 s"
      return 0
    fi
    bench_proxyban_client_ok \
      || bench_error "the other client through the proxy is refused after the ban of ${scanner}: $(bench_proxyban_via "${BENCH_PROXY_CLIENT}" /)"
    ng+=("$((ng_at - start))")
    fw+=("$((fw_at - start))")
  done
  fail2ban_client status "${BENCH_JAIL}" | grep -q "Banned IP list:.*${BENCH_PROXY}" \
    && bench_error "the proxy ${BENCH_PROXY} was banned"
  return 0
}

# Row 4c for a burst of N bans, addresses 198.OCTET.x.y.
bench_proxyban_burst() {
  local n="$1" octet="$2" i before start now end reloads deadline list="${F2B_ROOT_LIST}"
  local -a ips=()
  for ((i = 0; i < n; i++)); do ips+=("198.${octet}.$((i / 250)).$((i % 250 + 1))"); done
  before="$(grep -c 'SIGHUP' "${BENCH_PROXY_SRV}/logs/error.log" || true)"
  bench_now_us start
  fail2ban_client set "${BENCH_JAIL}" banip "${ips[@]}" >/dev/null
  deadline=$((start + 300000000))
  while (($(grep -c "^198\.${octet}\." "${list}" 2>/dev/null || true) < n)); do
    bench_now_us now
    ((now < deadline)) || { bench_error "burst of ${n} bans: not all in nginx's ban list after 300 s"; return 0; }
    sleep "${BENCH_POLL_SECONDS}"
  done
  bench_now_us end
  sleep 2.5
  reloads=$(($(grep -c 'SIGHUP' "${BENCH_PROXY_SRV}/logs/error.log") - before))
  local seconds=$(((end - start + 999999) / 1000000)) met=no
  ((reloads <= seconds / 2 + 1)) && met=yes
  bench_row "4c nginx reloads, ${n} bans" \
    "one banip of ${n} fresh addresses until all are in nginx's ban list: reloads of nginx; reference: the burst's length" \
    "${reloads} reload(s)" "$(bench_fmt_us "$((end - start))")" "-" "<= 1 per 2 s of burst, +1 (${seconds} s: $((seconds / 2 + 1)))" "${met}"
}

bench_proxyban() {
  local work="$1" trials="$2" tool
  bench_log "ban latency through a proxy: ${trials} trial(s)"
  for tool in fail2ban-server nginx; do
    if ! command -v "${tool}" >/dev/null; then
      bench_row "4b ban latency through the proxy" "-" "-" "-" "-" "< 2 s" "not measured: ${tool} is not installed"
      return 0
    fi
  done
  local -a ng=() fw=()
  bench_cleanup_add bench_proxyban_teardown
  if bench_proxyban_start "${work}"; then
    bench_proxyban_trials "${trials}"
    F2B_ROOT_LIST="${work}/proxyban-root/var/lib/hostguard/nginx-bans.map"
    bench_proxyban_burst 100 19
    bench_proxyban_burst 500 20
  fi
  bench_proxyban_teardown
  BENCH_CLEANUPS=("${BENCH_CLEANUPS[@]:0:${#BENCH_CLEANUPS[@]}-1}")

  if ((${#ng[@]} == 0)); then
    bench_row "4b ban latency through the proxy" "10th request -> refused at nginx" "no ban measured" "-" "-" "< 2 s" "no: see the errors above"
    return 0
  fi
  local ng_med fw_med met="yes"
  ng_med="$(bench_median "${ng[@]}")"
  fw_med="$(bench_median "${fw[@]}")"
  ((ng_med < 2000000)) || met="no"
  bench_row "4b ban latency through the proxy" "10th request -> refused at nginx (403 through the proxy), median of ${#ng[@]} (max $(bench_fmt_us "$(printf '%s\n' "${ng[@]}" | sort -n | tail -n1)")); reference: 10th request -> firewall rule, same trials" \
    "$(bench_fmt_us "${ng_med}")" "$(bench_fmt_us "${fw_med}")" "$(bench_ratio "${ng_med}" "${fw_med}")" "< 2 s" "${met}"
}
