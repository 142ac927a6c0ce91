#!/usr/bin/env bats
# The alert policy settings (issue 11) outside the monitors: the host label on
# the ban tool's messages and the connectivity test (real curl over TLS to the
# test receiver), the settings' validation by the host parser, and the
# duration arithmetic of the repeat interval.

setup() {
  load ../helpers/receiver
  REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
  NOTIFY="${REPO}/scripts/hostguard-notify"
  BAN_EVENT="${REPO}/test/helpers/ban-event.py"
}

teardown() {
  receiver_stop
}

@test "ALERT_HOST_LABEL: the ban tool's four messages and the test message name the host" {
  receiver_start
  receiver_make_root ALERT_HOST_LABEL=true HOST_NAME=web-1
  local event
  for event in "start --jail nginx-bad-request --channel alerts" \
    "ban --jail nginx-bad-request --ip 192.0.2.7 --failures 10 --time 1700000000" \
    "unban --jail nginx-bad-request --ip 192.0.2.7" \
    "stop --jail nginx-bad-request --channel alerts"; do
    # shellcheck disable=SC2086 # the event's words are its arguments
    run timeout 60 python3 "${BAN_EVENT}" ${event}
    [[ "${status}" -eq 0 ]]
  done
  # The events go out through a detached flush; the test message is posted
  # directly, so it waits for them to keep the order below.
  receiver_wait_count 4 30
  run timeout 60 "${NOTIFY}" --test
  [[ "${status}" -eq 0 ]]
  receiver_wait_count 5
  local want
  want="$(
    cat <<'JSON'
{"channel": "#alerts", "text": "[web-1] Ban tool (nginx-bad-request) jail has started"}
{"text": "[web-1] Ban Alert(nginx-bad-request)\n Banned IP: *192.0.2.7*\n Failures: 10 failure(s)\n Timestap: 1700000000"}
{"text": "[web-1] Ban Alert(nginx-bad-request)\n Unbanned IP: *192.0.2.7*"}
{"channel": "#alerts", "text": "[web-1] Ban tool (nginx-bad-request) jail has stopped"}
JSON
  )"
  want+=$'\n{"text": "[web-1] [Server Alert] \\nConnectivity test from '"$(hostname)"': webhook OK"}'
  diff <(echo "${want}") <(receiver_payloads)
}

@test "ALERT_HOST_LABEL=false (the default): the ban message is the SPEC's" {
  receiver_start
  receiver_make_root HOST_NAME=web-1
  run timeout 60 python3 "${BAN_EVENT}" unban --jail nginx-bad-request --ip 192.0.2.7
  [[ "${status}" -eq 0 ]]
  receiver_wait_count 1
  [[ "$(receiver_payloads)" == '{"text": "Ban Alert(nginx-bad-request)\n Unbanned IP: *192.0.2.7*"}' ]]
}

@test "bad alert settings stop the monitor naming the file, line and key" {
  local line root="${BATS_TEST_TMPDIR}/root"
  mkdir -p "${root}/etc/hostguard"
  for line in ALERT_HOST_LABEL=yes ALERT_SEND_RESOLVED=1 ALERT_AFTER_RUNS=0 \
    ALERT_AFTER_RUNS=1000 ALERT_REPEAT_INTERVAL=1x ALERT_REPEAT_INTERVAL=-5 \
    ALERT_REPEAT_INTERVAL=1h30 'HOST_NAME=web 1' 'HOST_NAME=$(id)' HOST_NAME=-web; do
    printf '# settings\n%s\n' "${line}" >"${root}/etc/hostguard/hostguard.conf"
    HOSTGUARD_ROOT="${root}" run timeout 30 "${REPO}/scripts/host-monitor"
    echo "${line}: ${output}"
    [[ "${status}" -eq 1 ]]
    [[ "${output}" == "hostguard: ${root}/etc/hostguard/hostguard.conf:2: invalid value for ${line%%=*}" ]]
  done
}

@test "repeat interval durations: seconds, units, combinations" {
  # The host agent's parser (hostguard/settings.py), as the monitors and the installer read them.
  local spec secs
  duration() {
    /usr/bin/python3 -I -c 'import sys; sys.path.insert(0, sys.argv[1]); from hostguard.settings import duration_seconds; print(duration_seconds(sys.argv[2]))' \
      "${REPO}/scripts" "$1" 2>/dev/null
  }
  for spec in 0:0 45:45 30s:30 10m:600 1h:3600 1h30m:5400 2d:172800 1w:604800 1w1d1h1m1s:694861; do
    secs="$(duration "${spec%%:*}")"
    echo "${spec} -> ${secs}"
    [[ "${secs}" == "${spec##*:}" ]]
  done
  ! duration 1h30 || false
  ! duration 1x || false
  # Every value the settings pattern accepts converts.
  for spec in 1 9999999 1s 1m1h 100w; do
    /usr/bin/python3 -I -c 'import re, sys; sys.path.insert(0, sys.argv[1]); from hostguard.settings_table import PATTERNS; sys.exit(not re.fullmatch(PATTERNS["ALERT_REPEAT_INTERVAL"], sys.argv[2]))' \
      "${REPO}/scripts" "${spec}"
    duration "${spec}" >/dev/null
  done
}

@test "set-heartbeat: 0600 url= line, never in argv; --remove and uninstall leave the root as before" {
  load helpers/install
  hg_make_payload
  hg_make_root
  local url="https://hc-ping.example.test/ping/HBs3cr3t-5f2c"
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/before"
  hg_install install --part base >/dev/null
  run hg_install set-heartbeat <<<"http://hc-ping.example.test/HBs3cr3t"
  [[ "${status}" -ne 0 && "${output}" == *"set-heartbeat: refused: stdin line 1: url= is refused: not one https:// URL"*"(value not shown)"* ]]
  [[ "${output}" != *HBs3cr3t* ]]
  printf 'url=%s\n' "${url}" \
    | strace -f -qq -e trace=execve -s 100000 -o "${BATS_TEST_TMPDIR}/trace" \
      "${PAYLOAD}/install" set-heartbeat --root "${ROOT}"
  ! grep -F 'HBs3cr3t' "${BATS_TEST_TMPDIR}/trace" || false
  hg_assert_mode_owner "${ROOT}/etc/hostguard/heartbeat.conf" "600 root:root"
  diff <(printf 'url=%s\n' "${url}") "${ROOT}/etc/hostguard/heartbeat.conf"
  run hg_install set-heartbeat --remove
  [[ "${status}" -eq 0 ]]
  [[ ! -e "${ROOT}/etc/hostguard/heartbeat.conf" ]]
  # Set again, then uninstall removes it with the rest.
  hg_install set-heartbeat <<<"${url}" >/dev/null
  hg_install uninstall >/dev/null
  hg_listing "${ROOT}" >"${BATS_TEST_TMPDIR}/after"
  hg_assert_same_listing "${BATS_TEST_TMPDIR}/before" "${BATS_TEST_TMPDIR}/after"
  run hg_install set-webhook --remove
  [[ "${status}" -eq 64 ]]
}

# The webhook command of the deploy (components/remoteCommands.ts, verifyWebhook on),
# pointed at a temp root with the base part installed.
webhook_command() {
  local node="${REPO}/node_modules/.bin/node" cmd
  cmd="$(cd "${REPO}" && "${node}" --import tsx -e \
    'import { setWebhookCommand } from "./components/remoteCommands"; process.stdout.write(setWebhookCommand(false, true));')"
  printf '%s' "${cmd//\/usr\/local\/lib\/hostguard\//${ROOT}/usr/local/lib/hostguard/}"
}

@test "verifyWebhook: the deploy's webhook command posts the test message; a new webhook refused or not delivered keeps the old one" {
  load helpers/install
  receiver_start
  hg_make_payload "notifyCaFile=${RECEIVER_CA}" notifyMaxTime=3 notifyAttempts=1 notifyBudget=10
  hg_make_root
  hg_install install --part base >/dev/null
  local cmd kept
  cmd="$(webhook_command)"
  [[ "${cmd}" == *"/install set-webhook --verify"* ]]
  # Delivered: exit 0, the SPEC's connectivity test message arrives, the webhook is in place.
  run env HOSTGUARD_ROOT="${ROOT}" sh -c "${cmd}" <<<"url=${RECEIVER_URL}"
  echo "${output}"
  [[ "${status}" -eq 0 ]]
  [[ "${output}" == *"hostguard: connectivity test delivered"* ]]
  receiver_wait_count 1
  [[ "$(receiver_texts)" == "[Server Alert] \\nConnectivity test from $(hostname): webhook OK" ]]
  kept="$(cat "${ROOT}/etc/hostguard/webhook.conf")"
  [[ "${kept}" == *"${RECEIVER_URL}"* ]]
  # A new webhook not delivered for now (500): exit 75, the old one stays in place.
  receiver_mode status500
  run env HOSTGUARD_ROOT="${ROOT}" sh -c "${cmd}" <<<"url=${RECEIVER_URL}/new"
  echo "${output}"
  [[ "${status}" -eq 75 ]]
  [[ "${output}" == *"the host keeps the webhook it had"* ]]
  [[ "$(cat "${ROOT}/etc/hostguard/webhook.conf")" == "${kept}" ]]
  # Refused for good (a revoked webhook: 404 no_service): the command fails,
  # its output (which the resource's error shows) names the status and the
  # service's error text, and the old webhook stays.
  receiver_mode status 404 no_service
  run env HOSTGUARD_ROOT="${ROOT}" sh -c "${cmd}" <<<"url=${RECEIVER_URL}/new"
  echo "${output}"
  [[ "${status}" -ne 0 && "${status}" -ne 75 ]]
  [[ "${output}" == *"404"*"no_service"* ]]
  [[ "${output}" == *"the new webhook was refused (hostguard-notify --test exit"* ]]
  [[ "$(cat "${ROOT}/etc/hostguard/webhook.conf")" == "${kept}" ]]
  # No candidate left behind; neither output shows the URL.
  [[ -z "$(find "${ROOT}/etc/hostguard" -name '*webhook*' ! -name webhook.conf)" ]]
  [[ "${output}" != *"${RECEIVER_SENTINEL}"* ]]
}
