# shellcheck shell=bash
# Benchmark 4: ban latency. A real fail2ban in its own network namespace
# (test/helpers/fail2ban-sandbox.bash) runs the project's jail,
# filter and action; the HTTPS receiver runs in the same namespace. Per
# trial: 9 matching lines for a fresh IP, wait until fail2ban counted them,
# then time from writing the 10th line to (a) the REJECT rule in the
# namespace's iptables (polled every 20 ms) and (b) the ban message recorded
# by the receiver (its own timestamp). Once per backend: auto (pyinotify when
# python3-pyinotify is installed) and polling. Sourced by run.sh.

# shellcheck source=../../test/helpers/receiver.bash
source "${BENCH_REPO}/test/helpers/receiver.bash"
# shellcheck source=../../test/helpers/fail2ban-sandbox.bash
source "${BENCH_REPO}/test/helpers/fail2ban-sandbox.bash"

readonly BENCH_JAIL=nginx-bad-request
readonly BENCH_POLL_SECONDS=0.02
readonly BENCH_BAN_TIMEOUT_US=15000000

bench_ban_teardown() {
  fail2ban_stop
  receiver_stop
  fail2ban_sandbox_destroy
}

bench_total_failed_is() {
  fail2ban_client status "${BENCH_JAIL}" | grep -Eq "Total failed:[[:space:]]+$1\$"
}

# Appends the 10th line the way nginx would: one write, local time with zone.
bench_write_line() {
  local ip="$1" now
  printf -v now '%(%d/%b/%Y:%H:%M:%S %z)T' -1
  printf '%s - - [%s] "GET /bench.env HTTP/1.1" 403 153 "-" "bench"\n' "${ip}" "${now}" \
    >>"${F2B_ACCESS_LOG}"
}

# VAR <- receiver time (epoch us) of message number N, if it arrived.
bench_message_time_us() {
  local -n _bench_when="$1"
  local n="$2" line i=0
  _bench_when=""
  while IFS= read -r line; do
    i=$((i + 1))
    ((i == n)) || continue
    [[ "${line}" =~ \"time\":\ ([0-9]+)\.([0-9]{1,6}) ]] || return 1
    local frac="${BASH_REMATCH[2]}000000"
    _bench_when=$((10#${BASH_REMATCH[1]} * 1000000 + 10#${frac:0:6}))
    return 0
  done <"${RECEIVER_MESSAGES}"
  return 1
}

# One fail2ban run with BACKEND, TRIALS bans; adds the rows.
bench_ban_backend() {
  local work="$1" backend="$2" trials="$3"
  local dir="${work}/f2b-${backend}" root="${work}/f2b-${backend}-root"
  fail2ban_notifier_in "${root}"
  bench_cleanup_add bench_ban_teardown
  fail2ban_sandbox_make "${dir}" "${F2B_NOTIFIER}" \
    banMaxRetry=10 banFindTime=1m banBanTime=10m banAction= slackChannel=bench
  if [[ "${backend}" != auto ]]; then
    # A later jail.d file overrides the project's backend = auto.
    printf '[%s]\nbackend = %s\n' "${BENCH_JAIL}" "${backend}" \
      >"${F2B_CONF}/jail.d/zz-bench-backend.local"
  fi
  RECEIVER_WRAP=(ip netns exec "${F2B_NS}")
  receiver_start --dir "${dir}/receiver"
  RECEIVER_WRAP=()
  # Defaults of production (NOTIFY_MAX_TIME 10, BUDGET 40), the test CA.
  receiver_make_root "${root}" NOTIFY_MAX_TIME=10 NOTIFY_BUDGET=40
  fail2ban_start
  receiver_wait_count 1 15 || bench_error "no start message from fail2ban (${backend})"
  local used
  used="$(grep -o "Initiated '[a-z]*' backend" "${F2B_LOG}" | head -n1)"
  used="${used#Initiated \'}"
  used="${used%%\'*}"

  local -a fw=() msg=()
  local k ip start now fw_at msg_at deadline
  for ((k = 1; k <= trials; k++)); do
    ip="192.0.2.$((10 + k))"
    fail2ban_log_lines "${ip}" 9
    if ! fail2ban_wait_for 10 bench_total_failed_is "$((10 * (k - 1) + 9))" >/dev/null; then
      bench_error "fail2ban (${backend}) did not count 9 lines for ${ip}"
      break
    fi
    # The notifier paces posts about 1 s apart; start clear of the last one.
    sleep 1.2
    fw_at="" msg_at=""
    bench_now_us start
    bench_write_line "${ip}"
    deadline=$((start + BENCH_BAN_TIMEOUT_US))
    while [[ -z "${fw_at}" || -z "${msg_at}" ]]; do
      bench_now_us now
      ((now < deadline)) || break
      if [[ -z "${fw_at}" ]] \
        && ip netns exec "${F2B_NS}" iptables -S "f2b-${BENCH_JAIL}" 2>/dev/null \
        | grep -q -- "-s ${ip}/32 -j REJECT"; then
        bench_now_us fw_at
      fi
      [[ -n "${msg_at}" ]] || bench_message_time_us msg_at "$((k + 1))" || true
      sleep "${BENCH_POLL_SECONDS}"
    done
    if [[ -z "${fw_at}" || -z "${msg_at}" ]]; then
      bench_error "ban of ${ip} (${backend}): firewall rule ${fw_at:+seen}${fw_at:-missing}, message ${msg_at:+seen}${msg_at:-missing} after 15 s"
      break
    fi
    receiver_texts | sed -n "$((k + 1))p" | grep -qF "Banned IP: *${ip}*" \
      || bench_error "message $((k + 1)) is not the ban of ${ip}: $(receiver_texts | sed -n "$((k + 1))p")"
    fw+=("$((fw_at - start))")
    msg+=("$((msg_at - start))")
  done
  bench_ban_teardown
  BENCH_CLEANUPS=("${BENCH_CLEANUPS[@]:0:${#BENCH_CLEANUPS[@]}-1}")

  local label="backend ${backend}"
  [[ "${backend}" == auto ]] && label="backend auto (fail2ban chose ${used:-?})"
  if ((${#fw[@]} == 0)); then
    bench_row "4 ban latency" "${label}" "no ban measured" "-" "-" "< 2 s" "no: see the errors above"
    return 0
  fi
  local fw_med msg_med met
  fw_med="$(bench_median "${fw[@]}")"
  msg_med="$(bench_median "${msg[@]}")"
  met="yes"
  ((fw_med < 2000000)) || met="no"
  bench_row "4 ban latency" "10th line -> firewall rule, ${label}, median of ${#fw[@]} (max $(bench_fmt_us "$(printf '%s\n' "${fw[@]}" | sort -n | tail -n1)"))" \
    "$(bench_fmt_us "${fw_med}")" "-" "-" "< 2 s" "${met}"
  met="yes"
  ((msg_med < 2000000)) || met="no"
  bench_row "4 ban latency" "10th line -> ban message received, ${label}, median of ${#msg[@]} (max $(bench_fmt_us "$(printf '%s\n' "${msg[@]}" | sort -n | tail -n1)"))" \
    "$(bench_fmt_us "${msg_med}")" "-" "-" "< 2 s" "${met}"
}

bench_ban() {
  local work="$1" trials="$2"
  bench_log "ban latency: ${trials} trial(s) per backend (auto, polling)"
  if ! command -v fail2ban-server >/dev/null; then
    bench_row "4 ban latency" "-" "-" "-" "-" "< 2 s" "not measured: fail2ban is not installed"
    return 0
  fi
  bench_ban_backend "${work}" auto "${trials}"
  bench_ban_backend "${work}" polling "${trials}"
}
