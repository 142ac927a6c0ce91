#!/usr/bin/env bats
# Each chat format through the real programs (issue 34): the host monitor's
# alert, its repeat and its resolution, a ban and an unban, then the alert's
# next episode reach the test receiver's flavour of each service
# (test/helpers/receiver_flavours.py checks every request as that service
# does and answers with its own bodies) once each, in that service's shape:
# PagerDuty sees trigger, trigger, resolve, trigger on one dedup key and no
# ban notice, Google Chat one thread per episode, the generic webhook
# Alertmanager's firing/resolved with one fingerprint. A rate-limited answer
# is waited out; a refused webhook is probed slowly, Discord's never, until
# it is set anew. Slack's own answers are notify.bats's.

load ../helpers/receiver
load helpers/proc-fixture

REPO="$(cd "${BATS_TEST_DIRNAME}/../.." && pwd)"
MONITOR="${REPO}/scripts/host-monitor"
NOTIFY="${REPO}/scripts/hostguard-notify"
SPOOLDB="${REPO}/test/helpers/spool-db.py"
BAN_EVENT="${REPO}/test/helpers/ban-event.py"

setup() {
  FIX="${BATS_TEST_TMPDIR}/proc"
  make_proc "${FIX}"
  ROOT="${BATS_TEST_TMPDIR}/root"
}

# start FLAVOUR: the receiver of that service, its records and the host root its own.
start() {
  receiver_start --flavour "$1" --dir "${BATS_TEST_TMPDIR}/receiver-$1"
  ROOT="${BATS_TEST_TMPDIR}/root-$1"
}

teardown() {
  receiver_stop
}

# monitor_at T [KEY=VALUE...]: one host monitor run at clock T (CPU 12.3 %), the settings given.
monitor_at() {
  local at="$1"
  shift
  receiver_make_root "${ROOT}" MEMORY_THRESHOLD=100 DISK_THRESHOLD=100 ALERT_SEND_RESOLVED=true HOST_NAME=web-1 \
    NOTIFY_BUDGET=40 "$@"
  save_previous_sample
  HOSTGUARD_NOW="${at}" HOSTGUARD_PROC="${FIX}" timeout 60 "${MONITOR}" >>"${BATS_TEST_TMPDIR}/log" 2>&1 || true
}

# spool_empty: waits (at most 60 s) until the spool holds nothing.
spool_empty() {
  local i
  for ((i = 0; i < 600; i++)); do
    [[ "$(python3 "${SPOOLDB}" pending)" == 0 ]] && return 0
    sleep 0.1
  done
  echo "the spool still holds $(python3 "${SPOOLDB}" pending) message(s)" >&2
  return 1
}

# The whole sequence: alert, repeat, resolution, ban, unban, the next episode.
one_of_each() {
  monitor_at 5000 CPU_THRESHOLD=0
  monitor_at 5600 CPU_THRESHOLD=0
  monitor_at 6200 CPU_THRESHOLD=100
  python3 "${BAN_EVENT}" ban --jail nginx-bad-request --ip 192.0.2.7 --failures 10 --time 6300
  python3 "${BAN_EVENT}" unban --jail nginx-bad-request --ip 192.0.2.7
  spool_empty
  monitor_at 7000 CPU_THRESHOLD=0
  spool_empty
}

# check PYTHON: runs PYTHON with `records` (the receiver's records, in order), `texts` and `requests`.
check() {
  python3 - "${RECEIVER_MESSAGES}" "${RECEIVER_REQUESTS}" "$1" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
requests = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
texts = [r["text"] for r in records]
try:
    exec(sys.argv[3])
except AssertionError:
    print("records:", json.dumps(records, indent=1, ensure_ascii=False)[:6000])
    print("requests:", json.dumps(requests, indent=1)[:2000])
    raise
PY
}

SHAPES='
alert, repeat, resolved, ban, unban, episode = ("High CPU", "High CPU", "Back to Normal", "Banned IP: *192.0.2.7*",
                                                "Unbanned IP: *192.0.2.7*", "High CPU")
def in_order(got, want):
    assert len(got) == len(want) and all(w in g for g, w in zip(got, want)), (got, want)
'

every_message_once() {
  check "${SHAPES}
in_order(texts, [alert, repeat, resolved, ban, unban, episode])
assert all(r['status'] in (200, 202) for r in requests), requests"
}

@test "mattermost: Slack's form body, each message once; 200 ok" {
  start mattermost
  one_of_each
  every_message_once
  check "assert all('channel' not in r['payload'] for r in records)"
}

@test "rocketchat: each message once, paced 6 s apart (its 10 calls a minute)" {
  start rocketchat
  one_of_each
  every_message_once
  check "
times = [r['time'] for r in requests]
assert all(b - a >= 6.0 for a, b in zip(times, times[1:])), times"
}

@test "teams: an Adaptive Card per message in Workflows' envelope; the flow ran every one" {
  start teams
  one_of_each
  every_message_once
  check "
assert all(r['payload']['attachments'][0]['content']['type'] == 'AdaptiveCard' for r in records)
colors = [r['payload']['attachments'][0]['content']['body'][0].get('color') for r in records]
assert colors == ['Attention', 'Attention', 'Good', None, None, 'Attention'], colors"
}

@test "googlechat: one thread per episode; notices on their own" {
  start googlechat
  one_of_each
  every_message_once
  check "
threads = [r['thread'] for r in records]
assert threads[0] == threads[1] == threads[2], threads
assert len({threads[0], threads[3], threads[4], threads[5]}) == 4, threads"
}

@test "discord: content with ?wait=true (checked, never a bare 204)" {
  start discord
  one_of_each
  every_message_once
  check "
assert all(r['status'] == 200 for r in requests), requests
assert all(r['payload']['allowed_mentions'] == {'parse': []} for r in records)"
}

@test "pagerduty: trigger, trigger, resolve, trigger on one dedup key; no ban notice" {
  start pagerduty
  one_of_each
  check "${SHAPES}
assert [r['incident'] for r in records] == ['opened', 'deduplicated', 'resolved', 'opened'], records
assert {r['dedup_key'] for r in records} == {'hostguard:web-1:host:cpu'}
in_order([texts[0], texts[1], texts[3]], [alert, repeat, episode])
assert all(r['payload']['routing_key'] == '${RECEIVER_ROUTING_KEY}' for r in records)
assert records[0]['payload']['payload']['source'] == 'web-1'"
}

@test "webhook: Alertmanager's version 4, firing, firing, resolved on one fingerprint; a new episode starts anew" {
  start webhook
  one_of_each
  every_message_once
  check "
alerts = [r['payload']['alerts'][0] for r in records]
assert [r['status'] for r in records] == ['firing', 'firing', 'resolved', 'firing', 'firing', 'firing']
assert alerts[0]['fingerprint'] == alerts[1]['fingerprint'] == alerts[2]['fingerprint'] == alerts[5]['fingerprint']
assert alerts[0]['startsAt'] == alerts[1]['startsAt'] == alerts[2]['startsAt'] == '1970-01-01T01:23:20Z'
assert alerts[5]['startsAt'] == '1970-01-01T01:56:40Z' and alerts[3]['fingerprint'] != alerts[0]['fingerprint']"
}

@test "a rate-limited answer is waited out: Discord's Retry-After, Google Chat's 429 without one" {
  local flavour
  for flavour in discord googlechat; do
    start "${flavour}"
    receiver_make_root "${ROOT}" NOTIFY_BUDGET=30
    receiver_mode ratelimit 2
    run timeout 60 "${NOTIFY}" text "after the limit (${flavour})"
    [[ "${status}" -eq 0 ]]
    check "
assert texts == ['after the limit (${flavour})'], texts
assert [r['status'] for r in requests][0] == 429 and requests[-1]['status'] == 200, requests"
    receiver_stop
  done
}

@test "a refused webhook is kept and probed slowly, Discord's never until it is set anew" {
  local flavour before
  for flavour in mattermost rocketchat teams googlechat discord pagerduty webhook; do
    start "${flavour}"
    receiver_mode refused
    monitor_at 5000 CPU_THRESHOLD=0
    [[ "$(python3 "${SPOOLDB}" pending)" == 1 ]]
    run timeout 60 "${NOTIFY}" flush
    [[ "${status}" -eq 77 ]]
    before="$(wc -l <"${RECEIVER_REQUESTS}")"
    [[ "${before}" == 1 ]]
    python3 "${SPOOLDB}" probe-due
    run timeout 60 "${NOTIFY}" flush
    [[ "${status}" -eq 77 ]]
    if [[ "${flavour}" == discord ]]; then
      [[ "$(wc -l <"${RECEIVER_REQUESTS}")" == 1 ]]
      [[ "${output}" == *"not probed again (the service asks clients to stop)"* ]]
      # Set anew (install set-webhook writes a new file): delivered.
      receiver_mode ok
      receiver_make_root "${ROOT}"
      run timeout 60 "${NOTIFY}" flush
      [[ "${status}" -eq 0 ]]
    else
      [[ "$(wc -l <"${RECEIVER_REQUESTS}")" == 2 ]]
    fi
    [[ "${output}" != *SENTINEL* ]]
    receiver_stop
  done
}
