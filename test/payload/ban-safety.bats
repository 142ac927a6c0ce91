#!/usr/bin/env bats
# Ban safety (issue 11) with a real fail2ban in its sandbox (own network
# namespace, config dir, database): the jail rendered by the Pulumi program
# never bans loopback or banIgnoreIps, and with banIncrement a second ban of
# the same address lasts longer than the first. The notifier posts to the
# HTTPS test receiver inside the same namespace, as in fail2ban.bats.

bats_require_minimum_version 1.5.0

readonly JAIL=nginx-bad-request

setup() {
  load ../helpers/receiver
  load ../helpers/fail2ban-sandbox
  command -v fail2ban-server >/dev/null || { echo "fail2ban is not installed (.ci/run installs it): the test cannot run" >&2; false; }
  ROOT="${BATS_TEST_TMPDIR}/root"
  fail2ban_notifier_in "${ROOT}"
  NOTIFIER="${F2B_NOTIFIER}"
}

# Starts the sandbox with the jail rendered from settingKey=VALUE args.
start_jail() {
  fail2ban_sandbox_make "${BATS_TEST_TMPDIR}/f2b" "${NOTIFIER}" banMaxRetry=3 banFindTime=1m banAction= "$@"
  RECEIVER_WRAP=(ip netns exec "${F2B_NS}")
  receiver_start
  RECEIVER_WRAP=()
  receiver_make_root "${ROOT}"
  fail2ban_start
}

teardown() {
  fail2ban_stop
  receiver_stop
  fail2ban_sandbox_destroy
  echo "--- fail2ban log (tail):" >&2
  tail -n 30 "${F2B_LOG}" >&2 2>/dev/null || true
}

banned_ips() {
  fail2ban_client status "${JAIL}" | sed -n 's/^.*Banned IP list:[[:space:]]*//p'
}

is_banned() {
  [[ " $(banned_ips) " == *" $1 "* ]]
}

has_rule() {
  ip netns exec "${F2B_NS}" iptables -S | grep -q -- "-s $1/32 -j REJECT"
}

# The length in seconds of IP's current ban, from `banip --with-time`
# ("IP <tab> start + SECONDS = end").
ban_seconds() {
  fail2ban_client get "${JAIL}" banip --with-time \
    | sed -nE "s/^$1[[:space:]]+.* \\+ ([0-9]+) = .*/\\1/p"
}

@test "banIgnoreIps and loopback are never banned; everyone else still is" {
  start_jail 'banIgnoreIps=["198.51.100.0/24","192.0.2.77"]' banBanTime=10m
  grep -qx 'ignoreip  = 127.0.0.1/8 ::1 198.51.100.0/24 192.0.2.77' "${F2B_CONF}/jail.d/hostguard-nginx-bad-request.local"
  local ip
  for ip in 198.51.100.9 198.51.100.200 192.0.2.77 127.0.0.2; do
    fail2ban_log_lines "${ip}" 6
  done
  # 127.0.0.2: loopback by ignoreip (127.0.0.1 itself is also "self").
  # A client outside the list, after them: once it is banned, the others'
  # lines have been read too.
  fail2ban_log_lines 192.0.2.78 3
  fail2ban_wait_for 15 is_banned 192.0.2.78
  # fail2ban lists a ban before its actions ran: wait for the rule too.
  fail2ban_wait_for 15 has_rule 192.0.2.78
  sleep 1
  for ip in 198.51.100.9 198.51.100.200 192.0.2.77 127.0.0.2; do
    ! is_banned "${ip}" || { echo "${ip} was banned" >&2; false; }
    ! has_rule "${ip}" || false
    grep -q "Ignore ${ip} by ip" "${F2B_LOG}"
  done
  [[ "$(banned_ips)" == 192.0.2.78 ]]
}

@test "banIncrement: the second ban of an address lasts twice the first" {
  start_jail banBanTime=4 banIncrement=true
  grep -qx 'bantime.increment = true' "${F2B_CONF}/jail.d/hostguard-nginx-bad-request.local"
  local ip=203.0.113.45 first second
  fail2ban_log_lines "${ip}" 3
  fail2ban_wait_for 15 is_banned "${ip}"
  first="$(ban_seconds "${ip}")"
  # The first ban ends by itself (bantime 4 s), then the address comes back.
  fail2ban_wait_for 20 bash -c "! ip netns exec '${F2B_NS}' iptables -S | grep -q -- '-s ${ip}/32'"
  ! is_banned "${ip}" || false
  fail2ban_log_lines "${ip}" 3
  fail2ban_wait_for 15 is_banned "${ip}"
  second="$(ban_seconds "${ip}")"
  echo "first ban ${first} s, second ban ${second} s" >&2
  [[ "${first}" == 4 ]]
  [[ "${second}" == 8 ]]
}

@test "without banIncrement (the SPEC) the second ban is as long as the first" {
  start_jail banBanTime=4
  ! grep -q '^bantime.increment' "${F2B_CONF}/jail.d/hostguard-nginx-bad-request.local" || false
  local ip=203.0.113.46 first second
  fail2ban_log_lines "${ip}" 3
  fail2ban_wait_for 15 is_banned "${ip}"
  first="$(ban_seconds "${ip}")"
  fail2ban_wait_for 20 bash -c "! ip netns exec '${F2B_NS}' iptables -S | grep -q -- '-s ${ip}/32'"
  fail2ban_log_lines "${ip}" 3
  fail2ban_wait_for 15 is_banned "${ip}"
  second="$(ban_seconds "${ip}")"
  echo "first ban ${first} s, second ban ${second} s" >&2
  [[ "${first}" == 4 && "${second}" == 4 ]]
}
